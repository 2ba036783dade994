package resp_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCountersCountTheBatchBeforeThem: the counters INFO and CLIENT LIST
// read are kept per connection while a pipelined batch runs and published
// when it ends (tally.go, D113). A reader inside the same batch still sees
// every command before it, as on redis-server — compared field by field —
// and another connection sees the whole batch once its replies arrived.
func TestCountersCountTheBatchBeforeThem(t *testing.T) {
	redisAddr := startRedis(t, false)
	n := startNode(t)
	want := dialRaw(t, redisAddr)
	got := dialRaw(t, n.RESPAddr().String())
	for _, c := range []*rawConn{want, got} {
		require.Equal(t, "+OK\r\n", c.do("FLUSHALL"))
		require.Equal(t, "+OK\r\n", c.do("CONFIG", "RESETSTAT"))
	}

	batch := [][]string{
		{"INCR", "a"}, {"INCR", "a"}, {"GET", "a"}, {"GET", "missing"}, {"SET", "b", "v"},
		{"INFO", "commandstats"}, {"INFO", "stats"}, {"CLIENT", "INFO"},
		{"GET", "b"}, {"INFO", "stats"},
	}
	var one strings.Builder
	for _, c := range batch {
		one.WriteString(cmd(c...))
	}
	run := func(c *rawConn) []string {
		c.send(one.String()) // one write: the server reads the batch at once
		out := make([]string, len(batch))
		for i := range batch {
			out[i] = c.reply()
		}
		return out
	}
	w, g := run(want), run(got)

	cmdstat := regexp.MustCompile(`cmdstat_(\w+(?:\|\w+)?):calls=(\d+),`)
	calls := func(info string) map[string]string {
		m := map[string]string{}
		for _, s := range cmdstat.FindAllStringSubmatch(info, -1) {
			m[s[1]] = s[2]
		}
		return m
	}
	require.Equal(t, calls(w[5]), calls(g[5]), "INFO commandstats after five commands of the batch")
	require.Equal(t, "2", calls(g[5])["incr"])

	stat := func(info, name string) string {
		return parseInfo(info)[name]
	}
	for _, at := range []int{6, 9} {
		for _, f := range []string{"keyspace_hits", "keyspace_misses", "total_commands_processed"} {
			require.Equal(t, stat(w[at], f), stat(g[at], f), "%s from INFO stats at batch position %d", f, at)
		}
	}
	require.Equal(t, "2", stat(g[9], "keyspace_hits"))

	clientField := func(line, name string) string {
		for _, f := range strings.Fields(strings.TrimSpace(line)) {
			if v, ok := strings.CutPrefix(f, name+"="); ok {
				return v
			}
		}
		return ""
	}
	require.Equal(t, "client|info", clientField(g[7], "cmd"), "CLIENT INFO names itself as the last command")
	require.Equal(t, clientField(w[7], "cmd"), clientField(g[7], "cmd"))

	// Another connection, once the replies arrived, sees the whole batch.
	other := dialRaw(t, n.RESPAddr().String())
	info := other.do("INFO", "commandstats")
	require.Equal(t, "3", calls(info)["get"], "the batch's three GETs, published when it ended")
	require.Equal(t, "2", calls(info)["incr"])
}

package resp_test

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server"
)

// Issues 13 and 16: stock redis-benchmark works unchanged on a node with
// the default flags. Its list tests push every request onto one key,
// "mylist", of 3-byte elements: -t lpush,rpush at -n 200000 grows it to
// 400 000 elements. The per-key cap (--max-item-bytes, 4 MiB) measures the
// item size (5 bytes an element: 2 MB), not the accounted bytes (27 an
// element: 10.8 MB), which refused RPUSH with -OOM at 155 344 elements.
// The real redis-benchmark binary against a real node: redis-benchmark 7
// exits at the first error reply, and the node counts every error reply it
// sends (INFO stats total_error_replies); both must say none, and every
// push must have landed.
func TestStockRedisBenchmarkListTestsOnADefaultNode(t *testing.T) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		t.Skip("redis-benchmark is not installed (apt-get install redis-tools; .ci/run installs it):", err)
	}
	n := startNode(t, func(c *server.Config) {
		// The defaults, only the ports kernel-chosen (testConfig lowers
		// the memory cap).
		c.MemoryMaxBytes = server.DefaultConfig().MemoryMaxBytes
	})
	cfg := n.Config()
	require.Equal(t, server.DefaultMaxItemBytes, cfg.MaxItemBytes, "the node must run with the default per-key cap")
	host, port, _ := strings.Cut(n.RESPAddr().String(), ":")
	rdb := newClient(t, n)
	// The client's own handshake may meet an error (a command this node
	// does not know): count from after it.
	errorsBefore := errorReplies(t, rdb)

	const requests = 200_000
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Minute))
	defer cancel()
	// -P 16 pipelines the same commands, to keep the run short under the
	// race detector.
	cmd := exec.CommandContext(ctx, bin, "-h", host, "-p", port, "-q", "-n", strconv.Itoa(requests), "-P", "16",
		"-t", "lpush,rpush")
	out, err := cmd.CombinedOutput()
	// -q redraws its progress line with carriage returns: keep the results.
	var results []string
	for _, line := range strings.FieldsFunc(string(out), func(r rune) bool { return r == '\r' || r == '\n' }) {
		if line = strings.TrimSpace(line); line != "" && !strings.Contains(line, "rps=") {
			results = append(results, line)
		}
	}
	require.NoError(t, err, "redis-benchmark failed:\n%s", strings.Join(results, "\n"))
	for _, line := range results {
		require.NotContains(t, line, "Error", "redis-benchmark printed an error")
	}
	for _, test := range []string{"LPUSH", "RPUSH"} {
		require.Condition(t, func() bool {
			for _, line := range results {
				if strings.HasPrefix(line, test+": ") && strings.Contains(line, "requests per second") {
					return true
				}
			}
			return false
		}, "no result line for %s in:\n%s", test, strings.Join(results, "\n"))
	}

	rctx := ctxT(t) // after the run: its deadline starts now
	errorStats, err := rdb.Info(rctx, "errorstats").Result()
	require.NoError(t, err)
	require.Equal(t, errorsBefore, errorReplies(t, rdb), "the node sent error replies during the run: %s", errorStats)
	length, err := rdb.LLen(rctx, "mylist").Result()
	require.NoError(t, err)
	require.Equal(t, int64(2*requests), length, "every LPUSH and RPUSH landed on mylist")
}

// errorReplies is the node's INFO stats total_error_replies.
func errorReplies(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	stats, err := rdb.Info(ctxT(t), "stats").Result()
	require.NoError(t, err)
	for _, line := range strings.Split(stats, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_error_replies:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no total_error_replies in INFO stats:\n%s", stats)
	return 0
}

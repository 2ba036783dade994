package resp_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLockedCommandsDoNotWaitForTheirOwnLocks: a command that runs under
// the segment locks its EXEC or script holds never waits for those locks.
// SPUBLISH (its channel is a key: EXEC locks its segment) answers inside
// EXEC and from a script; the node-wide commands are refused from a
// script, declared keys or not — before, each of these left the
// connection without a reply and the segment locked for good.
func TestLockedCommandsDoNotWaitForTheirOwnLocks(t *testing.T) {
	n := startNode(t)
	addr := n.RESPAddr().String()
	c := dialRaw(t, addr)
	other := dialRaw(t, addr)

	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", c.do("SPUBLISH", "inf", "c"))
	require.Equal(t, "+QUEUED\r\n", c.do("SET", "k", "v"))
	require.Equal(t, "*2\r\n:0\r\n+OK\r\n", c.do("EXEC"))
	require.Equal(t, ":0\r\n", c.do("EVAL", "return redis.call('SPUBLISH', KEYS[1], 'x')", "1", "ch"))

	for _, cmd := range [][]string{{"KEYS", "*"}, {"SCAN", "0"}, {"DBSIZE"}, {"RANDOMKEY"}, {"FLUSHDB"}, {"FLUSHALL"},
		{"INFO"}, {"INFO", "memory"}, {"CLUSTER", "COUNTKEYSINSLOT", "1"}, {"CLUSTER", "GETKEYSINSLOT", "1", "1"}} {
		script := "return redis.pcall('" + strings.Join(cmd, "','") + "')"
		for _, numkeys := range []string{"0", "1"} {
			args := []string{"EVAL", script, numkeys}
			if numkeys == "1" {
				args = append(args, "k")
			}
			require.Equal(t, "-ERR This command reads or writes every key of the node and is not allowed from a script in Zaris (the script holds its keys' locks)\r\n",
				c.do(args...), "%q", cmd)
		}
	}
	// Every segment is free: another client writes and reads the keys.
	require.Equal(t, "+OK\r\n", other.do("SET", "inf", "1"))
	require.Equal(t, "$1\r\nv\r\n", other.do("GET", "k"))
	require.Equal(t, ":2\r\n", other.do("DBSIZE"))
}

package resp_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStandaloneCommandsAnswered: the commands of a standalone redis-server
// that a node keeping no files refuses (SAVE, BGSAVE, BGREWRITEAOF,
// SHUTDOWN, DEBUG, and the CLUSTER subcommands the control plane owns)
// answer an error that says so, and the node serves on —
// SHUTDOWN above all; LASTSAVE is the time the node started and ROLE a
// lone node's: a master with no replicas. (The answers Redis Cluster gives
// — SWAPDB, MOVE, REPLICAOF, FAILOVER — are compared with it in
// oracleScript.)
func TestStandaloneCommandsAnswered(t *testing.T) {
	before := time.Now().Unix()
	n := startNode(t)
	r := dialRaw(t, n.RESPAddr().String())
	for _, c := range [][]string{{"SAVE"}, {"BGSAVE"}, {"BGSAVE", "SCHEDULE"}, {"BGREWRITEAOF"}} {
		require.Equal(t, "-ERR Zaris keeps no RDB or AOF files (an in-memory cache; replicas hold the copies)\r\n", r.do(c...), "%q", c)
	}
	require.Contains(t, r.do("SHUTDOWN"), "-ERR SHUTDOWN is not served")
	require.Contains(t, r.do("SHUTDOWN", "NOSAVE", "NOW", "FORCE"), "-ERR SHUTDOWN is not served")
	require.Contains(t, r.do("DEBUG", "SLEEP", "0"), "-ERR DEBUG command not allowed")
	for _, c := range [][]string{{"CLUSTER", "RESET"}, {"CLUSTER", "MEET", "127.0.0.1", "7000"}, {"CLUSTER", "ADDSLOTS", "1"},
		{"CLUSTER", "FAILOVER"}, {"CLUSTER", "REPLICAS", "x"}, {"CLUSTER", "LINKS"}} {
		require.Contains(t, r.do(c...), "-ERR CLUSTER "+c[1]+" is not served: ", "%q", c)
	}
	require.Equal(t, "-ERR wrong number of arguments for 'cluster|meet' command\r\n", r.do("CLUSTER", "MEET"))
	require.Equal(t, "+PONG\r\n", r.do("PING"), "the node serves on")

	help := r.do("ACL", "HELP")
	require.Contains(t, help, "WHOAMI")
	require.NotContains(t, help, "LOAD", "ACL LOAD is not served")

	last := newClient(t, n).Do(ctxT(t), "LASTSAVE").Val().(int64)
	require.GreaterOrEqual(t, last, before)
	require.LessOrEqual(t, last, time.Now().Unix())

	require.Equal(t, "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n", r.do("ROLE"))
	require.Equal(t, "+OK\r\n", r.do("SET", "k", "v"))
	require.Equal(t, "*3\r\n$6\r\nmaster\r\n:1\r\n*0\r\n", r.do("ROLE"), "the offset counts the writes")
}

package resp_test

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/placement"
)

func newClusterClient(t *testing.T, addr string) *redis.ClusterClient {
	t.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, DialTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A stock Redis Cluster client discovers the node with CLUSTER SLOTS and
// routes every command to it.
func TestGoRedisClusterClient(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	addr := n.RESPAddr().String()
	cc := newClusterClient(t, addr)

	slots, err := cc.ClusterSlots(ctx).Result()
	require.NoError(t, err)
	require.Len(t, slots, 1)
	require.Equal(t, 0, slots[0].Start)
	require.Equal(t, 16383, slots[0].End)
	require.Equal(t, addr, slots[0].Nodes[0].Addr)
	myID := cc.Do(ctx, "CLUSTER", "MYID").Val().(string)
	require.Equal(t, myID, slots[0].Nodes[0].ID)
	require.Len(t, myID, 40)

	suite(t, cc, "{c}")

	// Keys of many slots through one client.
	for i := 0; i < 200; i++ {
		require.NoError(t, cc.Set(ctx, fmt.Sprint("spread:", i), i, 0).Err())
	}
	for i := 0; i < 200; i++ {
		require.Equal(t, fmt.Sprint(i), cc.Get(ctx, fmt.Sprint("spread:", i)).Val())
	}
	pipe := cc.Pipeline()
	gets := make([]*redis.StringCmd, 50)
	for i := range gets {
		gets[i] = pipe.Get(ctx, fmt.Sprint("spread:", i))
	}
	_, err = pipe.Exec(ctx)
	require.NoError(t, err)
	for i, g := range gets {
		require.Equal(t, fmt.Sprint(i), g.Val())
	}

	// Keys of several slots all on this node (a lone node owns them all):
	// served as by a standalone redis-server (issue #13 item 4;
	// TestMultiKeyOnThreeNodes covers CROSSSLOT across nodes).
	require.Equal(t, []any{"1", "2"}, cc.Do(ctx, "MGET", "spread:1", "spread:2").Val())
	require.NoError(t, cc.Do(ctx, "SET", "rename-src", "v").Err())
	require.NoError(t, cc.Do(ctx, "RENAME", "rename-src", "other").Err())
	require.Equal(t, "v", cc.Get(ctx, "other").Val())
	require.NoError(t, cc.Do(ctx, "SINTER", "{a}x", "{b}x").Err())
	require.NoError(t, cc.Do(ctx, "MGET", "{a}1", "{a}2").Err())

	// CLUSTER KEYSLOT equals the placement function (R-PLACE-1), and the
	// known Redis values.
	for key, want := range map[string]int64{"foo": 12182, "bar": 5061, "{user1000}.following": 3443, "{user1000}.followers": 3443, "": 0} {
		require.Equal(t, want, cc.ClusterKeySlot(ctx, key).Val(), key)
		require.Equal(t, want, int64(placement.Slot(key)), key)
	}
	require.Equal(t, int64(1), cc.ClusterCountKeysInSlot(ctx, int(placement.Slot("spread:7"))).Val())
	require.Equal(t, []string{"spread:7"}, cc.ClusterGetKeysInSlot(ctx, int(placement.Slot("spread:7")), 10).Val())

	info := cc.ClusterInfo(ctx).Val()
	require.Contains(t, info, "cluster_state:ok")
	require.Contains(t, info, "cluster_slots_assigned:16384")
	nodes := cc.ClusterNodes(ctx).Val()
	require.True(t, strings.HasPrefix(nodes, myID+" "+addr+"@0 myself,master - 0 0 1 connected 0-16383"), nodes)
	shards, err := cc.ClusterShards(ctx).Result()
	require.NoError(t, err)
	require.Len(t, shards, 1)
	require.Equal(t, []redis.SlotRange{{Start: 0, End: 16383}}, shards[0].Slots)
	require.Equal(t, myID, shards[0].Nodes[0].ID)
	require.Equal(t, "master", shards[0].Nodes[0].Role)

	// Keyless fan-out commands (COMMAND tips request_policy:all_shards).
	require.Positive(t, cc.DBSize(ctx).Val())
	require.NoError(t, cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() }))
}

func redisCLI(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed:", err)
	}
	return bin
}

func TestRedisCLI(t *testing.T) {
	bin := redisCLI(t)
	n := startNode(t)
	addr := n.RESPAddr().(interface{ String() string }).String()
	host, port, _ := strings.Cut(addr, ":")
	run := func(args ...string) string {
		t.Helper()
		return runCLI(t, bin, host, port, args...)
	}
	require.Equal(t, "PONG", run("PING"))
	require.Equal(t, "OK", run("SET", "greeting", "hello world"))
	require.Equal(t, "hello world", run("GET", "greeting"))
	require.Equal(t, "OK", run("-c", "SET", "other", "x"), "cluster mode")
	require.Equal(t, "x", run("-c", "GET", "other"))
	require.Equal(t, "2", run("HSET", "h", "a", "1", "b", "2"))
	require.Equal(t, "a\n1\nb\n2", sortedPairs(run("HGETALL", "h")))
	lines := strings.Split(run("-3", "HGETALL", "h"), "\n")
	sort.Strings(lines)
	require.Equal(t, []string{"a 1", "b 2"}, lines, "RESP3: a map")
	require.Contains(t, run("INFO", "server"), "redis_mode:cluster")
	require.Equal(t, "ERR unknown command 'NOPE', with args beginning with: 'x' ", run("NOPE", "x"))
	require.Contains(t, run("CLUSTER", "SLOTS"), "16383")
	require.Contains(t, run("--no-raw", "COMMAND", "DOCS", "get"), "Returns the string value of a key.")

	// Inline commands and a pipe of many commands (redis-cli --pipe speaks
	// RESP and counts the replies).
	var pipe strings.Builder
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&pipe, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n", len(fmt.Sprint("p", i)), fmt.Sprint("p", i))
	}
	cmd := exec.Command(bin, "-h", host, "-p", port, "--pipe")
	cmd.Stdin = strings.NewReader(pipe.String())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "errors: 0, replies: 2000")
	require.Equal(t, "2003", run("DBSIZE"))
}

func runCLI(t *testing.T, bin, host, port string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-h", host, "-p", port}, args...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return strings.TrimRight(string(out), "\n")
}

// sortedPairs keeps a HGETALL output stable for comparison (field order is
// the hash's).
func sortedPairs(s string) string {
	lines := strings.Split(s, "\n")
	type pair struct{ k, v string }
	var ps []pair
	for i := 0; i+1 < len(lines); i += 2 {
		ps = append(ps, pair{lines[i], lines[i+1]})
	}
	for i := range ps {
		for j := i + 1; j < len(ps); j++ {
			if ps[j].k < ps[i].k {
				ps[i], ps[j] = ps[j], ps[i]
			}
		}
	}
	var out []string
	for _, p := range ps {
		out = append(out, p.k, p.v)
	}
	return strings.Join(out, "\n")
}

package resp_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server/clustertest"
)

// A real three-node cluster: every node describes the committed map in
// CLUSTER SLOTS, a non-owner answers MOVED to the owner, and go-redis's
// ClusterClient seeded with any one node reaches every key's owner
// (R-RESP-2).
func TestClusterClientOnThreeNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	cl := clustertest.Start(t, 3, clustertest.Options{})
	ctx := ctxT(t)
	nodes := cl.Nodes()

	// Every node describes the same slot ranges: all 16384 slots, three owners.
	var first []redis.ClusterSlot
	for _, nd := range nodes {
		slots, err := newClient(t, nd).ClusterSlots(ctx).Result()
		require.NoError(t, err)
		covered := 0
		owners := map[string]bool{}
		for _, s := range slots {
			covered += s.End - s.Start + 1
			owners[s.Nodes[0].Addr] = true
		}
		require.Equal(t, placement.SlotCount, covered)
		require.Len(t, owners, 3)
		if first == nil {
			first = slots
		}
		require.Equal(t, first, slots, "every node reports the same map")
	}

	// A plain client on a non-owner gets MOVED to the owner's RESP address.
	key := "moved-key"
	owner, other := cl.Owner(key), cl.NonOwner(key)
	require.NotNil(t, owner)
	require.NotNil(t, other)
	slot := placement.Slot(key)
	err := newClient(t, other).Set(ctx, key, "v", 0).Err()
	require.EqualError(t, err, fmt.Sprintf("MOVED %d %s", slot, owner.RESPAddr().String()))
	require.NoError(t, newClient(t, owner).Set(ctx, key, "v", 0).Err())

	// The cluster client routes every key to its owner, from any seed.
	cc := newClusterClient(t, other.RESPAddr().String())
	for i := 0; i < 300; i++ {
		k := fmt.Sprint("key:", i)
		require.NoError(t, cc.Set(ctx, k, i, 0).Err())
		require.NoError(t, cc.HSet(ctx, "h:"+k, "f", i).Err())
	}
	for i := 0; i < 300; i++ {
		k := fmt.Sprint("key:", i)
		require.Equal(t, fmt.Sprint(i), cc.Get(ctx, k).Val())
		// It landed on the owner: that node's store has it.
		require.True(t, cl.Owner(k).Store().Get(k).OK(), k)
	}
	suite(t, cc, "{multi}")

	// Keyless commands are per node: DBSIZE counts owned keys only, and the
	// cluster client sums them over the shards. The suite leaves keys with
	// short TTLs (1.5 s): one may expire between the two readings, so they
	// are compared until they agree.
	var perNode, summed int64
	for deadline := time.Now().Add(testscale.D(10 * time.Second)); ; {
		perNode = 0
		for _, nd := range nodes {
			perNode += newClient(t, nd).DBSize(ctx).Val()
		}
		summed = cc.DBSize(ctx).Val()
		if perNode == summed || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // poll pacing
	}
	require.Equal(t, perNode, summed)
	keys := 0
	for _, nd := range nodes {
		keys += len(newClient(t, nd).Keys(ctx, "key:*").Val())
	}
	require.Equal(t, 300, keys, "each key is listed by its owner only")

	nodesText := newClient(t, nodes[0]).ClusterNodes(ctx).Val()
	require.Equal(t, 3, strings.Count(nodesText, "\n"))
	require.Equal(t, 1, strings.Count(nodesText, "myself"))
	require.Contains(t, newClient(t, nodes[0]).ClusterInfo(ctx).Val(), "cluster_known_nodes:3")
}

// redis-cli -c follows the redirect.
func TestRedisCLIFollowsMoved(t *testing.T) {
	bin := redisCLI(t)
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	cl := clustertest.Start(t, 2, clustertest.Options{})
	key := "cli-key"
	other := cl.NonOwner(key)
	host, port, _ := strings.Cut(other.RESPAddr().String(), ":")
	out := runCLI(t, bin, host, port, "-c", "SET", key, "hello")
	require.Equal(t, "OK", out)
	require.Equal(t, "hello", runCLI(t, bin, host, port, "-c", "GET", key))
	require.True(t, cl.Owner(key).Store().Get(key).OK())
}

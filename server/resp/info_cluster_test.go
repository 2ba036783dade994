package resp_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
)

func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// Issue #14 item 7: INFO replication reports each node's role per
// partition, its replicas with their offsets, the failover epoch and the
// health; CLUSTER INFO reports cluster_state:fail and the failing slots
// when a partition has no live copy, and the current epoch.
func TestInfoAndClusterInfoAreTruthful(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	cl := clustertest.Start(t, 3, clustertest.Options{Mutate: func(c *server.Config) { c.ReplicationFactor = 2 }})
	ctx := context.Background()
	nodes := cl.Running()
	k := cl.KeyOwnedBy(nodes[0].Config().NodeID, "info:")
	require.NoError(t, nodeClient(t, nodes[0]).Set(ctx, k, "v", 0).Err())

	c1 := nodeClient(t, nodes[0])
	partLine := regexp.MustCompile(`^zaris_partition_\d+:owner=(\S+?),replicas=(\S*?),revision=\d+,epoch=(\d+),health=(\w+),role=(\w+)(,replica_offsets=\S+)?$`)
	var info string
	cl.Eventually(30*time.Second, "node 1's replicas stream and show their offsets", func() bool {
		info = c1.Info(ctx, "replication").Val()
		n, _ := strconv.Atoi(infoField(info, "connected_slaves"))
		return n > 0 && regexp.MustCompile(`(?m)^slave\d+:ip=n\d,port=0,state=online,offset=[1-9]`).MatchString(info)
	})
	require.Equal(t, "master", infoField(info, "role"))
	roles := map[string]int{}
	for _, line := range strings.Split(info, "\r\n") {
		if !strings.HasPrefix(line, "zaris_partition_") {
			continue
		}
		m := partLine.FindStringSubmatch(line)
		require.NotNil(t, m, line)
		// Healthy, or suspect for a moment on a loaded machine: never
		// unavailable with every node up.
		require.Contains(t, []string{"healthy", "degraded", "suspect", "recovering"}, m[4], line)
		roles[m[5]]++
		if m[1] == nodes[0].Config().NodeID {
			require.Equal(t, "master", m[5], line)
			require.NotEmpty(t, m[6], "the owner lists its replicas' offsets: %s", line)
		}
	}
	require.Positive(t, roles["master"], info)
	require.Positive(t, roles["replica"], info)

	// ROLE tells what INFO replication tells: a master, its offset, and
	// each node keeping copies of its partitions with that node's offset.
	role, err := c1.Do(ctx, "ROLE").Slice()
	require.NoError(t, err)
	require.Len(t, role, 3)
	require.Equal(t, "master", role[0])
	require.Positive(t, role[1].(int64))
	replicas := role[2].([]any)
	require.NotEmpty(t, replicas)
	for _, r := range replicas {
		entry := r.([]any)
		require.Regexp(t, `^n\d$`, entry[0])
		require.NotEqual(t, nodes[0].Config().NodeID, entry[0])
		require.Equal(t, "0", entry[1])
		_, err := strconv.ParseUint(entry[2].(string), 10, 64)
		require.NoError(t, err)
	}

	ci := c1.ClusterInfo(ctx).Val()
	require.Equal(t, "ok", infoField(ci, "cluster_state"))
	require.Equal(t, "0", infoField(ci, "cluster_slots_fail"))
	require.Equal(t, "16384", infoField(ci, "cluster_slots_ok"))
	epoch, err := strconv.Atoi(infoField(ci, "cluster_current_epoch"))
	require.NoError(t, err)
	require.Positive(t, epoch)
}

// A partition with no live copy (one copy, its node stopped) makes CLUSTER
// INFO answer cluster_state:fail with its slots in cluster_slots_fail.
func TestClusterInfoFailsWhenAPartitionIsUnavailable(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	cl := clustertest.Start(t, 3, clustertest.Options{})
	ctx := context.Background()
	nodes := cl.Running()
	c1 := nodeClient(t, nodes[0])
	require.Equal(t, "ok", infoField(c1.ClusterInfo(ctx).Val(), "cluster_state"))
	cl.Stop(nodes[2])
	var ci string
	cl.Eventually(60*time.Second, "the stopped node's partition declared unavailable", func() bool {
		ci = c1.ClusterInfo(ctx).Val()
		return infoField(ci, "cluster_state") == "fail"
	})
	fail, err := strconv.Atoi(infoField(ci, "cluster_slots_fail"))
	require.NoError(t, err)
	require.Positive(t, fail)
	ok, err := strconv.Atoi(infoField(ci, "cluster_slots_ok"))
	require.NoError(t, err)
	require.Equal(t, 16384, ok+fail, ci)
}

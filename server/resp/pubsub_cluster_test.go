package resp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/clustertest"
)

func nodeClient(t *testing.T, nd *server.Node) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: nd.RESPAddr().String(), DialTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// receiveWithin reads the subscription's next message or push.
func receiveWithin(t *testing.T, ps *redis.PubSub, d time.Duration) any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(d))
	defer cancel()
	m, err := ps.Receive(ctx)
	require.NoError(t, err)
	return m
}

// linksUp waits until a message published on every node reaches a
// subscriber of sub on the node it is connected to: the bus links between
// the nodes are connected (they are dialled when the map is applied; a
// message published before is dropped, as pub/sub is fire-and-forget).
func linksUp(t *testing.T, cl *clustertest.Cluster, ps *redis.PubSub, probe string) {
	t.Helper()
	ctx := context.Background()
	for _, nd := range cl.Running() {
		c := nodeClient(t, nd)
		mark := "probe:" + nd.Config().NodeID
		testscale.Eventually(t, 30*time.Second, 50*time.Millisecond, "the bus link from "+nd.Config().NodeID, func() bool {
			require.NoError(t, c.Publish(ctx, probe, mark).Err())
			for {
				rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				m, err := ps.ReceiveMessage(rctx)
				cancel()
				if err != nil {
					return false
				}
				if m.Channel == probe && m.Payload == mark {
					return true
				}
			}
		})
	}
	// Drain the probes still in flight: a publish is fire-and-forget, the
	// Eventually above may have sent several.
	require.NoError(t, ps.Unsubscribe(ctx, probe))
	for {
		m := receiveWithin(t, ps, 10*time.Second)
		if s, ok := m.(*redis.Subscription); ok && s.Kind == "unsubscribe" && s.Channel == probe {
			return
		}
	}
}

// R-DS-7 (issue #14 item 1): a subscriber on node 1 receives a message
// published once on each of the 3 nodes — 3 of 3, each once — and PUBSUB
// answers for the whole cluster from any node.
func TestClusterPublishReachesEveryNode(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	cl := clustertest.Start(t, 3, clustertest.Options{})
	ctx := context.Background()
	nodes := cl.Running()
	sub := nodeClient(t, nodes[0])
	ps := sub.Subscribe(ctx, "probe", "news")
	t.Cleanup(func() { _ = ps.Close() })
	for range 2 {
		_, ok := receiveWithin(t, ps, 10*time.Second).(*redis.Subscription)
		require.True(t, ok)
	}
	require.NoError(t, ps.PSubscribe(ctx, "ne*"))
	_, ok := receiveWithin(t, ps, 10*time.Second).(*redis.Subscription)
	require.True(t, ok)
	linksUp(t, cl, ps, "probe")

	for i, nd := range nodes {
		n, err := nodeClient(t, nd).Publish(ctx, "news", fmt.Sprint("m", i)).Result()
		require.NoError(t, err)
		// Redis Cluster's reply: the subscribers of the node published on.
		if i == 0 {
			require.Equal(t, int64(2), n) // the channel and the pattern subscription
		} else {
			require.Equal(t, int64(0), n)
		}
	}
	// A last message from each node closes its series: a node forwards in
	// publish order, so anything duplicated arrives before its end. (One
	// end published on node 1 alone would not do: node 1 delivers it at
	// once, while the messages of nodes 2 and 3 may still be on the bus.)
	for i, nd := range nodes {
		require.NoError(t, nodeClient(t, nd).Publish(ctx, "news", fmt.Sprint("end", i)).Err())
	}
	got := map[string]int{}
	ended := func() bool {
		for i := range nodes {
			if got[fmt.Sprint("ne*|end", i)] != 1 || got[fmt.Sprint("|end", i)] != 1 {
				return false
			}
		}
		return true
	}
	for !ended() {
		switch m := receiveWithin(t, ps, 10*time.Second).(type) {
		case *redis.Message:
			got[m.Pattern+"|"+m.Payload]++
		default:
			t.Fatalf("unexpected %T %v", m, m)
		}
	}
	require.Equal(t, map[string]int{"|m0": 1, "|m1": 1, "|m2": 1, "ne*|m0": 1, "ne*|m1": 1, "ne*|m2": 1,
		"|end0": 1, "ne*|end0": 1, "|end1": 1, "ne*|end1": 1, "|end2": 1, "ne*|end2": 1}, got)

	// PUBSUB over the cluster, asked on another node than the subscriber's.
	other := nodeClient(t, nodes[2])
	require.Equal(t, map[string]int64{"news": 1, "none": 0}, other.PubSubNumSub(ctx, "news", "none").Val())
	require.Equal(t, []string{"news"}, other.PubSubChannels(ctx, "n*").Val())
	require.Equal(t, int64(1), other.PubSubNumPat(ctx).Val())
	// A second subscriber on node 3 counts too.
	ps3 := other.Subscribe(ctx, "news")
	t.Cleanup(func() { _ = ps3.Close() })
	_ = receiveWithin(t, ps3, 10*time.Second)
	require.Equal(t, map[string]int64{"news": 2}, nodeClient(t, nodes[1]).PubSubNumSub(ctx, "news").Val())
}

// R-RESP-3 (issue #14 item 2): notify-keyspace-events set on one node
// applies on every node (and on a node that joins later); a subscriber on
// node 1 gets each of 30 SETs made through a cluster client exactly once,
// whichever node owns the key, and replicas do not double them.
func TestClusterKeyspaceNotifications(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	cl := clustertest.Start(t, 3, clustertest.Options{Mutate: func(c *server.Config) { c.ReplicationFactor = 2 }})
	ctx := context.Background()
	nodes := cl.Running()
	require.NoError(t, nodeClient(t, nodes[1]).ConfigSet(ctx, "notify-keyspace-events", "KEA").Err())
	for _, nd := range nodes {
		c := nodeClient(t, nd)
		testscale.Eventually(t, 30*time.Second, 20*time.Millisecond, "the setting on "+nd.Config().NodeID, func() bool {
			return c.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"] == "AKE"
		})
	}
	sub := nodeClient(t, nodes[0])
	ps := sub.PSubscribe(ctx, "__keyevent@0__:*")
	t.Cleanup(func() { _ = ps.Close() })
	_ = receiveWithin(t, ps, 10*time.Second)
	require.NoError(t, ps.Subscribe(ctx, "probe"))
	_ = receiveWithin(t, ps, 10*time.Second)
	linksUp(t, cl, ps, "probe")

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].RESPAddr().String()}, DialTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = cc.Close() })
	owners := map[string]bool{}
	for i := range 30 {
		k := fmt.Sprint("nk:", i)
		owners[cl.Owner(k).Config().NodeID] = true
		require.NoError(t, cc.Set(ctx, k, i, 0).Err())
	}
	require.Len(t, owners, 3, "the keys span every owner")
	// A closing write on node 1's own key: every earlier event of node 1
	// precedes it; the other owners' are waited for by count.
	last := cl.KeyOwnedBy(nodes[0].Config().NodeID, "nk-last:")
	require.NoError(t, cc.Set(ctx, last, 1, 0).Err())
	got := map[string]int{}
	deadline := time.Now().Add(testscale.D(20 * time.Second))
	for len(got) < 31 && time.Now().Before(deadline) {
		m, ok := receiveWithin(t, ps, 20*time.Second).(*redis.Message)
		require.True(t, ok)
		require.Equal(t, "__keyevent@0__:set", m.Channel)
		got[m.Payload]++
	}
	// Anything doubled would have come by now with the replicas' applies:
	// one more write on each node, read back, closes the window.
	for _, nd := range nodes {
		k := cl.KeyOwnedBy(nd.Config().NodeID, "nk-close:")
		require.NoError(t, cc.Del(ctx, k).Err())
		require.NoError(t, cc.Set(ctx, k, 1, 0).Err())
		for {
			m := receiveWithin(t, ps, 20*time.Second).(*redis.Message)
			if m.Payload == k && m.Channel == "__keyevent@0__:set" {
				break
			}
			got[m.Payload]++
		}
	}
	require.Len(t, got, 31)
	for k, n := range got {
		require.Equal(t, 1, n, "notifications of %s", k)
	}

	// A node that joins learns the cluster's setting.
	n4 := cl.AddNode()
	c4 := nodeClient(t, n4)
	testscale.Eventually(t, 30*time.Second, 20*time.Millisecond, "the setting on the joiner", func() bool {
		return c4.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"] == "AKE"
	})
}

// Redis 7's sharded pub/sub (issue #14 item 1): SSUBSCRIBE and SPUBLISH are
// served by the channel's slot owner (MOVED elsewhere); when the slot's
// partition moves to a node that joined, its subscribers get Redis's
// "sunsubscribe" push, and those of the partitions that stayed do not.
func TestShardedPubSubFollowsTheSlot(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	cl := clustertest.Start(t, 3, clustertest.Options{Partitions: 6})
	ctx := context.Background()
	// One shard channel per segment, each subscribed on its owner (a
	// connection per node).
	m := cl.Map()
	channels := map[int]string{} // segment → channel
	for i := 0; len(channels) < m.TotalSegments && i < 1_000_000; i++ {
		ch := fmt.Sprint("sch:", i)
		if seg := placementSegment(ch, m); channels[seg] == "" {
			channels[seg] = ch
		}
	}
	require.Len(t, channels, m.TotalSegments)
	subs := map[string]*redis.PubSub{} // node → its shard subscriber
	ownerOf := map[string]string{}     // channel → node at subscription
	for _, ch := range channels {
		owner := cl.Owner(ch)
		id := owner.Config().NodeID
		ownerOf[ch] = id
		if subs[id] == nil {
			subs[id] = nodeClient(t, owner).SSubscribe(ctx, ch)
			t.Cleanup(func() { _ = subs[id].Close() })
		} else {
			require.NoError(t, subs[id].SSubscribe(ctx, ch))
		}
		s, ok := receiveWithin(t, subs[id], 10*time.Second).(*redis.Subscription)
		require.True(t, ok)
		require.Equal(t, "ssubscribe", s.Kind)
		require.Equal(t, ch, s.Channel)
	}
	// Elsewhere: MOVED to the owner. On the owner: delivered as
	// "smessage"; a PUBLISH does not reach a shard channel.
	ch := channels[0]
	owner := cl.Owner(ch)
	err := nodeClient(t, cl.NonOwner(ch)).Do(ctx, "SPUBLISH", ch, "x").Err()
	require.ErrorContains(t, err, "MOVED ")
	require.True(t, strings.HasSuffix(err.Error(), owner.RESPAddr().String()), err.Error())
	err = nodeClient(t, cl.NonOwner(ch)).Do(ctx, "SSUBSCRIBE", ch).Err()
	require.ErrorContains(t, err, "MOVED ")
	oc := nodeClient(t, owner)
	require.Equal(t, int64(0), oc.Publish(ctx, ch, "plain").Val())
	require.Equal(t, int64(1), oc.SPublish(ctx, ch, "hello").Val())
	msg, ok := receiveWithin(t, subs[owner.Config().NodeID], 10*time.Second).(*redis.Message)
	require.True(t, ok)
	require.Equal(t, "hello", msg.Payload)
	require.Equal(t, ch, msg.Channel)
	// Through a cluster client: routed to each channel's owner.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{cl.Running()[0].RESPAddr().String()}, DialTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = cc.Close() })
	for seg := 0; seg < m.TotalSegments; seg += max(1, m.TotalSegments/16) {
		ch := channels[seg]
		require.Equal(t, int64(1), cc.SPublish(ctx, ch, "routed").Val(), ch)
		msg, ok := receiveWithin(t, subs[ownerOf[ch]], 10*time.Second).(*redis.Message)
		require.True(t, ok)
		require.Equal(t, "routed", msg.Payload)
		require.Equal(t, ch, msg.Channel)
	}

	n4 := cl.AddNode()
	id4 := cluster.NodeID(n4.Config().NodeID)
	cl.Rebalance()
	cl.Eventually(90*time.Second, "the rebalance over: the joiner owns a partition, nothing migrating", func() bool {
		// Between two steps of a rebalance nothing migrates either: only
		// the leader's status says the plan is done.
		leader := cl.Leader()
		if leader == nil {
			return false
		}
		if rs := leader.Cluster().RebalanceStatus(); rs.Active || rs.Pending {
			return false
		}
		m := cl.Map()
		owns := false
		for _, p := range m.Partitions {
			if p.Migrating() {
				return false
			}
			owns = owns || p.ActiveOwner == id4
		}
		return owns
	})
	cl.WaitConverged(30 * time.Second)   // Owner below reads one node's map: every node's is the final one
	want := map[string]map[string]bool{} // node → the channels that left it
	for _, ch := range channels {
		if now := cl.Owner(ch).Config().NodeID; now != ownerOf[ch] {
			if want[ownerOf[ch]] == nil {
				want[ownerOf[ch]] = map[string]bool{}
			}
			want[ownerOf[ch]][ch] = true
		}
	}
	require.NotEmpty(t, want, "the joiner took segments")
	// A sunsubscribe must be for a channel whose slot left the node. A
	// rebalance may still take a step after the wait above (a leader that
	// changed resumes the plan from the log): a channel not in want yet
	// must then leave its node within a deadline.
	movedAway := func(ch, from string) bool {
		if want[from][ch] {
			return true
		}
		for deadline := time.Now().Add(testscale.D(20 * time.Second)); time.Now().Before(deadline); {
			if cl.Owner(ch).Config().NodeID != from {
				return true
			}
			time.Sleep(50 * time.Millisecond) // poll interval
		}
		return false
	}
	for id, chans := range want {
		got := map[string]bool{}
		for len(got) < len(chans) {
			s, ok := receiveWithin(t, subs[id], 20*time.Second).(*redis.Subscription)
			require.True(t, ok)
			require.Equal(t, "sunsubscribe", s.Kind)
			require.True(t, movedAway(s.Channel, id), "sunsubscribe of %s, whose slot did not leave %s", s.Channel, id)
			got[s.Channel] = true
		}
	}
	// A channel that stayed keeps its subscriber: a slot not served for a
	// moment (a cut-over fence, a map applied twice) is not a move.
	stayed := 0
	for _, ch := range channels {
		id := ownerOf[ch]
		if cl.Owner(ch).Config().NodeID != id {
			continue
		}
		require.Equal(t, int64(1), cc.SPublish(ctx, ch, "still").Val(), ch)
		var got any
		for {
			got = receiveWithin(t, subs[id], 10*time.Second)
			sub, isSub := got.(*redis.Subscription)
			if !isSub || sub.Kind != "sunsubscribe" || !movedAway(sub.Channel, id) {
				break // a late move's push is skipped; anything else is checked
			}
		}
		msg, ok := got.(*redis.Message)
		require.True(t, ok, "the subscriber of %s, which stayed on %s, got %#v", ch, id, got)
		require.Equal(t, "still", msg.Payload)
		require.Equal(t, ch, msg.Channel)
		stayed++
	}
	require.NotZero(t, stayed, "no channel stayed on its node")
}

func placementSegment(key string, m *cluster.PartitionMap) int {
	return int(placement.SegmentOf(key, m.TotalSegments))
}

// The keyspace events of a script of commands equal redis-server's, in
// order — SPOP and SINTERSTORE / SUNIONSTORE / SDIFFSTORE included (issue
// #14 item 2: they used to be "srem" and "sadd"), a collection emptied by
// its command notifies the command, then "del", the string writes Redis
// names after themselves (INCRBY, APPEND, SETRANGE, SETBIT, PFADD, PFMERGE
// as "pfadd"; they used to be "set") or follows with "expire" (SET … EX,
// SETEX), COPY's "copy_to", the collection commands logged as another
// (HINCRBY as HSET, ZINCRBY as ZADD; LINSERT and XSETID published nothing)
// and those named by what they did (ZPOPMIN/ZPOPMAX/ZMPOP, ZREMRANGEBY*,
// ZADD INCR, LMPOP, the XGROUP subcommands).
func TestKeyspaceEventNamesAsRedis(t *testing.T) {
	redisAddr := startRedis(t, false)
	n := startNode(t)
	script := [][]any{
		{"SADD", "{s}a", "x", "y", "z"}, {"SADD", "{s}b", "y"}, {"SPOP", "{s}a"}, {"SPOP", "{s}b", "5"},
		{"SADD", "{s}b", "y", "z"}, {"SINTERSTORE", "{s}d", "{s}a", "{s}b"}, {"SUNIONSTORE", "{s}d", "{s}a", "{s}b"},
		{"SDIFFSTORE", "{s}d", "{s}b", "{s}b"}, {"SADD", "{s}d", "q"}, {"SREM", "{s}d", "q"},
		{"HSET", "{s}h", "f", "v"}, {"HDEL", "{s}h", "f"}, {"RPUSH", "{s}l", "a"}, {"LPOP", "{s}l"},
		{"ZADD", "{s}z", "1", "m"}, {"ZREM", "{s}z", "m"}, {"SET", "{s}k", "v"}, {"DEL", "{s}k"},
		// String writes Redis names after the command, and SET's expiry
		// as a second event (not with KEEPTTL).
		{"SET", "{s}t", "v", "EX", "100"}, {"SETEX", "{s}t", "100", "v"}, {"PSETEX", "{s}t", "100000", "v"},
		{"SET", "{s}t", "v", "PXAT", "99999999999999"}, {"SET", "{s}t", "w", "KEEPTTL"}, {"GETSET", "{s}t", "x"},
		{"INCR", "{s}n"}, {"DECR", "{s}n"}, {"INCRBY", "{s}n", "5"}, {"DECRBY", "{s}n", "2"}, {"INCRBYFLOAT", "{s}n", "1.5"},
		{"APPEND", "{s}k", "ab"}, {"SETRANGE", "{s}k", "5", "cd"}, {"SETBIT", "{s}k", "3", "1"},
		{"BITFIELD", "{s}k", "SET", "u8", "0", "9"}, {"BITFIELD", "{s}k", "GET", "u8", "0"},
		{"PFADD", "{s}p", "a", "b"}, {"PFADD", "{s}p2", "c"}, {"PFCOUNT", "{s}p"}, {"EXPIRE", "{s}p2", "1000"},
		{"PFMERGE", "{s}p2", "{s}p"}, {"PFMERGE", "{s}p3", "{s}p"}, {"BITOP", "OR", "{s}bo", "{s}k", "{s}t"},
		{"MSET", "{s}m1", "1", "{s}m2", "2"}, {"MSETNX", "{s}m3", "1"}, {"SETNX", "{s}m4", "1"}, {"SET", "{s}m4", "2", "GET"},
		{"GETEX", "{s}m4", "EX", "100"}, {"GETEX", "{s}m4", "PERSIST"}, {"GETDEL", "{s}m4"}, {"COPY", "{s}m3", "{s}m7"},
		{"EXPIRE", "{s}m7", "100"}, {"PEXPIRE", "{s}m7", "100000"}, {"EXPIREAT", "{s}m7", "99999999999"}, {"PERSIST", "{s}m7"},
		{"UNLINK", "{s}m7", "{s}m1"},
		{"RPUSH", "{s}L", "3", "1", "2"}, {"LMOVE", "{s}L", "{s}L3", "LEFT", "RIGHT"}, {"RPOPLPUSH", "{s}L", "{s}L3"},
		{"LINSERT", "{s}L3", "BEFORE", "3", "x"}, {"LSET", "{s}L3", "0", "y"}, {"LTRIM", "{s}L3", "0", "1"}, {"LREM", "{s}L3", "0", "y"},
		{"LPUSHX", "{s}L3", "z"}, {"RPOP", "{s}L3", "5"},
		{"HSET", "{s}H", "a", "1"}, {"HINCRBY", "{s}H", "a", "2"}, {"HINCRBYFLOAT", "{s}H", "b", "1.5"}, {"HSETNX", "{s}H", "c", "1"},
		{"HDEL", "{s}H", "a", "b", "c"}, {"ZADD", "{s}Z", "1", "a", "2", "b"}, {"ZINCRBY", "{s}Z", "1", "a"}, {"ZREM", "{s}Z", "a", "b"},
		{"XADD", "{s}X", "1-1", "f", "v"}, {"XADD", "{s}X", "2-1", "f", "v"}, {"XTRIM", "{s}X", "MAXLEN", "1"}, {"XDEL", "{s}X", "2-1"},
		{"XSETID", "{s}X", "5-0"}, {"GEOADD", "{s}G", "13.36", "38.11", "p"}, {"DEL", "{s}G", "{s}X"},
		// Named by what the command did, not by its op or logged effect.
		{"ZADD", "{s}Z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e", "6", "f"}, {"ZADD", "{s}Z", "INCR", "1", "b"},
		{"ZPOPMIN", "{s}Z"}, {"ZPOPMAX", "{s}Z", "2"}, {"ZMPOP", "1", "{s}Z", "MAX"}, {"ZREMRANGEBYRANK", "{s}Z", "0", "0"},
		{"ZREMRANGEBYSCORE", "{s}Z", "0", "0"}, {"ZADD", "{s}Z5", "0", "m", "0", "n"}, {"ZREMRANGEBYLEX", "{s}Z5", "[m", "[m"},
		{"ZPOPMIN", "{s}Z", "5"}, {"RPUSH", "{s}L4", "a", "b", "c"}, {"LMPOP", "1", "{s}L4", "RIGHT"}, {"LMPOP", "1", "{s}L4", "LEFT", "5"},
		{"XADD", "{s}X2", "1-1", "f", "v"}, {"XGROUP", "CREATE", "{s}X2", "g", "0"}, {"XGROUP", "CREATECONSUMER", "{s}X2", "g", "c"},
		{"XGROUP", "SETID", "{s}X2", "g", "$"}, {"XGROUP", "DELCONSUMER", "{s}X2", "g", "c"}, {"XGROUP", "DESTROY", "{s}X2", "g"},
		{"XGROUP", "CREATE", "{s}X3", "g", "$", "MKSTREAM"}, {"DEL", "{s}X2", "{s}X3"},
		{"SET", "{s}end", "1"},
	}
	events := func(addr string) []string {
		ctx := context.Background()
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		require.NoError(t, c.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err())
		ps := c.PSubscribe(ctx, "__keyevent@0__:*")
		defer ps.Close()
		_ = receiveWithin(t, ps, 10*time.Second)
		for _, cmd := range script {
			_ = c.Do(ctx, cmd...).Err()
		}
		var out []string
		for {
			m, ok := receiveWithin(t, ps, 10*time.Second).(*redis.Message)
			require.True(t, ok)
			out = append(out, strings.TrimPrefix(m.Channel, "__keyevent@0__:")+" "+m.Payload)
			if m.Payload == "{s}end" {
				return out
			}
		}
	}
	require.Equal(t, events(redisAddr), events(n.RESPAddr().String()))
}

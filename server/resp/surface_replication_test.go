package resp_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
	"github.com/zaris-io/zaris/server/store"
)

// recordOf is key's record as node holds it (its value, or its collection's
// canonical encoding), read from a snapshot of its segment: a replica's
// segment answers no reads.
func recordOf(n *server.Node, key string) (store.Record, bool) {
	for _, r := range n.Store().SegmentFor(key).Snapshot().Records {
		if r.Key() == key {
			return r, true
		}
	}
	return store.Record{}, false
}

// The bitmap, HyperLogLog and keyspace writes of issue #13 item 5 leave
// the same value on a replica as on the owner: each is replicated as its
// resolved effect (a whole string value, a copied or restored record, the
// list SORT stored).
func TestSurfaceWritesReplicate(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	_, owner, replicas, tag := syncCluster(t, 3, 2, server.WriteQuorumAll)
	replica := replicas[0]
	rc := newClient(t, owner)
	ctx := ctxT(t)
	k := func(s string) string { return tag + s }
	do := func(args ...any) {
		t.Helper()
		// TRYAGAIN: a slot of the young cluster is still being placed; the
		// command changed nothing and is sent again.
		deadline := time.Now().Add(testscale.D(20 * time.Second))
		for {
			err := rc.Do(ctx, args...).Err()
			if err != nil && strings.HasPrefix(err.Error(), "TRYAGAIN") && time.Now().Before(deadline) {
				continue
			}
			require.NoError(t, err, "%v", args)
			return
		}
	}
	do("SETBIT", k("bits"), 100, 1)
	do("SETBIT", k("bits"), 3, 1)
	do("BITFIELD", k("bf"), "SET", "i8", "#2", -100, "OVERFLOW", "SAT", "INCRBY", "u4", 0, 99)
	do("SET", k("s1"), "\x0f\xf0")
	do("BITOP", "XOR", k("bop"), k("s1"), k("bits"))
	for i := range 30 {
		do("PFADD", k("h1"), "a"+strconv.Itoa(i), "b"+strconv.Itoa(i))
	}
	do("PFADD", k("h2"), "x", "y", "z")
	do("PFMERGE", k("hm"), k("h1"), k("h2"))
	do("PFCOUNT", k("hm")) // caches the count in the value
	do("RPUSH", k("list"), "3", "1", "2")
	do("COPY", k("list"), k("copy"))
	do("SORT", k("list"), "STORE", k("sorted"))
	do("COPY", k("bits"), k("copy"), "REPLACE")
	do("HSET", k("hash"), "f1", "v1", "f2", "v2")
	do("RESTORE", k("restored"), 0, rc.Dump(ctx, k("hash")).Val())
	do("RESTORE", k("restored"), 0, rc.Dump(ctx, k("list")).Val(), "REPLACE")
	do("RESTORE", k("rstring"), 60000, rc.Dump(ctx, k("s1")).Val())
	do("XADD", k("stream"), "1-1", "f", "v")
	do("XGROUP", "CREATE", k("stream"), "g", "0")
	do("XREADGROUP", "GROUP", "g", "alice", "STREAMS", k("stream"), ">")
	do("RESTORE", k("rstream"), 0, rc.Dump(ctx, k("stream")).Val())

	keys := []string{"bits", "bf", "bop", "h1", "h2", "hm", "list", "copy", "sorted", "hash", "restored", "rstring", "stream", "rstream"}
	for _, name := range keys {
		key := k(name)
		require.True(t, replicated(owner, replica, key), "%s acknowledged before the replica applied it", key)
		want, ok := recordOf(owner, key)
		require.True(t, ok, key)
		got, ok := recordOf(replica, key)
		require.True(t, ok, "the replica lacks %s", key)
		require.Equal(t, want.Kind, got.Kind, key)
		require.True(t, bytes.Equal(want.Value(), got.Value()), "%s differs on the replica:\nowner   %q\nreplica %q", key, want.Value(), got.Value())
	}
	require.Equal(t, int64(1), rc.GetBit(ctx, k("copy"), 100).Val())
	require.Equal(t, []string{"1", "2", "3"}, rc.LRange(ctx, k("sorted"), 0, -1).Val())
}

// WAIT counts the replicas that applied the connection's writes: under
// async replication it returns 1 once the replica has applied them, and
// with the replica gone it answers 0 when the timeout passes.
func TestWaitCountsReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	c := clustertest.Start(t, 3, clustertest.Options{Mutate: func(cfg *server.Config) {
		cfg.ReplicationFactor = 2
		cfg.Timings.MemberGrace = time.Minute
	}})
	m := c.Map()
	require.NotNil(t, m)
	p := m.Partitions[0]
	tag := ""
	for i := 0; tag == ""; i++ {
		cand := "{" + strconv.Itoa(i) + "}"
		if s := int(placement.SegmentOf(cand, m.TotalSegments)); s >= p.FirstSegment && s <= p.LastSegment {
			tag = cand
		}
	}
	owner := c.Node(string(p.ActiveOwner))
	replica := c.Node(string(p.ReplicaNodeIDs[0]))
	c.Eventually(15*time.Second, "the replication session streaming", func() bool {
		st := owner.Replication().ReplicaStatus(p.Identity)
		return len(st) == 1 && st[0].State == "streaming"
	})
	conn := dialRaw(t, owner.RESPAddr().String())
	require.Equal(t, ":0\r\n", conn.do("WAIT", "1", "100"), "no write yet: nothing to wait for")
	require.Equal(t, ":0\r\n", conn.do("SETBIT", tag+"w", "7", "1"))
	require.Equal(t, ":1\r\n", conn.do("WAIT", "1", strconv.Itoa(int(testscale.D(10*time.Second)/time.Millisecond))))
	require.True(t, replicated(owner, replica, tag+"w"), "WAIT answered 1 before the replica applied the write")
	require.Equal(t, ":1\r\n", conn.do("WAIT", "0", "0"), "WAIT 0 answers the replicas that have applied, at once")

	c.Stop(replica)
	require.Equal(t, ":5\r\n", conn.do("APPEND", tag+"w2", "hello"))
	began := time.Now()
	require.Equal(t, ":0\r\n", conn.do("WAIT", "1", "300"))
	require.GreaterOrEqual(t, time.Since(began), 300*time.Millisecond, "WAIT returned before its timeout")

	// CLIENT UNBLOCK ends a WAIT that would wait for good: TIMEOUT answers
	// the count so far, ERROR the UNBLOCKED error.
	id := strings.Trim(conn.do("CLIENT", "ID"), ":\r\n")
	admin := dialRaw(t, owner.RESPAddr().String())
	for reason, want := range map[string]string{"TIMEOUT": ":0\r\n", "ERROR": "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"} {
		conn.send(cmd("WAIT", "1", "0"))
		// When the WAIT starts waiting is not observable: unblock until it takes.
		deadline := time.Now().Add(testscale.D(10 * time.Second))
		for admin.do("CLIENT", "UNBLOCK", id, reason) != ":1\r\n" {
			require.False(t, time.Now().After(deadline), "the WAIT never became unblockable")
			time.Sleep(5 * time.Millisecond)
		}
		require.Equal(t, want, conn.reply(), "WAIT unblocked with "+reason)
	}

	// A client that goes away while its WAIT waits for good does not leave
	// the wait behind (it held the node's shutdown).
	blockedClients := func() string {
		for _, line := range strings.Split(admin.do("INFO", "clients"), "\r\n") {
			if v, ok := strings.CutPrefix(line, "blocked_clients:"); ok {
				return v
			}
		}
		return "?"
	}
	gone := dialRaw(t, owner.RESPAddr().String())
	require.Equal(t, ":1\r\n", gone.do("APPEND", tag+"w3", "x"))
	gone.send(cmd("WAIT", "1", "0"))
	c.Eventually(10*time.Second, "the WAIT blocking", func() bool { return blockedClients() == "1" })
	require.NoError(t, gone.nc.Close())
	c.Eventually(10*time.Second, "the WAIT of the client gone ending", func() bool { return blockedClients() == "0" })
}

// In a multi-node cluster the multi-key commands of issue #13 item 5 run
// when all their keys are on the node reached and are CROSSSLOT otherwise;
// SORT's BY and GET patterns, which could name keys of any node, are
// refused with Redis Cluster's errors (BY without '*' still works).
func TestSurfaceMultiKeyOnThreeNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	cl := clustertest.Start(t, 3, clustertest.Options{})
	first := "sk:0"
	owner := cl.Owner(first)
	var same, foreign string
	for i := 1; same == "" || foreign == ""; i++ {
		k := "sk:" + strconv.Itoa(i)
		switch {
		case placement.Slot(k) == placement.Slot(first):
		case cl.Owner(k) == owner && same == "":
			same = k
		case cl.Owner(k) != owner && foreign == "":
			foreign = k
		}
	}
	r := dialRaw(t, owner.RESPAddr().String())
	cross := "-CROSSSLOT Keys in request don't hash to the same slot\r\n"
	require.Equal(t, "+OK\r\n", r.do("SET", first, "\x0f"))
	require.Equal(t, ":1\r\n", r.do("BITOP", "NOT", same, first))
	require.Equal(t, "$1\r\n\xf0\r\n", r.do("GET", same))
	require.Equal(t, cross, r.do("BITOP", "AND", foreign, first))
	require.Equal(t, cross, r.do("LCS", first, foreign))
	require.Equal(t, ":1\r\n", r.do("PFADD", "{"+first+"}h", "a"))
	require.Equal(t, cross, r.do("PFMERGE", foreign, "{"+first+"}h"))
	require.Equal(t, cross, r.do("PFCOUNT", "{"+first+"}h", foreign))
	require.Equal(t, ":1\r\n", r.do("COPY", first, "{"+same+"}c"))
	require.Equal(t, cross, r.do("COPY", first, foreign))
	require.Equal(t, ":2\r\n", r.do("RPUSH", "{"+first+"}l", "2", "1"))
	require.Equal(t, "*2\r\n$1\r\n1\r\n$1\r\n2\r\n", r.do("SORT", "{"+first+"}l"))
	require.Equal(t, "*2\r\n$1\r\n2\r\n$1\r\n1\r\n", r.do("SORT", "{"+first+"}l", "BY", "nosort"))
	require.Equal(t, "-ERR BY option of SORT denied in Cluster mode.\r\n", r.do("SORT", "{"+first+"}l", "BY", "w_*"))
	require.Equal(t, "-ERR GET option of SORT denied in Cluster mode.\r\n", r.do("SORT", "{"+first+"}l", "GET", "#"))
	require.Equal(t, cross, r.do("SORT", "{"+first+"}l", "STORE", foreign))
	require.Equal(t, ":2\r\n", r.do("SORT", "{"+first+"}l", "STORE", "{"+same+"}s"))
	require.Equal(t, ":0\r\n", r.do("EXISTS", foreign), "a refused command wrote nothing")
}

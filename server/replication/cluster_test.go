package replication_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/clustertest"
	"github.com/zaris-io/zaris/server/store"
)

// Tests of replication on real clusters (server/clustertest): 3 nodes with
// replication factor 2 plan six partitions — every node owns two and
// replicates two. The tests follow the partition of segment 0 (n1 owns
// it, n2 replicates it) and write only its keys (in). Every test reads the
// replica's copy straight from its store: a replica segment answers Moved
// to clients.

const waitFor = 15 * time.Second

func start(t *testing.T, nodes int, mutate func(*server.Config)) *clustertest.Cluster {
	t.Helper()
	return clustertest.Start(t, nodes, clustertest.Options{NoRESP: true, Mutate: func(c *server.Config) {
		c.ReplicationFactor = 2
		if mutate != nil {
			mutate(c)
		}
	}})
}

// group returns the owner and replicas of the partition of segment 0.
func group(t *testing.T, c *clustertest.Cluster) (p cluster.Partition, owner *server.Node, replicas []*server.Node) {
	t.Helper()
	m := c.Map()
	if m == nil || len(m.Partitions) == 0 {
		t.Fatalf("want a map: %+v", m)
	}
	p = m.Partitions[0]
	for _, r := range p.ReplicaNodeIDs {
		replicas = append(replicas, c.Node(string(r)))
	}
	return p, c.Node(string(p.ActiveOwner)), replicas
}

// inSync reports whether replica holds exactly the owner's content on every
// segment of p (same revision, same live-content digest).
func inSync(p cluster.Partition, owner, replica *server.Node) bool {
	for seg := p.FirstSegment; seg <= p.LastSegment; seg++ {
		o, r := owner.Store().Segment(uint16(seg)), replica.Store().Segment(uint16(seg))
		if o.Revision() != r.Revision() || o.Digest() != r.Digest() {
			return false
		}
	}
	return true
}

func waitInSync(t *testing.T, c *clustertest.Cluster, p cluster.Partition, owner, replica *server.Node) {
	t.Helper()
	c.Eventually(waitFor, "the replica's copy equal to the owner's", func() bool { return inSync(p, owner, replica) })
}

// --- a bare native-protocol client: exactly what one node answers ---

type client struct {
	t  *testing.T
	nc net.Conn
	fr *wire.FrameReader
	id uint32
}

func dial(t *testing.T, nd *server.Node) *client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", nd.ClientAddr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	c := &client{t: t, nc: nc, fr: wire.NewFrameReader(nc, wire.DefaultMaxFrameSize)}
	f := c.roundTrip(wire.OpHandshake, wire.AppendHandshakeRequest(nil, wire.HandshakeRequest{
		ProtocolVersion: wire.ProtocolVersion, Store: nd.Config().Store, ClientName: "replication-test"}))
	var hr wire.HandshakeResponse
	if err := wire.DecodeHandshakeResponse(f.Body, &hr); err != nil || hr.Status != kv.StatusSuccess {
		t.Fatalf("handshake: %v %+v", err, hr)
	}
	return c
}

func (c *client) roundTrip(op wire.Opcode, body []byte) wire.Frame {
	c.t.Helper()
	c.id++
	_ = c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Write(wire.AppendFrame(nil, c.id, op, 0, body)); err != nil {
		c.t.Fatal(err)
	}
	f, err := c.fr.Next()
	if err != nil {
		c.t.Fatal(err)
	}
	if f.ID != c.id {
		c.t.Fatalf("response %d to request %d", f.ID, c.id)
	}
	f.Body = append([]byte(nil), f.Body...)
	return f
}

func (c *client) result(f wire.Frame) kv.Result {
	c.t.Helper()
	if f.Flags.Has(wire.FlagError) {
		var e wire.ErrorResponse
		if err := wire.DecodeErrorResponse(f.Body, &e); err != nil {
			c.t.Fatal(err)
		}
		return kv.Result{Status: e.Status}
	}
	var r kv.Result
	if err := wire.DecodeResult(f.Body, &r); err != nil {
		c.t.Fatal(err)
	}
	return r
}

func (c *client) put(key, value string, opts *kv.PutOptions) kv.Result {
	if opts == nil {
		opts = &kv.PutOptions{}
	}
	return c.result(c.roundTrip(wire.OpPut, wire.AppendPutRequest(nil, key, []byte(value), opts)))
}

func (c *client) get(key string) kv.Result {
	return c.result(c.roundTrip(wire.OpGet, wire.AppendKeyRequest(nil, key)))
}

func (c *client) del(key string) kv.Result {
	return c.result(c.roundTrip(wire.OpDelete, wire.AppendKeyRequest(nil, key)))
}

func (c *client) expire(key string, ttl time.Duration) kv.Result {
	return c.result(c.roundTrip(wire.OpExpire, wire.AppendExpireRequest(nil, key, ttl)))
}

func (c *client) persist(key string) kv.Result {
	return c.result(c.roundTrip(wire.OpPersist, wire.AppendKeyRequest(nil, key)))
}

func (c *client) cmd(op kv.CmdOp, key string, args ...string) kv.Reply {
	c.t.Helper()
	cmd := kv.NewCmd(op, key, args...)
	f := c.roundTrip(wire.OpCommand, wire.AppendCommandRequest(nil, &cmd))
	if f.Flags.Has(wire.FlagError) {
		var e wire.ErrorResponse
		_ = wire.DecodeErrorResponse(f.Body, &e)
		return kv.Reply{Status: e.Status, Message: e.Message}
	}
	var r kv.Reply
	if err := wire.DecodeReply(f.Body, &r); err != nil {
		c.t.Fatal(err)
	}
	return r
}

func must(t *testing.T, what string, st kv.Status) {
	t.Helper()
	if st != kv.StatusSuccess {
		t.Fatalf("%s: %v", what, st)
	}
}

func clusterStatus(t *testing.T, nd *server.Node) cluster.Status {
	t.Helper()
	body := httpGet(t, nd, "/v1/cluster")
	var st cluster.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func httpGet(t *testing.T, nd *server.Node, path string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + nd.HTTPAddr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return string(b)
}

// replication returns what the owner's /v1/cluster says of replica id.
func replication(t *testing.T, owner *server.Node, id cluster.NodeID) cluster.ReplicaStatus {
	t.Helper()
	for _, p := range clusterStatus(t, owner).Partitions {
		for _, r := range p.Replication {
			if r.Node == id {
				return r
			}
		}
	}
	return cluster.ReplicaStatus{}
}

func id(nd *server.Node) cluster.NodeID { return cluster.NodeID(nd.Config().NodeID) }

// in names a key of partition p: the first of name.0, name.1, … that
// lands in p's segments (the same on every call).
func in(p cluster.Partition, name string) string {
	return key(p, store.DefaultSegments, name+".")
}

func TestOwnerWritesReachTheReplica(t *testing.T) {
	c := start(t, 3, nil)
	p, owner, replicas := group(t, c)
	if len(replicas) != 1 {
		t.Fatalf("RF 2 plans one replica: %+v", p)
	}
	replica := replicas[0]
	cl := dial(t, owner)

	// Plain writes, TTLs, deletes, and every kind of collection command.
	for i := range 200 {
		must(t, "put", cl.put(in(p, "k"+strconv.Itoa(i)), strings.Repeat("v", i), nil).Status)
	}
	must(t, "put with labels", cl.put(in(p, "labelled"), "x", &kv.PutOptions{ContentType: "text/plain", Labels: map[string]string{"a": "b"}}).Status)
	must(t, "overwrite", cl.put(in(p, "k1"), "again", nil).Status)
	must(t, "delete", cl.del(in(p, "k2")).Status)
	must(t, "expire", cl.expire(in(p, "k3"), time.Hour).Status)
	must(t, "persist", cl.persist(in(p, "k3")).Status)
	must(t, "expire", cl.expire(in(p, "k4"), time.Hour).Status)
	must(t, "short ttl", cl.put(in(p, "short"), "gone soon", &kv.PutOptions{TTL: 150 * time.Millisecond}).Status)
	for _, r := range []kv.Reply{
		cl.cmd(kv.CmdHSet, in(p, "h"), "f1", "v1", "f2", "v2"), cl.cmd(kv.CmdHDel, in(p, "h"), "f1"), cl.cmd(kv.CmdHIncrBy, in(p, "h"), "n", "5"),
		cl.cmd(kv.CmdLPush, in(p, "l"), "a", "b", "c"), cl.cmd(kv.CmdRPop, in(p, "l")),
		cl.cmd(kv.CmdSAdd, in(p, "s"), "x", "y"), cl.cmd(kv.CmdSRem, in(p, "s"), "x"),
		cl.cmd(kv.CmdZAdd, in(p, "z"), "1", "one", "2", "two"), cl.cmd(kv.CmdZIncrBy, in(p, "z"), "5", "one"),
		cl.cmd(kv.CmdIncrBy, in(p, "counter"), "41"), cl.cmd(kv.CmdIncrBy, in(p, "counter"), "1"), cl.cmd(kv.CmdAppend, in(p, "k5"), "-tail"),
		cl.cmd(kv.CmdXAdd, in(p, "stream"), "*", "f", "v"), cl.cmd(kv.CmdXAdd, in(p, "stream"), "*", "f", "w"),
		cl.cmd(kv.CmdLPush, in(p, "emptied"), "only"), cl.cmd(kv.CmdLPop, in(p, "emptied")),
	} {
		must(t, "command", r.Status)
	}
	waitInSync(t, c, p, owner, replica)

	// The owner's sweeper expires the short-lived key; the expiry travels
	// as an op (the replica never expires anything by itself).
	c.Eventually(waitFor, "the expiry on the owner", func() bool { return cl.get(in(p, "short")).Status == kv.StatusNotFound })
	waitInSync(t, c, p, owner, replica)
	seg := owner.Store().SegmentFor(in(p, "short"))
	c.Eventually(waitFor, "the expiry applied on the replica", func() bool {
		return replica.Store().Segment(seg.ID()).Revision() == seg.Revision()
	})

	// The replica's copy is replica data (R-MEM-4): not owned, not counted
	// against the cap, not served.
	rs, os := replica.Store().Stats(), owner.Store().Stats()
	if rs.Items != 0 || rs.ReplicaItems != os.Items || os.ReplicaItems != 0 {
		t.Fatalf("accounting: owner %+v, replica %+v", os, rs)
	}
	if st := dial(t, replica).get(in(p, "k10")).Status; st != kv.StatusMoved {
		t.Fatalf("a replica answers Moved to clients, got %v", st)
	}

	// Every segment of the replica follows the owner's history — the empty
	// ones included — which is what the leader counts before a failover.
	c.Eventually(waitFor, "every segment known to follow the owner", func() bool {
		rep := replica.Replication().Possession(cluster.PossessionQuery{Identity: p.Identity, First: p.FirstSegment, Last: p.LastSegment})
		return rep.SyncedSegments(p.ActiveOwner, p.OwnershipGeneration) == p.LastSegment-p.FirstSegment+1 &&
			rep.HeldKeys == int64(owner.Store().Stats().Items)
	})

	// A node outside the group holds nothing of it (the only keys
	// written are the partition's).
	for _, nd := range c.Running() {
		if nd != owner && nd != replica && nd.Store().Stats().ReplicaItems != 0 {
			t.Fatalf("%s, outside the group, holds data", nd.Config().NodeID)
		}
	}

	// Observability: the owner reports the replica streaming with no lag,
	// in /v1/cluster and Prometheus.
	c.Eventually(waitFor, "lag 0 in /v1/cluster", func() bool {
		r := replication(t, owner, id(replica))
		return r.State == "streaming" && r.LagRevisions == 0 && r.OpsShipped > 0 && r.Sessions == 1
	})
	// The gauges are sampled on their own schedule: poll them too.
	wants := []string{
		`zaris_replication_lag_revisions{partition="0",replica="` + string(id(replica)) + `"} 0`,
		`zaris_replication_streaming{partition="0",replica="` + string(id(replica)) + `"} 1`,
	}
	c.Eventually(waitFor, "lag 0 and streaming in /metrics", func() bool {
		metrics := httpGet(t, owner, "/metrics")
		for _, want := range wants {
			if !strings.Contains(metrics, want) {
				return false
			}
		}
		return true
	})
}

func TestReplicaCatchesUpAfterARestart(t *testing.T) {
	cases := []struct {
		name     string
		opLog    int // op-log entries per segment
		writes   int
		snapshot bool
	}{
		{"by operations after its revision", 1024, 300, false},
		{"by snapshot when the op-log no longer reaches back", 4, 300, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := start(t, 3, func(cfg *server.Config) {
				cfg.OpLogMaxOps = tc.opLog
				cfg.Timings.MemberGrace = time.Minute // the replica keeps its slot while it is down
			})
			p, owner, replicas := group(t, c)
			replica := replicas[0]
			cl := dial(t, owner)
			for i := range 50 {
				must(t, "put", cl.put(in(p, "before"+strconv.Itoa(i)), "v", nil).Status)
			}
			waitInSync(t, c, p, owner, replica)
			before := replication(t, owner, id(replica))

			replica = c.Restart(replica, func() {
				// Written while the replica is down: they exist only on the owner.
				for i := range tc.writes {
					must(t, "put", cl.put(in(p, "during"+strconv.Itoa(i)), strconv.Itoa(i), nil).Status)
				}
				must(t, "delete", cl.del(in(p, "before1")).Status)
			})
			waitInSync(t, c, p, owner, replica)
			after := replication(t, owner, id(replica))
			if after.Sessions <= before.Sessions {
				t.Fatalf("no new session: %+v → %+v", before, after)
			}
			// The restarted replica is empty: revision 0 catches up by
			// operations from the start while the op-log reaches back that far.
			if gotSnap := after.Snapshots > before.Snapshots; gotSnap != tc.snapshot {
				t.Fatalf("snapshot shipped: %v, want %v (%+v)", gotSnap, tc.snapshot, after)
			}
		})
	}
}

func TestANewReplicaFillsALostReplicasSlot(t *testing.T) {
	c := start(t, 3, nil) // a 1 s grace window: a stopped replica is soon lost
	p, owner, replicas := group(t, c)
	cl := dial(t, owner)
	for i := range 100 {
		must(t, "put", cl.put(in(p, "k"+strconv.Itoa(i)), "v", nil).Status)
	}
	waitInSync(t, c, p, owner, replicas[0])
	c.Stop(replicas[0])
	// No node is a spare: once the lost node left the map, the leader
	// re-plans over the two left and builds the missing copy live
	// (R-MIG-2) on the other one.
	var spare *server.Node
	var q cluster.Partition
	c.Eventually(waitFor, "another node in the replica slot", func() bool {
		m := c.Map()
		if m == nil {
			return false
		}
		q = m.Partitions[m.SegmentToPartition[0]]
		if q.ActiveOwner != id(owner) || len(q.ReplicaNodeIDs) != 1 || q.ReplicaNodeIDs[0] == id(replicas[0]) || q.Migrating() {
			return false
		}
		spare = c.Node(string(q.ReplicaNodeIDs[0]))
		return true
	})
	for i := range 50 {
		must(t, "put", cl.put(in(q, "after"+strconv.Itoa(i)), "v", nil).Status)
	}
	waitInSync(t, c, q, owner, spare)
}

// key returns a key of partition p.
func key(p cluster.Partition, segments int, prefix string) string {
	for i := 0; ; i++ {
		k := prefix + strconv.Itoa(i)
		if s := int(placement.SegmentOf(k, segments)); s >= p.FirstSegment && s <= p.LastSegment {
			return k
		}
	}
}

func TestSyncAllAcknowledgesOnlyAppliedWrites(t *testing.T) {
	c := start(t, 3, func(cfg *server.Config) {
		cfg.ReplicationMode, cfg.WriteQuorum = server.ReplicationSync, server.WriteQuorumAll
		cfg.SyncTimeout = testscale.D(time.Second)
		cfg.Timings.MemberGrace = time.Minute
	})
	p, owner, replicas := group(t, c)
	replica := replicas[0]
	cl := dial(t, owner)
	c.Eventually(waitFor, "the session", func() bool { return replication(t, owner, id(replica)).State == "streaming" })

	// Every acknowledged write is already applied on the replica: no
	// waiting, no polling.
	for i := range 100 {
		k := in(p, "k"+strconv.Itoa(i))
		res := cl.put(k, "v", nil)
		must(t, "sync put", res.Status)
		seg := owner.Store().SegmentFor(k).ID()
		if got := replica.Store().Segment(seg).Revision(); got < res.Revision {
			t.Fatalf("write %s acknowledged at revision %d, replica at %d", k, res.Revision, got)
		}
	}
	del := cl.del(in(p, "k1"))
	must(t, "sync delete", del.Status)
	if got := replica.Store().Segment(owner.Store().SegmentFor(in(p, "k1")).ID()).Revision(); got < del.Revision {
		t.Fatal("delete acknowledged before the replica applied it")
	}
	r := cl.cmd(kv.CmdIncrBy, in(p, "n"), "7")
	must(t, "sync command", r.Status)
	if got := replica.Store().Segment(owner.Store().SegmentFor(in(p, "n")).ID()).Revision(); got < r.Revision {
		t.Fatal("command acknowledged before the replica applied it")
	}

	// Without its replica a sync write is not acknowledged: Timeout after
	// the sync timeout, the write applied on the owner all the same.
	c.Stop(replica)
	began := time.Now()
	res := cl.put(in(p, "unacked"), "v", nil)
	if res.Status != kv.StatusTimeout {
		t.Fatalf("sync write without its replica: %v", res.Status)
	}
	if d := time.Since(began); d < 250*time.Millisecond {
		t.Fatalf("answered Timeout after %v, before the sync timeout", d)
	}
	if got := cl.get(in(p, "unacked")); got.Status != kv.StatusSuccess {
		t.Fatalf("the unacknowledged write is applied on the owner: %v", got.Status)
	}
	if got := cl.cmd(kv.CmdIncrBy, in(p, "n"), "1"); got.Status != kv.StatusTimeout {
		t.Fatalf("sync command without its replica: %v", got.Status)
	}
	if st := owner.Replication().SyncStats(); st.Timeouts < 2 {
		t.Fatalf("sync stats %+v", st)
	}
}

func TestSyncQuorums(t *testing.T) {
	cases := []struct {
		name   string
		quorum server.WriteQuorum
		nodes  int // RF = nodes: every node holds every partition, nodes-1 replicas
		stop   int // replicas stopped
		want   kv.Status
	}{
		{"best effort acknowledges without its stopped replica", server.WriteQuorumBestEffort, 2, 1, kv.StatusSuccess},
		{"majority of three copies survives one stopped replica", server.WriteQuorumMajority, 3, 1, kv.StatusSuccess},
		{"all of three copies does not", server.WriteQuorumAll, 3, 1, kv.StatusTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := clustertest.Start(t, tc.nodes, clustertest.Options{NoRESP: true, Mutate: func(cfg *server.Config) {
				cfg.ReplicationFactor = tc.nodes
				cfg.ReplicationMode, cfg.WriteQuorum = server.ReplicationSync, tc.quorum
				cfg.SyncTimeout = testscale.D(time.Second)
				cfg.Timings.MemberGrace = time.Minute
			}})
			p, owner, replicas := group(t, c)
			if len(replicas) != tc.nodes-1 {
				t.Fatalf("%d replicas", len(replicas))
			}
			cl := dial(t, owner)
			c.Eventually(waitFor, "every session", func() bool {
				for _, r := range replicas {
					if replication(t, owner, id(r)).State != "streaming" {
						return false
					}
				}
				return true
			})
			must(t, "sync put with every replica", cl.put(in(p, "a"), "v", nil).Status)
			for _, r := range replicas[:tc.stop] {
				c.Stop(r)
			}
			if got := cl.put(in(p, "b"), "v", nil).Status; got != tc.want {
				t.Fatalf("sync put with %d replica(s) stopped: %v, want %v", tc.stop, got, tc.want)
			}
		})
	}
}

// The tombstone probe: re-applying a record at a delete's revision is
// refused while the tombstone stands; once pruned, nothing remembers the
// delete and the record would install.
func tombstoneStands(g *store.Segment, k string, rev uint64) bool {
	applied, _ := g.ApplyRecord(store.Record{Revision: rev}.WithVersion(1).With(k, []byte("zombie")), store.OpPut)
	return !applied
}

func TestTombstonesArePrunedOnlyOnceEveryReplicaApplied(t *testing.T) {
	c := start(t, 3, func(cfg *server.Config) { cfg.Timings.MemberGrace = time.Minute })
	p, owner, replicas := group(t, c)
	replica := replicas[0]
	cl := dial(t, owner)
	k := key(p, owner.Store().Segments(), "t")
	must(t, "put", cl.put(k, "v", nil).Status)
	waitInSync(t, c, p, owner, replica)
	g := owner.Store().SegmentFor(k)

	var tomb uint64
	replica = c.Restart(replica, func() {
		res := cl.del(k)
		must(t, "delete", res.Status)
		tomb = res.Revision
		// The sweeper prunes prunable tombstones every 100 ms: give it
		// several passes while the replica has not applied the delete.
		for range 5 {
			owner.Store().SweepOnce()
		}
		if !tombstoneStands(g, k, tomb) {
			t.Fatal("tombstone pruned while the replica had not applied the delete")
		}
	})
	waitInSync(t, c, p, owner, replica)
	c.Eventually(waitFor, "the tombstone pruned after the replica applied it", func() bool {
		owner.Store().SweepOnce()
		return !tombstoneStands(g, k, tomb)
	})
}

// TestARestartedOwnerRecoversFromItsReplica is restart recovery
// (R-REP-6) end to end: the owner comes back empty under its lease (no
// failover). It must never answer NotFound for an acknowledged key — its
// segments are held (a retryable redirect) until it pulled them from the
// replica — then certify and serve every key, and the replica, never
// overwritten by the owner's hole, still holds everything.
func TestARestartedOwnerRecoversFromItsReplica(t *testing.T) {
	c := start(t, 3, func(cfg *server.Config) {
		cfg.Timings.MemberGrace = time.Minute // no failover: the owner returns under its lease
		cfg.Timings.GossipSuspicionMult = 20  // nor a dead verdict while a loaded machine restarts it
		cfg.ReplicationMode, cfg.WriteQuorum = server.ReplicationSync, server.WriteQuorumAll
	})
	p, owner, replicas := group(t, c)
	replica := replicas[0]
	cl := dial(t, owner)
	const n = 300
	for i := range n {
		must(t, "put", cl.put(in(p, "k"+strconv.Itoa(i)), "v"+strconv.Itoa(i), nil).Status)
	}
	waitInSync(t, c, p, owner, replica)
	held := make(map[int]store.Digest)
	for seg := p.FirstSegment; seg <= p.LastSegment; seg++ {
		held[seg] = replica.Store().Segment(uint16(seg)).Digest()
	}

	// A reader hammers the owner's client port through the restart: every
	// answer it gets for an acknowledged key is the value or retryable.
	addr, storeName := owner.ClientAddr().String(), owner.Config().Store
	stop, done := make(chan struct{}), make(chan []string, 1)
	go func() {
		var bad []string
		answered := 0
		defer func() { done <- append(bad, "answers="+strconv.Itoa(answered)) }()
		for i := 0; ; {
			select {
			case <-stop:
				return
			default:
			}
			nc, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
			if err != nil {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			rc := &routerConn{nc: nc, fr: wire.NewFrameReader(nc, wire.DefaultMaxFrameSize)}
			if _, err := rc.call(wire.OpHandshake, wire.AppendHandshakeRequest(nil, wire.HandshakeRequest{
				ProtocolVersion: wire.ProtocolVersion, Store: storeName, ClientName: "restart-reader"})); err != nil {
				_ = nc.Close()
				continue
			}
			for {
				select {
				case <-stop:
					_ = nc.Close()
					return
				default:
				}
				k := in(p, "k"+strconv.Itoa(i%n))
				f, err := rc.call(wire.OpGet, wire.AppendKeyRequest(nil, k))
				if err != nil {
					_ = nc.Close()
					break
				}
				var res kv.Result
				if f.Flags.Has(wire.FlagError) {
					var e wire.ErrorResponse
					_ = wire.DecodeErrorResponse(f.Body, &e)
					res.Status = e.Status
				} else if err := wire.DecodeResult(f.Body, &res); err != nil {
					bad = append(bad, k+": "+err.Error())
				}
				answered++
				switch {
				case res.Status == kv.StatusSuccess && string(res.Value) == "v"+strconv.Itoa(i%n):
				case res.Status != kv.StatusSuccess && res.Status.Redirect():
				default:
					bad = append(bad, k+": "+res.Status.String()+" "+string(res.Value))
				}
				i++
			}
		}
	}()
	owner = c.Restart(owner, nil)
	c.Eventually(waitFor, "the restarted owner certified", func() bool {
		return owner.Replication().Certified(p.Identity)
	})
	close(stop)
	for _, sp := range clusterStatus(t, owner).Partitions {
		if sp.Identity == p.Identity && sp.Recovery != "certified" {
			t.Errorf("/v1/cluster on the recovered owner: recovery %q", sp.Recovery)
		}
	}
	if out := <-done; len(out) > 1 {
		t.Fatalf("the restarted owner answered without the acknowledged value: %v", out)
	} else {
		t.Log(out)
	}
	cl = dial(t, owner)
	for i := range n {
		k := in(p, "k"+strconv.Itoa(i))
		// A redirect is retryable (a starved process fences itself for a
		// moment, D22); any other answer, or another value, is wrong.
		c.Eventually(waitFor, "get "+k+" on the recovered owner", func() bool {
			r := cl.get(k)
			if r.Status != kv.StatusSuccess && !r.Status.Redirect() || r.Status == kv.StatusSuccess && string(r.Value) != "v"+strconv.Itoa(i) {
				t.Fatalf("get %s on the recovered owner: %v %q", k, r.Status, r.Value)
			}
			return r.Status == kv.StatusSuccess
		})
	}
	waitInSync(t, c, partition0(c), owner, replica)
	for seg, d := range held {
		if got := replica.Store().Segment(uint16(seg)).Digest(); got != d {
			t.Fatalf("segment %d of the replica changed: %+v → %+v", seg, d, got)
		}
	}
	var recoveries uint64
	for _, nd := range c.Running() {
		recoveries += nd.Cluster().FailoverStats().Recoveries
	}
	if recoveries == 0 {
		t.Fatal("no restart recovery was started")
	}
}

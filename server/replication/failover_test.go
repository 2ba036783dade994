package replication_test

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/cluster/failover"
	"github.com/zaris-io/zaris/server/clustertest"
	"github.com/zaris-io/zaris/server/store"
)

// router writes through whichever node the current map names the owner of
// a key, like a client that refreshes its map on failure: a connection per
// node, dropped on any transport error; an answer other than Success is not
// an acknowledgement.
type router struct {
	t     *testing.T
	c     *clustertest.Cluster
	conns map[string]*routerConn
}

type routerConn struct {
	nc net.Conn
	fr *wire.FrameReader
	id uint32
}

func newRouter(t *testing.T, c *clustertest.Cluster) *router {
	r := &router{t: t, c: c, conns: map[string]*routerConn{}}
	t.Cleanup(func() {
		for _, rc := range r.conns {
			_ = rc.nc.Close()
		}
	})
	return r
}

func (r *router) conn(nd *server.Node) (*routerConn, error) {
	id := nd.Config().NodeID
	if rc := r.conns[id]; rc != nil {
		return rc, nil
	}
	addr := nd.ClientAddr()
	if addr == nil {
		return nil, net.ErrClosed
	}
	nc, err := net.DialTimeout("tcp", addr.String(), time.Second)
	if err != nil {
		return nil, err
	}
	rc := &routerConn{nc: nc, fr: wire.NewFrameReader(nc, wire.DefaultMaxFrameSize)}
	if _, err := rc.call(wire.OpHandshake, wire.AppendHandshakeRequest(nil, wire.HandshakeRequest{
		ProtocolVersion: wire.ProtocolVersion, Store: nd.Config().Store, ClientName: "router"})); err != nil {
		_ = nc.Close()
		return nil, err
	}
	r.conns[id] = rc
	return rc, nil
}

func (rc *routerConn) call(op wire.Opcode, body []byte) (wire.Frame, error) {
	rc.id++
	_ = rc.nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := rc.nc.Write(wire.AppendFrame(nil, rc.id, op, 0, body)); err != nil {
		return wire.Frame{}, err
	}
	f, err := rc.fr.Next()
	if err != nil {
		return wire.Frame{}, err
	}
	f.Body = append([]byte(nil), f.Body...)
	return f, nil
}

// do sends one keyed request to the key's current owner.
func (r *router) do(key string, op wire.Opcode, body []byte) kv.Result {
	owner := r.c.Owner(key)
	if owner == nil {
		return kv.Result{Status: kv.StatusUnavailable}
	}
	rc, err := r.conn(owner)
	if err != nil {
		return kv.Result{Status: kv.StatusUnavailable}
	}
	f, err := rc.call(op, body)
	if err != nil {
		_ = rc.nc.Close()
		delete(r.conns, owner.Config().NodeID)
		return kv.Result{Status: kv.StatusUnavailable}
	}
	var res kv.Result
	if f.Flags.Has(wire.FlagError) {
		var e wire.ErrorResponse
		_ = wire.DecodeErrorResponse(f.Body, &e)
		return kv.Result{Status: e.Status}
	}
	if err := wire.DecodeResult(f.Body, &res); err != nil {
		r.t.Fatal(err)
	}
	return res
}

func (r *router) put(key, value string) kv.Status {
	return r.do(key, wire.OpPut, wire.AppendPutRequest(nil, key, []byte(value), &kv.PutOptions{})).Status
}

func (r *router) get(key string) kv.Result {
	return r.do(key, wire.OpGet, wire.AppendKeyRequest(nil, key))
}

func partition0(c *clustertest.Cluster) cluster.Partition {
	if m := c.Map(); m != nil {
		return m.Partitions[0]
	}
	return cluster.Partition{}
}

func TestFailoverKeepsEveryAcknowledgedSyncWrite(t *testing.T) {
	c := start(t, 3, func(cfg *server.Config) {
		cfg.ReplicationMode, cfg.WriteQuorum = server.ReplicationSync, server.WriteQuorumAll
		cfg.SyncTimeout = testscale.D(time.Second)
		cfg.Timings.MemberGrace = time.Minute // failover, not a map change, moves the owner
	})
	before, owner, replicas := group(t, c)
	replica := replicas[0]
	// The victim owns more than one partition: each fails over to its
	// own replica.
	parts, owned := len(c.Map().Partitions), 0
	for _, q := range c.Map().Partitions {
		if q.ActiveOwner == id(owner) {
			owned++
		}
	}
	r := newRouter(t, c)
	acked := map[string]string{}
	seq := 0
	// Writes go to the victim's partitions: those fail over. (Where it is
	// only a replica, sync writes wait for it until it is lost — a minute.)
	initial := c.Map()
	write := func() bool {
		seq++
		for initial.OwnerOfKey("w"+strconv.Itoa(seq)) != id(owner) {
			seq++
		}
		k, v := "w"+strconv.Itoa(seq), strconv.Itoa(seq)
		if r.put(k, v) != kv.StatusSuccess {
			return false
		}
		acked[k] = v
		return true
	}
	for len(acked) < 100 {
		if !write() {
			t.Fatalf("write %d refused before any fault", seq)
		}
	}

	c.Stop(owner) // kill -9, as far as the others can tell; it also led the control plane
	killed := time.Now()
	var firstAfter time.Duration
	deadline := time.Now().Add(waitFor)
	for after := 0; after < 100; {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes acknowledged after the kill within %v", after, waitFor)
		}
		if write() {
			if after == 0 {
				firstAfter = time.Since(killed)
			}
			after++
			continue
		}
		// Not acknowledged (the owner is gone, or not promoted yet): the
		// client retries with a fresh map after a short pause.
		select {
		case <-time.After(20 * time.Millisecond):
		case <-t.Context().Done():
			return
		}
	}
	t.Logf("first acknowledged write %v after the owner was killed", firstAfter)

	p := partition0(c)
	if p.ActiveOwner != id(replica) || p.Epoch <= before.Epoch || p.OwnershipGeneration <= before.OwnershipGeneration ||
		p.HealthState() != failover.Degraded || !slices.Contains(p.Demoted, id(owner)) {
		t.Fatalf("after the failover: %+v (before %+v)", p, before)
	}
	if p.PrimaryNodeID != before.PrimaryNodeID || len(c.Map().Partitions) != parts {
		t.Fatalf("the map moved, not only the runtime owner: %+v", p)
	}
	var promotions uint64
	for _, nd := range c.Running() {
		if n := clusterStatus(t, nd).Failover.Promotions; n > 0 {
			promotions += n
			if !strings.Contains(httpGet(t, nd, "/metrics"), "zaris_failover_promotions_total "+strconv.FormatUint(n, 10)) {
				t.Fatal("the promotions are not in the leader's metrics")
			}
		}
	}
	if promotions != uint64(owned) {
		t.Fatalf("%d promotions counted, want one per partition the victim owned (%d)", promotions, owned)
	}
	// No acknowledged write is lost.
	for k, v := range acked {
		if got := r.get(k); got.Status != kv.StatusSuccess || string(got.Value) != v {
			t.Fatalf("acknowledged write %s=%s lost: %v %q", k, v, got.Status, got.Value)
		}
	}

	// The old owner comes back (empty): it is now a copy of the new owner,
	// catches up, and the partition turns Healthy once it has (debounced),
	// with every copy counting for sync writes again.
	back := c.Restart(owner, nil)
	c.Eventually(waitFor, "healthy again", func() bool {
		q := partition0(c)
		return q.HealthState() == failover.Healthy && len(q.Demoted) == 0 && q.ActiveOwner == id(replica)
	})
	waitInSync(t, c, p, replica, back)
	if st := clusterStatus(t, replica); st.Partitions[0].Health != "healthy" {
		t.Fatalf("/v1/cluster health %q", st.Partitions[0].Health)
	}
	for range 20 {
		if !write() {
			t.Fatalf("write %d refused once healthy", seq)
		}
	}
	for k := range acked {
		if res := r.get(k); res.Status != kv.StatusSuccess {
			t.Fatal(k, res.Status)
		}
		break
	}
}

func TestPartitionWithoutSurvivorIsUnavailableThenHeals(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, Mutate: func(cfg *server.Config) {
		cfg.Timings.MemberGrace = time.Minute
	}})
	m := c.Map()
	leader := c.WaitLeader()
	var victim *server.Node
	var part int
	for i, p := range m.Partitions { // RF 1: three partitions, no copy
		if nd := c.Node(string(p.ActiveOwner)); nd != nil && nd != leader {
			victim, part = nd, i
			break
		}
	}
	if victim == nil {
		t.Fatalf("no partition owned by a node other than the leader %s: %+v", leader.Config().NodeID, m.Partitions)
	}
	victim = c.Restart(victim, func() {
		c.Eventually(waitFor, "the partition declared unavailable", func() bool {
			return c.Map().Partitions[part].HealthState() == failover.Unavailable
		})
		if owner := c.Map().Partitions[part].ActiveOwner; owner != id(victim) {
			t.Fatalf("a partition without a survivor got a fake owner %s", owner)
		}
	})
	c.Eventually(waitFor, "healthy once its owner is back", func() bool {
		return c.Map().Partitions[part].HealthState() == failover.Healthy
	})
}

// A Recovering owner (a more complete copy exists: R-REP-5) does not serve
// until it has synced from that copy; then it serves what the copy held.
func TestRecoveringOwnerSyncsFromTheMoreCompleteCopyFirst(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, Mutate: func(cfg *server.Config) {
		cfg.ReplicationFactor = 3
		cfg.Timings.MemberGrace = time.Minute
	}})
	p, owner, replicas := group(t, c)
	cl := dial(t, owner)
	for i := range 100 {
		must(t, "put", cl.put(in(p, "k"+strconv.Itoa(i)), "v", nil).Status)
	}
	for _, r := range replicas {
		waitInSync(t, c, p, owner, r)
	}
	promoted, source := replicas[0], replicas[1]
	// The source holds a record the promoted copy lacks.
	extra := key(p, owner.Store().Segments(), "extra")
	g := source.Store().SegmentFor(extra)
	if ok, err := g.ApplyRecord(store.Record{Revision: g.Revision() + 1000}.WithVersion(1).With(extra, []byte("only here")), store.OpPut); !ok || err != nil {
		t.Fatal(ok, err)
	}
	leader := c.WaitLeader()
	if err := leader.Cluster().CommitOwnership(t.Context(), cluster.OwnershipChange{Partition: p.ID, Owner: id(promoted),
		Generation: p.OwnershipGeneration + 1, Epoch: p.Epoch + 1, Health: failover.Recovering, Source: id(source),
		Demoted: []cluster.NodeID{id(owner)}}); err != nil {
		t.Fatal(err)
	}
	c.Eventually(waitFor, "the promoted owner caught up and serving", func() bool {
		q := promoted.Cluster().Map().Partitions[0]
		return q.HealthState() == failover.Degraded && q.ActiveOwner == id(promoted) && q.Source == ""
	})
	c.WaitConverged(waitFor)
	if got := dial(t, promoted).get(extra); got.Status != kv.StatusSuccess || string(got.Value) != "only here" {
		t.Fatalf("the promoted owner serves without the more complete copy's record: %v %q", got.Status, got.Value)
	}
	if st := dial(t, owner).get(in(p, "k1")).Status; st != kv.StatusMoved {
		t.Fatalf("the former owner still serves: %v", st)
	}
	// Every copy — the former owner included — converges on the new owner.
	for _, r := range []*server.Node{owner, source} {
		waitInSync(t, c, p, promoted, r)
	}
	c.Eventually(waitFor, "healthy", func() bool {
		q := partition0(c)
		return q.HealthState() == failover.Healthy
	})
}

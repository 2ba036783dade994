package sdk

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/store"
)

// Each row names the failure the rule prevents.
func TestRetryDecision(t *testing.T) {
	lost := fmt.Errorf("%w: connection to x lost: EOF", ErrUnreachable)
	cases := []struct {
		name       string
		status     kv.Status
		err        error
		idempotent bool
		want       retryAction
	}{
		{"a miss is an answer, not a reason to retry", kv.StatusNotFound, nil, true, retryNo},
		{"a conflict retried would hide a lost race", kv.StatusConflict, nil, false, retryNo},
		{"a full node stays full on a retry", kv.StatusCapacityExceeded, nil, false, retryNo},
		{"Moved: the write was refused, the map is wrong", kv.StatusMoved, nil, false, retryRedirect},
		{"OwnershipChanging: mid-handoff, refetch the owner", kv.StatusOwnershipChanging, nil, false, retryRedirect},
		{"Migrating: the segment is elsewhere soon", kv.StatusMigrating, nil, false, retryRedirect},
		{"ReplicaSyncPending: a replica is not the owner", kv.StatusReplicaSyncPending, nil, true, retryRedirect},
		{"ReplicaWriteRejected: writes go to the owner", kv.StatusReplicaWriteRejected, nil, false, retryRedirect},
		{"Unavailable: no owner now, the map will say", kv.StatusUnavailable, nil, false, retryRedirect},
		{"an unowned segment in the client's map is a stale map", 0, errNoOwner, false, retryRedirect},
		{"a request never sent cannot apply twice", 0, notSent(lost), false, retryTransient},
		{"every address refused: the owner is down, not slow; waiting out the deadline for it helps nobody (the backend decides whether a copy takes over)",
			0, notSent(fmt.Errorf("%w: %w", ErrUnreachable, errRefused)), false, retryRefused},
		{"a read lost in flight is safe to repeat", 0, lost, true, retryTransient},
		{"a write lost in flight may have applied: never twice", 0, lost, false, retryNo},
		{"the caller's deadline is final", 0, context.DeadlineExceeded, true, retryNo},
		{"a cancelled caller is final", 0, notSent(context.Canceled), true, retryNo},
		{"a closed client stays closed", 0, notSent(ErrClosed), true, retryNo},
		{"a refused handshake is configuration, retrying spins", 0, notSent(&HandshakeError{Status: kv.StatusUnauthorized}), true, retryNo},
		{"an undecodable answer will not decode better", 0, errors.New("zaris: undecodable"), true, retryNo},
	}
	for _, c := range cases {
		if got := retryDecision(c.status, c.err, c.idempotent); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func testMap(version uint64, owners ...int32) *wire.RoutingMap {
	m := &wire.RoutingMap{Version: version, TotalSegments: len(owners), SegmentOwner: owners}
	for i := range 3 {
		m.Nodes = append(m.Nodes, wire.RoutingNode{ID: fmt.Sprint("n", i), Host: "10.0.0.1", ClientPort: 7000 + i})
	}
	return m
}

func fakeNode(id, addr string) *node { return &node{id: id, addr: addr} }

func TestBuildTable(t *testing.T) {
	t1, retired, err := buildTable(testMap(1, 0, 0, 1, 1, -1, 2), "seed:1", nil, fakeNode)
	if err != nil || retired != nil {
		t.Fatal(err)
	}
	if t1.seg[0] != t1.nodes[0] || t1.seg[3] != t1.nodes[1] || t1.seg[4] != nil || t1.seg[5] != t1.nodes[2] {
		t.Fatalf("segment owners %v", t1.seg)
	}
	if len(t1.owners) != 3 || t1.nodes[1].addr != "10.0.0.1:7001" || t1.segmentsOf(t1.nodes[0]) != 2 {
		t.Fatalf("table %+v", t1)
	}

	// The next map reuses the nodes that stay (same id, same address), so a
	// map change never re-dials them; a moved or departed node is retired.
	m2 := testMap(2, 2, 2, 1, 1, 1, 2)
	m2.Nodes[0].ClientPort = 7100 // n0 moved
	m2.Nodes = m2.Nodes[:2]
	m2.Nodes = append(m2.Nodes, wire.RoutingNode{ID: "n2", Host: "10.0.0.1", ClientPort: 7002})
	t2, retired, err := buildTable(m2, "seed:1", t1, fakeNode)
	if err != nil {
		t.Fatal(err)
	}
	if t2.byID["n1"] != t1.byID["n1"] || t2.byID["n2"] != t1.byID["n2"] || t2.byID["n0"] == t1.byID["n0"] {
		t.Fatal("nodes not reused by id and address")
	}
	if len(retired) != 1 || retired[0] != t1.byID["n0"] {
		t.Fatalf("retired %v", retired)
	}
	if len(t2.owners) != 2 || sameOwners(t1, t2) || !sameOwners(t2, t2) {
		t.Fatalf("owners %v", t2.owners)
	}

	// A node bound to every interface is reached on the host the map came from.
	m3 := testMap(3, 0, 0, 0, 0, 0, 0)
	m3.Nodes[0].Host = "0.0.0.0"
	m3.Nodes[1].Host = ""
	t3, _, err := buildTable(m3, "127.0.0.1:7861", nil, fakeNode)
	if err != nil || t3.nodes[0].addr != "127.0.0.1:7000" || t3.nodes[1].addr != "127.0.0.1:7001" {
		t.Fatalf("unspecified hosts: %v %v", t3, err)
	}

	bad := []struct {
		name string
		m    func() *wire.RoutingMap
	}{
		{"no segments: nothing could be routed", func() *wire.RoutingMap { m := testMap(1); return m }},
		{"no node: nothing to connect to", func() *wire.RoutingMap { m := testMap(1, -1); m.Nodes = nil; return m }},
		{"owner table shorter than the segments", func() *wire.RoutingMap { m := testMap(1, 0, 0); m.TotalSegments = 3; return m }},
		{"an owner naming no node", func() *wire.RoutingMap { return testMap(1, 0, 3) }},
		{"two nodes with one id would share a connection", func() *wire.RoutingMap {
			m := testMap(1, 0, 1)
			m.Nodes[1].ID = "n0"
			return m
		}},
		{"a node without a port cannot be dialled", func() *wire.RoutingMap {
			m := testMap(1, 0, 1)
			m.Nodes[1].ClientPort = 0
			return m
		}},
	}
	for _, c := range bad {
		if _, _, err := buildTable(c.m(), "seed:1", nil, fakeNode); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}

// Routing a key is one placement call and one array index: no allocation.
func TestRouteDoesNotAllocate(t *testing.T) {
	owners := make([]int32, store.DefaultSegments)
	for s := range owners {
		owners[s] = int32(s % 3)
	}
	tb, _, err := buildTable(testMap(1, owners...), "", nil, fakeNode)
	if err != nil {
		t.Fatal(err)
	}
	key := "user:42"
	want := tb.nodes[placement.SegmentOf(key, store.DefaultSegments)%3]
	if allocs := testing.AllocsPerRun(1000, func() {
		if tb.route(key) != want {
			t.Fatal("wrong owner")
		}
	}); allocs != 0 {
		t.Fatalf("route allocates %v times", allocs)
	}
}

// flakyRouter refuses the first prepares with Moved, as an owner whose
// segment moved would, and counts the reroutes.
type flakyRouter struct {
	c        *Client
	refusals int
	prepares int
	reroutes int
}

func (r *flakyRouter) ownerOf(string) txOwner { return "" }

func (r *flakyRouter) doOn(ctx context.Context, _ txOwner, cmd kv.Cmd) (kv.Reply, error) {
	if cmd.Op == kv.CmdTxPrepare {
		r.prepares++
		if r.prepares <= r.refusals {
			return kv.StatusReply(kv.StatusMoved), nil
		}
	}
	return r.c.Do(ctx, cmd)
}

func (r *flakyRouter) reroute(context.Context) bool { r.reroutes++; return true }

// A prepare refused with a redirect changed nothing: Commit groups again and
// prepares again, a bounded number of times.
func TestTxCommitReroutesAfterARedirect(t *testing.T) {
	ctx := context.Background()
	c, err := Connect(ctx, "zaris://inproc/tx-reroute")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := &flakyRouter{c: c, refusals: 2}
	tx := c.Tx()
	tx.routes = r
	res, err := tx.Put("k", []byte("v"), nil).Commit(ctx)
	if err != nil || !res.OK() || r.prepares != 3 || r.reroutes != 2 {
		t.Fatalf("commit after two redirects: %+v %v (prepares %d, reroutes %d)", res, err, r.prepares, r.reroutes)
	}
	if got, _ := c.Get(ctx, "k"); string(got.Value) != "v" {
		t.Fatalf("value %q", got.Value)
	}
	r = &flakyRouter{c: c, refusals: 100}
	tx = c.Tx()
	tx.routes = r
	res, err = tx.Put("k", []byte("w"), nil).Commit(ctx)
	// Where the keys live is the SDK's business: the application gets
	// Unavailable (the soak saw a bare Moved reach it), never a routing status.
	if errors.Is(err, ErrMoved) || res.Status != kv.StatusUnavailable || !errors.Is(err, ErrUnavailable) ||
		r.prepares != txRedirectAttempts {
		t.Fatalf("commit that keeps being redirected: %+v %v (prepares %d)", res, err, r.prepares)
	}
	if got, _ := c.Get(ctx, "k"); string(got.Value) != "v" {
		t.Fatalf("a refused transaction changed the value: %q", got.Value)
	}
}

// A call whose owner kept changing until its end (a partition moving, an
// owner fenced by the freeze guard) answers Timeout or Unavailable: the
// elastic chaos run saw a read hand the application a bare Moved while the
// new owner was stopped for 3 s.
func TestUnsettledCallNeverEndsOnARoutingStatus(t *testing.T) {
	live := context.Background()
	over, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		last kv.Status
		want kv.Status
	}{
		{"deadline passed on a Moved", over, kv.StatusMoved, kv.StatusTimeout},
		{"deadline passed on a Migrating fence", over, kv.StatusMigrating, kv.StatusTimeout},
		{"attempts spent on Moved", live, kv.StatusMoved, kv.StatusUnavailable},
	} {
		st, msg, err := unsettled(c.ctx, c.last, 32)
		if st != c.want || routingOnly(st) || msg == "" || (c.ctx == over) != (err != nil) {
			t.Errorf("%s: %v %q %v", c.name, st, msg, err)
		}
	}
}

package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
)

// The cluster client against real clusters: server.Nodes forming through
// memberlist and raft (server/clustertest), not a static map.

func realConnect(t testing.TB, connString string, opts ...sdk.Option) *sdk.Client {
	t.Helper()
	c, err := sdk.Connect(context.Background(), connString, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRealClusterSuite(t *testing.T) {
	cl := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, NoHTTP: true})
	runClientSuite(t, func(t *testing.T) *sdk.Client { return realConnect(t, cl.ConnString()) })
	// These suites expect an empty store per subtest: a cluster each.
	t.Run("Watch", func(t *testing.T) {
		runWatchSuite(t, func(t *testing.T) *sdk.Client {
			return realConnect(t, clustertest.Start(t, 3, clustertest.Options{NoRESP: true, NoHTTP: true}).ConnString())
		})
	})
	t.Run("Tx", func(t *testing.T) {
		runTxSuite(t, func(t *testing.T) func() *sdk.Client {
			// Every node's log lines are kept: an account found missing
			// (issue #16: once in a loaded suite run) explains itself.
			logs := newLogRing(50000)
			// An hour's member grace: at RF 1 a member silent past the
			// grace (5 s in tests) is lost and its partitions start empty
			// elsewhere, by design (D29) — what a starved machine made of
			// this suite once (D58's diagnosis), and not what it tests.
			cl := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, NoHTTP: true,
				Logger: slog.New(slog.NewTextHandler(logs, nil)),
				Mutate: func(cfg *server.Config) { cfg.Timings.MemberGrace = time.Hour }})
			t.Cleanup(func() {
				if t.Failed() {
					explainLoss(t, cl, logs, []string{"acct:0", "acct:1", "acct:2", "acct:3", "acct:4"})
				}
			})
			return func() *sdk.Client { return realConnect(t, cl.ConnString()) }
		})
	})
}

// Every key is reachable from every client, whichever node it was given as
// its seed, and it lands on the node the cluster's map names.
func TestRealClusterEveryKeyReachableFromEveryClient(t *testing.T) {
	ctx := context.Background()
	cl := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, NoHTTP: true})
	var clients []*sdk.Client
	for _, ep := range cl.Endpoints() {
		clients = append(clients, realConnect(t, "zaris://"+ep+"/default"))
	}
	for i := range 300 {
		k := fmt.Sprintf("reach:%d", i)
		w := clients[i%len(clients)]
		if r, err := w.Put(ctx, k, []byte(k), nil); err != nil || !r.OK() {
			t.Fatalf("put %s: %+v %v", k, r, err)
		}
		if got := cl.Owner(k).Store().Get(k); string(got.Value) != k {
			t.Fatalf("%s is not on its owner: %+v", k, got)
		}
		for j, c := range clients {
			if r, err := c.Get(ctx, k); err != nil || string(r.Value) != k {
				t.Fatalf("client %d get %s: %+v %v", j, k, r, err)
			}
		}
	}
	for _, c := range clients {
		if rs := c.Routing(); !rs.Cluster || len(rs.Nodes) != 3 || rs.Redirects != 0 {
			t.Fatalf("routing %+v", rs)
		}
	}
}

// GetMany of 1000 keys over 4 nodes sends exactly 4 requests: one OpBatch
// per owner, on the servers' own request counters.
func TestRealClusterGetManyFourRequests(t *testing.T) {
	ctx := context.Background()
	cl := clustertest.Start(t, 4, clustertest.Options{NoRESP: true, NoHTTP: true})
	c := realConnect(t, cl.ConnString())
	keys := make([]string, 1000)
	kvs := make([]sdk.KV, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
		kvs[i] = sdk.KV{Key: keys[i], Value: []byte(keys[i])}
	}
	if _, err := c.PutMany(ctx, kvs); err != nil {
		t.Fatal(err)
	}
	before := map[*server.Node]server.RequestCounts{}
	for _, nd := range cl.Running() {
		before[nd] = nd.RequestCounts()
	}
	res, err := c.GetMany(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.OK() || r.Index != i || string(r.Value) != keys[i] {
			t.Fatalf("GetMany[%d] = %+v", i, r)
		}
	}
	total, items := uint64(0), uint64(0)
	for _, nd := range cl.Running() {
		after := nd.RequestCounts()
		b := after.Batches - before[nd].Batches
		if b != 1 {
			t.Errorf("%s: %d batch requests, want 1", nd.Config().NodeID, b)
		}
		total += after.Requests - before[nd].Requests
		items += after.BatchItems - before[nd].BatchItems
	}
	if total != 4 || items != 1000 {
		t.Fatalf("%d requests carrying %d items, want 4 carrying 1000", total, items)
	}
}

// A node joins and the operator rebalances (auto-rebalance off): clients
// under load follow the new maps (pushed) without a failed call, every
// read returns exactly the value its writer last wrote — a NotFound for a
// key written before is a lost write (issue #12) — and keys of the new
// owner's segments go to it.
func TestRealClusterJoinAndRebalanceUnderLoad(t *testing.T) {
	ctx := context.Background()
	cl := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, NoHTTP: true,
		Mutate: func(cfg *server.Config) { cfg.AutoRebalance = false }})
	c := realConnect(t, cl.ConnString(), sdk.WithMapPollInterval(-1))
	v0 := c.Routing().MapVersion

	var stop atomic.Bool
	var wg sync.WaitGroup
	var ops atomic.Int64
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				k := fmt.Sprintf("load:%d:%d", w, i%200)
				v := fmt.Sprint(i)
				if r, err := c.Put(ctx, k, []byte(v), nil); err != nil || !r.OK() {
					errs <- fmt.Errorf("put %s: %v %v", k, r.Status, err)
					return
				}
				if r, err := c.Get(ctx, k); err != nil || !r.OK() || string(r.Value) != v {
					errs <- fmt.Errorf("get %s after writing %q: %v %q %v", k, v, r.Status, r.Value, err)
					return
				}
				ops.Add(1)
			}
		})
	}
	n4 := cl.AddNode()
	v1 := cl.WaitVersion(v0+1, 10*time.Second)
	waitFor(t, 10*time.Second, "the join's map", func() bool { return c.Routing().MapVersion >= v1 })
	if rs := c.Routing(); len(rs.Nodes) != 4 || rs.Nodes[3].Segments != 0 {
		t.Fatalf("after the join: %+v", rs)
	}
	v2 := cl.Rebalance()
	waitFor(t, 30*time.Second, "the new node owns segments in the client's map", func() bool {
		for _, n := range c.Routing().Nodes {
			if n.ID == n4.Config().NodeID && n.Segments > 0 {
				return true
			}
		}
		return false
	})
	onNewMap := ops.Load()
	waitFor(t, 10*time.Second, "traffic on the new map", func() bool { return ops.Load() >= onNewMap+100 || len(errs) > 0 })
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rs := c.Routing()
	if rs.PushedMaps < 2 || rs.MapVersion <= v2 {
		t.Fatalf("after the rebalance (%d ops): %+v", ops.Load(), rs)
	}
	k := cl.KeyOwnedBy(n4.Config().NodeID, "new:")
	if r, err := c.Put(ctx, k, []byte("on n4"), nil); err != nil || !r.OK() {
		t.Fatalf("put on the new owner: %+v %v", r, err)
	}
	if got := n4.Store().Get(k); string(got.Value) != "on n4" {
		t.Fatalf("the new owner does not hold %s: %+v", k, got)
	}
	t.Logf("%d operations through a join and a rebalance; routing %+v", ops.Load(), rs)
}

// The leader dies (RF 1: its keys are unavailable until the next issue's
// failover): the client keeps serving the other owners' keys, and calls
// for the dead owner's keys fail within their deadline instead of hanging.
func TestRealClusterOwnerLoss(t *testing.T) {
	ctx := context.Background()
	cl := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, NoHTTP: true})
	c := realConnect(t, cl.ConnString(), sdk.WithMapPollInterval(50*time.Millisecond))
	dead := cl.WaitLeader()
	deadID := dead.Config().NodeID
	var live string
	for _, nd := range cl.Running() {
		if nd != dead {
			live = nd.Config().NodeID
			break
		}
	}
	kLive, kDead := cl.KeyOwnedBy(live, "live:"), cl.KeyOwnedBy(deadID, "dead:")
	cl.Stop(dead)
	for range 50 {
		if r, err := c.Put(ctx, kLive, []byte("x"), nil); err != nil || !r.OK() {
			t.Fatalf("put on a live owner after the loss: %+v %v", r, err)
		}
	}
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	if _, err := c.Get(dctx, kDead); err == nil {
		t.Fatal("a key of the dead owner answered")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the call to the dead owner took %v", d)
	}
	res, err := c.GetMany(ctx, []string{kLive, kDead})
	if err != nil || !res[0].OK() || res[1].OK() {
		t.Fatalf("GetMany across a live and a dead owner: %+v %v", res, err)
	}
}

// Every address of an owner refuses the connection (its server is stopped)
// at replication factor 1: nothing can serve its keys until it is back, so
// calls end Unavailable at once — not after the 10 s default deadline —
// while the other owners' keys keep working (issue #16 item 6).
func TestRealClusterStoppedOwnerFailsFastAtRF1(t *testing.T) {
	ctx := context.Background() // the default call deadline: 10 s
	cl := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, NoHTTP: true, Mutate: func(cfg *server.Config) {
		cfg.Timings.MemberGrace = time.Hour // the owner stays in the map: only the refusal is under test
	}})
	c := realConnect(t, cl.ConnString(), sdk.WithMapPollInterval(-1))
	leader := cl.WaitLeader()
	var dead, live *server.Node
	for _, nd := range cl.Running() {
		switch {
		case nd == leader:
		case dead == nil:
			dead = nd
		default:
			live = nd
		}
	}
	kDead, kLive := cl.KeyOwnedBy(dead.Config().NodeID, "dead:"), cl.KeyOwnedBy(live.Config().NodeID, "live:")
	if r, err := c.Put(ctx, kDead, []byte("v"), nil); err != nil || !r.OK() {
		t.Fatalf("put before the stop: %+v %v", r, err)
	}
	cl.Stop(dead)
	fast := testscale.D(2 * time.Second)
	for _, call := range []struct {
		name string
		do   func() (sdk.Result, error)
	}{
		{"get", func() (sdk.Result, error) { return c.Get(ctx, kDead) }},
		{"put", func() (sdk.Result, error) { return c.Put(ctx, kDead, []byte("x"), nil) }},
		{"get again", func() (sdk.Result, error) { return c.Get(ctx, kDead) }},
	} {
		start := time.Now()
		r, err := call.do()
		took := time.Since(start)
		if !errors.Is(err, sdk.ErrUnavailable) || r.Status != sdk.StatusUnavailable {
			t.Fatalf("%s on the stopped owner: %+v %v, want Unavailable", call.name, r, err)
		}
		if took > fast {
			t.Fatalf("%s on the stopped owner took %v (want at once, < %v)", call.name, took, fast)
		}
	}
	start := time.Now()
	res, err := c.GetMany(ctx, []string{kLive, kDead})
	if err != nil || res[1].Status != sdk.StatusUnavailable || time.Since(start) > fast {
		t.Fatalf("GetMany across a live and a stopped owner: %+v %v after %v", res, err, time.Since(start))
	}
	if r, err := c.Put(ctx, kLive, []byte("x"), nil); err != nil || !r.OK() {
		t.Fatalf("a live owner's key after the stop: %+v %v", r, err)
	}
}

package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/native"
	"github.com/zaris-io/zaris/server/store"
)

// The behaviour suites, each against a 3-node static cluster: the cluster
// client must be indistinguishable from a single node.
func TestClusterSuites(t *testing.T) {
	t.Run("Client", func(t *testing.T) {
		tc := startCluster(t, 3, clusterConfig{})
		runClientSuite(t, func(t *testing.T) *sdk.Client { return tc.connect(t) })
	})
	t.Run("DataStructures", func(t *testing.T) {
		tc := startCluster(t, 3, clusterConfig{store: dsStoreConfig()})
		runDSSuite(t, func(t *testing.T) *sdk.Client { return tc.connect(t) })
	})
	t.Run("Streams", func(t *testing.T) {
		tc := startCluster(t, 3, clusterConfig{store: dsStoreConfig()})
		runStreamsSuite(t, func(t *testing.T, _ string) *sdk.Client { return tc.connect(t) })
	})
	t.Run("Tx", func(t *testing.T) {
		runTxSuite(t, func(t *testing.T) func() *sdk.Client {
			tc := startCluster(t, 3, clusterConfig{})
			return func() *sdk.Client { return tc.connect(t) }
		})
	})
	t.Run("Scan", func(t *testing.T) {
		tc := startCluster(t, 3, clusterConfig{})
		runScanSuite(t, func(t *testing.T) *sdk.Client { return tc.connect(t) })
		for _, cn := range tc.nodes {
			if st := cn.store.ScanStats(); st.OpenSessions != 0 {
				t.Errorf("the suite left %d scan sessions open on %s", st.OpenSessions, cn.id)
			}
		}
	})
	t.Run("Watch", func(t *testing.T) {
		runWatchSuite(t, func(t *testing.T) *sdk.Client {
			return startCluster(t, 3, clusterConfig{}).connect(t)
		})
	})
}

func TestClusterConnectReadsTheMap(t *testing.T) {
	tc := startCluster(t, 3, clusterConfig{spare: 1})
	c := tc.connect(t)
	rs := c.Routing()
	if !rs.Cluster || rs.MapVersion != 1 || rs.TotalSegments != store.DefaultSegments || len(rs.Nodes) != 4 {
		t.Fatalf("routing %+v", rs)
	}
	segs := 0
	for i, n := range rs.Nodes {
		if n.ID != tc.nodes[i].id || n.Addr != tc.nodes[i].addr || !n.Connected {
			t.Fatalf("node %d: %+v", i, n)
		}
		segs += n.Segments
	}
	if segs != store.DefaultSegments || rs.Nodes[3].Segments != 0 {
		t.Fatalf("segments %+v", rs.Nodes)
	}
	// A single seed is enough: the map names the others.
	one, err := sdk.Connect(context.Background(), "zaris://"+tc.nodes[2].addr+"/default")
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if rs := one.Routing(); !rs.Cluster || len(rs.Nodes) != 4 {
		t.Fatalf("from one seed: %+v", rs)
	}
}

// A seed that has no map yet (a forming member answers Unavailable) is
// passed over; with only such seeds Connect gives up at the dial timeout.
func TestClusterConnectPassesOverAFormingSeed(t *testing.T) {
	forming := startServer(t, func(c *native.Config) { c.Routing = native.NewStaticRouting(nil) })
	tc := startCluster(t, 3, clusterConfig{})
	c, err := sdk.Connect(context.Background(), "zaris://"+forming.addr+","+tc.nodes[1].addr+"/default")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if rs := c.Routing(); !rs.Cluster || len(rs.Nodes) != 3 {
		t.Fatalf("routing %+v", rs)
	}
	start := time.Now()
	_, err = sdk.Connect(context.Background(), "zaris://"+forming.addr+"/default?dialTimeout=300ms")
	if !errors.Is(err, sdk.ErrUnavailable) || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("only forming seeds: %v after %v", err, time.Since(start))
	}
}

// A plain single node has no routing map: the client keeps its one
// connection.
func TestClusterSingleNodeFallback(t *testing.T) {
	ts := startServer(t)
	c, err := sdk.Connect(context.Background(), "zaris://"+ts.addr+"/default")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if rs := c.Routing(); rs.Cluster {
		t.Fatalf("single node reported as a cluster: %+v", rs)
	}
	if r, err := c.Put(context.Background(), "k", []byte("v"), nil); err != nil || !r.OK() {
		t.Fatalf("put: %+v %v", r, err)
	}
}

// Every key lands on the node owning its segment, and nowhere else.
func TestClusterEveryKeyOnItsOwner(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 4, clusterConfig{})
	c := tc.connect(t)
	perNode := make([]int, 4)
	for i := range 1000 {
		k := fmt.Sprintf("key:%d", i)
		if r, err := c.Put(ctx, k, []byte(k), nil); err != nil || !r.OK() {
			t.Fatalf("put %s: %+v %v", k, r, err)
		}
		owner := tc.ownerOf(k)
		perNode[owner]++
		for j, cn := range tc.nodes {
			r := cn.store.Get(k)
			switch {
			case j == owner && (!r.OK() || string(r.Value) != k):
				t.Fatalf("%s not on its owner %d: %+v", k, j, r)
			case j != owner && r.Status != kv.StatusMoved:
				t.Fatalf("%s on node %d, which does not own it: %+v", k, j, r)
			}
		}
	}
	for j, n := range perNode {
		if n < 150 {
			t.Fatalf("node %d got %d of 1000 keys: %v", j, n, perNode)
		}
	}
	// Every key is reachable from another client, through any seed.
	other, err := sdk.Connect(ctx, "zaris://"+tc.nodes[3].addr+"/default")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for i := range 1000 {
		k := fmt.Sprintf("key:%d", i)
		if r, err := other.Get(ctx, k); err != nil || string(r.Value) != k {
			t.Fatalf("get %s: %+v %v", k, r, err)
		}
	}
	if tc.moved() != 0 {
		t.Fatalf("%d requests answered Moved on a correct map", tc.moved())
	}
}

// GetMany of 1000 keys over 4 nodes is exactly one OpBatch per node.
func TestClusterGetManyOneRequestPerOwner(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 4, clusterConfig{})
	c := tc.connect(t)
	keys := make([]string, 1000)
	kvs := make([]sdk.KV, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("bulk:%d", i)
		kvs[i] = sdk.KV{Key: keys[i], Value: []byte(fmt.Sprint(i))}
	}
	if res, err := c.PutMany(ctx, kvs[:900]); err != nil || len(res) != 900 {
		t.Fatalf("PutMany: %d %v", len(res), err)
	}
	tc.resetCounters()
	res, err := c.GetMany(ctx, keys)
	if err != nil || len(res) != 1000 {
		t.Fatalf("GetMany: %d %v", len(res), err)
	}
	for i, r := range res {
		want := sdk.StatusSuccess
		if i >= 900 {
			want = sdk.StatusNotFound
		}
		if r.Index != i || r.Key != keys[i] || r.Op != sdk.BatchGet || r.Status != want {
			t.Fatalf("GetMany[%d] = %+v", i, r)
		}
		if want == sdk.StatusSuccess && string(r.Value) != fmt.Sprint(i) {
			t.Fatalf("GetMany[%d] value %q", i, r.Value)
		}
	}
	for _, cn := range tc.nodes {
		if n := cn.obs.count(wire.OpBatch, -1); n != 1 {
			t.Errorf("%s received %d OpBatch requests, want 1", cn.id, n)
		}
		if n := cn.obs.count(wire.OpGet, -1); n != 0 {
			t.Errorf("%s received %d single gets", cn.id, n)
		}
	}
	if n := tc.count(wire.OpBatch, -1); n != 4 {
		t.Fatalf("%d OpBatch requests in all, want 4", n)
	}
}

// An owner's share larger than a frame is split into several requests to
// that owner; results still land at their caller index.
func TestClusterBulkLargerThanOneFrame(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 3, clusterConfig{maxFrame: 256 << 10})
	c := tc.connect(t)
	items := make([]sdk.KV, 600)
	keys := make([]string, len(items))
	for i := range items {
		keys[i] = fmt.Sprint("big:", i)
		items[i] = sdk.KV{Key: keys[i], Value: []byte(fmt.Sprintf("%04d%s", i, make([]byte, 4092)))}
	}
	res, err := c.PutMany(ctx, items) // ~2.4 MiB: several frames per owner
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.OK() || r.Index != i || r.Key != keys[i] {
			t.Fatalf("item %d: %+v", i, r)
		}
	}
	for _, cn := range tc.nodes {
		if n := cn.obs.count(wire.OpBatch, -1); n < 3 {
			t.Fatalf("%s got its share in %d requests; it does not fit one frame", cn.id, n)
		}
	}
	got, err := c.GetMany(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got {
		if !r.OK() || r.Index != i || string(r.Value[:4]) != fmt.Sprintf("%04d", i) {
			t.Fatalf("GetMany[%d]: %v %q", i, r.Status, r.Value[:min(4, len(r.Value))])
		}
	}
}

// A client on a stale map (push broken, no poll) is answered Moved, refreshes
// and retries on the new owner without the caller noticing.
func TestClusterStaleMapRecovers(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 3, clusterConfig{mutePush: true})
	c := tc.connect(t, sdk.WithMapPollInterval(-1))
	k := tc.keysOn(0, "stale:", 1)[0]
	seg := placement.SegmentOf(k, store.DefaultSegments)
	v := tc.move(1, seg)
	tc.resetCounters()

	r, err := c.Put(ctx, k, []byte("v"), nil)
	if err != nil || !r.OK() {
		t.Fatalf("put on a stale map: %+v %v", r, err)
	}
	if got := tc.nodes[1].store.Get(k); string(got.Value) != "v" {
		t.Fatalf("the write is not on the new owner: %+v", got)
	}
	if n := tc.nodes[0].obs.count(wire.OpPut, int(kv.StatusMoved)); n != 1 {
		t.Fatalf("old owner answered Moved %d times, want 1", n)
	}
	rs := c.Routing()
	if rs.MapVersion != v || rs.Redirects != 1 || rs.RefreshedMaps != 1 || rs.PushedMaps != 0 {
		t.Fatalf("routing after the redirect: %+v", rs)
	}
	// Next calls go straight to the new owner.
	tc.resetCounters()
	if r, err := c.Get(ctx, k); err != nil || string(r.Value) != "v" {
		t.Fatalf("get: %+v %v", r, err)
	}
	if tc.moved() != 0 {
		t.Fatal("Moved again after the refresh")
	}
	// Every operation kind reacts the same way.
	k2 := tc.keysOn(1, "stale2:", 1)[0]
	tc.move(2, placement.SegmentOf(k2, store.DefaultSegments))
	if r, err := c.Do(ctx, sdk.NewCmd(sdk.CmdIncrBy, k2, "5")); err != nil || r.Int != 5 {
		t.Fatalf("command on a stale map: %+v %v", r, err)
	}
	if got := tc.nodes[2].store.Get(k2); string(got.Value) != "5" {
		t.Fatalf("the command ran elsewhere: %+v", got)
	}
}

// A bulk call on a stale map: the items answered Moved are grouped again on
// the refreshed map and sent to their new owner in one request, the others
// are not sent twice.
func TestClusterBulkRegroupsAfterMove(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 4, clusterConfig{mutePush: true})
	c := tc.connect(t, sdk.WithMapPollInterval(-1))
	// Node 0 gives half its segments to node 2 and half to node 3.
	segs := tc.segmentsOf(0)
	tc.move(2, segs[:len(segs)/2]...)
	tc.move(3, segs[len(segs)/2:]...)
	tc.resetCounters()

	kvs := make([]sdk.KV, 1000)
	for i := range kvs {
		kvs[i] = sdk.KV{Key: fmt.Sprintf("re:%d", i), Value: []byte(fmt.Sprint(i))}
	}
	res, err := c.PutMany(ctx, kvs)
	if err != nil || len(res) != 1000 {
		t.Fatalf("PutMany: %d %v", len(res), err)
	}
	for i, r := range res {
		if !r.OK() || r.Index != i || r.Key != kvs[i].Key {
			t.Fatalf("PutMany[%d] = %+v", i, r)
		}
		if got := tc.nodes[tc.ownerOf(r.Key)].store.Get(r.Key); string(got.Value) != fmt.Sprint(i) {
			t.Fatalf("%s not on its owner: %+v", r.Key, got)
		}
	}
	// Round one: the stale plan, one request per owner it knew (node 0
	// answers Moved for every item). Round two: node 0's items only,
	// regrouped to nodes 2 and 3.
	want := []int{1, 1, 2, 2}
	for i, cn := range tc.nodes {
		if n := cn.obs.count(wire.OpBatch, -1); n != want[i] {
			t.Errorf("%s: %d OpBatch requests, want %d", cn.id, n, want[i])
		}
	}
	if rs := c.Routing(); rs.RefreshedMaps != 1 || rs.Redirects != 1 {
		t.Fatalf("one refresh for the whole batch, got %+v", rs)
	}
}

// A pushed map reaches the client before any request: no Moved at all.
func TestClusterPushDeliversTheMap(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 3, clusterConfig{})
	c := tc.connect(t, sdk.WithMapPollInterval(-1))
	keys := tc.keysOn(0, "push:", 20)
	var segs []uint16
	for _, k := range keys {
		segs = append(segs, placement.SegmentOf(k, store.DefaultSegments))
	}
	tc.resetCounters()
	v := tc.move(2, segs...)
	waitFor(t, 5*time.Second, "the pushed map", func() bool { return c.Routing().MapVersion == v })
	for _, k := range keys {
		if r, err := c.Put(ctx, k, []byte("x"), nil); err != nil || !r.OK() {
			t.Fatalf("put %s: %+v %v", k, r, err)
		}
		if got := tc.nodes[2].store.Get(k); !got.OK() {
			t.Fatalf("%s not on the new owner", k)
		}
	}
	rs := c.Routing()
	if tc.moved() != 0 || rs.Redirects != 0 || rs.PushedMaps != 1 || rs.RefreshedMaps != 0 || rs.PolledMaps != 0 {
		t.Fatalf("moved %d, routing %+v", tc.moved(), rs)
	}
}

// With push broken, the poll picks the change up within an interval.
func TestClusterPollHealsABrokenPush(t *testing.T) {
	tc := startCluster(t, 3, clusterConfig{mutePush: true})
	c := tc.connect(t, sdk.WithMapPollInterval(20*time.Millisecond))
	k := tc.keysOn(0, "poll:", 1)[0]
	tc.resetCounters()
	v := tc.move(1, placement.SegmentOf(k, store.DefaultSegments))
	waitFor(t, 5*time.Second, "the polled map", func() bool { return c.Routing().MapVersion == v })
	if r, err := c.Put(context.Background(), k, []byte("x"), nil); err != nil || !r.OK() {
		t.Fatalf("put: %+v %v", r, err)
	}
	rs := c.Routing()
	if tc.moved() != 0 || rs.PolledMaps == 0 || rs.PushedMaps != 0 || rs.Redirects != 0 {
		t.Fatalf("moved %d, routing %+v", tc.moved(), rs)
	}
}

// An older map, however it arrives, is refused: the version never goes
// backwards.
func TestClusterMapVersionNeverGoesBackwards(t *testing.T) {
	tc := startCluster(t, 3, clusterConfig{})
	c := tc.connect(t, sdk.WithMapPollInterval(10*time.Millisecond))
	v := tc.move(1, 0)
	waitFor(t, 5*time.Second, "the new map", func() bool { return c.Routing().MapVersion == v })
	tc.mu.Lock()
	old := *tc.m
	tc.mu.Unlock()
	old.Version = 1
	old.SegmentOwner = slices.Clone(old.SegmentOwner)
	old.SegmentOwner[0] = 0
	tc.publish(&old) // pushed and polled: both must refuse it
	waitFor(t, 5*time.Second, "stale maps refused", func() bool { return c.Routing().StaleMaps >= 2 })
	if rs := c.Routing(); rs.MapVersion != v {
		t.Fatalf("the table went back to version %d", rs.MapVersion)
	}
	if r, err := c.Put(context.Background(), tc.keysOn(1, "nb:", 1)[0], []byte("x"), nil); err != nil || !r.OK() {
		t.Fatalf("put: %+v %v", r, err)
	}
}

// Concurrent operations while segments move back and forth: every call
// succeeds (redirects stay inside the client), and every acknowledged write
// is held by the node that acknowledged it (data does not move with a
// segment yet: RF 1, no migration).
func TestClusterOwnershipChurnUnderLoad(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 3, clusterConfig{})
	c := tc.connect(t, sdk.WithMapPollInterval(-1))
	var keys []string
	for i := range 3 {
		keys = append(keys, tc.keysOn(i, "churn:", 8)...)
	}
	const workers = 4
	var stop atomic.Bool
	var wg sync.WaitGroup
	var ledger sync.Map // key → last acknowledged value
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				k := keys[(i*workers+w)%len(keys)] // workers write disjoint keys
				v := fmt.Sprintf("%d/%d", w, i)
				r, err := c.Put(ctx, k, []byte(v), nil)
				if err != nil || !r.OK() {
					errs <- fmt.Errorf("put %s: %v %v", k, r.Status, err)
					return
				}
				ledger.Store(k, v)
			}
		})
	}
	var segs []uint16
	for _, k := range keys {
		segs = append(segs, placement.SegmentOf(k, store.DefaultSegments))
	}
	for round := range 20 {
		var half []uint16
		for j := round % 2; j < len(segs); j += 2 {
			half = append(half, segs[j])
		}
		tc.move(round%3, half...)
		time.Sleep(20 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n := 0
	ledger.Range(func(key, value any) bool {
		k, v := key.(string), value.(string)
		seg := placement.SegmentOf(k, store.DefaultSegments)
		held := false
		for _, cn := range tc.nodes {
			for _, r := range cn.store.Segment(seg).Snapshot().Records {
				held = held || (r.Key() == k && string(r.Value()) == v)
			}
		}
		if !held {
			t.Errorf("acknowledged write %s=%s is on no node", k, v)
		}
		n++
		return true
	})
	rs := c.Routing()
	if n != len(keys) || rs.Redirects == 0 {
		t.Fatalf("%d keys written, routing %+v", n, rs)
	}
	t.Logf("routing after churn: %+v", rs)
}

// An owner that cannot be reached answers its items Unavailable; the other
// owners' items succeed. Single-key calls to it fail with ErrUnreachable
// within their deadline.
func TestClusterUnreachableOwner(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 3, clusterConfig{})
	c := tc.connect(t, sdk.WithMapPollInterval(-1))
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = fmt.Sprintf("down:%d", i)
	}
	tc.nodes[2].stop()
	res, err := c.GetMany(ctx, keys)
	if err != nil || len(res) != 300 {
		t.Fatalf("GetMany with an owner down: %d %v", len(res), err)
	}
	for i, r := range res {
		down := tc.ownerOf(keys[i]) == 2
		if down && r.Status != sdk.StatusUnavailable && r.Status != sdk.StatusTimeout {
			t.Fatalf("item of the down owner: %+v", r)
		}
		if !down && r.Status != sdk.StatusNotFound {
			t.Fatalf("item of a live owner: %+v", r)
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	k := tc.keysOn(2, "down1:", 1)[0]
	if _, err := c.Get(dctx, k); !errors.Is(err, sdk.ErrUnreachable) {
		t.Fatalf("get on the down owner: %v", err)
	}
	// Every item on the down owner: no item got an answer, the call fails
	// (with its own deadline: the retries spend the whole of one).
	gctx, gcancel := context.WithTimeout(ctx, 2*time.Second)
	defer gcancel()
	if _, err := c.GetMany(gctx, tc.keysOn(2, "down2:", 5)); !errors.Is(err, sdk.ErrUnreachable) {
		t.Fatalf("GetMany all on the down owner: %v", err)
	}
}

// Scan fans out to every owner and merges in key order; DBSIZE and FLUSH
// through Do cover every owner; a raw SCAN is refused.
func TestClusterScanAndNodeCommands(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 4, clusterConfig{})
	c := tc.connect(t)
	var want []string
	for i := range 500 {
		k := fmt.Sprintf("scan:%04d", i)
		want = append(want, k)
		if r, _ := c.Put(ctx, k, []byte("v"), nil); !r.OK() {
			t.Fatal(r.Status)
		}
	}
	items, err := c.Scan().All(ctx, sdk.KeyRange{Prefix: "scan:"}, sdk.ScanOptions{PageSize: 37})
	if err != nil || !slices.Equal(scanKeys(items), want) {
		t.Fatalf("scan: %d keys, %v", len(items), err)
	}
	for _, cn := range tc.nodes {
		if cn.obs.count(wire.OpCommand, -1) == 0 {
			t.Errorf("%s was not scanned", cn.id)
		}
	}
	if r, err := c.Do(ctx, sdk.NewCmd(kv.CmdDBSize, "")); err != nil || r.Int != 500 {
		t.Fatalf("DBSIZE: %+v %v", r, err)
	}
	if r, err := c.Do(ctx, sdk.NewCmd(kv.CmdScan, "")); err != nil || r.Status != sdk.StatusBadRequest {
		t.Fatalf("raw SCAN: %+v %v", r, err)
	}
	if r, err := c.Do(ctx, sdk.NewCmd(kv.CmdFlush, "")); err != nil || !r.OK() {
		t.Fatalf("FLUSH: %+v %v", r, err)
	}
	for _, cn := range tc.nodes {
		if n := cn.store.DBSize(); n != 0 {
			t.Fatalf("%s holds %d keys after FLUSH", cn.id, n)
		}
	}
}

// A transaction over keys of several owners commits on each of them, all
// or nothing.
func TestClusterTxAcrossOwners(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 3, clusterConfig{})
	c := tc.connect(t)
	a, b, d := tc.keysOn(0, "tx:", 1)[0], tc.keysOn(1, "tx:", 1)[0], tc.keysOn(2, "tx:", 1)[0]
	mustPut(t, c, a, "10")
	tx := c.Tx()
	if _, err := tx.Get(ctx, a); err != nil {
		t.Fatal(err)
	}
	res, err := tx.Put(a, []byte("5"), nil).Put(b, []byte("5"), nil).Delete(d).Commit(ctx)
	if err != nil || !res.OK() || len(res.Writes) != 3 {
		t.Fatalf("commit: %+v %v", res, err)
	}
	for i, k := range []string{a, b} {
		if got := tc.nodes[i].store.Get(k); string(got.Value) != "5" {
			t.Fatalf("%s on node %d: %+v", k, i, got)
		}
	}
	// A read that moved on one owner aborts the writes on all of them.
	tx = c.Tx()
	tx.Get(ctx, a)
	mustPut(t, c, a, "other")
	if _, err := tx.Put(a, []byte("x"), nil).Put(b, []byte("x"), nil).Commit(ctx); !errors.Is(err, sdk.ErrConflict) {
		t.Fatalf("conflicting commit: %v", err)
	}
	wantValue(t, c, b, "5")
}

// A prefix watch merges every owner's stream; a change of owner does not
// end it: the segment resumes on the new owner (here a store that holds
// none of the segment's history, so with a WatchResync).
func TestClusterWatchFanOut(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 3, clusterConfig{})
	c := tc.connect(t, sdk.WithMapPollInterval(-1))
	var keys []string
	for i := range 3 {
		keys = append(keys, tc.keysOn(i, "w:", 2)...)
	}
	for _, k := range keys[:3] {
		mustPut(t, c, k, "before")
	}
	w, err := c.Watch().Prefix(ctx, "w:", &sdk.WatchOptions{Snapshot: true, IncludeValues: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got := len(w.Snapshot()); got != 3 {
		t.Fatalf("snapshot of %d records, want 3", got)
	}
	for _, k := range keys {
		mustPut(t, c, k, "after")
	}
	seen := map[string]bool{}
	for range keys {
		ev := recvEvent(t, w)
		if ev.Kind != sdk.WatchPut || string(ev.Value) != "after" || seen[ev.Key] {
			t.Fatalf("event %+v (seen %v)", ev, seen)
		}
		seen[ev.Key] = true
	}
	kw, err := c.Watch().Key(ctx, keys[4], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer kw.Close()
	other, err := c.Watch().Key(ctx, keys[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	// Node 2's segment of keys[4] moves to node 0, whose store holds none
	// of its history (this harness copies no data): the prefix watch and
	// the watch of keys[4] resume there with a WatchResync of that
	// segment, then its events; the watch of keys[0] is untouched.
	seg := uint16(placement.SegmentOf(keys[4], store.DefaultSegments))
	v := tc.move(0, seg)
	waitFor(t, 5*time.Second, "the pushed map", func() bool { return c.Routing().MapVersion == v })
	for _, s := range []*sdk.WatchStream{w, kw} {
		if ev := recvEvent(t, s); ev.Kind != sdk.WatchResync || ev.Segment != seg || len(ev.Records) != 0 {
			t.Fatalf("after a move to a copy without history: %+v", ev)
		}
	}
	mustPut(t, c, keys[0], "still")
	for _, s := range []*sdk.WatchStream{other, w} {
		if ev := recvEvent(t, s); ev.Key != keys[0] {
			t.Fatalf("unaffected segment: %+v", ev)
		}
	}
	mustPut(t, c, keys[4], "new owner")
	for _, s := range []*sdk.WatchStream{w, kw} {
		if ev := recvEvent(t, s); ev.Key != keys[4] || s == w && string(ev.Value) != "new owner" {
			t.Fatalf("watch on the new owner: %+v", ev)
		}
	}
}

// Pub/sub: each message reaches each subscriber once, whichever node is
// the channel's home (the servers' bus carries it to the subscriber's node,
// which holds the subscription's one stream); a channel whose home is a
// node that joined the owners later reaches the earlier subscriptions.
func TestClusterPubSub(t *testing.T) {
	ctx := context.Background()
	tc := startCluster(t, 3, clusterConfig{spare: 1})
	c := tc.connect(t, sdk.WithMapPollInterval(-1))
	pub := tc.connect(t, sdk.WithMapPollInterval(-1))
	var channels []string
	for i := range 3 {
		channels = append(channels, tc.keysOn(i, "chan:", 1)[0])
	}
	sub, err := c.PubSub().Subscribe(ctx, channels...)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	psub, err := c.PubSub().PSubscribe(ctx, "chan:*")
	if err != nil {
		t.Fatal(err)
	}
	defer psub.Close()
	for _, ch := range channels {
		if _, err := pub.PubSub().Publish(ctx, ch, []byte(ch)); err != nil {
			t.Fatalf("publish on %s: %v", ch, err)
		}
		if m := recvMessage(t, sub); m.Channel != ch {
			t.Fatalf("message %+v, want %s", m, ch)
		}
		if m := recvMessage(t, psub); m.Channel != ch || m.Pattern != "chan:*" {
			t.Fatalf("pattern message %+v", m)
		}
	}
	// Once each: nothing more arrives.
	select {
	case m := <-sub.Messages():
		t.Fatalf("a message twice: %+v", m)
	case m := <-psub.Messages():
		t.Fatalf("a pattern message twice: %+v", m)
	case <-time.After(50 * time.Millisecond):
	}
	// The spare node 3 joins the owners with the home segment of a channel.
	joined := tc.keysOn(0, "chan:joined:", 1)[0]
	v := tc.move(3, placement.SegmentOf(joined, store.DefaultSegments))
	waitFor(t, 5*time.Second, "the pushed map", func() bool {
		return c.Routing().MapVersion == v && pub.Routing().MapVersion == v
	})
	sub2, err := c.PubSub().Subscribe(ctx, joined)
	if err != nil {
		t.Fatal(err)
	}
	defer sub2.Close()
	// Published on node 3, which holds no stream of the earlier pattern
	// subscription: delivered to it once, through the bus.
	if _, err := pub.PubSub().Publish(ctx, joined, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if m := recvMessage(t, sub2); m.Channel != joined {
		t.Fatalf("message %+v", m)
	}
	if m := recvMessage(t, psub); m.Channel != joined || m.Pattern != "chan:*" {
		t.Fatalf("pattern message %+v", m)
	}
	select {
	case m := <-sub2.Messages():
		t.Fatalf("a message twice: %+v", m)
	case m := <-psub.Messages():
		t.Fatalf("a pattern message twice: %+v", m)
	case <-time.After(50 * time.Millisecond):
	}
}

// The client's routing survives its own Close: background work stops, and
// every call then fails with ErrClosed.
func TestClusterClose(t *testing.T) {
	tc := startCluster(t, 3, clusterConfig{})
	c, err := sdk.Connect(context.Background(), tc.url(), sdk.WithMapPollInterval(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch().Prefix(context.Background(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	c.Close()
	for range w.Events() {
	}
	if !errors.Is(w.Err(), sdk.ErrClosed) {
		t.Fatalf("watch after Close: %v", w.Err())
	}
	if _, err := c.Get(context.Background(), "k"); !errors.Is(err, sdk.ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	if strings.Contains(fmt.Sprint(c.Routing()), "Connected:true") {
		t.Fatalf("connections left open: %+v", c.Routing())
	}
}

// RoutingStats.OwnerChanges counts the maps that gave some segment another
// owner, not every map: a consumer relies on it to notice moves.
func TestClusterCountsOwnerChanges(t *testing.T) {
	tc := startCluster(t, 3, clusterConfig{})
	c := tc.connect(t, sdk.WithMapPollInterval(-1))
	if rs := c.Routing(); rs.OwnerChanges != 0 {
		t.Fatalf("a fresh client counts %d owner changes", rs.OwnerChanges)
	}
	v := tc.move(2) // a new map version, every segment with the same owner
	waitFor(t, 5*time.Second, "the pushed map", func() bool { return c.Routing().MapVersion == v })
	if rs := c.Routing(); rs.OwnerChanges != 0 {
		t.Fatalf("a map that moved nothing counted as an owner change: %+v", rs)
	}
	seg := placement.SegmentOf(tc.keysOn(0, "owner:", 1)[0], store.DefaultSegments)
	v = tc.move(1, seg)
	waitFor(t, 5*time.Second, "the pushed map", func() bool { return c.Routing().MapVersion == v })
	if rs := c.Routing(); rs.OwnerChanges != 1 {
		t.Fatalf("one segment moved: %+v", rs)
	}
}

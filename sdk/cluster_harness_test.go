package sdk_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/bus"
	"github.com/zaris-io/zaris/server/native"
	"github.com/zaris-io/zaris/server/store"
)

// testCluster is N real native servers on loopback ports, each with its own
// store owning only its segments (SetOwned false for the others), and one
// routing map they all serve: a static cluster. move changes an owner the
// way a cluster would — the stores first, then the published map.
type testCluster struct {
	nodes []*clusterNode
	src   *native.StaticRouting

	mu sync.Mutex // guards m
	m  *wire.RoutingMap
}

type clusterNode struct {
	id    string
	addr  string
	store *store.Store
	srv   *native.Server
	obs   *opCounter
	done  chan error
	bus   *bus.Bus     // the cluster pub/sub bus, as a server node runs it
	busLn net.Listener // its peer listener (the bus protocol only)
}

// clusterConfig tunes startCluster.
type clusterConfig struct {
	store store.Config
	// mutePush: the servers answer the map but never push a change (push
	// broken); clients learn by polling or from redirects.
	mutePush bool
	// spare nodes are started and listed in the map without segments.
	spare int
	// maxFrame is the servers' frame limit (0: the default).
	maxFrame int
}

// mutedSource serves the map but never reports a change: a broken push.
type mutedSource struct{ *native.StaticRouting }

func (mutedSource) Changed() <-chan struct{} { return nil }

func startCluster(t testing.TB, n int, cc clusterConfig) *testCluster {
	t.Helper()
	if cc.store.Segments == 0 {
		cc.store = store.DefaultConfig()
	}
	total := cc.store.Segments
	tc := &testCluster{}
	listeners := make([]net.Listener, n+cc.spare)
	m := &wire.RoutingMap{Version: 1, TotalSegments: total, SegmentOwner: make([]int32, total)}
	for i := range listeners {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners[i] = l
		port := l.Addr().(*net.TCPAddr).Port
		m.Nodes = append(m.Nodes, wire.RoutingNode{ID: fmt.Sprintf("node-%d", i), Host: "127.0.0.1", ClientPort: port})
	}
	for s := range m.SegmentOwner {
		m.SegmentOwner[s] = int32(s * n / total) // contiguous ranges, like the planner's
	}
	tc.m = m
	tc.src = native.NewStaticRouting(m)
	var src native.RoutingSource = tc.src
	if cc.mutePush {
		src = mutedSource{tc.src}
	}
	for i, l := range listeners {
		st, err := store.New(cc.store)
		if err != nil {
			t.Fatal(err)
		}
		for s := range total {
			if int(m.SegmentOwner[s]) != i {
				st.Segment(uint16(s)).SetOwned(false)
			}
		}
		cn := &clusterNode{id: m.Nodes[i].ID, addr: l.Addr().String(), store: st, obs: &opCounter{}, done: make(chan error, 1)}
		cn.srv, err = native.New(native.Config{Store: st, StoreName: "default", NodeID: cn.id, Version: "test",
			Routing: src, Observer: cn.obs, MaxFrameSize: cc.maxFrame})
		if err != nil {
			t.Fatal(err)
		}
		go func() { cn.done <- cn.srv.Serve(l) }()
		tc.nodes = append(tc.nodes, cn)
	}
	tc.startBus(t)
	t.Cleanup(func() {
		for _, cn := range tc.nodes {
			cn.stop()
		}
	})
	return tc
}

// startBus joins the nodes' brokers with the cluster pub/sub bus
// (server/bus) over loopback, as server nodes do over their peer port: a
// message published on one node reaches the subscribers of every node.
func (tc *testCluster) startBus(t testing.TB) {
	t.Helper()
	peers := make([]bus.Peer, len(tc.nodes))
	for i, cn := range tc.nodes {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cn.busLn = l
		peers[i] = bus.Peer{ID: cn.id, Addr: l.Addr().String()}
	}
	for _, cn := range tc.nodes {
		cn.bus = bus.New(bus.Config{Self: cn.id, Broker: cn.store.PubSub(),
			Peers: func() []bus.Peer { return peers },
			Dial: func(ctx context.Context, p bus.Peer) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "tcp", p.Addr)
			}})
		cn.store.PubSub().SetForwarder(cn.bus.Forward)
		go func() {
			for {
				c, err := cn.busLn.Accept()
				if err != nil {
					return
				}
				go func() { defer c.Close(); cn.bus.Serve(c) }()
			}
		}()
		cn.bus.Sync()
	}
	// Each link is up once a message crosses it.
	for _, from := range tc.nodes {
		for _, to := range tc.nodes {
			if from == to {
				continue
			}
			sub := to.store.PubSub().NewSubscription(64)
			sub.Subscribe("bus-probe")
			waitFor(t, 10*time.Second, "the bus link "+from.id+" → "+to.id, func() bool {
				from.store.PubSub().Publish("bus-probe", nil)
				select {
				case <-sub.Messages():
					return true
				case <-time.After(20 * time.Millisecond):
					return false
				}
			})
			sub.Close()
		}
	}
}

func (cn *clusterNode) stop() {
	if cn.bus != nil {
		cn.bus.Close()
		_ = cn.busLn.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = cn.srv.Shutdown(ctx)
	_ = cn.store.Close()
}

// url is a connection string with every node as a seed.
func (tc *testCluster) url() string {
	s := "zaris://"
	for i, cn := range tc.nodes {
		if i > 0 {
			s += ","
		}
		s += cn.addr
	}
	return s + "/default"
}

// connect opens a cluster client and waits until it follows a node's map
// stream, so that a change made next reaches it by push (or, with a muted
// push, by poll or redirect only) — never through a stream opened after it.
func (tc *testCluster) connect(t testing.TB, opts ...sdk.Option) *sdk.Client {
	t.Helper()
	c, err := sdk.Connect(context.Background(), tc.url(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	waitFor(t, 5*time.Second, "the push stream", func() bool { return c.Routing().PushNode != "" })
	return c
}

// version is the current map version.
func (tc *testCluster) version() uint64 {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.m.Version
}

// ownerOf is the index of the node owning key's segment.
func (tc *testCluster) ownerOf(key string) int {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return int(tc.m.SegmentOwner[placement.SegmentOf(key, tc.m.TotalSegments)])
}

// move gives the segments to node to: the stores change first (the old
// owner answers Moved from now on), then the map is published with the next
// version. It returns that version.
func (tc *testCluster) move(to int, segs ...uint16) uint64 {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	next := *tc.m
	next.Version++
	next.SegmentOwner = append([]int32(nil), tc.m.SegmentOwner...)
	for _, s := range segs {
		from := next.SegmentOwner[s]
		if from >= 0 {
			tc.nodes[from].store.Segment(s).SetOwned(false)
		}
		tc.nodes[to].store.Segment(s).SetOwned(true)
		next.SegmentOwner[s] = int32(to)
	}
	tc.m = &next
	tc.src.Set(&next)
	return next.Version
}

// publish sets m as the map as is (no store change): a stale or bogus map.
func (tc *testCluster) publish(m *wire.RoutingMap) { tc.src.Set(m) }

// segmentsOf lists the segments node i owns.
func (tc *testCluster) segmentsOf(i int) []uint16 {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var segs []uint16
	for s, o := range tc.m.SegmentOwner {
		if int(o) == i {
			segs = append(segs, uint16(s))
		}
	}
	return segs
}

func (tc *testCluster) resetCounters() {
	for _, cn := range tc.nodes {
		cn.obs.reset()
	}
}

// count sums an opcode's requests (with status st, or any when st < 0)
// over every node.
func (tc *testCluster) count(op wire.Opcode, st int) int {
	n := 0
	for _, cn := range tc.nodes {
		n += cn.obs.count(op, st)
	}
	return n
}

// keysOn returns n keys (prefix + number) whose segments node i owns.
func (tc *testCluster) keysOn(i int, prefix string, n int) []string {
	var keys []string
	for j := 0; len(keys) < n; j++ {
		k := prefix + strconv.Itoa(j)
		if tc.ownerOf(k) == i {
			keys = append(keys, k)
		}
	}
	return keys
}

// eventually polls cond until it holds or the time is up.
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testscale.Eventually(t, within, 5*time.Millisecond, what, cond)
}

// opCounter is a native.Observer counting requests by opcode and status.
type opCounter struct {
	mu     sync.Mutex // guards counts
	counts map[wire.Opcode]map[kv.Status]int
}

func (o *opCounter) Op(_ uint32, op wire.Opcode, st kv.Status, _ time.Duration) {
	o.mu.Lock()
	if o.counts == nil {
		o.counts = map[wire.Opcode]map[kv.Status]int{}
	}
	if o.counts[op] == nil {
		o.counts[op] = map[kv.Status]int{}
	}
	o.counts[op][st]++
	o.mu.Unlock()
}

func (o *opCounter) ConnOpened() {}
func (o *opCounter) ConnClosed() {}

func (o *opCounter) reset() {
	o.mu.Lock()
	o.counts = nil
	o.mu.Unlock()
}

func (o *opCounter) count(op wire.Opcode, st int) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if st >= 0 {
		return o.counts[op][kv.Status(st)]
	}
	n := 0
	for _, c := range o.counts[op] {
		n += c
	}
	return n
}

// moved counts the requests any node answered Moved (for a batch: a batch
// with at least one Moved item, the worst status of the batch).
func (tc *testCluster) moved() int {
	n := 0
	for _, cn := range tc.nodes {
		cn.obs.mu.Lock()
		for _, byStatus := range cn.obs.counts {
			n += byStatus[kv.StatusMoved]
		}
		cn.obs.mu.Unlock()
	}
	return n
}

package bus

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server/store"
)

type testNode struct {
	st  *store.Store
	bus *Bus
	ln  net.Listener

	mu      sync.Mutex // guards applied, invalidated, linksLost
	applied map[string]string
	// invalidated: what OnInvalidate received ("flush" for a flush).
	invalidated []string
	linksLost   int
}

// startNodes runs n buses over loopback, each serving its own listener as
// a node's peer mux would hand it the bus's connections.
func startNodes(t *testing.T, n int) []*testNode {
	t.Helper()
	nodes := make([]*testNode, n)
	peers := make([]Peer, n)
	for i := range nodes {
		st, err := store.New(store.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = &testNode{st: st, ln: ln, applied: map[string]string{}}
		peers[i] = Peer{ID: string(rune('a' + i)), Addr: ln.Addr().String()}
	}
	for i, nd := range nodes {
		nd.bus = New(Config{Self: peers[i].ID, Broker: nd.st.PubSub(),
			Peers: func() []Peer { return peers },
			Dial: func(ctx context.Context, p Peer) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "tcp", p.Addr)
			},
			OnSetting: func(name, value string) {
				nd.mu.Lock()
				nd.applied[name] = value
				nd.mu.Unlock()
			},
			OnInvalidate: func(keys []string, flush bool) {
				nd.mu.Lock()
				defer nd.mu.Unlock()
				if flush {
					nd.invalidated = append(nd.invalidated, "flush")
				}
				nd.invalidated = append(nd.invalidated, keys...)
			},
			OnLinkLost: func() {
				nd.mu.Lock()
				nd.linksLost++
				nd.mu.Unlock()
			}})
		nd.st.PubSub().SetForwarder(nd.bus.Forward)
		go func() {
			for {
				c, err := nd.ln.Accept()
				if err != nil {
					return
				}
				go func() { defer c.Close(); nd.bus.Serve(c) }()
			}
		}()
		t.Cleanup(func() { nd.bus.Close(); _ = nd.ln.Close(); _ = nd.st.Close() })
	}
	return nodes
}

func (nd *testNode) setting(name string) string {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.applied[name]
}

func TestBusDeliversOncePerNodeAndAnswersQueries(t *testing.T) {
	nodes := startNodes(t, 3)
	subs := make([]*store.Subscription, 3)
	for i, nd := range nodes {
		subs[i] = nd.st.PubSub().NewSubscription(1024)
		subs[i].Subscribe("ch")
		nd.bus.Sync()
	}
	subs[2].PSubscribe("c*")
	// Each link carries a message once it is connected; until then a
	// publish may be dropped (fire-and-forget), so wait for one through.
	testscale.Eventually(t, 10*time.Second, 10*time.Millisecond, "every link up", func() bool {
		s := nodes[0].bus.Stats()
		nodes[0].st.PubSub().Publish("warm", nil)
		return s.Links == 2 && nodes[1].bus.Stats().Received > 0 && nodes[2].bus.Stats().Received > 0
	})
	if n := nodes[0].st.PubSub().Publish("ch", []byte("m")); n != 1 {
		t.Fatalf("local receivers %d", n)
	}
	for i, s := range subs {
		want := 1
		if i == 2 {
			want = 2 // the channel and the pattern
		}
		for range want {
			select {
			case m := <-s.Messages():
				if m.Channel != "ch" || string(m.Payload) != "m" {
					t.Fatalf("node %d: %+v", i, m)
				}
			case <-time.After(testscale.D(10 * time.Second)):
				t.Fatalf("node %d: no message", i)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	replies, missing := nodes[0].bus.Query(ctx, "numsub", []string{"ch", "none"})
	if missing != 0 || len(replies) != 2 {
		t.Fatalf("replies %+v, missing %d", replies, missing)
	}
	for _, r := range replies {
		if len(r.Ints) != 2 || r.Ints[0] != 1 || r.Ints[1] != 0 {
			t.Fatalf("numsub reply %+v", r)
		}
	}
	replies, _ = nodes[1].bus.Query(ctx, "numpat", nil)
	pats := 0
	for _, r := range replies {
		pats += len(r.Args)
	}
	if pats != 1 {
		t.Fatalf("patterns %+v", replies)
	}
}

// A setting made on one node reaches the others; the later of two wins
// everywhere, on a node that opened no link itself too.
func TestBusSettingsLastWriterWins(t *testing.T) {
	nodes := startNodes(t, 3)
	nodes[0].bus.Sync()
	nodes[1].bus.Sync()
	nodes[0].bus.Set("notify-keyspace-events", "AKE")
	testscale.Eventually(t, 10*time.Second, 10*time.Millisecond, "node b learns it", func() bool {
		return nodes[1].setting("notify-keyspace-events") == "AKE"
	})
	nodes[1].bus.Set("notify-keyspace-events", "Kx")
	testscale.Eventually(t, 10*time.Second, 10*time.Millisecond, "node a takes the later value", func() bool {
		return nodes[0].setting("notify-keyspace-events") == "Kx"
	})
	// Node c opened no link of its own: it learns over the links the
	// others opened to it (each opens with the sender's settings).
	testscale.Eventually(t, 10*time.Second, 10*time.Millisecond, "node c learns it", func() bool {
		return nodes[2].setting("notify-keyspace-events") == "Kx"
	})
	if v, _ := nodes[0].bus.Setting("notify-keyspace-events"); v != "Kx" {
		t.Fatalf("node a holds %q", v)
	}
}

func (nd *testNode) invalidations() ([]string, int) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return append([]string(nil), nd.invalidated...), nd.linksLost
}

// Invalidations reach only the members the filter accepts, in order; a
// flush is a flush; the end of a member's link is reported (a query's
// connection is not).
func TestBusInvalidations(t *testing.T) {
	nodes := startNodes(t, 3)
	for _, nd := range nodes {
		nd.bus.Sync()
	}
	onlyB := func(id string) bool { return id == "b" }
	testscale.Eventually(t, 10*time.Second, 10*time.Millisecond, "the link to b carries an invalidation", func() bool {
		nodes[0].bus.Invalidate([]string{"warm"}, false, onlyB)
		got, _ := nodes[1].invalidations()
		return len(got) > 0
	})
	nodes[0].bus.Invalidate([]string{"k1", "k2"}, false, onlyB)
	nodes[0].bus.Invalidate(nil, true, onlyB)
	nodes[0].bus.Invalidate([]string{"k3"}, false, onlyB)
	testscale.Eventually(t, 10*time.Second, 10*time.Millisecond, "b got k1 k2 flush k3", func() bool {
		got, _ := nodes[1].invalidations()
		n := len(got)
		return n >= 4 && fmt.Sprint(got[n-4:]) == "[k1 k2 flush k3]"
	})
	if got, _ := nodes[2].invalidations(); len(got) != 0 {
		t.Fatalf("c is not interested, got %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nodes[0].bus.Query(ctx, "numpat", nil)
	if _, lost := nodes[1].invalidations(); lost != 0 {
		t.Fatalf("links lost %d before any closed", lost)
	}
	nodes[0].bus.Close() // a's links end
	testscale.Eventually(t, 10*time.Second, 10*time.Millisecond, "b saw a's link end", func() bool {
		_, lost := nodes[1].invalidations()
		return lost >= 1
	})
}

// A link that had to drop invalidations owes its member a flush, queued
// before the next invalidation.
func TestBusOwedFlush(t *testing.T) {
	st, err := store.New(store.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	// A member whose dial never ends (until the test does): the link never
	// connects nor drains, its queue (1) fills.
	release := make(chan struct{})
	b := New(Config{Self: "a", Broker: st.PubSub(), Queue: 1,
		Peers: func() []Peer { return []Peer{{ID: "b", Addr: "unreachable"}} },
		Dial: func(ctx context.Context, p Peer) (net.Conn, error) {
			<-release
			return nil, context.Canceled
		}})
	t.Cleanup(b.Close)
	t.Cleanup(func() { close(release) }) // runs first
	b.Sync()
	b.Invalidate([]string{"k1"}, false, nil) // queued
	b.Invalidate([]string{"k2"}, false, nil) // dropped: owes a flush
	b.mu.Lock()
	l := b.links["b"]
	owes := l.owesFlush
	queued := <-l.q
	b.mu.Unlock()
	if !owes {
		t.Fatal("a dropped invalidation must leave a flush owed")
	}
	var f Frame
	if err := DecodeFrame(queued[4:], &f); err != nil || f.Kind != KindInvalidate || f.Args[0] != "k1" {
		t.Fatalf("queued %+v %v", f, err)
	}
	b.Invalidate([]string{"k3"}, false, nil) // the flush goes first; k3 does not fit
	b.mu.Lock()
	queued = <-l.q
	owes = l.owesFlush
	b.mu.Unlock()
	if err := DecodeFrame(queued[4:], &f); err != nil || f.Name != "flush" {
		t.Fatalf("want the owed flush first, got %+v %v", f, err)
	}
	if !owes {
		t.Fatal("k3 was dropped: a flush is owed again")
	}
}

// A member slow to accept its link (dials failing for a while, as on a
// starved node or at formation) gets the messages published meanwhile once
// the link connects — they were dropped at the first failed dial, and a
// PUBLISH right after a cluster formed could reach nobody on that member.
func TestBusKeepsMessagesThroughFailedDials(t *testing.T) {
	nodes := startNodes(t, 2)
	a, b := nodes[0], nodes[1]
	sub := b.st.PubSub().NewSubscription(16)
	t.Cleanup(sub.Close)
	sub.Subscribe("news")
	// a's link to b fails its first dials.
	var mu sync.Mutex
	failures := 3
	dial := a.bus.cfg.Dial
	a.bus.cfg.Dial = func(ctx context.Context, p Peer) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		if failures > 0 {
			failures--
			return nil, fmt.Errorf("refused (test)")
		}
		return dial(ctx, p)
	}
	a.bus.Sync()
	a.st.PubSub().Publish("news", []byte("hello"))
	select {
	case m := <-sub.Messages():
		if string(m.Payload) != "hello" {
			t.Fatalf("message %+v", m)
		}
	case <-time.After(testscale.D(10 * time.Second)):
		t.Fatal("the message published while the link was failing its dials never arrived")
	}
}

func TestShouldDrop(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cases := []struct {
		name string
		down time.Duration
		want bool
	}{
		{"a first failed dial keeps the queue (a slow accept is not a dead member)", 0, false},
		{"a link out of reach for less than linkDropAfter keeps it", linkDropAfter - time.Millisecond, false},
		{"a member out of reach for linkDropAfter loses what was queued (bounded memory)", linkDropAfter, true},
	}
	for _, c := range cases {
		if got := shouldDrop(t0, t0.Add(c.down)); got != c.want {
			t.Errorf("%s: got %v", c.name, got)
		}
	}
}

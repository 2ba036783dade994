package bus

import (
	"context"
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

	mu      sync.Mutex // guards applied
	applied map[string]string
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

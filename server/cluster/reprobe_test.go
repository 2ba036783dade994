package cluster

import (
	"net"
	"testing"
	"time"
)

// A suspected member whose gossip pings go unanswered — on a starved
// machine UDP acks came late for a minute on end — but that serves on its
// peer port is recorded as probed (and so cleared to alive by the next
// probe check); one that answers on neither is not. The silent gossip
// address is a bound UDP socket nobody reads; the serving member is a node
// a's memberlist does not know, so that only the re-probe can record it.
func TestReprobeAsksThePeerPortWhenGossipIsSilent(t *testing.T) {
	a := startTestNode(t, "n1", nil).c
	b := startTestNode(t, "n2", nil).c
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	probedAfter := func(id NodeID, t0 time.Time) bool {
		a.probeMu.Lock()
		defer a.probeMu.Unlock()
		return a.probed[string(id)].After(t0)
	}
	checking := func(id NodeID) bool {
		a.probeMu.Lock()
		defer a.probeMu.Unlock()
		return a.reprobing[string(id)]
	}

	serving := b.cfg.Self
	serving.GossipPort = silent.LocalAddr().(*net.UDPAddr).Port
	t0 := time.Now()
	a.reprobe(serving, 5*time.Second)
	eventually(t, 20*time.Second, "the member serving on its peer port recorded as probed", func() bool {
		return probedAfter(serving.ID, t0)
	})

	gone := serving
	gone.ID, gone.PeerPort = "ghost", closedPort
	t1 := time.Now()
	a.reprobe(gone, time.Second)
	eventually(t, 20*time.Second, "the check of the silent member over", func() bool { return !checking(gone.ID) })
	if probedAfter(gone.ID, t1) {
		t.Fatal("a member answering on neither gossip nor its peer port was recorded as probed")
	}
}

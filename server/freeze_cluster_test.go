package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
)

func ownedSegments(nd *server.Node) []int {
	var out []int
	for i := range nd.Store().Segments() {
		if nd.Store().Segment(uint16(i)).Owned() {
			out = append(out, i)
		}
	}
	return out
}

// A node that was frozen past the threshold serves nothing until it has
// re-confirmed its map with the leader, then serves what the map gives it.
func TestFreezeFencesUntilTheMapIsReconfirmed(t *testing.T) {
	c := clustertest.Start(t, 2, clustertest.Options{Partitions: 2, Mutate: func(cfg *server.Config) { cfg.ReplicationFactor = 2 }})
	for _, nd := range c.Nodes() {
		owned := ownedSegments(nd)
		if len(owned) == 0 {
			t.Fatalf("node owns no segment")
		}
		server.SimulateFreeze(nd, 5*time.Second)
		if !server.Fenced(nd) {
			t.Fatal("a node frozen for 5 s with a peer is not fenced")
		}
		if got := ownedSegments(nd); len(got) != 0 {
			t.Fatalf("fenced node still owns %d segments", len(got))
		}
		deadline := time.Now().Add(10 * time.Second)
		for server.Fenced(nd) || len(ownedSegments(nd)) != len(owned) {
			if time.Now().After(deadline) {
				t.Fatalf("still fenced=%v, owning %d of %d segments, 10 s after the freeze", server.Fenced(nd), len(ownedSegments(nd)), len(owned))
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got := fenceCount(t, nd); got != "1" {
			t.Fatalf("zaris_freeze_fences_total = %q, want 1", got)
		}
	}
}

// fenceCount is the value of zaris_freeze_fences_total on nd's /metrics.
func fenceCount(t *testing.T, nd *server.Node) string {
	t.Helper()
	resp, err := http.Get("http://" + nd.Addr(server.EndpointHTTP).String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "zaris_freeze_fences_total "); ok {
			return v
		}
	}
	return "(absent)"
}

func TestFreezeNeverFencesASingleNode(t *testing.T) {
	c := clustertest.Start(t, 1, clustertest.Options{})
	nd := c.Nodes()[0]
	owned := len(ownedSegments(nd))
	server.SimulateFreeze(nd, time.Minute)
	if server.Fenced(nd) || len(ownedSegments(nd)) != owned {
		t.Fatalf("a single node fenced itself (fenced=%v, owned %d of %d)", server.Fenced(nd), len(ownedSegments(nd)), owned)
	}
}

// Two goroutines resume together after a freeze — the ticker (or a first
// reader) fences, another reader checks at the same moment. Once the
// second reader's check returns, the segments must be unowned: it may
// skip the lock because it loads the fence's new tick, and the fence used
// to store that tick before unowning the segments — a resumed owner then
// served a stale read from a segment the loop had not reached
// (TestResumedOwnerDoesNotServeAStaleRead, once under the CPU hog).
func TestFreezeFenceUnownsBeforeAReaderSeesItsTick(t *testing.T) {
	c := clustertest.Start(t, 2, clustertest.Options{Partitions: 2, Mutate: func(cfg *server.Config) { cfg.ReplicationFactor = 2 }})
	nd := c.Nodes()[0]
	owned := ownedSegments(nd)
	if len(owned) == 0 {
		t.Fatal("node owns no segment")
	}
	lastSeg := nd.Store().Segment(uint16(owned[len(owned)-1])) // the fence's loop reaches it last
	for round := range 5 {
		testscale.Eventually(t, 10*time.Second, 5*time.Millisecond, "serving again after the last fence", func() bool {
			return !server.Fenced(nd) && len(ownedSegments(nd)) == len(owned)
		})
		server.BackdateTick(nd, 5*time.Second)
		fenced := make(chan struct{})
		go func() {
			defer close(fenced)
			server.FreezeCheck(nd, time.Now())
		}()
		// The reader checks as soon as the fence is under way (or over).
		for !server.Fenced(nd) && !isClosed(fenced) {
		}
		server.FreezeCheck(nd, time.Now())
		// Owned read before fenced: a re-confirmation re-owns only after
		// it cleared fenced, so both true is the fence's window.
		if lastSeg.Owned() && server.Fenced(nd) {
			t.Fatalf("round %d: a reader's check returned while the fence was up and a segment still owned", round)
		}
		<-fenced
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

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

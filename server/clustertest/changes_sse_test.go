package clustertest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
	"github.com/zaris-io/zaris/server/httpapi"
)

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	id, event, data string
}

// sseStream reads the events of GET /v1/changes.
type sseStream struct {
	resp   *http.Response
	events chan sseEvent
}

func openSSE(t *testing.T, url, lastID string) *sseStream {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET %s: %s %s", url, resp.Status, resp.Header.Get("Content-Type"))
	}
	s := &sseStream{resp: resp, events: make(chan sseEvent, 1024)}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.event != "" {
					s.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return s
}

func (s *sseStream) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatal("the SSE stream ended")
		}
		return ev
	case <-time.After(testscale.D(30 * time.Second)):
		t.Fatal("no SSE event within 30s")
	}
	return sseEvent{}
}

// nextChange skips keep-alives and returns the next change event.
func (s *sseStream) nextChange(t *testing.T) (httpapi.ChangeJSON, string) {
	t.Helper()
	ev := s.next(t)
	if ev.event != "change" {
		t.Fatalf("event %q %s, want a change", ev.event, ev.data)
	}
	var ch httpapi.ChangeJSON
	if err := json.Unmarshal([]byte(ev.data), &ch); err != nil {
		t.Fatal(err)
	}
	return ch, ev.id
}

// TestChangesOverSSE: GET /v1/changes on a real cluster (RF 2, sync) is
// the cluster's change feed as Server-Sent Events: a reconnect with
// Last-Event-ID replays exactly what followed, and the stream rides
// through the kill of the keys' owner (R-OPS-4, issue 14 item 4).
func TestChangesOverSSE(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, Mutate: syncRF2})
	tag := partition0Tag(t, c)
	var via *server.Node // serve the feed from a node that survives the kill
	owner := string(c.Map().Partitions[c.Map().SegmentToPartition[0]].ActiveOwner)
	for _, nd := range c.Running() {
		if nd.Config().NodeID != owner {
			via = nd
		}
	}
	url := "http://" + via.Addr(server.EndpointHTTP).String() + "/v1/changes?prefix=" + tag
	cl, err := sdk.Connect(context.Background(), c.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	put := func(k, v string) {
		t.Helper()
		if r, err := cl.Put(ctx, tag+k, []byte(v), nil); err != nil || !r.OK() {
			t.Fatalf("put %s: %v %v", k, r.Status, err)
		}
	}

	s := openSSE(t, url, "")
	if ev := s.next(t); ev.event != "ready" || ev.id == "" {
		t.Fatalf("first event %+v", ev)
	}
	put("a", "1")
	put("b", "2")
	if _, err := cl.Delete(ctx, tag+"a"); err != nil {
		t.Fatal(err)
	}
	var last string
	for i, want := range []string{"put a 1", "put b 2", "delete a "} {
		ch, id := s.nextChange(t)
		if got := ch.Kind + " " + strings.TrimPrefix(ch.Key, tag) + " " + string(ch.Value); got != want || ch.Revision == 0 {
			t.Fatalf("change %d: %q (%+v), want %q", i, got, ch, want)
		}
		last = id
	}
	s.resp.Body.Close()

	put("c", "3")
	s = openSSE(t, url, last)
	if ev := s.next(t); ev.event != "ready" {
		t.Fatalf("first event after a reconnect %+v", ev)
	}
	if ch, _ := s.nextChange(t); ch.Key != tag+"c" || string(ch.Value) != "3" {
		t.Fatalf("replayed %+v", ch)
	}

	// The owner of the keys dies; the stream goes on from the new owner.
	killOwner(c)
	for i := range 5 {
		put("d", string(rune('0'+i)))
	}
	for i := range 5 {
		if ch, _ := s.nextChange(t); ch.Key != tag+"d" || string(ch.Value) != string(rune('0'+i)) {
			t.Fatalf("after the kill, change %d: %+v", i, ch)
		}
	}

	// A cursor that is not one is refused up front.
	resp, err := http.Get(url + "&cursor=nonsense!")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad cursor: %s", resp.Status)
	}
}

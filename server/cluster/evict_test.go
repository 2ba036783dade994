package cluster

import (
	"bytes"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

type memSink struct{ bytes.Buffer }

func (*memSink) ID() string    { return "mem" }
func (*memSink) Cancel() error { return nil }
func (*memSink) Close() error  { return nil }

// An eviction is a control-plane entry: the map stands, the FSM keeps the
// evicted ids, and they survive a snapshot round trip.
func TestEvictEntryAndSnapshot(t *testing.T) {
	f := newFSM("s", "")
	data, err := EncodeEvict("n3")
	if err != nil {
		t.Fatal(err)
	}
	if r := f.Apply(&raft.Log{Type: raft.LogCommand, Data: data, Term: 1}); r != nil {
		t.Fatalf("apply: %v", r)
	}
	if _, err := DecodeEvict([]byte{byte(EntryEvict)}); err == nil {
		t.Fatal("an empty eviction must not decode")
	}
	if f.Map() != nil || !slices.Equal(f.Evicted(), []NodeID{"n3"}) {
		t.Fatalf("after the eviction: map %v, evicted %v", f.Map(), f.Evicted())
	}
	if m, err := FoldEntry(nil, data, 1, "s", ""); err != nil || m != nil {
		t.Fatalf("fold of an eviction leaves the map: %v %v", m, err)
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	g := newFSM("s", "")
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.Evicted(), []NodeID{"n3"}) {
		t.Fatalf("restored evicted set: %v", g.Evicted())
	}
	// A snapshot of the older format (the bare map) still restores.
	h := newFSM("s", "")
	if err := h.Restore(io.NopCloser(bytes.NewReader([]byte{0xc0}))); err != nil || h.Map() != nil || len(h.Evicted()) != 0 {
		t.Fatalf("old-format snapshot: %v", err)
	}
}

// An evicted member stays Evicted whatever it later says.
func TestTrackerEvictIsFinal(t *testing.T) {
	now := time.Unix(1000, 0)
	tr := NewTracker(NodeInfo{ID: "n1"}, DefaultGraceWindow, now)
	tr.Signal(NodeInfo{ID: "n2"}, SignalAlive, now)
	if !tr.Signal(NodeInfo{ID: "n2"}, SignalEvict, now) {
		t.Fatal("evict must move an alive member")
	}
	tr.Signal(NodeInfo{ID: "n2"}, SignalAlive, now)
	if m, _ := tr.Get("n2"); m.State != MemberEvicted || !m.State.MapAffecting() {
		t.Fatalf("after alive: %v", m.State)
	}
}

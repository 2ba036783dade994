package store

import (
	"strconv"
	"testing"
	"time"
)

// The feed retention keeps what the op-log trims: a position far behind
// the op-log still replays every change after it, in order; past the
// retention bound it is gone (resync), and the bytes are accounted.
func TestFeedRetentionExtendsTheHistory(t *testing.T) {
	s, clk := newTestStore(t, func(c *Config) {
		c.OpLogMaxOps = 4
		c.FeedRetentionBytes = 64 << 10
		c.FeedRetentionAge = time.Minute
	})
	seg := s.SegmentFor("k").ID()
	s.Put("k", []byte("v0"), nil)
	first := s.Get("k")
	for i := 1; i <= 50; i++ {
		s.Put("k", []byte("v"+strconv.Itoa(i)), nil)
	}
	g := s.Segment(seg)
	if g.TrimFloor() <= first.Revision {
		t.Fatalf("the op-log did not trim: floor %d", g.TrimFloor())
	}
	if s.Stats().FeedBytes <= 0 || s.FeedBytes() != s.Stats().FeedBytes {
		t.Fatalf("feed bytes not accounted: %d", s.Stats().FeedBytes)
	}
	pos := WatchPosition{Segment: seg, Revision: first.Revision, Key: "k", Version: first.Version}
	w, _, err := s.Watch(WatchOptions{Key: "k", IncludeValues: true, From: []WatchPosition{pos}})
	if err != nil || len(w.Resyncs()) != 0 {
		t.Fatal(err, w.Resyncs())
	}
	for i := 1; i <= 50; i++ {
		if ev := nextEvent(t, w); string(ev.Value) != "v"+strconv.Itoa(i) {
			t.Fatalf("replayed %d: %q", i, ev.Value)
		}
	}
	w.Close()

	// Past the age bound the next write trims the retention: the old
	// position has expired.
	clk.Advance(2 * time.Minute)
	s.Put("k", []byte("late"), nil)
	if g.FeedFloor() <= first.Revision {
		t.Fatalf("retention not trimmed by age: floor %d", g.FeedFloor())
	}
	w, _, err = s.Watch(WatchOptions{Key: "k", From: []WatchPosition{pos}})
	if err != nil || len(w.Resyncs()) != 1 {
		t.Fatal(err, w.Resyncs())
	}
	w.Close()

	// A snapshot install rewrites the history: the retention restarts and
	// its bytes are released.
	g.InstallSnapshot(Snapshot{Segment: seg, Revision: 1000})
	if g.FeedFloor() != 1000 {
		t.Fatalf("feed floor after a snapshot install: %d", g.FeedFloor())
	}
	if b := s.FeedBytes(); b != 0 {
		t.Fatalf("feed bytes after the only segment's reset: %d", b)
	}
}

// The byte bound trims the oldest retained changes.
func TestFeedRetentionByteBound(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.OpLogMaxOps = 2; c.FeedRetentionBytes = 2000 })
	for i := 0; i < 200; i++ {
		s.Put("k", []byte("0123456789"), nil)
	}
	if b := s.FeedBytes(); b <= 0 || b > 2000 {
		t.Fatalf("feed bytes %d, want within (0, 2000]", b)
	}
}

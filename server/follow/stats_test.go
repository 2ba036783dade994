package follow

import (
	"testing"
	"time"

	"github.com/zaris-io/zaris/sdk"
)

// TestLagInRevisionsAndSeconds: the lag compares the applied cursor with
// samples of the primary's head — revisions behind the newest sample,
// summed over segments, and the age of the newest sample the cursor
// covers (0 while that is the newest and fresh).
func TestLagInRevisionsAndSeconds(t *testing.T) {
	s := NewStats()
	t0 := time.Now()
	s.begin(sdk.Cursor{1: {Revision: 5}, 2: {Revision: 7}}, 100*time.Millisecond)
	if revs, _ := s.Lag(t0); revs != 0 {
		t.Fatalf("before any sample: %d revisions behind, want 0 (nothing known)", revs)
	}
	s.sampled(t0, sdk.Cursor{1: {Revision: 12}, 2: {Revision: 7}, 3: {Revision: 4}})
	revs, secs := s.Lag(t0.Add(time.Second))
	if revs != 7+4 || secs <= 0 {
		t.Fatalf("behind the sample: lag %d revisions, %.3f s; want 11 revisions and the run's age", revs, secs)
	}
	// Half the backlog applied: still behind, in both units.
	s.applied(map[uint16]sdk.CursorPosition{1: {Revision: 12}}, 7)
	if revs, secs := s.Lag(t0.Add(time.Second)); revs != 4 || secs <= 0 {
		t.Fatalf("segment 3 not applied: lag %d revisions, %.3f s; want 4 and > 0", revs, secs)
	}
	s.applied(map[uint16]sdk.CursorPosition{3: {Revision: 4}}, 4)
	if revs, secs := s.Lag(t0.Add(50 * time.Millisecond)); revs != 0 || secs != 0 {
		t.Fatalf("caught up with a fresh sample: lag %d revisions, %.3f s; want 0, 0", revs, secs)
	}
	// No newer sample for a while (the primary unreachable): the lag in
	// seconds is the age of the newest covered sample.
	if _, secs := s.Lag(t0.Add(2 * time.Second)); secs < 1.9 || secs > 2.1 {
		t.Fatalf("2 s after the last sample: lag %.3f s, want its age (2 s)", secs)
	}
	s.end()
	if revs, secs := s.Lag(t0); revs != 0 || secs != 0 {
		t.Fatalf("no applier running: lag %d, %.3f; want 0, 0", revs, secs)
	}
}

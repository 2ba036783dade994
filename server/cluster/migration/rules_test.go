package migration

import "testing"

func TestShouldFence(t *testing.T) {
	for _, tc := range []struct {
		name      string
		streaming bool
		lag       uint64
		want      bool
	}{
		{"a copy still snapshotting is not fenced for: writes would stall for the whole bulk copy", false, 0, false},
		{"a live stream far behind: the fenced delta would be long", true, MaxFenceLag + 1, false},
		{"a live stream nearly level: the fence is short", true, MaxFenceLag, true},
		{"level", true, 0, true},
	} {
		if got := ShouldFence(tc.streaming, tc.lag); got != tc.want {
			t.Errorf("%s: ShouldFence(%v, %d) = %v, want %v", tc.name, tc.streaming, tc.lag, got, tc.want)
		}
	}
}

func TestCutoverVerdict(t *testing.T) {
	proof := []SegmentProof{{Segment: 4, Revision: 10, Digest: 77, Count: 3}, {Segment: 5, Revision: 0, Digest: 0}}
	level := []Holding{{Segment: 4, Revision: 10, Digest: 77, Count: 3, FollowsSource: true}, {Segment: 5}}
	for _, tc := range []struct {
		name     string
		proof    []SegmentProof
		target   []Holding
		replicas [][]Holding
		want     Reason
	}{
		{"level target, no replica", proof, level, nil, Ready},
		{"an empty proof proves nothing: never flip on it", nil, level, nil, MissingSegment},
		{"the target never reported a segment: its writes would vanish", proof, level[:1], nil, MissingSegment},
		{"the target is one write behind the fenced source: that acknowledged write would be lost", proof,
			[]Holding{{Segment: 4, Revision: 9, Digest: 77, Count: 3, FollowsSource: true}, {Segment: 5}}, nil, TargetBehind},
		{"same revision, other content (a half-applied snapshot): equality is proven, not assumed", proof,
			[]Holding{{Segment: 4, Revision: 10, Digest: 78, Count: 3, FollowsSource: true}, {Segment: 5}}, nil, TargetDiverged},
		{"same digest sum, other count", proof,
			[]Holding{{Segment: 4, Revision: 10, Digest: 77, Count: 2, FollowsSource: true}, {Segment: 5}}, nil, TargetDiverged},
		{"the target's revisions come from another owner: they mean other writes", proof,
			[]Holding{{Segment: 4, Revision: 10, Digest: 77, Count: 3}, {Segment: 5}}, nil, TargetForeignHistory},
		{"a live replica applied a later revision of the source's lease: the target does not dominate it", proof, level,
			[][]Holding{{{Segment: 4, Revision: 11, FollowsSource: true}}}, ReplicaAhead},
		{"a replica behind the target is no obstacle", proof, level,
			[][]Holding{{{Segment: 4, Revision: 8, FollowsSource: true}}}, Ready},
		{"a replica of another history does not compare", proof, level,
			[][]Holding{{{Segment: 4, Revision: 50}}}, Ready},
	} {
		got, _ := CutoverVerdict(tc.proof, tc.target, tc.replicas)
		if got != tc.want {
			t.Errorf("%s: verdict %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestShouldRetainAfterCutover(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		hasProof              bool
		live, proof           uint64
		liveCount, proofCount int
		want                  bool
	}{
		{"no proof (a failover, a never-migrated segment): the rule does not intervene", false, 1, 2, 1, 1, false},
		{"the copy is exactly what the new owner proved to hold: drop it", true, 5, 5, 3, 3, false},
		{"a write landed after the proof: the new owner lacks it, keep the copy", true, 6, 5, 3, 3, true},
		{"a key appeared after the proof with a colliding sum: keep", true, 5, 5, 4, 3, true},
	} {
		if got := ShouldRetainAfterCutover(tc.hasProof, tc.live, tc.proof, tc.liveCount, tc.proofCount); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

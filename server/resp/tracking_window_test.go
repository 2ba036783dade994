package resp

import (
	"slices"
	"testing"
)

// TestPruneWindows: which NOLOOP windows a connection keeps, and the
// failure each row prevents.
func TestPruneWindows(t *testing.T) {
	judged := []uint64{10, 0}
	for _, c := range []struct {
		name string
		in   []trackWindow
		max  int
		want []trackWindow
	}{
		{"a window the invalidator has passed goes (else they pile up)",
			[]trackWindow{{seg: 0, lo: 5, hi: 9}, {seg: 0, lo: 10, hi: 12}}, 8, []trackWindow{{seg: 0, lo: 10, hi: 12}}},
		{"a window the invalidator has not reached stays, however many (a starved invalidator sent own writes back at 64)",
			[]trackWindow{{seg: 1, lo: 1, hi: 2}, {seg: 1, lo: 2, hi: 3}, {seg: 1, lo: 3, hi: 4}}, 8,
			[]trackWindow{{seg: 1, lo: 1, hi: 2}, {seg: 1, lo: 2, hi: 3}, {seg: 1, lo: 3, hi: 4}}},
		{"an open window stays (its command still runs)",
			[]trackWindow{{seg: 0, lo: 3, hi: windowOpen}}, 8, []trackWindow{{seg: 0, lo: 3, hi: windowOpen}}},
		{"past the bound the oldest go (an extra invalidation, never a missing one)",
			[]trackWindow{{seg: 1, lo: 1, hi: 2}, {seg: 1, lo: 2, hi: 3}, {seg: 1, lo: 3, hi: 4}}, 2,
			[]trackWindow{{seg: 1, lo: 2, hi: 3}, {seg: 1, lo: 3, hi: 4}}},
	} {
		if got := pruneWindows(slices.Clone(c.in), judged, c.max); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

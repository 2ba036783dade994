package resp

import (
	"testing"
)

// TestNoLoopKeepsAReadAfterItsOwnChange: the invalidator judges changes
// after the fact (it reads the store's feed, behind the writes), so a
// NOLOOP client's own change can reach it after the client read the key
// again. Each row names the failure it prevents.
func TestNoLoopKeepsAReadAfterItsOwnChange(t *testing.T) {
	const seg = 3
	for _, tc := range []struct {
		name   string
		since  uint64 // the segment's revision before the client's latest read of the key
		window trackWindow
		change uint64 // the revision of the change the invalidator judges
		// wantMessage: the client is told; wantTracked: it stays registered.
		wantMessage, wantTracked bool
	}{
		{"its own change applied before its latest read stays tracked (dropping the read's registration " +
			"left the client's cache stale at another client's next write)",
			10, trackWindow{seg: seg, lo: 9, hi: 10}, 10, false, true},
		{"its own change after its read ends the tracking, unannounced (Redis: a client's own write forgets its read)",
			8, trackWindow{seg: seg, lo: 9, hi: 10}, 10, false, false},
		{"another client's change is announced and forgets the read",
			10, trackWindow{seg: seg, lo: 9, hi: 10}, 11, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{}
			c := &conn{id: 7}
			c.proto.Store(3)
			c.trk.noloop = true
			c.trk.windows = []trackWindow{tc.window}
			s.trk.conns = map[int64]*conn{c.id: c}
			s.trk.keys = map[string]map[int64]uint64{"k": {c.id: tc.since}}
			s.trk.items = 1
			var out outbox
			s.invalidateKeyLocked(&out, "k", &change{key: "k", seg: seg, rev: tc.change})
			if got := len(out.msgs) > 0; got != tc.wantMessage {
				t.Fatalf("message sent: %v, want %v", got, tc.wantMessage)
			}
			_, tracked := s.trk.keys["k"][c.id]
			if tracked != tc.wantTracked {
				t.Fatalf("still tracked: %v, want %v", tracked, tc.wantTracked)
			}
			if want := map[bool]int{true: 1, false: 0}[tc.wantTracked]; s.trk.items != want {
				t.Fatalf("items %d, want %d", s.trk.items, want)
			}
		})
	}
}

package resp

import "testing"

// TestPlanKeys is the multi-key rule of issue #13 item 4, one row per
// failure it prevents.
func TestPlanKeys(t *testing.T) {
	all := func(uint16) bool { return true }
	only := func(segs ...uint16) func(uint16) bool {
		return func(g uint16) bool {
			for _, s := range segs {
				if s == g {
					return true
				}
			}
			return false
		}
	}
	for _, c := range []struct {
		name   string
		slots  []uint16
		segs   []uint16
		served func(uint16) bool
		want   keysPlan
	}{
		{"one key: the ordinary path", []uint16{5}, []uint16{0}, all, planOneSlot},
		{"keys of one slot: the ordinary path (the store answers Moved if it is not ours)", []uint16{5, 5}, []uint16{0, 0}, only(), planOneSlot},
		{"a lone node refusing MSET across slots breaks plain Redis clients", []uint16{5, 9000}, []uint16{0, 140}, all, planLocal},
		{"several slots of one segment, served", []uint16{5, 6}, []uint16{0, 0}, only(0), planLocal},
		{"keys on two nodes cannot run atomically: CROSSSLOT, as Redis Cluster", []uint16{5, 9000}, []uint16{0, 140}, only(0), planCrossSlot},
		{"a segment changing hands is not served: CROSSSLOT rather than a partial write", []uint16{5, 9000, 12000}, []uint16{0, 140, 187}, only(0, 187), planCrossSlot},
		{"no key served here and several slots: CROSSSLOT (Redis Cluster's answer)", []uint16{5, 9000}, []uint16{0, 140}, only(), planCrossSlot},
	} {
		if got := planKeys(c.slots, c.segs, c.served); got != c.want {
			t.Errorf("%s: planKeys = %d, want %d", c.name, got, c.want)
		}
	}
}

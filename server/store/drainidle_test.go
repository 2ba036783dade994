package store

import (
	"strconv"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
)

// idleResizeKinds are the collections kept in a field table, each with
// the write that adds element i and the read that finds it.
var idleResizeKinds = []struct {
	name  string
	add   func(key string, i int) kv.Cmd
	check func(key string, i int) (kv.Cmd, func(kv.Reply) bool)
}{
	{"hash", func(key string, i int) kv.Cmd {
		return kv.Cmd{Op: kv.CmdHSet, Key: key, Args: [][]byte{[]byte("f" + strconv.Itoa(i)), []byte("v" + strconv.Itoa(i))}}
	}, func(key string, i int) (kv.Cmd, func(kv.Reply) bool) {
		return kv.Cmd{Op: kv.CmdHGet, Key: key, Args: [][]byte{[]byte("f" + strconv.Itoa(i))}},
			func(r kv.Reply) bool { return string(r.Bulk) == "v"+strconv.Itoa(i) }
	}},
	{"set", func(key string, i int) kv.Cmd {
		return kv.Cmd{Op: kv.CmdSAdd, Key: key, Args: [][]byte{[]byte("m" + strconv.Itoa(i))}}
	}, func(key string, i int) (kv.Cmd, func(kv.Reply) bool) {
		return kv.Cmd{Op: kv.CmdSIsMember, Key: key, Args: [][]byte{[]byte("m" + strconv.Itoa(i))}},
			func(r kv.Reply) bool { return r.Int == 1 }
	}},
	{"zset", func(key string, i int) kv.Cmd {
		return kv.Cmd{Op: kv.CmdZAdd, Key: key, Args: [][]byte{[]byte(strconv.Itoa(i)), []byte("z" + strconv.Itoa(i))}}
	}, func(key string, i int) (kv.Cmd, func(kv.Reply) bool) {
		return kv.Cmd{Op: kv.CmdZScore, Key: key, Args: [][]byte{[]byte("z" + strconv.Itoa(i))}},
			func(r kv.Reply) bool { return string(r.Bulk) == strconv.Itoa(i) }
	}},
}

// fillUntilResize adds elements to key until a resize of its field table
// leaves an old array of at least minOld slots to drain, and returns the
// table and how many elements it holds.
func fillUntilResize(t *testing.T, s *Store, key string, add func(string, int) kv.Cmd, minOld int) (*fieldTable, int) {
	t.Helper()
	for i := 0; ; i++ {
		if r := s.Exec(add(key, i)); r.Status != kv.StatusSuccess {
			t.Fatalf("write %d: %v %s", i, r.Status, r.Message)
		}
		g := s.SegmentFor(key)
		ft := tableOf(g.items.get(key).coll())
		if ft.old != nil && len(ft.old.slots) >= minOld {
			return ft, i + 1
		}
	}
}

// TestSweeperFinishesAnIdleResize: a hash, set or sorted set whose writes
// stop in the middle of a resize is drained by the sweeper, a bounded
// number of slots a tick, instead of keeping both arrays for as long as it
// lives (the gap D129 left); every element stays found meanwhile.
func TestSweeperFinishesAnIdleResize(t *testing.T) {
	for _, k := range idleResizeKinds {
		t.Run(k.name, func(t *testing.T) {
			s, _ := newTestStore(t)
			key := "idle:" + k.name
			ft, n := fillUntilResize(t, s, key, k.add, 2*sweepDrainSlots)
			g := s.SegmentFor(key)
			if _, queued := g.draining[ft]; !queued || g.drainingN.Load() != 1 {
				t.Fatalf("the draining table is not queued (%d queued)", g.drainingN.Load())
			}
			oldSlots := len(ft.old.slots)
			sweeps := 0
			for ft.old != nil {
				if sweeps > oldSlots/sweepDrainSlots+1 {
					t.Fatalf("%d sweeps and the %d-slot old array still drains (%d slots moved)", sweeps, oldSlots, ft.moved)
				}
				before := ft.moved
				s.SweepOnce()
				sweeps++
				if ft.old != nil && ft.moved-before > sweepDrainSlots {
					t.Fatalf("one sweep moved %d slots, over its budget of %d", ft.moved-before, sweepDrainSlots)
				}
			}
			if sweeps < 2 || g.drainingN.Load() != 0 || len(g.draining) != 0 {
				t.Fatalf("after %d sweeps: %d still queued", sweeps, len(g.draining))
			}
			for i := range n {
				cmd, ok := k.check(key, i)
				if r := s.Exec(cmd); !ok(r) {
					t.Fatalf("element %d after the drain: %+v", i, r)
				}
			}
		})
	}
}

// TestSweeperForgetsADeletedDrainingTable: a key deleted (or replaced by
// another collection) in the middle of its table's resize leaves the queue
// at the next sweep; the sweeper never touches a table the segment no
// longer holds under that key.
func TestSweeperForgetsADeletedDrainingTable(t *testing.T) {
	s, _ := newTestStore(t)
	gone, _ := fillUntilResize(t, s, "gone", idleResizeKinds[0].add, 1024)
	replaced, _ := fillUntilResize(t, s, "replaced", idleResizeKinds[0].add, 1024)
	if r := s.Delete("gone"); r.Status != kv.StatusSuccess {
		t.Fatal(r.Status)
	}
	if r := s.Delete("replaced"); r.Status != kv.StatusSuccess {
		t.Fatal(r.Status)
	}
	s.Exec(idleResizeKinds[0].add("replaced", 0))
	goneMoved, replacedMoved := gone.moved, replaced.moved
	s.SweepOnce()
	for _, key := range []string{"gone", "replaced"} {
		if g := s.SegmentFor(key); len(g.draining) != 0 || g.drainingN.Load() != 0 {
			t.Fatalf("%s: %d tables still queued after the key went", key, len(g.draining))
		}
	}
	if gone.moved != goneMoved || replaced.moved != replacedMoved {
		t.Fatal("the sweeper drained a table its key no longer holds")
	}
}

// TestDecodedTableIsSettled: a collection built in one operation (a
// replica's snapshot, RESTORE, COPY decode it) comes out with no drain
// pending, at every size around a resize.
func TestDecodedTableIsSettled(t *testing.T) {
	for _, n := range []int{6, 7, 13, 97, 1000, 3073, 3074, 3100} {
		h := newHash()
		for i := range n {
			h.set([]byte("f"+strconv.Itoa(i)), []byte("v"))
		}
		var back hashColl
		if err := back.decode(h.encode()); err != nil {
			t.Fatal(err)
		}
		if back.t.old != nil || back.t.len() != n {
			t.Fatalf("%d fields: decoded with a drain pending (%v) or %d fields", n, back.t.old != nil, back.t.len())
		}
	}
}

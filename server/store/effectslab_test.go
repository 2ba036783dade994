package store

import (
	"strconv"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// lpush runs LPUSH key elem on s and fails the test unless it succeeds.
func lpush(t testing.TB, s *Store, key, elem string) {
	t.Helper()
	if r := s.Exec(kv.Cmd{Op: kv.CmdLPush, Key: key, Args: [][]byte{[]byte(elem)}}); r.Status != kv.StatusSuccess {
		t.Fatalf("LPUSH %s %s: %v %s", key, elem, r.Status, r.Message)
	}
}

// TestShippedEffectsOutliveTheirSlots: the operations a shipper takes from
// the op-log stay what was written after the log has trimmed them and
// reused their slots for later writes (without the copy in after, the
// shipper would encode later writes' elements under earlier revisions).
func TestShippedEffectsOutliveTheirSlots(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.OpLogMaxOps = 4 })
	g := s.SegmentFor("list")
	from := g.Revision()
	for i := range 4 {
		lpush(t, s, "list", "first-"+strconv.Itoa(i))
	}
	ops, err := g.AppendOperationsAfter(nil, from)
	if err != nil || len(ops) != 4 {
		t.Fatalf("ops after %d: %d, %v", from, len(ops), err)
	}
	for i := range 3 * slabChunk {
		lpush(t, s, "list", "later-"+strconv.Itoa(i))
	}
	for i, op := range ops {
		if op.Kind != OpCommand || op.Cmd == nil || op.Cmd.Op != kv.CmdLPush || op.Cmd.Key != "list" ||
			len(op.Cmd.Args) != 1 || string(op.Cmd.Args[0]) != "first-"+strconv.Itoa(i) {
			t.Fatalf("op %d after the log moved on: %+v %+v", i, op, op.Cmd)
		}
		if op.Record.Revision != from+uint64(i)+1 || op.Record.Key() != "list" {
			t.Fatalf("op %d header: revision %d key %q", i, op.Record.Revision, op.Record.Key())
		}
	}
}

// TestRetainedEffectsOutliveTheirSlots: the feed's retention keeps what
// the op-log trims; a resumed watch replays those entries as the commands
// they were after their slots served later writes (a retained entry that
// still pointed into its slot would replay as a cleared or later command).
func TestRetainedEffectsOutliveTheirSlots(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) {
		c.OpLogMaxOps = 4
		c.FeedRetentionBytes = 1 << 20
		c.FeedRetentionAge = time.Hour
	})
	g := s.SegmentFor("list")
	s.Put("list:marker", []byte("x"), nil) // another key, maybe another segment: the watch below is keyed
	lpush(t, s, "list", "e0")
	start := g.Revision()
	lpush(t, s, "list", "e1")
	if r := s.Exec(kv.Cmd{Op: kv.CmdRPush, Key: "list", Args: [][]byte{[]byte("r1")}}); r.Status != kv.StatusSuccess {
		t.Fatal(r.Status)
	}
	for i := range 2 * slabChunk {
		lpush(t, s, "list", "e"+strconv.Itoa(i+2))
	}
	if g.TrimFloor() <= start {
		t.Fatalf("the op-log did not trim past %d: floor %d", start, g.TrimFloor())
	}
	w, _, err := s.Watch(WatchOptions{Key: "list", From: []WatchPosition{{Segment: g.ID(), Revision: start}}})
	if err != nil || len(w.Resyncs()) != 0 {
		t.Fatal(err, w.Resyncs())
	}
	defer w.Close()
	want := []kv.CmdOp{kv.CmdLPush, kv.CmdRPush}
	for i := range 2*slabChunk + 2 {
		ev := nextEvent(t, w)
		cmd := kv.CmdLPush
		if i < len(want) {
			cmd = want[i]
		}
		if ev.Command != cmd || ev.Key != "list" || ev.Revision != start+uint64(i)+1 {
			t.Fatalf("replayed %d: %+v, want %v at revision %d", i, ev, cmd, start+uint64(i)+1)
		}
	}
}

// TestEffectSlabReusesItsChunks: a list written far past the op-log's
// bound keeps a bounded number of chunks (freed ones are reused or
// dropped), a snapshot install frees every slot, and an LPUSH allocates
// only its element (and, now and then, the list's and a chunk's growth).
func TestEffectSlabReusesItsChunks(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.OpLogMaxOps = 64 })
	g := s.SegmentFor("list")
	for i := range 2000 {
		lpush(t, s, "list", "e"+strconv.Itoa(i))
	}
	g.mu.RLock()
	chunks := len(g.log.effects.chunks)
	g.mu.RUnlock()
	if chunks > 64/slabChunk+1 {
		t.Fatalf("%d chunks for an op-log of 64 entries", chunks)
	}
	elem := [][]byte{[]byte("0123456789abcdef0123456789abcdef")}
	allocs := testing.AllocsPerRun(500, func() {
		s.Exec(kv.Cmd{Op: kv.CmdLPush, Key: "list", Args: elem})
	})
	if allocs > 1.2 {
		t.Fatalf("LPUSH allocates %.2f objects per call (the element alone is 1)", allocs)
	}
	snap := g.Snapshot()
	g.InstallSnapshot(snap)
	g.mu.RLock()
	defer g.mu.RUnlock()
	if n := len(g.log.effects.chunks); n != 0 || g.log.n != 0 {
		t.Fatalf("after a snapshot install: %d chunks, %d entries", n, g.log.n)
	}
}

// TestBenchmarkShapedEffectsUseTheSlab: the effects redis-benchmark's
// collection rows write (LPUSH of a 32-byte element; HSET and SADD of a
// 20-byte "element:<12 digits>" field or member, HSET with a 32-byte value)
// fill slab slots; a larger one gets memory of its own.
func TestBenchmarkShapedEffectsUseTheSlab(t *testing.T) {
	s, _ := newTestStore(t)
	value := make([]byte, 32)
	field := []byte("element:000000012345")
	for _, c := range []struct {
		cmd  kv.Cmd
		slab bool
	}{
		{kv.Cmd{Op: kv.CmdLPush, Key: "l", Args: [][]byte{value}}, true},
		{kv.Cmd{Op: kv.CmdHSet, Key: "h", Args: [][]byte{field, value}}, true},
		{kv.Cmd{Op: kv.CmdSAdd, Key: "s", Args: [][]byte{field}}, true},
		{kv.Cmd{Op: kv.CmdHSet, Key: "h", Args: [][]byte{field, make([]byte, 100)}}, false},
		{kv.Cmd{Op: kv.CmdLPush, Key: "l", Args: [][]byte{value, value, value}}, false},
	} {
		if r := s.Exec(c.cmd); r.Status != kv.StatusSuccess {
			t.Fatal(c.cmd.Op, r.Status, r.Message)
		}
		g := s.SegmentFor(c.cmd.Key)
		g.mu.RLock()
		e := g.log.at(g.log.n - 1)
		slab, args := e.slab, len(e.cmd.Args)
		g.mu.RUnlock()
		if slab != c.slab || args != len(c.cmd.Args) {
			t.Fatalf("%v of %d arguments: slab %v (want %v), %d arguments logged", c.cmd.Op, len(c.cmd.Args), slab, c.slab, args)
		}
	}
}

package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
)

func TestKeyFitsRule(t *testing.T) {
	const maxElems, maxBytes = 10, 1000
	cases := []struct {
		name                  string
		count                 int
		size                  int64
		addElems              int
		addBytes              int64
		want                  capHit
		preventsFailureOfWhat string
	}{
		{"growth inside both caps", 3, 500, 2, 400, capNone, ""},
		{"growth to exactly the byte cap", 3, 500, 1, 500, capNone, "an off-by-one refusing a key at its cap"},
		{"one byte past the cap", 3, 500, 1, 501, capBytes, "a collection growing past --max-item-bytes (issue 16)"},
		{"an element past the element cap", 10, 100, 1, 10, capElements, "a collection passing its element cap"},
		{"replacing a value with a larger one", 1, 990, 0, 11, capBytes, "HSET/LSET growing a key in place past the cap"},
		{"an over-cap key shrinking", 20, 5000, -1, -100, capNone, "a key over a lowered cap that can never be trimmed"},
		{"an over-cap key rewritten at the same size", 20, 5000, 0, 0, capNone, "ZADD XX on an over-cap key refused for no growth"},
		{"an over-cap key growing", 5, 5000, 0, 1, capBytes, "a key already over the cap growing further"},
		{"elements over the cap, bytes shrinking, count growing", 10, 100, 1, -50, capElements, "the element cap skipped when bytes shrink"},
	}
	for _, c := range cases {
		if got := keyFits(c.count, c.size, c.addElems, c.addBytes, maxElems, maxBytes); got != c.want {
			t.Errorf("%s: %v, want %v (prevents: %s)", c.name, got, c.want, c.preventsFailureOfWhat)
		}
	}
}

// itemCapStore is a one-segment store whose keys are capped at 1 KiB.
func itemCapStore(t *testing.T) *Store {
	s, _ := newTestStore(t, func(c *Config) { c.Segments = 1; c.MaxItemBytes = 1024 })
	return s
}

// refusedUnchanged runs a command that must be refused with ItemTooLarge and
// the string text, and checks that nothing changed: same digest, same
// revision.
func refusedUnchanged(t *testing.T, s *Store, what string, op kv.CmdOp, key string, args ...string) {
	t.Helper()
	g := s.Segment(0)
	digest, rev := g.Digest(), g.Revision()
	r := run(t, s, op, key, args...)
	if r.Status != kv.StatusItemTooLarge {
		t.Fatalf("%s: %v %q, want ItemTooLarge", what, r.Status, r.Message)
	}
	if want := "value exceeds the maximum item size of 1024 bytes"; r.Message != want {
		t.Fatalf("%s: message %q, want %q (the text a string gets)", what, r.Message, want)
	}
	if g.Digest() != digest || g.Revision() != rev {
		t.Fatalf("%s: a refused command changed the segment (revision %d → %d)", what, rev, g.Revision())
	}
}

func accepted(t *testing.T, s *Store, what string, op kv.CmdOp, key string, args ...string) kv.Reply {
	t.Helper()
	r := run(t, s, op, key, args...)
	if r.Status != kv.StatusSuccess {
		t.Fatalf("%s: %v %q", what, r.Status, r.Message)
	}
	return r
}

// Issue 16: --max-item-bytes bounds a whole key, collections included.
func TestItemCapBoundsEveryDataType(t *testing.T) {
	kb2 := strings.Repeat("v", 2048)
	b900 := strings.Repeat("v", 900)
	// A hash value that leaves the hash 20 bytes under the cap:
	// 1 (field) + 955 + 48 (per field) = 1004.
	near := strings.Repeat("v", 1024-hashFieldOverhead-1-20)

	t.Run("Hash", func(t *testing.T) {
		s := itemCapStore(t)
		refusedUnchanged(t, s, "HSET of a 2 KiB value", kv.CmdHSet, "h", "f", kb2)
		refusedUnchanged(t, s, "HSET of pairs together over the cap", kv.CmdHSet, "h", "a", b900, "b", b900)
		accepted(t, s, "HSET near the cap", kv.CmdHSet, "h", "f", near)
		// Replacing the value with one of the same size does not grow the key.
		accepted(t, s, "HSET rewriting a field in place", kv.CmdHSet, "h", "f", strings.Repeat("w", len(near)))
		// A field named twice counts once, with its last value.
		accepted(t, s, "HSET naming a field twice", kv.CmdHSet, "h", "f", kb2, "f", near)
		refusedUnchanged(t, s, "HSET growing a field past the cap", kv.CmdHSet, "h", "f", near+strings.Repeat("v", 21))
		refusedUnchanged(t, s, "HSETNX of a new field", kv.CmdHSetNX, "h", "g", "1")
		refusedUnchanged(t, s, "HINCRBY creating a field", kv.CmdHIncrBy, "h", "g", "1")
		refusedUnchanged(t, s, "HINCRBYFLOAT creating a field", kv.CmdHIncrByFloat, "h", "g", "1.5")
		if r := run(t, s, kv.CmdHLen, "h"); r.Int != 1 {
			t.Fatalf("HLEN %d after refusals, want 1", r.Int)
		}
	})
	t.Run("List", func(t *testing.T) {
		s := itemCapStore(t)
		refusedUnchanged(t, s, "RPUSH of a 2 KiB element", kv.CmdRPush, "l", kb2)
		accepted(t, s, "RPUSH of 900 B", kv.CmdRPush, "l", b900)
		for range 49 {
			refusedUnchanged(t, s, "RPUSH of 900 B more", kv.CmdRPush, "l", b900)
		}
		refusedUnchanged(t, s, "LPUSH of 900 B more", kv.CmdLPush, "l", b900)
		refusedUnchanged(t, s, "LSET to 2 KiB", kv.CmdLSet, "l", "0", kb2)
		accepted(t, s, "LSET to the same size", kv.CmdLSet, "l", "0", strings.Repeat("w", 900))
		if r := run(t, s, kv.CmdLLen, "l"); r.Int != 1 {
			t.Fatalf("LLEN %d after 50 RPUSH of 900 B under a 1 KiB cap, want 1", r.Int)
		}
	})
	t.Run("Set", func(t *testing.T) {
		s := itemCapStore(t)
		refusedUnchanged(t, s, "SADD of a 2 KiB member", kv.CmdSAdd, "s", kb2)
		accepted(t, s, "SADD of 900 B", kv.CmdSAdd, "s", b900)
		accepted(t, s, "SADD of a member already there", kv.CmdSAdd, "s", b900, b900)
		refusedUnchanged(t, s, "SADD of 900 B more", kv.CmdSAdd, "s", strings.Repeat("w", 900))
	})
	t.Run("SortedSet", func(t *testing.T) {
		s := itemCapStore(t)
		refusedUnchanged(t, s, "ZADD of a 2 KiB member", kv.CmdZAdd, "z", "1", kb2)
		accepted(t, s, "ZADD of 900 B", kv.CmdZAdd, "z", "1", b900)
		accepted(t, s, "ZADD XX moving a score", kv.CmdZAdd, "z", "XX", "2", b900, "3", strings.Repeat("w", 900))
		refusedUnchanged(t, s, "ZADD of a new member", kv.CmdZAdd, "z", "1", "m")
		refusedUnchanged(t, s, "ZINCRBY of a new member", kv.CmdZIncrBy, "z", "1", "m")
		accepted(t, s, "ZINCRBY of a member there", kv.CmdZIncrBy, "z", "1", b900)
	})
	t.Run("Stream", func(t *testing.T) {
		s := itemCapStore(t)
		refusedUnchanged(t, s, "XADD of a 2 KiB field", kv.CmdXAdd, "x", "*", "f", kb2)
		accepted(t, s, "XADD of 800 B", kv.CmdXAdd, "x", "*", "f", strings.Repeat("v", 800))
		refusedUnchanged(t, s, "XADD of 800 B more", kv.CmdXAdd, "x", "*", "f", strings.Repeat("v", 800))
		// Trimming to make room is growth minus what it frees.
		accepted(t, s, "XADD MAXLEN 1 replacing the entry", kv.CmdXAdd, "x", "MAXLEN", "1", "*", "f", strings.Repeat("w", 800))
		refusedUnchanged(t, s, "XGROUP CREATE with a name past the cap", kv.CmdXGroup, "x", "CREATE", strings.Repeat("g", 200), "0")
	})
	t.Run("String", func(t *testing.T) {
		s := itemCapStore(t)
		if r := s.Put("k", []byte(kb2), nil); r.Status != kv.StatusItemTooLarge {
			t.Fatalf("SET of 2 KiB: %v", r.Status)
		}
		if r := s.Put("k", []byte(b900), nil); !r.OK() {
			t.Fatal(r.Status)
		}
		for _, c := range []struct {
			op   kv.CmdOp
			args []string
		}{{kv.CmdAppend, []string{strings.Repeat("v", 200)}}, {kv.CmdSetRange, []string{"1000", "vvvvvvvvvvvvvvvvvvvvvvvvv"}}} {
			if r := run(t, s, c.op, "k", c.args...); r.Status != kv.StatusItemTooLarge {
				t.Fatalf("%v past the cap: %v", c.op, r.Status)
			}
		}
		if g := s.Get("k"); string(g.Value) != b900 {
			t.Fatalf("a refused string command changed the value (%d bytes)", len(g.Value))
		}
	})
}

// The element cap keeps its own message; the byte cap is the item cap.
func TestElementCapMessage(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.Segments = 1; c.MaxCollectionElements = 2 })
	r := run(t, s, kv.CmdRPush, "l", "a", "b", "c")
	if r.Status != kv.StatusItemTooLarge || r.Message != "collection would exceed the maximum of 2 elements" {
		t.Fatalf("%v %q", r.Status, r.Message)
	}
}

// A replica applies what its owner accepted even when its own cap is
// smaller (it must not diverge), and the over-cap key it then holds can
// shrink but not grow once the replica is promoted.
func TestReplicaAppliesOverCapEffectsAndShrinksAfterPromotion(t *testing.T) {
	src, _ := newTestStore(t, func(c *Config) { c.Segments = 1 })
	dst := itemCapStore(t)
	run(t, src, kv.CmdHSet, "h", "a", strings.Repeat("v", 2000))
	run(t, src, kv.CmdHSet, "h", "b", strings.Repeat("v", 2000))
	ops, err := src.Segment(0).OperationsAfter(0)
	if err != nil {
		t.Fatal(err)
	}
	dst.Segment(0).SetOwned(false)
	for _, op := range ops {
		if _, err := dst.Segment(0).ApplyOp(op); err != nil {
			t.Fatalf("replica refused an effect its owner accepted: %v", err)
		}
	}
	if src.Segment(0).Digest() != dst.Segment(0).Digest() {
		t.Fatal("replica diverged")
	}
	dst.Segment(0).SetOwned(true)
	refusedUnchanged(t, dst, "HSET growing an over-cap hash", kv.CmdHSet, "h", "c", "1")
	accepted(t, dst, "HDEL shrinking an over-cap hash", kv.CmdHDel, "h", "a")
	accepted(t, dst, "HSET shrinking a field of an over-cap hash", kv.CmdHSet, "h", "b", "small")
}

// Under no-eviction a full store refuses collection growth and string
// commands with CapacityExceeded, as it refuses a Put, and changes nothing;
// shrinking stays possible.
func TestNoEvictionRefusesCollectionAndStringGrowthAtCapacity(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) {
		c.Segments = 1
		c.MaxMemoryBytes = 64 << 10
		c.MaxItemBytes = 8 << 10
		c.Eviction = NoEviction
	})
	for i := 0; ; i++ {
		r := s.Put(fmt.Sprint("k", i), make([]byte, 1000), nil)
		if r.Status == kv.StatusCapacityExceeded {
			break
		}
		if !r.OK() {
			t.Fatalf("unexpected %v", r.Status)
		}
	}
	g := s.Segment(0)
	for _, c := range []struct {
		op   kv.CmdOp
		args []string
	}{
		{kv.CmdHSet, []string{"f", strings.Repeat("v", 1000)}},
		{kv.CmdRPush, []string{strings.Repeat("v", 1000)}},
		{kv.CmdSAdd, []string{strings.Repeat("v", 1000)}},
		{kv.CmdZAdd, []string{"1", strings.Repeat("v", 1000)}},
		{kv.CmdXAdd, []string{"*", "f", strings.Repeat("v", 1000)}},
		{kv.CmdAppend, []string{strings.Repeat("v", 1000)}},
	} {
		key := "k0"
		if c.op != kv.CmdAppend {
			key = "new-" + c.op.String()
		}
		digest, rev := g.Digest(), g.Revision()
		if r := run(t, s, c.op, key, c.args...); r.Status != kv.StatusCapacityExceeded {
			t.Fatalf("%v on a full no-eviction store: %v %q", c.op, r.Status, r.Message)
		}
		if g.Digest() != digest || g.Revision() != rev {
			t.Fatalf("%v: a refused command changed the segment", c.op)
		}
	}
	if owned := s.Stats().OwnedBytes; owned > 64<<10 {
		t.Fatalf("owned %d over the cap", owned)
	}
	if r := run(t, s, kv.CmdSetRange, "k0", "0", "x"); r.Status != kv.StatusSuccess {
		t.Fatalf("a same-size SETRANGE refused: %v", r.Status)
	}
}

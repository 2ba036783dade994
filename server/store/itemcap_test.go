package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
)

func TestKeyFitsRule(t *testing.T) {
	// 10 elements, 1000 item bytes, 4000 accounted bytes.
	limit := keySize{elems: 10, item: 1000, acct: 4000}
	cases := []struct {
		name                  string
		cur, grow             keySize
		want                  capHit
		preventsFailureOfWhat string
	}{
		{"growth inside every cap", keySize{3, 500, 900}, keySize{2, 400, 500}, capNone, ""},
		{"growth to exactly the item cap", keySize{3, 500, 900}, keySize{1, 500, 600}, capNone, "an off-by-one refusing a key at its cap"},
		{"one item byte past the cap", keySize{3, 500, 900}, keySize{1, 501, 600}, capItemBytes, "a collection growing past --max-item-bytes (issue 16)"},
		{"an element past the element cap", keySize{10, 100, 400}, keySize{1, 10, 40}, capElements, "a collection passing its element cap"},
		{"replacing a value with a larger one", keySize{1, 990, 1100}, keySize{0, 11, 11}, capItemBytes, "HSET/LSET growing a key in place past the cap"},
		{"an over-cap key shrinking", keySize{20, 5000, 9000}, keySize{-1, -100, -150}, capNone, "a key over a lowered cap that can never be trimmed"},
		{"an over-cap key rewritten at the same size", keySize{20, 5000, 9000}, keySize{}, capNone, "ZADD XX on an over-cap key refused for no growth"},
		{"an over-cap key growing", keySize{5, 5000, 6000}, keySize{0, 1, 1}, capItemBytes, "a key already over the cap growing further"},
		{"elements over the cap, bytes shrinking, count growing", keySize{10, 100, 400}, keySize{1, -50, -50}, capElements, "the element cap skipped when bytes shrink"},
		// The two dimensions of bytes are separate: small elements weigh
		// little as serialised and much in memory.
		{"many tiny elements: item size inside, accounted bytes past theirs", keySize{8, 40, 3900}, keySize{1, 5, 101}, capAccounted,
			"a record outgrowing the frames sized for it (MaxCollectionBytes) while its item size is small"},
		{"tiny elements whose bookkeeping passes the item cap", keySize{8, 40, 990}, keySize{1, 5, 27}, capNone,
			"bookkeeping counted as item bytes: stock redis-benchmark's 3-byte list refused at 155 000 elements (issue 13)"},
		{"item size past its cap, accounted bytes inside", keySize{1, 990, 1000}, keySize{1, 20, 40}, capItemBytes,
			"the item cap skipped because the accounted bytes fit"},
		{"accounted bytes shrinking, item size growing past its cap", keySize{1, 990, 3000}, keySize{0, 20, -500}, capItemBytes,
			"a dimension's growth hidden by another's shrinking"},
	}
	for _, c := range cases {
		if got := keyFits(c.cur, c.grow, limit); got != c.want {
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
	// A hash value that leaves the hash 5 item bytes under the cap: field
	// "f" (1) + 1014 + a 2-byte header each = 1019.
	near := strings.Repeat("v", 1024-2*itemStringFraming-1-5)

	t.Run("Hash", func(t *testing.T) {
		s := itemCapStore(t)
		refusedUnchanged(t, s, "HSET of a 2 KiB value", kv.CmdHSet, "h", "f", kb2)
		refusedUnchanged(t, s, "HSET of pairs together over the cap", kv.CmdHSet, "h", "a", b900, "b", b900)
		accepted(t, s, "HSET near the cap", kv.CmdHSet, "h", "f", near)
		// Replacing the value with one of the same size does not grow the key.
		accepted(t, s, "HSET rewriting a field in place", kv.CmdHSet, "h", "f", strings.Repeat("w", len(near)))
		// A field named twice counts once, with its last value.
		accepted(t, s, "HSET naming a field twice", kv.CmdHSet, "h", "f", kb2, "f", near)
		refusedUnchanged(t, s, "HSET growing a field one byte past the cap", kv.CmdHSet, "h", "f", near+strings.Repeat("v", 6))
		accepted(t, s, "HSET growing a field to exactly the cap", kv.CmdHSet, "h", "f", near+strings.Repeat("v", 5))
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
		// 900 + 2 + 8 (score) + 2 = 912 item bytes: a member of 101 B
		// (+ 12) passes the cap by one byte, one of 100 B reaches it.
		refusedUnchanged(t, s, "ZADD of a new member one byte past the cap", kv.CmdZAdd, "z", "1", strings.Repeat("m", 101))
		accepted(t, s, "ZADD of a new member to exactly the cap", kv.CmdZAdd, "z", "1", strings.Repeat("m", 100))
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

// The item size of each kind, to the byte: under a 1 KiB cap, the largest
// element a fresh key accepts and one byte more, which it refuses.
func TestItemCapFiguresPerKind(t *testing.T) {
	v := func(n int) string { return strings.Repeat("v", n) }
	cases := []struct {
		kind    string
		op      kv.CmdOp
		args    func(n int) []string
		largest int // the largest n that fits
		why     string
	}{
		{"list", kv.CmdRPush, func(n int) []string { return []string{v(n)} }, 1022, "element + 2"},
		{"hash", kv.CmdHSet, func(n int) []string { return []string{"f", v(n)} }, 1019, "field (1) + value + 2 + 2"},
		{"set", kv.CmdSAdd, func(n int) []string { return []string{v(n)} }, 1022, "member + 2"},
		{"sorted set", kv.CmdZAdd, func(n int) []string { return []string{"1", v(n)} }, 1012, "member + 2 + score 8 + 2"},
		{"stream", kv.CmdXAdd, func(n int) []string { return []string{"*", "f", v(n)} }, 998, "field (1) + value + 2 + 2 + id 16 + 5"},
	}
	for _, c := range cases {
		s := itemCapStore(t)
		refusedUnchanged(t, s, fmt.Sprintf("%s: %d bytes (%s: 1025)", c.kind, c.largest+1, c.why), c.op, "k", c.args(c.largest+1)...)
		accepted(t, s, fmt.Sprintf("%s: %d bytes (%s: 1024)", c.kind, c.largest, c.why), c.op, "k", c.args(c.largest)...)
		if got := collOf(t, s, "k").itemSize(); got != 1024 {
			t.Fatalf("%s: item size %d after the largest element, want 1024", c.kind, got)
		}
	}
}

// Issue 13: stock redis-benchmark pushes every list test onto one key of
// 3-byte elements. At the default cap (4 MiB) such a list holds 838 860
// elements (5 item bytes each), where the accounted measure (27 bytes
// each) refused it at 155 344 — the -OOM a plain redis-benchmark run got
// from a default node.
func TestDefaultItemCapHoldsTinyElements(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.Segments = 1 })
	const fit = DefaultMaxItemBytes / (3 + itemStringFraming)
	if fit != 838_860 || DefaultMaxItemBytes/(3+listElemOverhead) != 155_344 {
		t.Fatalf("the figures of the comment moved: %d fit, %d before", fit, DefaultMaxItemBytes/(3+listElemOverhead))
	}
	batch := make([]string, 10_000)
	for i := range batch {
		batch[i] = "xxx"
	}
	for pushed := 0; pushed < fit; pushed += len(batch) {
		n := min(len(batch), fit-pushed)
		if r := run(t, s, kv.CmdRPush, "mylist", batch[:n]...); r.Status != kv.StatusSuccess {
			t.Fatalf("RPUSH refused at %d elements of 3 bytes: %v %q", pushed, r.Status, r.Message)
		}
	}
	l := collOf(t, s, "mylist")
	if l.count() != fit || l.itemSize() != fit*5 || l.size() <= DefaultMaxItemBytes {
		t.Fatalf("%d elements, item size %d, accounted %d", l.count(), l.itemSize(), l.size())
	}
	refusedOOM := run(t, s, kv.CmdRPush, "mylist", "xxx")
	if refusedOOM.Status != kv.StatusItemTooLarge || refusedOOM.Message != itemTooLargeMessage(DefaultMaxItemBytes) {
		t.Fatalf("element %d: %v %q, want the item cap", fit+1, refusedOOM.Status, refusedOOM.Message)
	}
}

// The accounted bytes stay a bound of their own: tiny elements whose item
// size is far under --max-item-bytes are refused when their in-memory size
// would pass MaxCollectionBytes (what frames are sized for), with a text
// that names that cap, and nothing changes.
func TestCollectionBytesCapBoundsAccountedBytes(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.Segments = 1; c.MaxCollectionBytes = 64 << 10 })
	const fit = (64 << 10) / (3 + listElemOverhead) // 2427
	for range fit {
		accepted(t, s, "RPUSH of 3 bytes", kv.CmdRPush, "l", "xxx")
	}
	g := s.Segment(0)
	digest := g.Digest()
	r := run(t, s, kv.CmdRPush, "l", "xxx")
	if r.Status != kv.StatusItemTooLarge || r.Message != "collection would exceed the maximum of 65536 bytes in memory" {
		t.Fatalf("element %d: %v %q", fit+1, r.Status, r.Message)
	}
	if g.Digest() != digest {
		t.Fatal("a refused RPUSH changed the segment")
	}
	if l := collOf(t, s, "l"); l.count() != fit || l.itemSize() != fit*5 {
		t.Fatalf("%d elements, item size %d", l.count(), l.itemSize())
	}
}

// MaxCollectionBytes is what the frames that carry a record are sized for:
// it bounds a collection's item size too when --max-item-bytes is raised
// past it. A pending stream entry of a consumer with a long name weighs
// more serialised (the name is repeated in it) than in memory, so the item
// size reaches the bound before the accounted bytes do, and is refused
// there.
func TestCollectionBytesCapBoundsItemSizeToo(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.Segments = 1; c.MaxCollectionBytes = 64 << 10; c.MaxItemBytes = 1 << 20 })
	accepted(t, s, "XGROUP CREATE", kv.CmdXGroup, "x", "CREATE", "g", "$", "MKSTREAM")
	consumer := strings.Repeat("c", 200)
	var refused kv.Reply
	for i := 1; ; i++ {
		if i > 1000 {
			t.Fatal("never refused")
		}
		if r := run(t, s, kv.CmdXAdd, "x", "*", "f", "v"); r.Status != kv.StatusSuccess {
			refused = r
			break
		}
		if r := run(t, s, kv.CmdXReadGroup, "x", "g", consumer, ">"); r.Status != kv.StatusSuccess {
			refused = r
			break
		}
	}
	if refused.Status != kv.StatusItemTooLarge || refused.Message != "value exceeds the maximum item size of 65536 bytes" {
		t.Fatalf("%v %q, want the item size bounded at MaxCollectionBytes", refused.Status, refused.Message)
	}
	x := collOf(t, s, "x")
	if x.itemSize() > 64<<10 || x.itemSize() < 60<<10 || x.size() >= x.itemSize() {
		t.Fatalf("item size %d, accounted %d: the item size must be the one near the bound", x.itemSize(), x.size())
	}
}

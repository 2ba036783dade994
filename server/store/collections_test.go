package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

func run(t *testing.T, s *Store, op kv.CmdOp, key string, args ...string) kv.Reply {
	t.Helper()
	return s.Exec(kv.NewCmd(op, key, args...))
}

func flat(r kv.Reply) string {
	switch r.Type {
	case kv.ReplyNil:
		return "nil"
	case kv.ReplyOK:
		return "OK"
	case kv.ReplyInt:
		return fmt.Sprint(r.Int)
	case kv.ReplyBulk:
		return string(r.Bulk)
	}
	parts := make([]string, len(r.Array))
	for i, e := range r.Array {
		parts[i] = flat(e)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func TestCollectionCommands(t *testing.T) {
	s, _ := newTestStore(t)
	steps := []struct {
		op   kv.CmdOp
		key  string
		args []string
		want string
	}{
		{kv.CmdHSet, "h", []string{"a", "1", "b", "2"}, "2"},
		{kv.CmdHSet, "h", []string{"a", "10"}, "0"},
		{kv.CmdHGet, "h", []string{"a"}, "10"},
		{kv.CmdHGet, "h", []string{"zz"}, "nil"},
		{kv.CmdHIncrBy, "h", []string{"a", "5"}, "15"},
		{kv.CmdHIncrBy, "h", []string{"new", "-3"}, "-3"},
		{kv.CmdHIncrByFloat, "h", []string{"f", "1.5"}, "1.5"},
		{kv.CmdHLen, "h", nil, "4"},
		{kv.CmdHExists, "h", []string{"b"}, "1"},
		{kv.CmdHMGet, "h", []string{"b", "x"}, "[2 nil]"},
		{kv.CmdHDel, "h", []string{"b", "x"}, "1"},
		{kv.CmdHSetNX, "h", []string{"a", "0"}, "0"},
		{kv.CmdLPush, "l", []string{"a", "b"}, "2"},
		{kv.CmdRPush, "l", []string{"c", "d", "b"}, "5"},
		{kv.CmdLRange, "l", []string{"0", "-1"}, "[b a c d b]"},
		{kv.CmdLIndex, "l", []string{"-1"}, "b"},
		{kv.CmdLIndex, "l", []string{"9"}, "nil"},
		{kv.CmdLRem, "l", []string{"0", "b"}, "2"},
		{kv.CmdLLen, "l", nil, "3"},
		{kv.CmdLSet, "l", []string{"1", "C"}, "OK"},
		{kv.CmdLPop, "l", nil, "a"},
		{kv.CmdRPop, "l", []string{"5"}, "[d C]"},
		{kv.CmdLLen, "l", nil, "0"},
		{kv.CmdType, "l", nil, "none"}, // an emptied collection no longer exists
		{kv.CmdRPush, "l2", []string{"1", "2", "3", "4", "5"}, "5"},
		{kv.CmdLTrim, "l2", []string{"1", "-2"}, "OK"},
		{kv.CmdLRange, "l2", []string{"0", "-1"}, "[2 3 4]"},
		{kv.CmdSAdd, "{s}1", []string{"a", "b", "c", "a"}, "3"},
		{kv.CmdSAdd, "{s}2", []string{"b", "c", "d"}, "3"},
		{kv.CmdSIsMember, "{s}1", []string{"a"}, "1"},
		{kv.CmdSCard, "{s}1", nil, "3"},
		{kv.CmdSInter, "{s}1", []string{"{s}2"}, "[b c]"},
		{kv.CmdSUnion, "{s}1", []string{"{s}2"}, "[a b c d]"},
		{kv.CmdSRem, "{s}1", []string{"a", "z"}, "1"},
		{kv.CmdSMembers, "{s}1", nil, "[b c]"},
		{kv.CmdZAdd, "z", []string{"1", "a", "2", "b", "3", "c"}, "3"},
		{kv.CmdZAdd, "z", []string{"XX", "CH", "5", "a", "9", "nope"}, "1"},
		{kv.CmdZAdd, "z", []string{"GT", "1", "c"}, "0"},
		{kv.CmdZScore, "z", []string{"a"}, "5"},
		{kv.CmdZIncrBy, "z", []string{"0.5", "b"}, "2.5"},
		{kv.CmdZRange, "z", []string{"0", "-1", "WITHSCORES"}, "[b 2.5 c 3 a 5]"},
		{kv.CmdZRevRange, "z", []string{"0", "1"}, "[a c]"},
		{kv.CmdZRank, "z", []string{"a"}, "2"},
		{kv.CmdZRevRank, "z", []string{"a"}, "0"},
		{kv.CmdZRangeByScore, "z", []string{"(2.5", "+inf"}, "[c a]"},
		{kv.CmdZRangeByScore, "z", []string{"-inf", "+inf", "LIMIT", "1", "1"}, "[c]"},
		{kv.CmdZRevRangeByScore, "z", []string{"5", "3", "WITHSCORES"}, "[a 5 c 3]"},
		{kv.CmdZCount, "z", []string{"3", "5"}, "2"},
		{kv.CmdZCard, "z", nil, "3"},
		{kv.CmdZRem, "z", []string{"a", "zz"}, "1"},
		{kv.CmdIncrBy, "ctr", []string{"5"}, "5"},
		{kv.CmdIncrBy, "ctr", []string{"-7"}, "-2"},
		{kv.CmdIncrByFloat, "fl", []string{"0.5"}, "0.5"},
		{kv.CmdAppend, "str", []string{"Hello"}, "5"},
		{kv.CmdAppend, "str", []string{" World"}, "11"},
		{kv.CmdGetRange, "str", []string{"-5", "-1"}, "World"},
		{kv.CmdSetRange, "str", []string{"6", "Zaris"}, "11"},
		{kv.CmdStrLen, "str", nil, "11"},
		{kv.CmdGetDel, "str", nil, "Hello Zaris"},
		{kv.CmdGetDel, "str", nil, "nil"},
		{kv.CmdType, "h", nil, "hash"},
		{kv.CmdType, "z", nil, "zset"},
		{kv.CmdType, "ctr", nil, "string"},
	}
	for i, st := range steps {
		r := run(t, s, st.op, st.key, st.args...)
		if !r.OK() {
			t.Fatalf("step %d %v %s %v: %v %s", i, st.op, st.key, st.args, r.Status, r.Message)
		}
		got := flat(r)
		switch st.op {
		case kv.CmdSMembers, kv.CmdSInter, kv.CmdSUnion, kv.CmdSDiff: // a set's order is its own, as in Redis
			ms := make([]string, len(r.Array))
			for i, e := range r.Array {
				ms[i] = string(e.Bulk)
			}
			slices.Sort(ms)
			got = "[" + strings.Join(ms, " ") + "]"
		}
		if got != st.want && !(st.op == kv.CmdHGetAll) {
			t.Fatalf("step %d %v %s %v = %s, want %s", i, st.op, st.key, st.args, got, st.want)
		}
	}
	if g := s.Get("ctr"); string(g.Value) != "-2" {
		t.Fatalf("a counter reads as a string: %q", g.Value)
	}
}

func TestCollectionBadInputAndWrongType(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.MaxCollectionElements = 3 })
	s.Put("str", []byte("x"), nil)
	run(t, s, kv.CmdHSet, "h", "a", "1")
	cases := []struct {
		name string
		op   kv.CmdOp
		key  string
		args []string
		want kv.Status
	}{
		{"hash op on a string", kv.CmdHGet, "str", []string{"a"}, kv.StatusWrongType},
		{"list op on a hash", kv.CmdLPush, "h", []string{"a"}, kv.StatusWrongType},
		{"incr on a hash", kv.CmdIncrBy, "h", []string{"1"}, kv.StatusWrongType},
		{"odd HSET arguments", kv.CmdHSet, "h", []string{"a"}, kv.StatusBadRequest},
		{"NaN score", kv.CmdZAdd, "z", []string{"nan", "m"}, kv.StatusBadRequest},
		{"non-numeric score", kv.CmdZAdd, "z", []string{"abc", "m"}, kv.StatusBadRequest},
		{"incr of a non-integer", kv.CmdIncrBy, "str", []string{"1"}, kv.StatusBadRequest},
		{"increment overflow", kv.CmdIncrBy, "big", []string{"9223372036854775807"}, kv.StatusSuccess},
		{"increment overflow", kv.CmdIncrBy, "big", []string{"1"}, kv.StatusBadRequest},
		{"index of a missing list: Redis looks the key up first", kv.CmdLIndex, "l", []string{"x"}, kv.StatusSuccess},
		{"LSET out of range", kv.CmdRPush, "l", []string{"a"}, kv.StatusSuccess},
		{"index not a number", kv.CmdLIndex, "l", []string{"x"}, kv.StatusBadRequest},
		{"LSET out of range", kv.CmdLSet, "l", []string{"5", "x"}, kv.StatusBadRequest},
		{"over the element cap", kv.CmdSAdd, "s", []string{"1", "2", "3", "4"}, kv.StatusItemTooLarge},
		{"unknown command", kv.CmdOp(999), "k", nil, kv.StatusBadRequest},
		{"empty key", kv.CmdHGet, "", []string{"a"}, kv.StatusBadRequest},
	}
	for _, c := range cases {
		if r := run(t, s, c.op, c.key, c.args...); r.Status != c.want {
			t.Errorf("%s: %v (%s), want %v", c.name, r.Status, r.Message, c.want)
		}
	}
	if r := run(t, s, kv.CmdType, "s"); string(r.Bulk) != "none" {
		t.Fatalf("a refused SADD left a set behind: %s", r.Bulk)
	}
	if g := s.Get("h"); g.Status != kv.StatusWrongType {
		t.Fatalf("Get on a hash: %v", g.Status)
	}
	// A plain Put overwrites a collection (Redis SET semantics).
	if r := s.Put("h", []byte("now a string"), nil); !r.OK() {
		t.Fatal(r.Status)
	}
	if r := run(t, s, kv.CmdType, "h"); string(r.Bulk) != "string" {
		t.Fatalf("type %s", r.Bulk)
	}
}

func TestCollectionTTLAndAccounting(t *testing.T) {
	s, clk := newTestStore(t)
	run(t, s, kv.CmdRPush, "l", "a", "b")
	before := s.Stats().OwnedBytes
	run(t, s, kv.CmdRPush, "l", strings.Repeat("x", 1000))
	if grown := s.Stats().OwnedBytes - before; grown < 1000 {
		t.Fatalf("accounting grew by %d for a 1000-byte element", grown)
	}
	if r := s.Expire("l", time.Second); !r.OK() {
		t.Fatal(r.Status)
	}
	if r := run(t, s, kv.CmdLLen, "l"); r.Int != 3 {
		t.Fatalf("expire dropped the collection: %d", r.Int)
	}
	clk.Advance(time.Second)
	if r := run(t, s, kv.CmdLLen, "l"); r.Int != 0 {
		t.Fatalf("expired list still has %d elements", r.Int)
	}
	for range 10 {
		s.SweepOnce()
	}
	if st := s.Stats(); st.OwnedBytes != 0 || st.Items != 0 {
		t.Fatalf("after expiry: %+v", st)
	}
	// Emptying a collection element by element returns every byte.
	run(t, s, kv.CmdHSet, "h", "a", strings.Repeat("v", 500), "b", "w")
	run(t, s, kv.CmdZAdd, "z", "1", "m")
	run(t, s, kv.CmdHDel, "h", "a", "b")
	run(t, s, kv.CmdZRem, "z", "m")
	s.SweepOnce()
	if st := s.Stats(); st.OwnedBytes != 0 || st.Items != 0 {
		t.Fatalf("after emptying: %+v", st)
	}
}

// Collection mutations replicate as effects: a replica replaying the op-log
// (or installing a snapshot) converges to the same content (R-DS-1, R-REP-1).
func TestCollectionEffectsReplicate(t *testing.T) {
	src, clk := newTestStore(t, func(c *Config) { c.Segments = 2 })
	dst, _ := newTestStore(t, func(c *Config) { c.Segments = 2 })
	rng := rand.New(rand.NewPCG(11, 11))
	applied := []uint64{0, 0}
	ops := []func(k string, i int) kv.Cmd{
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdHSet, "h"+k, fmt.Sprint("f", i%7), fmt.Sprint(i)) },
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdHIncrBy, "h"+k, "n", "3") },
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdHDel, "h"+k, fmt.Sprint("f", i%7)) },
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdLPush, "l"+k, fmt.Sprint(i)) },
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdRPop, "l"+k) },
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdLTrim, "l"+k, "0", "4") },
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdSAdd, "s"+k, fmt.Sprint(i%5)) },
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdSRem, "s"+k, fmt.Sprint(i%5)) },
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdZIncrBy, "z"+k, "0.1", fmt.Sprint("m", i%4)) },
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdZAdd, "z"+k, "GT", fmt.Sprint(i%9), "m1") },
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdZRem, "z"+k, fmt.Sprint("m", i%4)) },
		// One pair logs its effect from the write context's room, several
		// from a slice of their own; INCR logs the resulting score.
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdZAdd, "z"+k, fmt.Sprint(i%3), "m2", "1e-7", "m5") },
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdZAdd, "z"+k, "INCR", "0.3", fmt.Sprint("m", i%6)) },
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdHIncrByFloat, "h"+k, "x", "0.7") },
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdIncrBy, "c"+k, "2") },
	}
	for i := range 3000 {
		k := fmt.Sprint(rng.IntN(6))
		src.Exec(ops[rng.IntN(len(ops))](k, i))
		if i%97 == 0 {
			src.Expire("l"+k, time.Duration(1+rng.IntN(3))*time.Millisecond)
			clk.Advance(time.Millisecond)
			src.SweepOnce()
		}
		if i%50 == 0 {
			shipOpLog(t, src, dst, applied)
		}
	}
	shipOpLog(t, src, dst, applied)
	for seg := range 2 {
		a, b := src.Segment(uint16(seg)), dst.Segment(uint16(seg))
		if a.Digest() != b.Digest() {
			t.Fatalf("segment %d diverged: %+v vs %+v", seg, a.Digest(), b.Digest())
		}
		if a.Digest().Count == 0 {
			t.Fatal("nothing to compare")
		}
		fresh, _ := newTestStore(t, func(c *Config) { c.Segments = 2 })
		fresh.Segment(uint16(seg)).InstallSnapshot(a.Snapshot())
		if fresh.Segment(uint16(seg)).Digest() != a.Digest() {
			t.Fatalf("snapshot of segment %d diverged", seg)
		}
	}
	// Each node prunes its tombstones on its own sweeps (the source's ran
	// with its expiries, the replica's never did): compare with both pruned.
	for seg := range 2 {
		src.Segment(uint16(seg)).pruneTombstones()
		dst.Segment(uint16(seg)).pruneTombstones()
	}
	if src.Stats().OwnedBytes != dst.Stats().OwnedBytes {
		t.Fatalf("accounting diverged: %d vs %d", src.Stats().OwnedBytes, dst.Stats().OwnedBytes)
	}
}

func TestSkiplistAgainstSortedSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	z := newZSet()
	model := map[string]float64{}
	for i := range 5000 {
		m := fmt.Sprint("m", rng.IntN(300))
		old, had := model[m]
		switch {
		case rng.IntN(12) == 0 && z.sl.length > 0: // ZPOPMIN's path: the head on every level
			delete(model, z.sl.head.next().member)
			z.popFirst()
		case rng.IntN(3) == 0:
			z.rem(m)
			delete(model, m)
		case had && rng.IntN(2) == 0: // a nudge: often keeps its place (rescore in place)
			sc := old + float64(rng.IntN(3)-1)/4
			z.set(m, sc)
			model[m] = sc
		default:
			sc := float64(rng.IntN(50))
			z.set(m, sc)
			model[m] = sc
		}
		if i%500 == 0 || i == 4999 {
			type e struct {
				m string
				s float64
			}
			var want []e
			for m, s := range model {
				want = append(want, e{m, s})
			}
			sortE := func(a, b e) bool { return less(a.s, a.m, b.s, b.m) }
			for i := 1; i < len(want); i++ {
				for j := i; j > 0 && sortE(want[j], want[j-1]); j-- {
					want[j], want[j-1] = want[j-1], want[j]
				}
			}
			if z.sl.length != len(want) || z.count() != len(want) {
				t.Fatalf("length %d, %d in the member table, want %d", z.sl.length, z.count(), len(want))
			}
			checkSkiplist(t, z.sl, fmt.Sprint("step ", i))
			scores, members := make([]float64, len(want)), make([]string, len(want))
			for i, w := range want {
				scores[i], members[i] = w.s, w.m
			}
			checkScoreBounds(t, z.sl, scores, members)
			for r, w := range want {
				n := z.sl.byRank(r)
				if n == nil || n.member != w.m || n.score != w.s || z.sl.rank(w.s, w.m) != r || z.nodeOf(w.m) != n {
					t.Fatalf("rank %d: %+v, want %+v", r, n, w)
				}
			}
			// The backward links (ZREVRANGE's walk) and the tail agree too.
			r := len(want) - 1
			for n := z.sl.tail; n != nil; n = n.prev {
				if r < 0 || n.member != want[r].m {
					t.Fatalf("walking back, rank %d is %q", r, n.member)
				}
				r--
			}
			if r != -1 {
				t.Fatalf("walking back stopped at rank %d", r)
			}
		}
	}
}

func TestFlushAndDBSize(t *testing.T) {
	s, clk := newTestStore(t)
	for i := range 100 {
		s.Put(fmt.Sprint("k", i), []byte("v"), nil)
	}
	run(t, s, kv.CmdHSet, "h", "f", "v")
	s.Put("short", []byte("v"), &kv.PutOptions{TTL: time.Second})
	clk.Advance(time.Second)
	if r := s.Exec(kv.Cmd{Op: kv.CmdDBSize}); r.Int != 101 {
		t.Fatalf("dbsize %d, want 101 (the expired key does not count)", r.Int)
	}
	if r := s.Exec(kv.Cmd{Op: kv.CmdFlush}); r.Type != kv.ReplyOK {
		t.Fatalf("flush: %+v", r)
	}
	if n := s.DBSize(); n != 0 {
		t.Fatalf("after flush: %d keys", n)
	}
	// Flushing is replicated as deletes.
	ops, _ := s.SegmentFor("k1").OperationsAfter(0)
	if last := ops[len(ops)-1]; last.Kind != OpDelete && last.Kind != OpExpired {
		t.Fatalf("last op %v", last.Kind)
	}
}

// A collection write on a key that expired but was not swept yet must not
// make a replica apply the effect to its stale copy.
func TestWriteOnExpiredUnsweptCollectionReplicates(t *testing.T) {
	src, clk := newTestStore(t, func(c *Config) { c.Segments = 1 })
	dst, _ := newTestStore(t, func(c *Config) { c.Segments = 1 })
	run(t, src, kv.CmdHSet, "h", "old", "1")
	src.Expire("h", time.Second)
	clk.Advance(time.Second) // expired, not swept
	run(t, src, kv.CmdHSet, "h", "new", "2")
	ops, _ := src.Segment(0).OperationsAfter(0)
	for _, op := range ops {
		if _, err := dst.Segment(0).ApplyOp(op); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := src.Segment(0).Digest(), dst.Segment(0).Digest(); a != b {
		t.Fatalf("diverged: %+v vs %+v", a, b)
	}
	if r := run(t, dst, kv.CmdHGetAll, "h"); len(r.Array) != 2 {
		t.Fatalf("replica holds %s", flat(r))
	}
}

// A segment the node does not own answers Moved to every client operation:
// the client's map is wrong, and the node never serves (or relays) it.
func TestNotOwnedSegmentAnswersMoved(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.Segments = 2 })
	s.Put("k", []byte("v"), nil)
	g := s.SegmentFor("k")
	g.SetOwned(false)
	for name, r := range map[string]kv.Status{
		"get":     s.Get("k").Status,
		"put":     s.Put("k", []byte("w"), nil).Status,
		"delete":  s.Delete("k").Status,
		"expire":  s.Expire("k", time.Second).Status,
		"persist": s.Persist("k").Status,
		"ttl":     s.TimeToLive("k").Status,
		"hset":    run(t, s, kv.CmdHSet, "k", "f", "v").Status,
		"type":    run(t, s, kv.CmdType, "k").Status,
	} {
		if r != kv.StatusMoved {
			t.Errorf("%s on a foreign segment: %v", name, r)
		}
	}
	// Replication still applies to it.
	if ok, err := g.ApplyRecord(Record{Revision: 9}.WithVersion(2).With("k", []byte("from owner")), OpPut); !ok || err != nil {
		t.Fatalf("apply on a replica segment: %v %v", ok, err)
	}
	g.SetOwned(true)
	if r := s.Get("k"); string(r.Value) != "from owner" {
		t.Fatalf("after taking ownership: %+v", r)
	}
}

func TestDBSizeAndFlushCountOwnedSegmentsOnly(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.Segments = 2 })
	var a, b string
	for i := 0; a == "" || b == ""; i++ {
		k := fmt.Sprint("k", i)
		if s.SegmentFor(k).ID() == 0 {
			a = k
		} else {
			b = k
		}
	}
	s.Put(a, []byte("v"), nil)
	s.Put(b, []byte("v"), nil)
	s.SegmentFor(b).SetOwned(false) // a replica copy now
	if n := s.DBSize(); n != 1 {
		t.Fatalf("DBSize %d counts a replica copy", n)
	}
	if n := s.Flush(); n != 1 {
		t.Fatalf("Flush removed %d: a replica must follow its owner's deletes, not flush itself", n)
	}
	s.SegmentFor(b).SetOwned(true)
	if !s.Get(b).OK() {
		t.Fatal("the replica copy was flushed")
	}
}

// A replica that first learns of a collection from an effect carrying the
// owner's TTL indexes that TTL: once promoted, the key expires and leaves
// DBSIZE (it counted forever when the replayed record missed the TTL index).
func TestReplayedCollectionKeepsItsTTL(t *testing.T) {
	src, _ := newTestStore(t, func(c *Config) { c.Segments = 1 })
	dst, dclk := newTestStore(t, func(c *Config) { c.Segments = 1 })
	run(t, src, kv.CmdHSet, "h", "a", "1")
	src.Expire("h", 10*time.Second)
	run(t, src, kv.CmdHSet, "h", "b", "2")
	ops, _ := src.Segment(0).OperationsAfter(0)
	if _, err := dst.Segment(0).ApplyOp(ops[len(ops)-1]); err != nil { // the HSET alone
		t.Fatal(err)
	}
	if n := dst.DBSize(); n != 1 {
		t.Fatalf("DBSIZE %d before the TTL ends, want 1", n)
	}
	dclk.Advance(11 * time.Second)
	if n := dst.DBSize(); n != 0 {
		t.Fatalf("DBSIZE %d after the TTL ended, want 0", n)
	}
}

// DBSIZE leaves a key past its TTL out exactly while its segment holds few
// keys with a TTL; in a segment of many it counts the unswept ones until
// the sweeper removes them (as Redis does), never walking them all.
func TestDBSizeWithManyKeysPastTheirTTL(t *testing.T) {
	s, clk := newTestStore(t, func(c *Config) { c.Segments = 1 })
	for i := range 1000 {
		s.Put(fmt.Sprint("k", i), []byte("v"), &kv.PutOptions{TTL: time.Duration(1+i%2) * time.Second})
	}
	clk.Advance(time.Second) // half of them expired, none swept
	if n := s.DBSize(); n < 500 || n > 1000 {
		t.Fatalf("DBSIZE %d: between the live keys (500) and every unswept one (1000)", n)
	}
	// The sweeper samples, as Redis's expire cycle does: it goes on while a
	// quarter of a sample is expired, so some expired keys stay (and count)
	// until a later sample finds them; DBSIZE follows it down, never below
	// the live keys.
	for range 1000 {
		s.SweepOnce()
		n := s.DBSize()
		if n < 500 {
			t.Fatalf("DBSIZE %d: below the 500 live keys", n)
		}
		if n <= 700 {
			return
		}
	}
	t.Fatalf("DBSIZE %d after the sweeps: the sweeper left over a quarter of the keys expired", s.DBSize())
}

// TTLStats (INFO keyspace's expires and avg_ttl) counts every key with a TTL
// — one past it too, until removed, as Redis does — and averages the
// remaining TTL of the live ones, from a per-segment sample weighted by the
// segment's count, without walking every key.
func TestTTLStats(t *testing.T) {
	s, clk := newTestStore(t, func(c *Config) { c.Segments = 4 })
	if n, avg := s.TTLStats(); n != 0 || avg != 0 {
		t.Fatalf("empty store: %d keys, %v", n, avg)
	}
	for i := range 400 {
		ttl := 100 * time.Second
		if i%2 == 1 {
			ttl = 300 * time.Second
		}
		s.Put(fmt.Sprint("k", i), []byte("v"), &kv.PutOptions{TTL: ttl})
		s.Put(fmt.Sprint("plain", i), []byte("v"), nil)
	}
	n, avg := s.TTLStats()
	if n != 400 {
		t.Fatalf("%d keys with a TTL, want 400", n)
	}
	// 16 sampled of ~100 a segment: the mean of a sample of 100 s and 300 s
	// TTLs stays well inside (100 s, 300 s).
	if avg < 120*time.Second || avg > 280*time.Second {
		t.Fatalf("average TTL %v, want about 200 s", avg)
	}
	clk.Advance(150 * time.Second) // the 100 s keys are past their TTL, not yet swept
	n, avg = s.TTLStats()
	if n != 400 || avg != 150*time.Second {
		t.Fatalf("after 150 s: %d keys, average %v; want 400 (unswept ones count) and 150 s (the live ones' TTL left)", n, avg)
	}
	s.SweepOnce()
	if n, _ := s.TTLStats(); n >= 400 {
		t.Fatalf("the sweep removed none of the expired keys: %d", n)
	}
}

// dbsizeByWalk is DBSIZE counted the long way: every owned segment's live
// records under its lock, less those past their TTL where the segment holds
// up to dbsizeExactTTLKeys keys with one.
func dbsizeByWalk(s *Store) int {
	n := 0
	now := s.clock.NowNano()
	for _, g := range s.segments {
		g.mu.RLock()
		if g.owned {
			n += g.live
			if g.items.expiring <= dbsizeExactTTLKeys && len(g.items.recs) <= dbsizeExactSlots {
				for r := range g.items.expiringFrom(0, len(g.items.recs)) {
					if !r.Deleted() && r.expiredAt(now) {
						n--
					}
				}
			}
		}
		g.mu.RUnlock()
	}
	return n
}

// DBSIZE reads the owned-key count the writes keep and locks only the
// segments with a few keys with a TTL: after every kind of change — writes
// with and without a TTL, collections emptied, expiry and sweeps, a segment
// handed over or taken back, a snapshot installed or merged, replayed ops,
// a flush — it answers what walking every segment answers.
func TestDBSizeFollowsEveryChangeOfTheKeyspace(t *testing.T) {
	s, clk := newTestStore(t, func(c *Config) { c.Segments = 8 })
	other, oclk := newTestStore(t, func(c *Config) { c.Segments = 8 })
	rng := rand.New(rand.NewPCG(7, 17))
	key := func() string { return fmt.Sprint("k", rng.IntN(120)) }
	for step := range 4000 {
		switch op := rng.IntN(16); op {
		case 0, 1, 2:
			s.Put(key(), []byte("v"), nil)
		case 3, 4:
			s.Put(key(), []byte("v"), &kv.PutOptions{TTL: time.Duration(1+rng.IntN(4)) * time.Second})
		case 5:
			s.Delete(key())
		case 6:
			run(t, s, kv.CmdHSet, key(), "f", "1")
		case 7:
			run(t, s, kv.CmdHDel, key(), "f")
		case 8:
			run(t, s, kv.CmdLPush, key(), "a")
		case 9:
			s.Expire(key(), time.Duration(1+rng.IntN(3))*time.Second)
		case 10:
			s.Persist(key())
		case 11:
			clk.Advance(time.Second)
			if rng.IntN(2) == 0 {
				s.SweepOnce()
			}
		case 12:
			g := s.Segment(uint16(rng.IntN(8)))
			g.SetOwned(!g.Owned())
		case 13:
			// Another store's segment arrives whole (a catch-up from below
			// the trim floor) or merged (a migration's copy).
			k := fmt.Sprint("o", rng.IntN(60))
			other.Put(k, []byte("w"), &kv.PutOptions{TTL: time.Duration(1+rng.IntN(4)) * time.Second})
			oclk.Advance(time.Duration(rng.IntN(2)) * time.Second)
			seg := other.SegmentFor(k).ID()
			if rng.IntN(2) == 0 {
				s.Segment(seg).InstallSnapshot(other.Segment(seg).Snapshot())
			} else {
				s.Segment(seg).MergeSnapshot(other.Segment(seg).Snapshot())
			}
		case 14:
			k := fmt.Sprint("r", rng.IntN(60))
			other.Put(k, []byte("w"), nil)
			g := other.SegmentFor(k)
			ops, err := g.OperationsAfter(s.Segment(g.ID()).Revision())
			if err == nil && len(ops) > 0 {
				_, _ = s.Segment(g.ID()).ApplyOp(ops[len(ops)-1])
			}
		case 15:
			if rng.IntN(20) == 0 {
				s.Flush()
			}
		}
		if got, want := s.DBSize(), dbsizeByWalk(s); got != want {
			t.Fatalf("step %d: DBSize %d, walking the segments counts %d", step, got, want)
		}
	}
}

// SMEMBERS answers what Redis 7.0 keeps as an intset in ascending numeric
// order, as Redis does, and any other set in its own order — every member
// once, without sorting them on each call.
func TestSMembersOrder(t *testing.T) {
	s, _ := newTestStore(t)
	run(t, s, kv.CmdSAdd, "ints", "10", "9", "-1", "100")
	if got := flat(run(t, s, kv.CmdSMembers, "ints")); got != "[-1 9 10 100]" {
		t.Fatalf("SMEMBERS of an intset = %s, want [-1 9 10 100]", got)
	}
	want := map[string]bool{}
	for i := range 600 {
		m := fmt.Sprint("m", i)
		run(t, s, kv.CmdSAdd, "big", m)
		want[m] = true
	}
	run(t, s, kv.CmdSRem, "big", "m7", "m300")
	delete(want, "m7")
	delete(want, "m300")
	r := run(t, s, kv.CmdSMembers, "big")
	if len(r.Array) != len(want) {
		t.Fatalf("SMEMBERS answered %d members, want %d", len(r.Array), len(want))
	}
	for _, e := range r.Array {
		if !want[string(e.Bulk)] {
			t.Fatalf("SMEMBERS answered %q twice or never added", e.Bulk)
		}
		delete(want, string(e.Bulk))
	}
}

// shipOpLog applies to dst, segment by segment, every operation of src's
// op-log after applied[seg] (one entry per segment), as a replica's session
// does, and moves applied on.
func shipOpLog(t *testing.T, src, dst *Store, applied []uint64) {
	t.Helper()
	for seg := range applied {
		log, err := src.Segment(uint16(seg)).OperationsAfter(applied[seg])
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range log {
			if _, err := dst.Segment(uint16(seg)).ApplyOp(op); err != nil {
				t.Fatalf("apply %v %v: %v", op.Kind, op.Cmd, err)
			}
			applied[seg] = op.Revision()
		}
	}
}

package store

import (
	"bytes"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
)

// TestPagedValueEditsLikeAFlatCopy drives random edits of a paged value
// against a flat model: writes across page boundaries, past the end (the
// gap reads as zeros), and reads of every kind.
func TestPagedValueEditsLikeAFlatCopy(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	model := make([]byte, pagedMin+123)
	for i := range model {
		model[i] = byte(rng.IntN(256))
	}
	pv := pagedFrom(model)
	for step := range 400 {
		off := rng.IntN(len(model) + 3*pageSize)
		patch := make([]byte, 1+rng.IntN(2*leafPages*pageSize+5))
		for i := range patch {
			patch[i] = byte(rng.IntN(256))
		}
		before := pv.flat()
		next := pv.edited(off, patch)
		if !bytes.Equal(pv.flat(), before) {
			t.Fatalf("step %d: an edit changed the value it was made from", step)
		}
		if end := off + len(patch); end > len(model) {
			model = append(model, make([]byte, end-len(model))...)
		}
		copy(model[off:], patch)
		pv = next
		if pv.n != len(model) || !bytes.Equal(pv.flat(), model) {
			t.Fatalf("step %d: paged value differs from the model (%d vs %d bytes)", step, pv.n, len(model))
		}
		i := rng.IntN(len(model))
		if pv.byteAt(i) != model[i] {
			t.Fatalf("step %d: byte %d", step, i)
		}
		lo := rng.IntN(len(model))
		dst := make([]byte, rng.IntN(len(model)-lo+1))
		pv.copyRange(dst, lo)
		if !bytes.Equal(dst, model[lo:lo+len(dst)]) {
			t.Fatalf("step %d: range %d+%d", step, lo, len(dst))
		}
	}
}

// TestPagedEditSharesUntouchedPages: an edit copies the pages and leaves
// it writes and nothing else; what a gap adds is the shared zero page.
func TestPagedEditSharesUntouchedPages(t *testing.T) {
	const pages = 3 * leafPages
	pv := pagedFrom(bytes.Repeat([]byte{1}, pages*pageSize))
	edit := leafPages + 3
	next := pv.edited(edit*pageSize+5, []byte("xy"))
	for i := range pages {
		if shared := next.page(i) == pv.page(i); shared == (i == edit) {
			t.Fatalf("page %d: shared %v after an edit of page %d alone", i, shared, edit)
		}
	}
	for li := range pv.leaves {
		if shared := next.leaves[li] == pv.leaves[li]; shared == (li == 1) {
			t.Fatalf("leaf %d: shared %v after an edit in leaf 1 alone", li, shared)
		}
	}
	far := next.edited((pages+2*leafPages)*pageSize+1, []byte{9})
	for i := pages; i < pages+2*leafPages; i++ {
		if far.page(i) != &zeroPage {
			t.Fatalf("gap page %d is not the shared zero page", i)
		}
	}
	if far.leaves[len(pv.leaves)] != zeroLeaf {
		t.Fatal("a leaf of the gap is not the shared zero leaf")
	}
	if zeroPage != (strPage{}) {
		t.Fatal("the shared zero page was written")
	}
	for _, pg := range zeroLeaf {
		if pg != &zeroPage {
			t.Fatal("the shared zero leaf was written")
		}
	}
}

// TestLargeStringEditsKeepEarlierReads: SETBIT, SETRANGE, APPEND and
// BITFIELD on a paged string leave the bytes a reader got before them as
// they were (a GET's reply, an exported record, the op-log's entries
// share a value's memory), page the value from pagedMin on, and keep the
// segment's accounting exact.
func TestLargeStringEditsKeepEarlierReads(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.MaxItemBytes = 1 << 22 })
	orig := bytes.Repeat([]byte("0123456789abcdef"), pagedMin/16+50)
	s.Put("bs", orig, nil)
	model := bytes.Clone(orig)
	edits := []kv.Cmd{
		kv.NewCmd(kv.CmdSetBit, "bs", "7", "1"),
		kv.NewCmd(kv.CmdSetRange, "bs", strconv.Itoa(pageSize-2), "ACROSS"),
		kv.NewCmd(kv.CmdAppend, "bs", "TAIL"),
		kv.NewCmd(kv.CmdSetBit, "bs", strconv.Itoa(8*(3*pagedMin)+1), "1"),
		kv.NewCmd(kv.CmdBitField, "bs", "SET", "u16", "#100", "65535", "INCRBY", "u8", "40000", "3"),
	}
	apply := func(op kv.Cmd) {
		switch op.Op {
		case kv.CmdSetBit:
			off, _ := strconv.Atoi(string(op.Args[0]))
			for len(model) <= off>>3 {
				model = append(model, 0)
			}
			mask := byte(1) << (7 - off&7)
			if op.Args[1][0] == '1' {
				model[off>>3] |= mask
			} else {
				model[off>>3] &^= mask
			}
		case kv.CmdSetRange:
			off, _ := strconv.Atoi(string(op.Args[0]))
			copy(model[off:], op.Args[1])
		case kv.CmdAppend:
			model = append(model, op.Args[0]...)
		case kv.CmdBitField:
			model[200], model[201] = 0xff, 0xff // u16 at bit 1600
			model[5000] += 3                    // u8 at bit 40000
		}
	}
	for _, op := range edits {
		before := s.Get("bs").Value
		kept := bytes.Clone(before)
		if r := s.Exec(op); r.Status != kv.StatusSuccess {
			t.Fatalf("%v: %v %s", op.Op, r.Status, r.Message)
		}
		apply(op)
		if !bytes.Equal(before, kept) {
			t.Fatalf("%v changed the bytes an earlier GET returned", op.Op)
		}
		g := s.SegmentFor("bs")
		g.mu.RLock()
		paged := g.items.get("bs").paged() != nil
		g.mu.RUnlock()
		if !paged {
			t.Fatalf("after %v a %d-byte edited string is not paged", op.Op, len(model))
		}
		if got := s.Get("bs").Value; !bytes.Equal(got, model) {
			t.Fatalf("after %v: value differs from the model", op.Op)
		}
		checkAccounting(t, g)
	}
	if r := s.Exec(kv.NewCmd(kv.CmdStrLen, "bs")); r.Int != int64(len(model)) {
		t.Fatalf("STRLEN %d, want %d", r.Int, len(model))
	}
	ones := 0
	for _, b := range model {
		ones += bits.OnesCount8(b)
	}
	if r := s.Exec(kv.NewCmd(kv.CmdBitCount, "bs")); r.Int != int64(ones) {
		t.Fatalf("BITCOUNT %d, want %d", r.Int, ones)
	}
	lo, hi := pageSize-4, pageSize+4
	if r := s.Exec(kv.NewCmd(kv.CmdGetRange, "bs", strconv.Itoa(lo), strconv.Itoa(hi))); !bytes.Equal(r.Bulk, model[lo:hi+1]) {
		t.Fatalf("GETRANGE across a page edge: %q, want %q", r.Bulk, model[lo:hi+1])
	}
	// A write that replaces the value makes it flat again.
	s.Put("bs", []byte("small"), nil)
	g := s.SegmentFor("bs")
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.items.get("bs").paged() != nil {
		t.Fatal("SET left the value paged")
	}
}

// TestBitFieldFarGetOnAPagedStringAllocatesNothingBig: a GET far past a
// paged string's end reads zeros from no copy (the window is cut at the
// string's end), where a window up to the offset would be half a gigabyte.
func TestBitFieldFarGetOnAPagedStringAllocatesNothingBig(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.MaxItemBytes = 1 << 22 })
	s.Put("bs", bytes.Repeat([]byte{0xff}, pagedMin), nil)
	s.Exec(kv.NewCmd(kv.CmdSetBit, "bs", "0", "0"))
	var ms1, ms2 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	r := s.Exec(kv.NewCmd(kv.CmdBitFieldRO, "bs", "GET", "u8", "8", "GET", "u8", "4294967000"))
	runtime.ReadMemStats(&ms2)
	if r.Status != kv.StatusSuccess || len(r.Array) != 2 || r.Array[0].Int != 255 || r.Array[1].Int != 0 {
		t.Fatalf("BITFIELD_RO: %+v", r)
	}
	if grew := ms2.TotalAlloc - ms1.TotalAlloc; grew > 1<<20 {
		t.Fatalf("a far GET allocated %d bytes", grew)
	}
}

// TestPagedStringEditsReplicate: a replica that applies the op-log of
// random edits of large strings holds the same bytes as the source.
func TestPagedStringEditsReplicate(t *testing.T) {
	src, _ := newTestStore(t, func(c *Config) { c.Segments = 2; c.MaxItemBytes = 1 << 22 })
	dst, _ := newTestStore(t, func(c *Config) { c.Segments = 2; c.MaxItemBytes = 1 << 22 })
	rng := rand.New(rand.NewPCG(3, 5))
	for k := range 3 {
		src.Put("s"+strconv.Itoa(k), bytes.Repeat([]byte{byte('a' + k)}, pagedMin+k*pageSize), nil)
	}
	applied := []uint64{0, 0}
	for range 600 {
		k := "s" + strconv.Itoa(rng.IntN(3))
		off := strconv.Itoa(rng.IntN(pagedMin + 4*pageSize))
		var cmd kv.Cmd
		switch rng.IntN(4) {
		case 0:
			cmd = kv.NewCmd(kv.CmdSetBit, k, strconv.Itoa(8*rng.IntN(pagedMin+4*pageSize)+rng.IntN(8)), strconv.Itoa(rng.IntN(2)))
		case 1:
			cmd = kv.NewCmd(kv.CmdSetRange, k, off, strings.Repeat("r", 1+rng.IntN(5000)))
		case 2:
			cmd = kv.NewCmd(kv.CmdAppend, k, "app")
		case 3:
			cmd = kv.NewCmd(kv.CmdBitField, k, "INCRBY", "u12", off, "7", "SET", "i8", "#"+off, "-3")
		}
		if r := src.Exec(cmd); r.Status != kv.StatusSuccess {
			t.Fatalf("%v: %v %s", cmd.Op, r.Status, r.Message)
		}
		shipOpLog(t, src, dst, applied) // each op weighs its whole value in the op-log, which trims by bytes
	}
	for k := range 3 {
		key := "s" + strconv.Itoa(k)
		if !bytes.Equal(src.Get(key).Value, dst.Get(key).Value) {
			t.Fatalf("%s differs on the replica", key)
		}
	}
	for seg := range 2 {
		if a, b := src.Segment(uint16(seg)).Digest(), dst.Segment(uint16(seg)).Digest(); a != b {
			t.Fatalf("segment %d diverged: %+v vs %+v", seg, a, b)
		}
		checkAccounting(t, dst.Segment(uint16(seg)))
	}
}

// FuzzPagedLikeFlat: every command that reads or edits part of a string
// answers and leaves the same bytes on a paged string as on a flat one
// holding the same value (Put stores flat at any size; an edit pages).
func FuzzPagedLikeFlat(f *testing.F) {
	ops := []kv.CmdOp{kv.CmdBitField, kv.CmdBitFieldRO, kv.CmdSetBit, kv.CmdGetBit, kv.CmdSetRange, kv.CmdGetRange,
		kv.CmdBitCount, kv.CmdBitPos, kv.CmdAppend, kv.CmdStrLen}
	for i, seed := range []string{
		"SET\x00u8\x00#70000\x00255", "4000000\x001", "65530\x00patch-across", "-10\x00-1", "1000\x002000\x00BIT",
		"1\x0070000\x00-1", "tail", "", "GET\x00i64\x00559999\x00INCRBY\x00u7\x00#9999\x00100", "0\x00-1",
	} {
		f.Add(byte(i), []byte(seed))
	}
	s, _ := newTestStore(f, func(c *Config) { c.MaxItemBytes = 1 << 20 })
	base := make([]byte, pagedMin+5000)
	for i := range base {
		base[i] = byte(i*7 + i>>8)
	}
	f.Fuzz(func(t *testing.T, which byte, blob []byte) {
		s.Put("flat", base, nil)
		s.Put("paged", base, nil)
		s.Exec(kv.NewCmd(kv.CmdSetRange, "paged", "0", string(base[:1])))
		var args []string
		if len(blob) > 0 {
			for _, a := range bytes.SplitN(blob, []byte{0}, 12) {
				args = append(args, string(a))
			}
		}
		op := ops[int(which)%len(ops)]
		rf := s.Exec(kv.NewCmd(op, "flat", args...))
		rp := s.Exec(kv.NewCmd(op, "paged", args...))
		if rf.Status != rp.Status || rf.Type != rp.Type || rf.Int != rp.Int || !bytes.Equal(rf.Bulk, rp.Bulk) || len(rf.Array) != len(rp.Array) {
			t.Fatalf("%v %q: flat %+v, paged %+v", op, args, rf, rp)
		}
		for i := range rf.Array {
			if rf.Array[i].Type != rp.Array[i].Type || rf.Array[i].Int != rp.Array[i].Int {
				t.Fatalf("%v %q: element %d: flat %+v, paged %+v", op, args, i, rf.Array[i], rp.Array[i])
			}
		}
		if !bytes.Equal(s.Get("flat").Value, s.Get("paged").Value) {
			t.Fatalf("%v %q: the values differ after it", op, args)
		}
	})
}

package store

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
)

// Bit offsets at their limits (issue #13 item 2): 2^32-1 is the last bit a
// bitmap may hold, past it Redis's error; below it the item cap refuses
// what would grow the value past --max-item-bytes, before anything changes.
func TestBitOffsetsAtTheLimits(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.MaxItemBytes = 1024 })
	for _, c := range []struct {
		op   kv.CmdOp
		args []string
		want string
	}{
		{kv.CmdSetBit, []string{"4294967295", "1"}, "!ItemTooLarge"},
		{kv.CmdSetBit, []string{"4294967296", "1"}, "!bit offset is not an integer or out of range"},
		{kv.CmdSetBit, []string{maxI64, "1"}, "!bit offset is not an integer or out of range"},
		{kv.CmdSetBit, []string{"18446744073709551615", "1"}, "!bit offset is not an integer or out of range"},
		{kv.CmdSetBit, []string{"-1", "1"}, "!bit offset is not an integer or out of range"},
		{kv.CmdSetBit, []string{"8191", "1"}, "0"}, // the 1024th byte: within the cap
		{kv.CmdSetBit, []string{"8192", "1"}, "!ItemTooLarge"},
		{kv.CmdGetBit, []string{"4294967295"}, "0"},
		{kv.CmdBitField, []string{"SET", "u8", "#1023", "1"}, "[1]"}, // byte 1023 held bit 8191
		{kv.CmdBitField, []string{"SET", "u8", "#1024", "1"}, "!ItemTooLarge"},
		{kv.CmdBitField, []string{"SET", "i64", "#67108863", "1"}, "!ItemTooLarge"},
		{kv.CmdBitField, []string{"GET", "i64", "#67108864"}, "!bit offset is not an integer or out of range"},
		{kv.CmdBitField, []string{"GET", "u8", "#2305843009213693952"}, "[0]"}, // ×8 wraps to 0, as in Redis
		{kv.CmdBitField, []string{"GET", "u8", "#" + maxI64}, "!bit offset is not an integer or out of range"},
		{kv.CmdBitCount, []string{minI64, maxI64, "BIT"}, "1"},
		{kv.CmdBitPos, []string{"1", minI64, maxI64, "BIT"}, "8191"},
	} {
		r := run(t, s, c.op, "k", c.args...)
		got := flat(r)
		if r.Status != kv.StatusSuccess {
			got = "!" + r.Message
			if r.Message == "" || r.Status == kv.StatusItemTooLarge {
				got = "!" + r.Status.String()
			}
		}
		if got != c.want {
			t.Errorf("%v %q = %q, want %q", c.op, c.args, got, c.want)
		}
	}
	if v := s.Get("k").Value; len(v) != 1024 {
		t.Fatalf("a refused command changed the value: %d bytes", len(v))
	}
}

// FuzzBitFieldArgs: BITFIELD and BITFIELD_RO with arbitrary argument
// vectors never panic, never grow a value past the item cap, answer one
// element per GET/SET/INCRBY (an integer, or nil for a FAIL overflow) and
// change nothing when they refuse.
func FuzzBitFieldArgs(f *testing.F) {
	for _, seed := range []string{
		"GET\x00u8\x000", "SET\x00i64\x00#0\x00" + minI64, "INCRBY\x00u63\x00#3\x00" + maxI64,
		"OVERFLOW\x00FAIL\x00INCRBY\x00i1\x000\x001\x00GET\x00i1\x000", "OVERFLOW\x00SAT\x00SET\x00u2\x00#4095\x00-1",
		"GET\x00i8\x00#" + maxI64, "SET\x00u8\x004294967295\x001", "OVERFLOW\x00WRAP\x00INCRBY\x00i64\x000\x00" + minI64,
		"GET\x00u64\x000", "GET\x00i65\x000", "SET\x00i8\x00-1\x001", "OVERFLOW", "x", "",
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	s, _ := newTestStore(f, func(c *Config) { c.MaxItemBytes = 4096 })
	f.Fuzz(func(t *testing.T, blob []byte, ro bool) {
		before := bytes.Repeat([]byte{0xa5}, 16)
		s.Put("k", append([]byte(nil), before...), nil)
		var args []string
		if len(blob) > 0 {
			for _, a := range bytes.SplitN(blob, []byte{0}, 40) {
				args = append(args, string(a))
			}
		}
		op := kv.CmdBitField
		if ro {
			op = kv.CmdBitFieldRO
		}
		r := s.Exec(kv.NewCmd(op, "k", args...))
		after := s.Get("k").Value
		if r.Status != kv.StatusSuccess {
			if !bytes.Equal(after, before) {
				t.Fatalf("%q refused (%v %s) but changed the value", args, r.Status, r.Message)
			}
			return
		}
		if len(after) < len(before) || len(after) > 4096 {
			t.Fatalf("%q: value of %d bytes", args, len(after))
		}
		ops, fail := 0, false
		for j := 0; j < len(args); j++ {
			switch {
			case eqFold(args[j], "OVERFLOW"):
				fail = fail || j+1 < len(args) && eqFold(args[j+1], "FAIL")
				j++
			case eqFold(args[j], "GET"):
				ops++
				j += 2
			default: // SET, INCRBY
				ops++
				j += 3
			}
		}
		if r.Type != kv.ReplyArray || len(r.Array) != ops {
			t.Fatalf("%q: %d replies for %d operations", args, len(r.Array), ops)
		}
		for _, e := range r.Array {
			if e.Type != kv.ReplyInt && !(e.Type == kv.ReplyNil && fail) {
				t.Fatalf("%q: reply element %+v", args, e)
			}
		}
		if ro && !bytes.Equal(after, before) {
			t.Fatalf("%q: BITFIELD_RO changed the value", args)
		}
	})
}

func eqFold(a, b string) bool { return bytes.EqualFold([]byte(a), []byte(b)) }

// BITFIELD's overflow arithmetic against big-integer truth, every width.
func TestBitFieldOverflowArithmetic(t *testing.T) {
	vals := []int64{0, 1, -1, 2, -2, 63, -64, 127, -128, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64, 1 << 40}
	for width := uint(1); width <= 64; width++ {
		hi, lo := int64(math.MaxInt64), int64(math.MinInt64)
		if width < 64 {
			hi, lo = 1<<(width-1)-1, -(1 << (width - 1))
		}
		for _, v := range vals {
			if v < lo || v > hi {
				continue
			}
			for _, inc := range vals {
				sum := float64(v) + float64(inc) // exact enough to tell the side of overflow
				got, over := signedOverflow(v, inc, width, 's')
				switch {
				case sum > float64(hi) || (sum == float64(hi) && v+inc != hi && v > 0 && inc > 0 && v+inc < 0):
					if !over || got != hi {
						t.Fatalf("i%d %d+%d: %d %v, want saturation at %d", width, v, inc, got, over, hi)
					}
				case sum < float64(lo):
					if !over || got != lo {
						t.Fatalf("i%d %d+%d: %d %v, want saturation at %d", width, v, inc, got, over, lo)
					}
				case !over && got != v+inc:
					t.Fatalf("i%d %d+%d = %d", width, v, inc, got)
				}
				wrapped, _ := signedOverflow(v, inc, width, 'w')
				if want := signExtend(uint64(v+inc)&(^uint64(0)>>(64-width)), width); wrapped != want {
					t.Fatalf("i%d wrap %d+%d = %d, want %d", width, v, inc, wrapped, want)
				}
			}
		}
	}
	for width := uint(1); width <= 63; width++ {
		hi := uint64(1)<<width - 1
		for _, v := range []uint64{0, 1, hi / 2, hi} {
			for _, inc := range vals {
				got, over := unsignedOverflow(v, inc, width, 's')
				sum := float64(v) + float64(inc)
				switch {
				case sum > float64(hi) && width < 53:
					if !over || got != hi {
						t.Fatalf("u%d %d+%d: %d %v", width, v, inc, got, over)
					}
				case sum < 0:
					if !over || got != 0 {
						t.Fatalf("u%d %d+%d: %d %v", width, v, inc, got, over)
					}
				case !over && got != v+uint64(inc):
					t.Fatalf("u%d %d+%d = %d", width, v, inc, got)
				}
			}
		}
	}
}

// The estimate stays within HyperLogLog's error (standard error 0.81 % with
// 16384 registers; 3 % is beyond 3σ) through the sparse and dense forms,
// and a merge of two halves counts like the whole.
func TestHLLEstimateWithinError(t *testing.T) {
	s, _ := newTestStore(t)
	added := 0
	for _, n := range []int{10, 100, 1000, 10000, 100000} {
		var args []string
		for ; added < n; added++ {
			args = append(args, "el:"+strconv.Itoa(added))
		}
		for len(args) > 0 {
			chunk := args[:min(len(args), 1000)]
			args = args[len(chunk):]
			if r := run(t, s, kv.CmdPFAdd, "h", chunk...); r.Status != kv.StatusSuccess {
				t.Fatal(r.Message)
			}
		}
		r := run(t, s, kv.CmdPFCount, "h")
		if err := math.Abs(float64(r.Int)-float64(n)) / float64(n); err > 0.03 {
			t.Errorf("%d elements estimated %d (%.2f %%)", n, r.Int, 100*err)
		}
		if v := s.Get("h").Value; !HLLValid(v) || (n >= 10000) != HLLDense(v) {
			t.Errorf("%d elements: valid %v dense %v, %d bytes", n, HLLValid(v), HLLDense(v), len(v))
		}
	}
	// Halves merged.
	a, b := newHLL(), newHLL()
	for i := 0; i < 20000; i++ {
		idx, c := hllPattern([]byte(fmt.Sprint("m", i)))
		if i%2 == 0 {
			a, _ = hllSet(a, idx, c)
		} else {
			b, _ = hllSet(b, idx, c)
		}
	}
	regs := make([]uint8, HLLRegisters)
	if !HLLMerge(regs, a) || !HLLMerge(regs, b) {
		t.Fatal("merge refused a valid HLL")
	}
	if n := HLLCount(regs); math.Abs(float64(n)-20000)/20000 > 0.03 {
		t.Fatalf("merged halves estimated %d", n)
	}
	stored, ok := HLLStore(nil, regs, true)
	if !ok || !HLLDense(stored) {
		t.Fatal("HLLStore")
	}
	if n, _ := hllCountValue(stored); n != HLLCount(regs) {
		t.Fatalf("stored count %d != registers' %d", n, HLLCount(regs))
	}
}

package store

import (
	"bytes"
	"math"
	"math/bits"

	"github.com/zaris-io/zaris/internal/kv"
)

// Bitmap commands (issue #13 item 5): SETBIT, GETBIT, BITCOUNT, BITPOS,
// BITFIELD and BITFIELD_RO work on string values, bit 0 being the most
// significant bit of byte 0, as in Redis. A command that changes the value
// replaces it whole (an OpPut of the new value: replicas get the bytes,
// never a command to replay). Arguments are checked in Redis's order, so
// a bad offset is reported before a wrong type.

var (
	errBitOffset    = kv.BadRequest("bit offset is not an integer or out of range")
	errBitValue     = kv.BadRequest("bit is not an integer or out of range")
	errBitFieldType = kv.BadRequest("Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
)

// maxBitOffset bounds a bit offset: a bitmap holds at most
// proto-max-bulk-len bytes (2^32 bits).
const maxBitOffset = MaxStringBytes*8 - 1

// redisInt parses a decimal integer as Redis's string2ll does: no sign
// but '-', no leading zeros, no spaces, within int64.
func redisInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	i, neg := 0, false
	if b[0] == '-' {
		neg, i = true, 1
		if len(b) == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return int64(-v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// bitOffset parses a bit offset; with hash, "#n" means n*width (BITFIELD's
// offsets counted in fields). Like Redis, the multiplication wraps and a
// negative result or one past 2^32-1 is refused.
func bitOffset(b []byte, hash bool, width int) (uint64, bool) {
	use := hash && width > 0 && len(b) > 0 && b[0] == '#'
	if use {
		b = b[1:]
	}
	n, ok := redisInt(b)
	if !ok {
		return 0, false
	}
	if use {
		n *= int64(width)
	}
	if n < 0 || n > maxBitOffset {
		return 0, false
	}
	return uint64(n), true
}

// stringKind refuses a key holding a collection.
func stringKind(x *execCtx) (kv.Reply, bool) {
	if x.rec != nil && x.rec.Kind != KindString {
		return kv.StatusReply(kv.StatusWrongType), false
	}
	return kv.Reply{}, true
}

// grownCopy returns a copy of cur zero-padded to at least n bytes, or the
// refusal when n passes the string limit or the item cap.
func (x *execCtx) grownCopy(cur []byte, n uint64) ([]byte, kv.Reply, bool) {
	if bad, ok := x.stringGrowth(n); !ok {
		return nil, bad, false
	}
	v := make([]byte, max(uint64(len(cur)), n))
	copy(v, cur)
	return v, kv.Reply{}, true
}

// stringGrowth checks a string grown to n bytes: within Redis's 512 MB and
// the item cap.
func (x *execCtx) stringGrowth(n uint64) (kv.Reply, bool) {
	if n > MaxStringBytes+8 {
		return errStringTooLong, false
	}
	if limit := x.seg.store.cfg.MaxItemBytes; n > uint64(limit) && !x.apply {
		return kv.Reply{Status: kv.StatusItemTooLarge, Message: itemTooLargeMessage(int64(limit))}, false
	}
	return kv.Reply{}, true
}

// countBitsOf counts the set bits lo..hi (inclusive) of the held string,
// page by page when it is paged.
func (x *execCtx) countBitsOf(lo, hi uint64) int64 {
	pv := x.rec.paged()
	if pv == nil {
		return countBits(x.rec.Value(), lo, hi)
	}
	var n int64
	for lo <= hi {
		pg := lo >> (pageShift + 3)
		end := min(hi, (pg+1)<<(pageShift+3)-1)
		base := pg << (pageShift + 3)
		n += countBits(pv.page(int(pg))[:], lo-base, end-base)
		lo = end + 1
	}
	return n
}

func getBit(v []byte, off uint64) int64 {
	if off>>3 >= uint64(len(v)) {
		return 0
	}
	return int64(v[off>>3]>>(7-off&7)) & 1
}

// bitRange resolves BITCOUNT/BITPOS's start and end (bytes, or bits with
// isBit) against a string of n bytes into an inclusive bit range; ok is
// false for an empty range.
func bitRange(start, end int64, n int, isBit bool) (lo, hi uint64, ok bool) {
	total := int64(n)
	if isBit {
		total <<= 3
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	if end >= total {
		end = total - 1
	}
	if start > end {
		return 0, 0, false
	}
	if isBit {
		return uint64(start), uint64(end), true
	}
	return uint64(start) << 3, uint64(end)<<3 + 7, true
}

// countBits counts the set bits of v in the inclusive bit range [lo, hi].
func countBits(v []byte, lo, hi uint64) int64 {
	var n int
	for lo <= hi && lo&7 != 0 {
		n += int(getBit(v, lo))
		lo++
	}
	for lo+7 <= hi {
		n += bits.OnesCount8(v[lo>>3])
		lo += 8
	}
	for ; lo <= hi; lo++ {
		n += int(getBit(v, lo))
	}
	return int64(n)
}

// findBit is the first position of bit in the inclusive range, or -1.
func findBit(v []byte, bit int64, lo, hi uint64) int64 {
	skip := byte(0xff) // a whole byte holding no wanted bit
	if bit == 1 {
		skip = 0
	}
	for p := lo; p <= hi; {
		if p&7 == 0 && p+7 <= hi && v[p>>3] == skip {
			p += 8
			continue
		}
		if getBit(v, p) == bit {
			return int64(p)
		}
		p++
	}
	return -1
}

func init() {
	register(kv.CmdSetBit, handler{kind: kindAny, write: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 2, 2) {
			return arityError(x)
		}
		off, ok := bitOffset(x.cmd.Args[0], false, 0)
		if !ok {
			return errBitOffset
		}
		on, ok := redisInt(x.cmd.Args[1])
		if !ok || on&^1 != 0 {
			return errBitValue
		}
		if r, ok := stringKind(x); !ok {
			return r
		}
		b, held := x.stringByte(off >> 3)
		mask := byte(1) << (7 - off&7)
		old := int64(0)
		if b&mask != 0 {
			old = 1
		}
		if held && old == on {
			return kv.IntReply(old) // nothing changes
		}
		if bad, ok := x.stringGrowth(off>>3 + 1); !ok {
			return bad
		}
		if on == 1 {
			b |= mask
		} else {
			b &^= mask
		}
		x.stringEdit(int(off>>3), []byte{b})
		return kv.IntReply(old)
	}})
	register(kv.CmdGetBit, handler{kind: kindAny, run: func(x *execCtx) kv.Reply {
		if !arity(x, 1, 1) {
			return arityError(x)
		}
		off, ok := bitOffset(x.cmd.Args[0], false, 0)
		if !ok {
			return errBitOffset
		}
		if r, ok := stringKind(x); !ok {
			return r
		}
		b, _ := x.stringByte(off >> 3)
		return kv.IntReply(int64(b>>(7-off&7)) & 1)
	}})
	register(kv.CmdBitCount, handler{kind: kindAny, run: func(x *execCtx) kv.Reply {
		// Redis looks the key up before it parses the range: a missing
		// key counts 0 whatever the arguments.
		if x.rec == nil {
			return kv.IntReply(0)
		}
		if r, ok := stringKind(x); !ok {
			return r
		}
		n, args := x.rec.ValueLen(), x.cmd.Args
		switch len(args) {
		case 0:
			if n == 0 {
				return kv.IntReply(0)
			}
			return kv.IntReply(x.countBitsOf(0, uint64(n)*8-1))
		case 2, 3:
		default:
			return errSyntax
		}
		start, ok1 := redisInt(args[0])
		if !ok1 {
			return errNotInteger
		}
		end, ok2 := redisInt(args[1])
		if !ok2 {
			return errNotInteger
		}
		// Redis 7.0 answers an empty negative range before it reads the
		// unit: BITCOUNT k -1 -100 x is 0.
		if start < 0 && end < 0 && start > end {
			return kv.IntReply(0)
		}
		isBit := false
		if len(args) == 3 {
			switch {
			case bytes.EqualFold(args[2], []byte("BIT")):
				isBit = true
			case bytes.EqualFold(args[2], []byte("BYTE")):
			default:
				return errSyntax
			}
		}
		lo, hi, ok := bitRange(start, end, n, isBit)
		if !ok {
			return kv.IntReply(0)
		}
		return kv.IntReply(x.countBitsOf(lo, hi))
	}})
	register(kv.CmdBitPos, handler{kind: kindAny, run: func(x *execCtx) kv.Reply {
		args := x.cmd.Args
		if len(args) < 1 {
			return kv.BadRequest("wrong number of arguments for BITPOS")
		}
		bit, ok := redisInt(args[0])
		if !ok {
			return errNotInteger
		}
		if bit != 0 && bit != 1 {
			return kv.BadRequest("The bit argument must be 1 or 0.")
		}
		if x.rec == nil {
			// A missing key is an endless run of 0 bits.
			if bit == 1 {
				return kv.IntReply(-1)
			}
			return kv.IntReply(0)
		}
		if r, ok := stringKind(x); !ok {
			return r
		}
		n := x.rec.ValueLen()
		var (
			lo, hi   uint64
			nonEmpty bool
			endGiven bool
		)
		switch len(args) {
		case 1:
			lo, hi, nonEmpty = 0, uint64(n)*8-1, n > 0
		case 2, 3, 4:
			start, ok := redisInt(args[1])
			if !ok {
				return errNotInteger
			}
			isBit := false
			if len(args) == 4 {
				switch {
				case bytes.EqualFold(args[3], []byte("BIT")):
					isBit = true
				case bytes.EqualFold(args[3], []byte("BYTE")):
				default:
					return errSyntax
				}
			}
			end := int64(n) - 1
			if isBit {
				end = int64(n)*8 - 1
			}
			if len(args) >= 3 {
				if end, ok = redisInt(args[2]); !ok {
					return errNotInteger
				}
				endGiven = true
			}
			lo, hi, nonEmpty = bitRange(start, end, n, isBit)
		default:
			return errSyntax
		}
		if !nonEmpty {
			return kv.IntReply(-1)
		}
		v, base := x.stringWindow(int(lo>>3), int(hi>>3)+1)
		p := findBit(v, bit, lo-uint64(base)*8, hi-uint64(base)*8)
		if p >= 0 {
			p += int64(base) * 8
		}
		if p >= 0 || bit == 1 || endGiven {
			return kv.IntReply(p)
		}
		// Looking for a clear bit without an explicit end: the string
		// continues with zeros to the right.
		return kv.IntReply(int64(hi) + 1)
	}})
	register(kv.CmdBitField, handler{kind: kindAny, write: true, run: func(x *execCtx) kv.Reply { return runBitField(x, false) }})
	register(kv.CmdBitFieldRO, handler{kind: kindAny, run: func(x *execCtx) kv.Reply { return runBitField(x, true) }})
}

// bitFieldOp is one BITFIELD operation.
type bitFieldOp struct {
	op       byte // 'g' GET, 's' SET, 'i' INCRBY
	signed   bool
	width    uint // 1..64 signed, 1..63 unsigned
	offset   uint64
	arg      int64
	overflow byte // 'w' WRAP, 's' SAT, 'f' FAIL
}

// parseBitField parses BITFIELD's operations as Redis does: the first bad
// argument is the error, and the whole command is refused before it reads
// or writes anything. needBytes is the value length the write operations
// reach (0 without writes).
func parseBitField(args [][]byte) (ops []bitFieldOp, needBytes uint64, writes bool, bad kv.Reply) {
	overflow := byte('w')
	for j := 0; j < len(args); j++ {
		rem := len(args) - j - 1
		var op byte
		switch sub := args[j]; {
		case bytes.EqualFold(sub, []byte("GET")) && rem >= 2:
			op = 'g'
		case bytes.EqualFold(sub, []byte("SET")) && rem >= 3:
			op = 's'
		case bytes.EqualFold(sub, []byte("INCRBY")) && rem >= 3:
			op = 'i'
		case bytes.EqualFold(sub, []byte("OVERFLOW")) && rem >= 1:
			j++
			switch a := args[j]; {
			case bytes.EqualFold(a, []byte("WRAP")):
				overflow = 'w'
			case bytes.EqualFold(a, []byte("SAT")):
				overflow = 's'
			case bytes.EqualFold(a, []byte("FAIL")):
				overflow = 'f'
			default:
				return nil, 0, false, kv.BadRequest("Invalid OVERFLOW type specified")
			}
			continue
		default:
			return nil, 0, false, errSyntax
		}
		typ := args[j+1]
		if len(typ) == 0 {
			return nil, 0, false, errBitFieldType
		}
		signed := typ[0] == 'i' || typ[0] == 'I'
		if !signed && typ[0] != 'u' && typ[0] != 'U' {
			return nil, 0, false, errBitFieldType
		}
		width, ok := redisInt(typ[1:])
		if !ok || width < 1 || signed && width > 64 || !signed && width > 63 {
			return nil, 0, false, errBitFieldType
		}
		off, ok := bitOffset(args[j+2], true, int(width))
		if !ok {
			return nil, 0, false, errBitOffset
		}
		o := bitFieldOp{op: op, signed: signed, width: uint(width), offset: off, overflow: overflow}
		if op != 'g' {
			writes = true
			needBytes = max(needBytes, (off+uint64(width)-1)>>3+1)
			if o.arg, ok = redisInt(args[j+3]); !ok {
				return nil, 0, false, errNotInteger
			}
			j++
		}
		ops = append(ops, o)
		j += 2
	}
	return ops, needBytes, writes, kv.Reply{}
}

func getBits(v []byte, off uint64, width uint) uint64 {
	var n uint64
	for i := uint(0); i < width; i++ {
		n = n<<1 | uint64(getBit(v, off+uint64(i)))
	}
	return n
}

func setBits(v []byte, off uint64, width uint, n uint64) {
	for i := uint(0); i < width; i++ {
		p := off + uint64(i)
		mask := byte(1) << (7 - p&7)
		if n>>(width-1-i)&1 == 1 {
			v[p>>3] |= mask
		} else {
			v[p>>3] &^= mask
		}
	}
}

func signExtend(n uint64, width uint) int64 {
	if width < 64 && n&(1<<(width-1)) != 0 {
		n |= ^uint64(0) << width
	}
	return int64(n)
}

// signedOverflow adds incr to value in a signed field of width bits: the
// result, and whether it overflowed (then the result is the wrapped or
// saturated value the overflow mode asks for). Redis's arithmetic.
func signedOverflow(value, incr int64, width uint, mode byte) (int64, bool) {
	hi := int64(math.MaxInt64)
	if width < 64 {
		hi = 1<<(width-1) - 1
	}
	lo := -hi - 1
	maxIncr := int64(uint64(hi) - uint64(value))
	minIncr := lo - value
	up := value > hi || width != 64 && incr > maxIncr || value >= 0 && incr > 0 && incr > maxIncr
	down := !up && (value < lo || width != 64 && incr < minIncr || value < 0 && incr < 0 && incr < minIncr)
	if !up && !down {
		return value + incr, false
	}
	switch mode {
	case 'w':
		c := uint64(value) + uint64(incr)
		if width < 64 {
			mask := ^uint64(0) << width
			if c&(1<<(width-1)) != 0 {
				c |= mask
			} else {
				c &^= mask
			}
		}
		return int64(c), true
	case 's':
		if up {
			return hi, true
		}
		return lo, true
	}
	return 0, true
}

// unsignedOverflow is signedOverflow for an unsigned field (width ≤ 63).
func unsignedOverflow(value uint64, incr int64, width uint, mode byte) (uint64, bool) {
	hi := uint64(1)<<width - 1
	maxIncr := int64(hi - value)
	minIncr := -int64(value)
	up := value > hi || incr > 0 && incr > maxIncr
	down := !up && incr < 0 && incr < minIncr
	if !up && !down {
		return value + uint64(incr), false
	}
	switch mode {
	case 'w':
		return (value + uint64(incr)) &^ (^uint64(0) << width), true
	case 's':
		if up {
			return hi, true
		}
		return 0, true
	}
	return 0, true
}

func runBitField(x *execCtx, readOnly bool) kv.Reply {
	ops, need, writes, bad := parseBitField(x.cmd.Args)
	if bad.Status != kv.StatusSuccess {
		return bad
	}
	if r, ok := stringKind(x); !ok {
		return r
	}
	if writes && readOnly {
		return kv.BadRequest("BITFIELD_RO only supports the GET subcommand")
	}
	var (
		v     []byte
		base  uint64 // v[0] is byte base of the string
		dirty bool
	)
	pv := x.rec.paged()
	if pv != nil && len(ops) > 0 {
		// A paged string: the ops' bytes only, copied out and back.
		if writes {
			if bad, ok := x.stringGrowth(need); !ok {
				return bad
			}
			dirty = uint64(pv.n) < need
		}
		// Bytes past the new end read as zeros (a GET far out allocates
		// nothing); the writes end within it (need).
		lo, hi := ^uint64(0), uint64(0)
		for _, o := range ops {
			lo, hi = min(lo, o.offset>>3), max(hi, (o.offset+uint64(o.width)-1)>>3+1)
		}
		if hi = min(hi, max(uint64(pv.n), need)); lo < hi {
			v, base = make([]byte, hi-lo), lo
			if lo < uint64(pv.n) {
				pv.copyRange(v[:min(hi, uint64(pv.n))-lo], int(lo))
			}
		}
	} else {
		cur := valueOf(x)
		v = cur
		if writes {
			var ok bool
			if v, bad, ok = x.grownCopy(cur, need); !ok {
				return bad
			}
			dirty = x.rec == nil || uint64(len(cur)) < need
		}
	}
	out := make([]kv.Reply, len(ops))
	for i, o := range ops {
		o.offset -= base * 8
		if o.op == 'g' {
			n := getBits(v, o.offset, o.width)
			if o.signed {
				out[i] = kv.IntReply(signExtend(n, o.width))
			} else {
				out[i] = kv.IntReply(int64(n))
			}
			continue
		}
		raw := getBits(v, o.offset, o.width)
		var (
			reply    int64
			newBits  uint64
			overflow bool
		)
		if o.signed {
			old := signExtend(raw, o.width)
			var next int64
			if o.op == 'i' {
				next, overflow = signedOverflow(old, o.arg, o.width, o.overflow)
				reply = next
			} else {
				next, overflow = signedOverflow(o.arg, 0, o.width, o.overflow)
				reply = old
			}
			newBits = uint64(next)
		} else {
			var next uint64
			if o.op == 'i' {
				next, overflow = unsignedOverflow(raw, o.arg, o.width, o.overflow)
				reply = int64(next)
			} else {
				next, overflow = unsignedOverflow(uint64(o.arg), 0, o.width, o.overflow)
				reply = int64(raw)
			}
			newBits = next
		}
		if overflow && o.overflow == 'f' {
			out[i] = kv.NilReply()
			continue
		}
		out[i] = kv.IntReply(reply)
		if newBits&(^uint64(0)>>(64-o.width)) != raw {
			dirty = true
		}
		setBits(v, o.offset, o.width, newBits)
	}
	switch {
	case !dirty:
	case pv != nil:
		// Up to the new end: bytes past it only a GET read.
		x.stringEdit(int(base), v[:min(base+uint64(len(v)), max(uint64(pv.n), need))-base])
	default:
		x.setStringValue(v)
	}
	return kv.ArrayReply(out)
}

package rdb

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
)

// decoder reads one RDB object from b. Every method reports failure as
// false; Restore turns any of them into ErrFormat. Nothing is allocated
// before the bytes that justify it have been seen to exist: a count from the
// payload is checked against what is left of it (every element costs at
// least one byte) before a slice of that many is made.
type decoder struct {
	b    []byte
	off  int
	nums numArena
}

func (d *decoder) left() uint64 { return uint64(len(d.b) - d.off) }

func (d *decoder) readByte() (byte, bool) {
	if d.off >= len(d.b) {
		return 0, false
	}
	c := d.b[d.off]
	d.off++
	return c, true
}

// take returns the next n bytes, capacity capped.
func (d *decoder) take(n uint64) ([]byte, bool) {
	if n > d.left() {
		return nil, false
	}
	s, e := d.off, d.off+int(n)
	d.off = e
	return d.b[s:e:e], true
}

// lenOrEnc reads an RDB length. With enc set, n is instead the special
// encoding of a string (0..2 integers, 3 LZF).
func (d *decoder) lenOrEnc() (n uint64, enc, ok bool) {
	c, ok := d.readByte()
	if !ok {
		return 0, false, false
	}
	switch c >> 6 {
	case 0:
		return uint64(c & 0x3f), false, true
	case 1:
		lo, ok := d.readByte()
		return uint64(c&0x3f)<<8 | uint64(lo), false, ok
	case 2:
		switch c {
		case 0x80:
			b, ok := d.take(4)
			if !ok {
				return 0, false, false
			}
			return uint64(binary.BigEndian.Uint32(b)), false, true
		case 0x81:
			b, ok := d.take(8)
			if !ok {
				return 0, false, false
			}
			return binary.BigEndian.Uint64(b), false, true
		}
		return 0, false, false
	default:
		return uint64(c & 0x3f), true, true
	}
}

// length reads a plain RDB length (a count, or a length inside an
// LZF-encoded string); a string encoding there is malformed.
func (d *decoder) length() (uint64, bool) {
	n, enc, ok := d.lenOrEnc()
	return n, ok && !enc
}

// str reads an RDB string: raw, an int8/16/32 (returned as decimal text) or
// LZF-compressed.
func (d *decoder) str() ([]byte, bool) {
	n, enc, ok := d.lenOrEnc()
	if !ok {
		return nil, false
	}
	if !enc {
		return d.take(n)
	}
	switch n {
	case 0:
		b, ok := d.take(1)
		if !ok {
			return nil, false
		}
		return d.nums.itoa(int64(int8(b[0]))), true
	case 1:
		b, ok := d.take(2)
		if !ok {
			return nil, false
		}
		return d.nums.itoa(int64(int16(binary.LittleEndian.Uint16(b)))), true
	case 2:
		b, ok := d.take(4)
		if !ok {
			return nil, false
		}
		return d.nums.itoa(int64(int32(binary.LittleEndian.Uint32(b)))), true
	case 3:
		return d.lzf()
	}
	return nil, false
}

func (d *decoder) lzf() ([]byte, bool) {
	clen, ok := d.length()
	if !ok {
		return nil, false
	}
	ulen, ok := d.length()
	if ok && clen == 0 && ulen == 0 {
		return []byte{}, true // nothing compressed to nothing: Redis loads it as ""
	}
	if !ok || clen > d.left() || ulen > lzfMaxLen || ulen > clen*lzfMaxRatio {
		return nil, false
	}
	in, _ := d.take(clen)
	out := make([]byte, ulen)
	if !lzfDecompress(in, out) {
		return nil, false
	}
	return out, true
}

// strs reads n strings, each of which takes at least minSize bytes.
func (d *decoder) strs(n, minSize uint64) ([][]byte, bool) {
	if n == 0 || n > d.left()/minSize {
		return nil, false
	}
	out := make([][]byte, n)
	for i := range out {
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

// object reads a type byte and the object that follows it.
func (d *decoder) object() (Value, bool) {
	t, ok := d.readByte()
	if !ok {
		return Value{}, false
	}
	switch t {
	case typeString:
		s, ok := d.str()
		return Value{Kind: String, Str: s}, ok

	case typeList, typeSet:
		n, ok := d.length()
		if !ok {
			return Value{}, false
		}
		elems, ok := d.strs(n, 1)
		kind := List
		if t == typeSet {
			kind = Set
		}
		return Value{Kind: kind, Elems: elems}, ok

	case typeHash:
		n, ok := d.length()
		if !ok || n > d.left()/2 {
			return Value{}, false
		}
		pairs, ok := d.strs(2*n, 1)
		return Value{Kind: Hash, Pairs: pairs}, ok

	case typeZSet, typeZSet2:
		return d.zset(t == typeZSet2)

	case typeSetIntset:
		return d.intset()

	case typeListZiplist, typeListQuicklist, typeListQuicklist2:
		elems, ok := d.list(t)
		return Value{Kind: List, Elems: elems}, ok

	case typeSetListpack:
		blob, ok := d.str()
		if !ok {
			return Value{}, false
		}
		var elems [][]byte
		ok = parseListpack(blob, func(s []byte, n int64, isInt bool) {
			elems = append(elems, d.entryBytes(s, n, isInt))
		})
		return Value{Kind: Set, Elems: elems}, ok && len(elems) > 0

	case typeHashZipmap, typeHashZiplist, typeHashListpack:
		blob, ok := d.str()
		if !ok {
			return Value{}, false
		}
		var pairs [][]byte
		add := func(s []byte, n int64, isInt bool) { pairs = append(pairs, d.entryBytes(s, n, isInt)) }
		switch t {
		case typeHashZipmap:
			ok = parseZipmap(blob, func(s []byte) { pairs = append(pairs, s) })
		case typeHashZiplist:
			ok = parseZiplist(blob, add)
		default:
			ok = parseListpack(blob, add)
		}
		return Value{Kind: Hash, Pairs: pairs}, ok && len(pairs) > 0 && len(pairs)%2 == 0

	case typeZSetZiplist, typeZSetListpack:
		blob, ok := d.str()
		if !ok {
			return Value{}, false
		}
		var members []ZMember
		member := true
		scoreOK := true
		add := func(s []byte, n int64, isInt bool) {
			if member {
				members = append(members, ZMember{Member: d.entryBytes(s, n, isInt)})
			} else {
				score := float64(n)
				if !isInt {
					var good bool
					score, good = parseScore(s)
					scoreOK = scoreOK && good
				}
				members[len(members)-1].Score = score
			}
			member = !member
		}
		if t == typeZSetZiplist {
			ok = parseZiplist(blob, add)
		} else {
			ok = parseListpack(blob, add)
		}
		return Value{Kind: ZSet, Members: members}, ok && scoreOK && member && len(members) > 0

	case typeStreamListpacks, typeStreamListpacks2, typeStreamListpacks3:
		return d.stream(t)
	}
	// Modules (6, 7), hashes with field TTLs (22 on) and anything unknown.
	return Value{}, false
}

// entryBytes is a ziplist or listpack entry as bytes: its string, or its
// integer in decimal.
func (d *decoder) entryBytes(s []byte, n int64, isInt bool) []byte {
	if isInt {
		return d.nums.itoa(n)
	}
	return s
}

func (d *decoder) zset(binaryScores bool) (Value, bool) {
	n, ok := d.length()
	// A member is at least a length byte, a score at least its length byte
	// (or 8 bytes in binary).
	minSize := uint64(2)
	if binaryScores {
		minSize = 9
	}
	if !ok || n == 0 || n > d.left()/minSize {
		return Value{}, false
	}
	members := make([]ZMember, n)
	for i := range members {
		m, ok := d.str()
		if !ok {
			return Value{}, false
		}
		var score float64
		if binaryScores {
			b, ok := d.take(8)
			if !ok {
				return Value{}, false
			}
			score = math.Float64frombits(binary.LittleEndian.Uint64(b))
		} else if score, ok = d.textScore(); !ok {
			return Value{}, false
		}
		if math.IsNaN(score) {
			return Value{}, false
		}
		members[i] = ZMember{Member: m, Score: score}
	}
	return Value{Kind: ZSet, Members: members}, true
}

// textScore reads the score of an RDB_TYPE_ZSET member: a 1-byte length and
// that much ASCII, or 253, 254, 255 for NaN, +inf, -inf.
func (d *decoder) textScore() (float64, bool) {
	c, ok := d.readByte()
	if !ok {
		return 0, false
	}
	switch c {
	case 253:
		return math.NaN(), true
	case 254:
		return math.Inf(1), true
	case 255:
		return math.Inf(-1), true
	}
	b, ok := d.take(uint64(c))
	if !ok {
		return 0, false
	}
	return parseScore(b)
}

// parseScore parses a score written as text; NaN is no score.
func parseScore(b []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	// Out of range parses to ±Inf, as strtod gives it.
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, !math.IsNaN(f)
}

func (d *decoder) intset() (Value, bool) {
	blob, ok := d.str()
	if !ok || len(blob) < 8 {
		return Value{}, false
	}
	width := binary.LittleEndian.Uint32(blob)
	count := uint64(binary.LittleEndian.Uint32(blob[4:]))
	if (width != 2 && width != 4 && width != 8) || count == 0 || count*uint64(width) != uint64(len(blob)-8) {
		return Value{}, false
	}
	elems := make([][]byte, count)
	p := blob[8:]
	for i := range elems {
		var v int64
		switch width {
		case 2:
			v = int64(int16(binary.LittleEndian.Uint16(p)))
		case 4:
			v = int64(int32(binary.LittleEndian.Uint32(p)))
		default:
			v = int64(binary.LittleEndian.Uint64(p))
		}
		p = p[width:]
		elems[i] = d.nums.itoa(v)
	}
	return Value{Kind: Set, Elems: elems}, true
}

// list reads the ziplist, quicklist and quicklist2 encodings of a list.
// Quicklist nodes that are empty are skipped, as Redis does; a list that
// ends up empty is not.
func (d *decoder) list(t byte) ([][]byte, bool) {
	var elems [][]byte
	add := func(s []byte, n int64, isInt bool) { elems = append(elems, d.entryBytes(s, n, isInt)) }
	if t == typeListZiplist {
		blob, ok := d.str()
		if !ok || !parseZiplist(blob, add) {
			return nil, false
		}
		return elems, len(elems) > 0
	}
	nodes, ok := d.length()
	if !ok || nodes == 0 || nodes > d.left() {
		return nil, false
	}
	for range nodes {
		container := uint64(quicklistPacked)
		if t == typeListQuicklist2 {
			if container, ok = d.length(); !ok {
				return nil, false
			}
		}
		blob, ok := d.str()
		if !ok {
			return nil, false
		}
		switch {
		case container == quicklistPlain:
			elems = append(elems, blob)
		case container != quicklistPacked:
			return nil, false
		case t == typeListQuicklist:
			ok = parseZiplist(blob, add)
		default:
			ok = parseListpack(blob, add)
		}
		if !ok {
			return nil, false
		}
	}
	return elems, len(elems) > 0
}

// Quicklist2 node containers: one element as is, or a listpack of them.
const (
	quicklistPlain  = 1
	quicklistPacked = 2
)

// numArena holds the decimal text of decoded integers in shared chunks
// rather than one allocation each. Chunks start small, so that a lone
// integer does not pin a large one.
type numArena struct{ buf []byte }

func (a *numArena) itoa(v int64) []byte {
	const maxDigits = 20 // "-9223372036854775808"
	if cap(a.buf)-len(a.buf) < maxDigits {
		a.buf = make([]byte, 0, min(max(2*cap(a.buf), 32), 4096))
	}
	s := len(a.buf)
	a.buf = strconv.AppendInt(a.buf, v, 10)
	return a.buf[s:len(a.buf):len(a.buf)]
}

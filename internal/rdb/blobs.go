package rdb

import "encoding/binary"

// The compact encodings Redis serializes as one RDB string holding its
// in-memory layout: listpack (7.0 on), ziplist (3.2–6.2) and zipmap (before
// 2.6). Each parser walks the whole blob, checks every length against what
// is left of it and the header's totals against what it found, and hands
// each entry to f: a string (s, capacity capped), or an integer (n, isInt).

type entryFunc func(s []byte, n int64, isInt bool)

// blobStr returns b[p:p+n] with its capacity capped and the offset after it.
func blobStr(b []byte, p int, n uint64) ([]byte, int, bool) {
	if p > len(b) || n > uint64(len(b)-p) {
		return nil, 0, false
	}
	e := p + int(n)
	return b[p:e:e], e, true
}

// signExtend reads the low bits of u as a two's complement integer.
func signExtend(u uint64, bits uint) int64 {
	shift := 64 - bits
	return int64(u<<shift) >> shift
}

// leUint reads an n-byte little-endian unsigned integer.
func leUint(b []byte) uint64 {
	var u uint64
	for i := len(b) - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	return u
}

// Listpack: total bytes (uint32 LE), element count (uint16 LE, 65535 when
// unknown), the entries, then 0xFF. An entry is an encoding byte, its data,
// then its "backlen": the size of encoding and data, so the list can be
// walked backwards.
const listpackHeader = 6

func parseListpack(lp []byte, f entryFunc) bool {
	r, ok := newListpackReader(lp)
	if !ok {
		return false
	}
	for {
		s, n, isInt, more, ok := r.next()
		if !ok {
			return false
		}
		if !more {
			return true
		}
		f(s, n, isInt)
	}
}

// listpackReader walks a listpack one entry at a time, for the stream
// decoder, whose entries' meaning depends on the ones before them.
type listpackReader struct {
	lp    []byte
	p     int
	count int
	num   uint16
}

func newListpackReader(lp []byte) (listpackReader, bool) {
	if len(lp) < listpackHeader+1 || uint64(binary.LittleEndian.Uint32(lp)) != uint64(len(lp)) {
		return listpackReader{}, false
	}
	return listpackReader{lp: lp, p: listpackHeader, num: binary.LittleEndian.Uint16(lp[4:])}, true
}

// atEnd reports whether the next byte is the 0xFF terminator.
func (r *listpackReader) atEnd() bool { return r.p < len(r.lp) && r.lp[r.p] == 0xFF }

// next returns the next entry (more), or at the 0xFF terminator more=false
// with ok telling whether the listpack ended well: nothing after the 0xFF
// and a header count that is unknown or right.
func (r *listpackReader) next() (s []byte, n int64, isInt, more, ok bool) {
	lp, p := r.lp, r.p
	if p >= len(lp) {
		return nil, 0, false, false, false
	}
	c := lp[p]
	if c == 0xFF {
		return nil, 0, false, false, p == len(lp)-1 && (r.num == 0xFFFF || int(r.num) == r.count)
	}
	start := p
	isInt, ok = true, true
	size := 0 // integer data bytes after the encoding byte
	switch {
	case c&0x80 == 0: // 0xxxxxxx: 7-bit unsigned
		n = int64(c)
		p++
	case c&0xC0 == 0x80: // 10xxxxxx: string, 6-bit length
		isInt = false
		s, p, ok = blobStr(lp, p+1, uint64(c&0x3f))
	case c&0xE0 == 0xC0: // 110xxxxx xxxxxxxx: 13-bit signed
		if len(lp)-p < 2 {
			return nil, 0, false, false, false
		}
		n = signExtend(uint64(c&0x1f)<<8|uint64(lp[p+1]), 13)
		p += 2
	case c&0xF0 == 0xE0: // 1110xxxx xxxxxxxx: string, 12-bit length
		if len(lp)-p < 2 {
			return nil, 0, false, false, false
		}
		isInt = false
		s, p, ok = blobStr(lp, p+2, uint64(c&0x0f)<<8|uint64(lp[p+1]))
	case c == 0xF0: // string, 32-bit length
		if len(lp)-p < 5 {
			return nil, 0, false, false, false
		}
		isInt = false
		s, p, ok = blobStr(lp, p+5, uint64(binary.LittleEndian.Uint32(lp[p+1:])))
	case c == 0xF1:
		size = 2
	case c == 0xF2:
		size = 3
	case c == 0xF3:
		size = 4
	case c == 0xF4:
		size = 8
	default:
		return nil, 0, false, false, false
	}
	if size > 0 {
		if len(lp)-p-1 < size {
			return nil, 0, false, false, false
		}
		n = signExtend(leUint(lp[p+1:p+1+size]), uint(8*size))
		p += 1 + size
	}
	if !ok {
		return nil, 0, false, false, false
	}
	var want [5]byte
	bl := appendBacklen(want[:0], uint64(p-start))
	if len(lp)-p < len(bl) || string(lp[p:p+len(bl)]) != string(bl) {
		return nil, 0, false, false, false
	}
	r.p = p + len(bl)
	r.count++
	return s, n, isInt, true, true
}

// appendBacklen writes an entry's size the way listpack does: big-endian
// groups of 7 bits, every byte but the first with its top bit set, so that
// read from its last byte backwards it ends at the first byte with a clear
// top bit.
func appendBacklen(b []byte, l uint64) []byte {
	var groups int
	switch {
	case l <= 127:
		groups = 1
	case l < 16383:
		groups = 2
	case l < 2097151:
		groups = 3
	case l < 268435455:
		groups = 4
	default:
		groups = 5
	}
	for i := groups - 1; i >= 0; i-- {
		g := byte(l>>(7*uint(i))) & 127
		if i != groups-1 {
			g |= 128
		}
		b = append(b, g)
	}
	return b
}

// Ziplist: total bytes (uint32 LE), offset of the last entry (uint32 LE),
// entry count (uint16 LE, 65535 when unknown), the entries, then 0xFF. An
// entry is the size of the previous entry (1 byte, or 0xFE and 4 bytes LE),
// an encoding and its data.
const ziplistHeader = 10

func parseZiplist(zl []byte, f entryFunc) bool {
	if len(zl) < ziplistHeader+1 || uint64(binary.LittleEndian.Uint32(zl)) != uint64(len(zl)) {
		return false
	}
	tail := binary.LittleEndian.Uint32(zl[4:])
	num := binary.LittleEndian.Uint16(zl[8:])
	p, count := ziplistHeader, 0
	last, prevSize := ziplistHeader, uint64(0)
	for {
		if p >= len(zl) {
			return false
		}
		if zl[p] == 0xFF {
			break
		}
		start := p
		var prev uint64
		if zl[p] < 0xFE {
			prev = uint64(zl[p])
			p++
		} else {
			if len(zl)-p < 5 {
				return false
			}
			prev = uint64(binary.LittleEndian.Uint32(zl[p+1:]))
			p += 5
		}
		if prev != prevSize || p >= len(zl) {
			return false
		}
		c := zl[p]
		var (
			s     []byte
			n     int64
			isInt = true
			ok    = true
			size  int
		)
		switch {
		case c>>6 == 0: // 00xxxxxx: string, 6-bit length
			isInt = false
			s, p, ok = blobStr(zl, p+1, uint64(c&0x3f))
		case c>>6 == 1: // 01xxxxxx xxxxxxxx: string, 14-bit length (big-endian)
			if len(zl)-p < 2 {
				return false
			}
			isInt = false
			s, p, ok = blobStr(zl, p+2, uint64(c&0x3f)<<8|uint64(zl[p+1]))
		case c>>6 == 2: // 10______ + 4 bytes big-endian: string, 32-bit length
			if len(zl)-p < 5 {
				return false
			}
			isInt = false
			s, p, ok = blobStr(zl, p+5, uint64(binary.BigEndian.Uint32(zl[p+1:])))
		case c == 0xC0:
			size = 2
		case c == 0xD0:
			size = 4
		case c == 0xE0:
			size = 8
		case c == 0xF0:
			size = 3
		case c == 0xFE:
			size = 1
		case c >= 0xF1 && c <= 0xFD: // 1111xxxx: 0..12 in the encoding itself
			n = int64(c&0x0f) - 1
			p++
		default:
			return false
		}
		if size > 0 {
			if len(zl)-p-1 < size {
				return false
			}
			n = signExtend(leUint(zl[p+1:p+1+size]), uint(8*size))
			p += 1 + size
		}
		if !ok {
			return false
		}
		f(s, n, isInt)
		count++
		last, prevSize = start, uint64(p-start)
	}
	return p == len(zl)-1 && uint64(tail) == uint64(last) && (num == 0xFFFF || int(num) == count)
}

// Zipmap: a count byte (254 or more: unknown), then key and value pairs,
// then 0xFF. A length is 1 byte below 254, or 254 and 4 bytes LE; a value's
// length is followed by a byte counting the unused bytes after the value.
func parseZipmap(zm []byte, f func(s []byte)) bool {
	if len(zm) < 2 {
		return false
	}
	p, count := 1, 0
	zmLen := func() (uint64, bool) {
		if p >= len(zm) {
			return 0, false
		}
		switch c := zm[p]; {
		case c < 254:
			p++
			return uint64(c), true
		case c == 254 && len(zm)-p >= 5:
			p += 5
			return uint64(binary.LittleEndian.Uint32(zm[p-4:])), true
		}
		return 0, false
	}
	for {
		if p >= len(zm) {
			return false
		}
		if zm[p] == 0xFF {
			break
		}
		klen, ok := zmLen()
		if !ok {
			return false
		}
		var key, val []byte
		if key, p, ok = blobStr(zm, p, klen); !ok {
			return false
		}
		vlen, ok := zmLen()
		if !ok || p >= len(zm) {
			return false
		}
		free := uint64(zm[p])
		if val, p, ok = blobStr(zm, p+1, vlen); !ok {
			return false
		}
		if _, p, ok = blobStr(zm, p, free); !ok {
			return false
		}
		f(key)
		f(val)
		count++
	}
	return p == len(zm)-1 && (zm[0] >= 254 || int(zm[0]) == count)
}

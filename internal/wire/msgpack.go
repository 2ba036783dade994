package wire

// The MessagePack primitives every body is built from
// (https://github.com/msgpack/msgpack/blob/master/spec.md). Bodies are
// hand-encoded because the hot ones (a Get, a Put, a Result) must encode
// without reflection or allocation and decode without copying; the cold ones
// (handshake, info, errors) use the same primitives so that one set of rules
// — bounds checks, nil as default, extra fields skipped — covers every body.
// Tests check both directions against github.com/vmihailenco/msgpack/v5.

import (
	"encoding/binary"
	"fmt"
	"math"
)

// MessagePack format bytes.
const (
	mpPosFixintMax = 0x7f
	mpFixMap       = 0x80 // 0x80-0x8f
	mpFixArray     = 0x90 // 0x90-0x9f
	mpFixStr       = 0xa0 // 0xa0-0xbf
	mpNil          = 0xc0
	mpFalse        = 0xc2
	mpTrue         = 0xc3
	mpBin8         = 0xc4
	mpBin16        = 0xc5
	mpBin32        = 0xc6
	mpExt8         = 0xc7
	mpExt16        = 0xc8
	mpExt32        = 0xc9
	mpFloat32      = 0xca
	mpFloat64      = 0xcb
	mpUint8        = 0xcc
	mpUint16       = 0xcd
	mpUint32       = 0xce
	mpUint64       = 0xcf
	mpInt8         = 0xd0
	mpInt16        = 0xd1
	mpInt32        = 0xd2
	mpInt64        = 0xd3
	mpFixExt1      = 0xd4
	mpFixExt2      = 0xd5
	mpFixExt4      = 0xd6
	mpFixExt8      = 0xd7
	mpFixExt16     = 0xd8
	mpStr8         = 0xd9
	mpStr16        = 0xda
	mpStr32        = 0xdb
	mpArray16      = 0xdc
	mpArray32      = 0xdd
	mpMap16        = 0xde
	mpMap32        = 0xdf
	mpNegFixintMin = 0xe0 // 0xe0-0xff
)

// ---------------------------------------------------------------- encoding
//
// Encoders pick the shortest form. Lengths above 4 GiB cannot be expressed in
// MessagePack; they cannot occur either, since a frame's length field is 32
// bits, so the encoders treat them as programming errors and panic.

func appendArrayHeader(dst []byte, n int) []byte {
	switch {
	case n < 0:
		panic("wire: negative array length")
	case n < 16:
		return append(dst, mpFixArray|byte(n))
	case n <= math.MaxUint16:
		return append(dst, mpArray16, byte(n>>8), byte(n))
	}
	return appendLen32(dst, mpArray32, n)
}

func appendMapHeader(dst []byte, n int) []byte {
	switch {
	case n < 0:
		panic("wire: negative map length")
	case n < 16:
		return append(dst, mpFixMap|byte(n))
	case n <= math.MaxUint16:
		return append(dst, mpMap16, byte(n>>8), byte(n))
	}
	return appendLen32(dst, mpMap32, n)
}

func appendLen32(dst []byte, code byte, n int) []byte {
	if uint64(n) > math.MaxUint32 {
		panic("wire: length exceeds MessagePack's 32-bit limit")
	}
	return append(dst, code, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

func appendNil(dst []byte) []byte { return append(dst, mpNil) }

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, mpTrue)
	}
	return append(dst, mpFalse)
}

func appendUint(dst []byte, v uint64) []byte {
	switch {
	case v <= mpPosFixintMax:
		return append(dst, byte(v))
	case v <= math.MaxUint8:
		return append(dst, mpUint8, byte(v))
	case v <= math.MaxUint16:
		return append(dst, mpUint16, byte(v>>8), byte(v))
	case v <= math.MaxUint32:
		return append(dst, mpUint32, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return append(dst, mpUint64, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32),
		byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// appendInt encodes non-negative values as unsigned, as the spec recommends
// for the shortest form; decoders accept either family for either kind.
func appendInt(dst []byte, v int64) []byte {
	switch {
	case v >= 0:
		return appendUint(dst, uint64(v))
	case v >= -32:
		return append(dst, byte(v)) // negative fixint
	case v >= math.MinInt8:
		return append(dst, mpInt8, byte(v))
	case v >= math.MinInt16:
		return append(dst, mpInt16, byte(v>>8), byte(v))
	case v >= math.MinInt32:
		return append(dst, mpInt32, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return append(dst, mpInt64, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32),
		byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// appendStr encodes s as a MessagePack str (keys and text).
func appendStr(dst []byte, s string) []byte {
	n := len(s)
	switch {
	case n < 32:
		dst = append(dst, mpFixStr|byte(n))
	case n <= math.MaxUint8:
		dst = append(dst, mpStr8, byte(n))
	case n <= math.MaxUint16:
		dst = append(dst, mpStr16, byte(n>>8), byte(n))
	default:
		dst = appendLen32(dst, mpStr32, n)
	}
	return append(dst, s...)
}

// appendBytes encodes b as a MessagePack bin (opaque values), and a nil b as
// nil, so that "no value" and "empty value" survive the trip.
func appendBytes(dst []byte, b []byte) []byte {
	n := len(b)
	switch {
	case b == nil:
		return append(dst, mpNil)
	case n <= math.MaxUint8:
		dst = append(dst, mpBin8, byte(n))
	case n <= math.MaxUint16:
		dst = append(dst, mpBin16, byte(n>>8), byte(n))
	default:
		dst = appendLen32(dst, mpBin32, n)
	}
	return append(dst, b...)
}

// appendStringMap encodes m as a map of str to str, and an empty or nil m as
// nil (DESIGN: labels are nil when empty).
func appendStringMap(dst []byte, m map[string]string) []byte {
	if len(m) == 0 {
		return appendNil(dst)
	}
	dst = appendMapHeader(dst, len(m))
	for k, v := range m {
		dst = appendStr(dst, k)
		dst = appendStr(dst, v)
	}
	return dst
}

// ---------------------------------------------------------------- decoding

// decoder reads MessagePack values from a body. Every read checks the bytes
// it needs against what remains, and every declared length is checked the
// same way before anything is sized by it, so no input can make a decoder
// panic or allocate more than a small multiple of the body.
//
// Positional structs follow one rule (append-only field numbering): a struct
// is an array; fields a decoder does not know (appended by a newer peer) are
// skipped; missing optional trailing fields and nil fields take their zero
// value.
type decoder struct {
	b     []byte
	off   int
	body  string // the body being decoded, for error messages
	field string // the field being decoded, for error messages
}

func (d *decoder) remaining() int { return len(d.b) - d.off }

// fail builds an ErrMalformedBody error. It runs only on the error path,
// so its allocations do not count against the decoders' zero-allocation
// success path; it is kept out of line so it does not weigh on its callers.
//
//go:noinline
func (d *decoder) fail(format string, args ...any) error {
	where := d.body
	if d.field != "" {
		where += ": " + d.field
	}
	return fmt.Errorf("%w: %s: at byte %d: %s", ErrMalformedBody, where, d.off, fmt.Sprintf(format, args...))
}

func (d *decoder) truncated(need int) error {
	return d.fail("need %d bytes, %d remain", need, d.remaining())
}

func (d *decoder) wrongType(want string, c byte) error {
	d.off-- // report the offset of the offending type byte
	err := d.fail("expected %s, found %s", want, formatName(c))
	d.off++
	return err
}

func (d *decoder) readCode() (byte, error) {
	if d.off >= len(d.b) {
		return 0, d.truncated(1)
	}
	c := d.b[d.off]
	d.off++
	return c, nil
}

// take returns the next n bytes, capacity-limited so that a caller appending
// to them cannot overwrite the rest of the body.
func (d *decoder) take(n uint64) ([]byte, error) {
	if n > uint64(d.remaining()) {
		return nil, d.truncated(int(min(n, math.MaxInt32)))
	}
	end := d.off + int(n)
	p := d.b[d.off:end:end]
	d.off = end
	return p, nil
}

// readBE reads an n-byte (1, 2, 4 or 8) big-endian unsigned integer.
func (d *decoder) readBE(n int) (uint64, error) {
	p, err := d.take(uint64(n))
	if err != nil {
		return 0, err
	}
	switch n {
	case 1:
		return uint64(p[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(p)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(p)), nil
	}
	return binary.BigEndian.Uint64(p), nil
}

// consumeNil consumes a nil if one is next.
func (d *decoder) consumeNil() bool {
	if d.off < len(d.b) && d.b[d.off] == mpNil {
		d.off++
		return true
	}
	return false
}

// The readers below try the one-byte forms (fixarray, fixstr, fixint) first
// and fall back to a general function for the rest: most keys, statuses and
// field counts are one-byte forms, and skipping the general switch for them
// cuts the cost of decoding a Put by about a third.

// readArrayHeader reads an array header. Each element takes at least one
// byte, so a count larger than the remaining bytes is rejected before any
// caller sizes a slice by it.
func (d *decoder) readArrayHeader() (int, error) {
	if d.off < len(d.b) {
		if c := d.b[d.off]; c&0xf0 == mpFixArray && int(c&0x0f) < len(d.b)-d.off {
			d.off++
			return int(c & 0x0f), nil
		}
	}
	return d.readArrayHeaderSlow()
}

func (d *decoder) readArrayHeaderSlow() (int, error) {
	c, err := d.readCode()
	if err != nil {
		return 0, err
	}
	var n uint64
	switch {
	case c&0xf0 == mpFixArray:
		n = uint64(c & 0x0f)
	case c == mpArray16:
		n, err = d.readBE(2)
	case c == mpArray32:
		n, err = d.readBE(4)
	default:
		return 0, d.wrongType("array", c)
	}
	if err != nil {
		return 0, err
	}
	if n > uint64(d.remaining()) {
		return 0, d.fail("array of %d elements in %d remaining bytes", n, d.remaining())
	}
	return int(n), nil
}

// readMapHeader reads a map header; each entry takes at least two bytes.
func (d *decoder) readMapHeader() (int, error) {
	c, err := d.readCode()
	if err != nil {
		return 0, err
	}
	var n uint64
	switch {
	case c&0xf0 == mpFixMap:
		n = uint64(c & 0x0f)
	case c == mpMap16:
		n, err = d.readBE(2)
	case c == mpMap32:
		n, err = d.readBE(4)
	default:
		return 0, d.wrongType("map", c)
	}
	if err != nil {
		return 0, err
	}
	if n > uint64(d.remaining())/2 {
		return 0, d.fail("map of %d entries in %d remaining bytes", n, d.remaining())
	}
	return int(n), nil
}

// readUint reads a non-negative integer of at most limit, in any integer
// format. nil reads as 0.
func (d *decoder) readUint(limit uint64) (uint64, error) {
	if d.off < len(d.b) {
		if c := d.b[d.off]; c <= mpPosFixintMax && uint64(c) <= limit {
			d.off++
			return uint64(c), nil
		}
	}
	return d.readUintSlow(limit)
}

func (d *decoder) readUintSlow(limit uint64) (uint64, error) {
	c, err := d.readCode()
	if err != nil {
		return 0, err
	}
	var v uint64
	switch {
	case c <= mpPosFixintMax:
		v = uint64(c)
	case c == mpNil:
		return 0, nil
	case c == mpUint8, c == mpUint16, c == mpUint32, c == mpUint64:
		v, err = d.readBE(1 << (c - mpUint8))
	case c >= mpNegFixintMin, c == mpInt8, c == mpInt16, c == mpInt32, c == mpInt64:
		d.off--
		s, err := d.readInt()
		if err != nil {
			return 0, err
		}
		if s < 0 {
			return 0, d.fail("negative value %d for an unsigned field", s)
		}
		v = uint64(s)
	default:
		return 0, d.wrongType("integer", c)
	}
	if err != nil {
		return 0, err
	}
	if v > limit {
		return 0, d.fail("value %d exceeds %d", v, limit)
	}
	return v, nil
}

// readInt reads a signed 64-bit integer in any integer format. nil reads as 0.
func (d *decoder) readInt() (int64, error) {
	if d.off < len(d.b) {
		if c := d.b[d.off]; c <= mpPosFixintMax {
			d.off++
			return int64(c), nil
		}
	}
	return d.readIntSlow()
}

func (d *decoder) readIntSlow() (int64, error) {
	c, err := d.readCode()
	if err != nil {
		return 0, err
	}
	switch {
	case c <= mpPosFixintMax:
		return int64(c), nil
	case c >= mpNegFixintMin:
		return int64(int8(c)), nil
	case c == mpNil:
		return 0, nil
	case c == mpInt8:
		v, err := d.readBE(1)
		return int64(int8(v)), err
	case c == mpInt16:
		v, err := d.readBE(2)
		return int64(int16(v)), err
	case c == mpInt32:
		v, err := d.readBE(4)
		return int64(int32(v)), err
	case c == mpInt64:
		v, err := d.readBE(8)
		return int64(v), err
	case c == mpUint8, c == mpUint16, c == mpUint32, c == mpUint64:
		v, err := d.readBE(1 << (c - mpUint8))
		if err != nil {
			return 0, err
		}
		if v > math.MaxInt64 {
			return 0, d.fail("value %d overflows int64", v)
		}
		return int64(v), nil
	}
	return 0, d.wrongType("integer", c)
}

// readBool reads a bool. nil reads as false.
func (d *decoder) readBool() (bool, error) {
	c, err := d.readCode()
	if err != nil {
		return false, err
	}
	switch c {
	case mpTrue:
		return true, nil
	case mpFalse, mpNil:
		return false, nil
	}
	return false, d.wrongType("bool", c)
}

// readBytes reads a str or a bin and returns a view of the body: no copy.
// nil reads as a nil slice; an empty str or bin as an empty, non-nil one.
func (d *decoder) readBytes() ([]byte, error) {
	if d.off < len(d.b) {
		if c := d.b[d.off]; c&0xe0 == mpFixStr {
			start := d.off + 1
			end := start + int(c&0x1f)
			if end <= len(d.b) {
				d.off = end
				return d.b[start:end:end], nil
			}
		}
	}
	return d.readBytesSlow()
}

func (d *decoder) readBytesSlow() ([]byte, error) {
	c, err := d.readCode()
	if err != nil {
		return nil, err
	}
	var n uint64
	switch {
	case c == mpNil:
		return nil, nil
	case c&0xe0 == mpFixStr:
		n = uint64(c & 0x1f)
	case c == mpStr8, c == mpBin8:
		n, err = d.readBE(1)
	case c == mpStr16, c == mpBin16:
		n, err = d.readBE(2)
	case c == mpStr32, c == mpBin32:
		n, err = d.readBE(4)
	default:
		return nil, d.wrongType("str or bin", c)
	}
	if err != nil {
		return nil, err
	}
	return d.take(n)
}

// readString reads a str or bin into a new string (nil reads as "").
func (d *decoder) readString() (string, error) {
	b, err := d.readBytes()
	return string(b), err
}

// readStringMap reads a map of str to str. nil and an empty map read as nil.
func (d *decoder) readStringMap() (map[string]string, error) {
	if d.consumeNil() {
		return nil, nil
	}
	n, err := d.readMapHeader()
	if err != nil || n == 0 {
		return nil, err
	}
	// The hint is capped: n is bounded by the body size, but a map
	// preallocated for millions of claimed entries would still multiply
	// the body's size in memory before a single entry is read.
	m := make(map[string]string, min(n, 64))
	for range n {
		k, err := d.readString()
		if err != nil {
			return nil, err
		}
		v, err := d.readString()
		if err != nil {
			return nil, err
		}
		m[k] = v
	}
	return m, nil
}

// beginStruct reads the array header of a positional struct and checks that
// its required leading fields are present.
func (d *decoder) beginStruct(required int) (int, error) {
	d.field = ""
	n, err := d.readArrayHeader()
	if err != nil {
		return 0, err
	}
	if n < required {
		return 0, d.fail("%d fields, at least %d required", n, required)
	}
	return n, nil
}

// endStruct skips the fields of an n-field struct beyond the known ones:
// fields appended by a newer peer.
func (d *decoder) endStruct(n, known int) error {
	d.field = ""
	if n > known {
		return d.skip(n - known)
	}
	return nil
}

// finish rejects bytes after the body's single top-level value: they mean
// the sender's framing and encoding disagree.
func (d *decoder) finish() error {
	if d.off == len(d.b) {
		return nil
	}
	d.field = ""
	return d.fail("%d trailing bytes after the body", d.remaining())
}

// skip skips n values of any type. It is iterative, with a count of values
// still to skip, because recursion would let a body of nested one-element
// arrays exhaust the stack. Every pending value needs at least one byte, so
// the count is checked against the remaining bytes and stays bounded.
func (d *decoder) skip(n int) error {
	for pending := n; pending > 0; pending-- {
		if pending > d.remaining() {
			return d.fail("%d values to skip in %d remaining bytes", pending, d.remaining())
		}
		c := d.b[d.off]
		d.off++
		var (
			size  uint64 // payload bytes to skip
			elems uint64 // nested values to add
			err   error
		)
		switch {
		case c <= mpPosFixintMax, c >= mpNegFixintMin, c == mpNil, c == mpFalse, c == mpTrue:
		case c&0xf0 == mpFixMap:
			elems = 2 * uint64(c&0x0f)
		case c&0xf0 == mpFixArray:
			elems = uint64(c & 0x0f)
		case c&0xe0 == mpFixStr:
			size = uint64(c & 0x1f)
		case c == mpBin8, c == mpStr8:
			size, err = d.readBE(1)
		case c == mpBin16, c == mpStr16:
			size, err = d.readBE(2)
		case c == mpBin32, c == mpStr32:
			size, err = d.readBE(4)
		case c == mpExt8:
			size, err = d.readBE(1)
			size++ // the ext type byte
		case c == mpExt16:
			size, err = d.readBE(2)
			size++
		case c == mpExt32:
			size, err = d.readBE(4)
			size++
		case c == mpFloat32:
			size = 4
		case c == mpFloat64:
			size = 8
		case c == mpUint8, c == mpInt8:
			size = 1
		case c == mpUint16, c == mpInt16:
			size = 2
		case c == mpUint32, c == mpInt32:
			size = 4
		case c == mpUint64, c == mpInt64:
			size = 8
		case c >= mpFixExt1 && c <= mpFixExt16:
			size = 1 + 1<<(c-mpFixExt1)
		case c == mpArray16:
			elems, err = d.readBE(2)
		case c == mpArray32:
			elems, err = d.readBE(4)
		case c == mpMap16:
			elems, err = d.readBE(2)
			elems *= 2
		case c == mpMap32:
			elems, err = d.readBE(4)
			elems *= 2
		default: // 0xc1, the one byte MessagePack never uses
			return d.wrongType("a MessagePack value", c)
		}
		if err != nil {
			return err
		}
		if _, err := d.take(size); err != nil {
			return err
		}
		if elems > uint64(d.remaining()) {
			return d.fail("container of %d values in %d remaining bytes", elems, d.remaining())
		}
		pending += int(elems)
	}
	return nil
}

// formatName names the MessagePack type of a format byte, for messages.
func formatName(c byte) string {
	switch {
	case c <= mpPosFixintMax, c >= mpNegFixintMin, c >= mpUint8 && c <= mpInt64:
		return fmt.Sprintf("integer (%#02x)", c)
	case c&0xf0 == mpFixMap, c == mpMap16, c == mpMap32:
		return fmt.Sprintf("map (%#02x)", c)
	case c&0xf0 == mpFixArray, c == mpArray16, c == mpArray32:
		return fmt.Sprintf("array (%#02x)", c)
	case c&0xe0 == mpFixStr, c >= mpStr8 && c <= mpStr32:
		return fmt.Sprintf("str (%#02x)", c)
	case c >= mpBin8 && c <= mpBin32:
		return fmt.Sprintf("bin (%#02x)", c)
	case c == mpNil:
		return "nil"
	case c == mpFalse, c == mpTrue:
		return "bool"
	case c == mpFloat32, c == mpFloat64:
		return fmt.Sprintf("float (%#02x)", c)
	case c >= mpExt8 && c <= mpExt32, c >= mpFixExt1 && c <= mpFixExt16:
		return fmt.Sprintf("ext (%#02x)", c)
	}
	return fmt.Sprintf("invalid byte %#02x", c)
}

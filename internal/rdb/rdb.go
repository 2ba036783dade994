// Package rdb reads and writes the payloads of DUMP and RESTORE: one value in
// Redis's RDB object encoding, its RDB version and its CRC64.
//
// It owns the byte format only: Restore turns any payload Redis 7.0–7.4
// DUMPs for a string, list, set, sorted set, hash or stream (every in-memory
// encoding Redis serializes them with, LZF-compressed or not, the older
// ziplist, zipmap and quicklist encodings, and the stream encodings of Redis
// 5 to 7.4) into a Value, and rejects everything else without panicking;
// Dump writes a Value in the plainest encodings every Redis since 4.0 loads,
// and a stream in Redis 7.0's (RDB_TYPE_STREAM_LISTPACKS_2, which Redis 7.0
// and later load). Stream payloads are checked as deeply as Redis's
// sanitize-dump-payload does, and more: entries in order, counts that agree,
// every pending entry owned by exactly one consumer. What a key holds, its
// TTL and what to do with duplicate members are the caller's.
package rdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Kind is the type of a Value.
type Kind uint8

const (
	String Kind = iota
	List
	Set
	ZSet
	Hash
	Stream
)

func (k Kind) String() string {
	switch k {
	case String:
		return "string"
	case List:
		return "list"
	case Set:
		return "set"
	case ZSet:
		return "zset"
	case Hash:
		return "hash"
	case Stream:
		return "stream"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ZMember is one member of a sorted set.
type ZMember struct {
	Member []byte
	Score  float64
}

// Value is one decoded value. Only the field of its Kind is set.
//
// The byte slices Restore returns never alias its payload. Several of them
// may share one backing array, but each has its capacity capped at its
// length, so appending to one never overwrites another. In a stream, the
// entries of one node may share their field names' slices, and a pending
// entry's Consumer is its consumer's Name: they are not to be written in
// place.
type Value struct {
	Kind    Kind
	Str     []byte       // String
	Elems   [][]byte     // List: in order; Set: the members
	Pairs   [][]byte     // Hash: field, value, field, value, …
	Members []ZMember    // ZSet
	Stream  *StreamValue // Stream
}

// Version is the RDB version Dump writes (Redis 7.0's). Restore accepts
// payloads of versions 1..MaxVersion.
const Version = 10

// MaxVersion is the newest RDB version Restore accepts (Redis 7.4's).
const MaxVersion = 12

// The messages are Redis's own replies to a RESTORE it refuses, so that a
// caller can answer with them as they are.
var (
	// ErrChecksum: the footer is missing, its version is 0 or above
	// MaxVersion, or the CRC does not match (a CRC of 0 too: the "checksum
	// disabled" of an RDB file does not apply to DUMP payloads in Redis).
	ErrChecksum = errors.New("DUMP payload version or checksum are wrong")
	// ErrFormat: anything the object parser does not accept.
	ErrFormat = errors.New("Bad data format") //nolint:staticcheck // ST1005: Redis's reply, verbatim
)

// RDB object type bytes (Redis's rdb.h).
const (
	typeString           = 0
	typeList             = 1
	typeSet              = 2
	typeZSet             = 3
	typeHash             = 4
	typeZSet2            = 5
	typeHashZipmap       = 9
	typeListZiplist      = 10
	typeSetIntset        = 11
	typeZSetZiplist      = 12
	typeHashZiplist      = 13
	typeListQuicklist    = 14
	typeHashListpack     = 16
	typeZSetListpack     = 17
	typeListQuicklist2   = 18
	typeStreamListpacks  = 15
	typeStreamListpacks2 = 19
	typeSetListpack      = 20
	typeStreamListpacks3 = 21
)

// footerLen is the 2-byte version and the 8-byte CRC after the object.
const footerLen = 10

// Dump encodes v as a DUMP payload. It panics on a Kind it does not know,
// on a Hash with an odd number of Pairs and on a Stream Restore would
// refuse (entries out of order or without fields, a pending entry of no
// consumer, …): all are the caller's bugs. A stream consumer's ActiveMs is
// not written (Redis 7.0's encoding has no room for it): Restore gives back
// SeenMs for it.
func Dump(v Value) []byte {
	b := make([]byte, 0, dumpSize(v))
	switch v.Kind {
	case String:
		b = append(b, typeString)
		b = appendString(b, v.Str)
	case List, Set:
		if v.Kind == List {
			b = append(b, typeList)
		} else {
			b = append(b, typeSet)
		}
		b = appendLen(b, uint64(len(v.Elems)))
		for _, e := range v.Elems {
			b = appendString(b, e)
		}
	case Hash:
		if len(v.Pairs)%2 != 0 {
			panic("rdb: Dump of a hash with an odd number of Pairs")
		}
		b = append(b, typeHash)
		b = appendLen(b, uint64(len(v.Pairs)/2))
		for _, e := range v.Pairs {
			b = appendString(b, e)
		}
	case ZSet:
		b = append(b, typeZSet2)
		b = appendLen(b, uint64(len(v.Members)))
		for _, m := range v.Members {
			b = appendString(b, m.Member)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(m.Score))
		}
	case Stream:
		b = appendStream(b, v.Stream)
	default:
		panic(fmt.Sprintf("rdb: Dump of an unknown %v", v.Kind))
	}
	return Seal(b, Version)
}

// Seal appends the footer RESTORE checks to an RDB object: the RDB version
// and the CRC64 of everything before the CRC. (Dump seals what it writes;
// tests seal hand-built objects, hostile ones included.)
func Seal(object []byte, version uint16) []byte {
	b := binary.LittleEndian.AppendUint16(object, version)
	return binary.LittleEndian.AppendUint64(b, crc64(0, b))
}

// dumpSize is an upper bound of Dump's output, so that it allocates once.
func dumpSize(v Value) int {
	n := 1 + 9 + footerLen
	if v.Kind == Stream {
		n += streamDumpSize(v.Stream)
	}
	for _, e := range v.Elems {
		n += 9 + len(e)
	}
	for _, e := range v.Pairs {
		n += 9 + len(e)
	}
	for _, m := range v.Members {
		n += 9 + len(m.Member) + 8
	}
	return n + 9 + len(v.Str)
}

// appendLen writes an RDB length: 6-bit, 14-bit, or 32-/64-bit big-endian.
func appendLen(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, 0x40|byte(n>>8), byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0x80), uint32(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, 0x81), n)
	}
}

// appendString writes an RDB string the way Redis's rdbSaveRawString does
// without compression: a short string that is an integer's canonical decimal
// form in int32 range goes as that integer, which keeps the DUMP of such a
// string byte-identical to Redis's.
func appendString(b, s []byte) []byte {
	if v, ok := canonicalInt32(s); ok {
		switch {
		case v >= math.MinInt8 && v <= math.MaxInt8:
			return append(b, 0xC0, byte(v))
		case v >= math.MinInt16 && v <= math.MaxInt16:
			return binary.LittleEndian.AppendUint16(append(b, 0xC1), uint16(v))
		default:
			return binary.LittleEndian.AppendUint32(append(b, 0xC2), uint32(v))
		}
	}
	b = appendLen(b, uint64(len(s)))
	return append(b, s...)
}

// canonicalInt32 reports whether s is exactly how Redis prints an int32.
func canonicalInt32(s []byte) (int64, bool) {
	v, ok := canonicalInt64(s)
	return v, ok && v >= math.MinInt32 && v <= math.MaxInt32
}

// canonicalInt64 reports whether s is exactly how Redis prints an int64
// (what its string2ll accepts): no sign but '-', no leading zero, no "-0".
func canonicalInt64(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	neg := s[0] == '-'
	d := s
	if neg {
		d = s[1:]
	}
	// 19 digits cannot overflow a uint64.
	if len(d) == 0 || len(d) > 19 || (d[0] == '0' && (len(d) > 1 || neg)) {
		return 0, false
	}
	var u uint64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return int64(-u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// Restore decodes a DUMP payload. Errors are ErrChecksum or ErrFormat
// (errors.Is); it never panics, whatever the input.
//
// A stream of RDB_TYPE_STREAM_LISTPACKS (Redis 5 and 6) gets what that
// encoding lacks as Redis 7.0 fills it in: EntriesAdded its length,
// MaxDeletedID 0-0, FirstID its first entry's ID, or for an empty stream
// 2^64-1-2^64-1 (what Redis 7.0's XINFO then shows), and each group's
// EntriesRead Redis's estimate from its LastID (-1 when it cannot tell).
func Restore(payload []byte) (Value, error) {
	end, ok := checkFooter(payload)
	if !ok {
		return Value{}, ErrChecksum
	}
	// One copy up front lets every raw string be a sub-slice of it rather
	// than an allocation of its own, and frees the caller's buffer.
	d := decoder{b: append([]byte(nil), payload[:end]...)}
	v, ok := d.object()
	if !ok || d.off != len(d.b) {
		return Value{}, ErrFormat
	}
	return v, nil
}

// checkFooter checks a payload's version and CRC and returns where its
// content ends.
func checkFooter(payload []byte) (end int, ok bool) {
	if len(payload) < footerLen {
		return 0, false
	}
	end = len(payload) - footerLen
	ver := binary.LittleEndian.Uint16(payload[end:])
	if ver == 0 || ver > MaxVersion {
		return 0, false
	}
	return end, binary.LittleEndian.Uint64(payload[end+2:]) == crc64(0, payload[:end+2])
}

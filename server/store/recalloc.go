package store

import (
	"encoding/binary"
	"unsafe"
)

// A string record and its key and value bytes in one allocation (issue
// #17, D65): the record struct followed by a byte tail sized so that the
// whole is one of Go's size classes, so it costs no more than the record
// and a separate key-and-value allocation did, with one malloc instead of
// two and the key bytes next to the record a lookup has just read.
//
// The tail sizes: 32 (the record, D89) + tail is a size class for each of
// them (48 … 1024 bytes; TestInlineTailsFillSizeClasses). Past 512 bytes
// the allocator puts an 8-byte header before an object with pointers, so
// those tails are 8 bytes short of the class. Larger keys and values get
// the record and one separate allocation, joined all the same.
type recordWith[T any] struct {
	rec  Record
	tail T
}

const maxInlineTail = 984

// newStringRecord returns a record whose Key and Value are copies of key
// and value, joined (Value is non-nil, its capacity its length: an append
// never writes into a neighbour), followed by expiresAt when it is not 0
// (the record's ExpiresAt). A record the store keeps is made here unless
// its value is too big to copy.
func newStringRecord(key string, value []byte, expiresAt int64) *Record {
	n := len(key) + len(value)
	if expiresAt != 0 {
		n += 8 // the expiry's room, after the value
	}
	var r *Record
	var buf []byte
	switch {
	case n <= 16:
		r, buf = inline[[16]byte]()
	case n <= 32:
		r, buf = inline[[32]byte]()
	case n <= 48:
		r, buf = inline[[48]byte]()
	case n <= 64:
		r, buf = inline[[64]byte]()
	case n <= 80:
		r, buf = inline[[80]byte]()
	case n <= 96:
		r, buf = inline[[96]byte]()
	case n <= 112:
		r, buf = inline[[112]byte]()
	case n <= 128:
		r, buf = inline[[128]byte]()
	case n <= 144:
		r, buf = inline[[144]byte]()
	case n <= 160:
		r, buf = inline[[160]byte]()
	case n <= 176:
		r, buf = inline[[176]byte]()
	case n <= 192:
		r, buf = inline[[192]byte]()
	case n <= 208:
		r, buf = inline[[208]byte]()
	case n <= 224:
		r, buf = inline[[224]byte]()
	case n <= 256:
		r, buf = inline[[256]byte]()
	case n <= 288:
		r, buf = inline[[288]byte]()
	case n <= 320:
		r, buf = inline[[320]byte]()
	case n <= 352:
		r, buf = inline[[352]byte]()
	case n <= 384:
		r, buf = inline[[384]byte]()
	case n <= 416:
		r, buf = inline[[416]byte]()
	case n <= 448:
		r, buf = inline[[448]byte]()
	case n <= 480:
		r, buf = inline[[480]byte]()
	case n <= 536:
		r, buf = inline[[536]byte]()
	case n <= 600:
		r, buf = inline[[600]byte]()
	case n <= 664:
		r, buf = inline[[664]byte]()
	case n <= 728:
		r, buf = inline[[728]byte]()
	case n <= 856:
		r, buf = inline[[856]byte]()
	case n <= maxInlineTail:
		r, buf = inline[[maxInlineTail]byte]()
	default:
		r, buf = &Record{}, make([]byte, n)
	}
	k := copy(buf, key)
	copy(buf[k:], value)
	r.vlen, r.form = valueLen(len(value)), formValue
	if len(key) > maxJoinedKey {
		r.SetJoined(buf[:k+len(value)], k, true)
		r.SetExpiresAt(expiresAt)
		return r
	}
	r.klen = uint16(k)
	if expiresAt != 0 {
		binary.LittleEndian.PutUint64(buf[k+len(value):], uint64(expiresAt))
		r.form |= formExpiry
	}
	if n > 0 {
		r.p = unsafe.Pointer(&buf[0]) // joined: the key's bytes, then the value's, then the expiry's
	}
	return r
}

// inline allocates a record with a tail of T's size and returns the record
// and the tail as bytes.
func inline[T any]() (*Record, []byte) {
	w := new(recordWith[T])
	return &w.rec, unsafe.Slice((*byte)(unsafe.Pointer(&w.tail)), unsafe.Sizeof(w.tail))
}

package store

import "unsafe"

// A string record and its key and value bytes in one allocation (issue
// #17, D65): the record struct followed by a byte tail sized so that the
// whole is one of Go's size classes, so it costs no more than the record
// and a separate key-and-value allocation did, with one malloc instead of
// two and the key bytes next to the record a lookup has just read.
//
// The tail sizes: 64 (the record, D75) + tail is a size class for each of
// them (80 … 1024 bytes; TestInlineTailsFillSizeClasses). Past 512 bytes
// the allocator puts an 8-byte header before an object with pointers, so
// those tails are 8 bytes short of the class. Larger keys and values get the record and one
// separate allocation.
type recordWith[T any] struct {
	rec  Record
	tail T
}

const maxInlineTail = 952

// newStringRecord returns a record whose Key and Value are copies of key
// and value (Value is non-nil, its capacity its length: an append never
// writes into a neighbour).
func newStringRecord(key string, value []byte) *Record {
	n := len(key) + len(value)
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
	case n <= 504:
		r, buf = inline[[504]byte]()
	case n <= 568:
		r, buf = inline[[568]byte]()
	case n <= 632:
		r, buf = inline[[632]byte]()
	case n <= 696:
		r, buf = inline[[696]byte]()
	case n <= 824:
		r, buf = inline[[824]byte]()
	case n <= maxInlineTail:
		r, buf = inline[[maxInlineTail]byte]()
	default:
		r, buf = &Record{}, make([]byte, n)
	}
	k := copy(buf, key)
	copy(buf[k:], value)
	if k > 0 {
		r.SetKey(unsafe.String(&buf[0], k))
	}
	r.SetValue(buf[k:n:n])
	return r
}

// inline allocates a record with a tail of T's size and returns the record
// and the tail as bytes.
func inline[T any]() (*Record, []byte) {
	w := new(recordWith[T])
	return &w.rec, unsafe.Slice((*byte)(unsafe.Pointer(&w.tail)), unsafe.Sizeof(w.tail))
}

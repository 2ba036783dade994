package store

import "unsafe"

// A string record and its key and value bytes in one allocation (issue
// #17, D65): the record struct followed by a byte tail sized so that the
// whole is one of Go's size classes, so it costs no more than the record
// and a separate key-and-value allocation did, with one malloc instead of
// two and the key bytes next to the record a lookup has just read.
//
// The tail sizes: 48 (the record, D84) + tail is a size class for each of
// them (64 … 1024 bytes; TestInlineTailsFillSizeClasses). Past 512 bytes
// the allocator puts an 8-byte header before an object with pointers, so
// those tails are 8 bytes short of the class. Larger keys and values get
// the record and one separate allocation, joined all the same.
type recordWith[T any] struct {
	rec  Record
	tail T
}

const maxInlineTail = 968

// newStringRecord returns a record whose Key and Value are copies of key
// and value, joined (Value is non-nil, its capacity its length: an append
// never writes into a neighbour). A record the store keeps is made here
// unless its value is too big to copy.
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
	case n <= 208:
		r, buf = inline[[208]byte]()
	case n <= 240:
		r, buf = inline[[240]byte]()
	case n <= 272:
		r, buf = inline[[272]byte]()
	case n <= 304:
		r, buf = inline[[304]byte]()
	case n <= 336:
		r, buf = inline[[336]byte]()
	case n <= 368:
		r, buf = inline[[368]byte]()
	case n <= 400:
		r, buf = inline[[400]byte]()
	case n <= 432:
		r, buf = inline[[432]byte]()
	case n <= 464:
		r, buf = inline[[464]byte]()
	case n <= 520:
		r, buf = inline[[520]byte]()
	case n <= 584:
		r, buf = inline[[584]byte]()
	case n <= 648:
		r, buf = inline[[648]byte]()
	case n <= 712:
		r, buf = inline[[712]byte]()
	case n <= 840:
		r, buf = inline[[840]byte]()
	case n <= maxInlineTail:
		r, buf = inline[[maxInlineTail]byte]()
	default:
		r, buf = &Record{}, make([]byte, n)
	}
	k := copy(buf, key)
	copy(buf[k:], value)
	r.klen, r.vlen, r.form = keyLen32(k), valueLen(len(value)), formValue
	if n > 0 {
		r.p = unsafe.Pointer(&buf[0]) // joined: the key's bytes, then the value's
	}
	return r
}

// inline allocates a record with a tail of T's size and returns the record
// and the tail as bytes.
func inline[T any]() (*Record, []byte) {
	w := new(recordWith[T])
	return &w.rec, unsafe.Slice((*byte)(unsafe.Pointer(&w.tail)), unsafe.Sizeof(w.tail))
}

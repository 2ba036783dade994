package store

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// ValueKind is the kind of value a record holds. Part of the record's wire
// form: append only.
type ValueKind uint8

const (
	KindString ValueKind = iota // plain bytes (also counters)
	KindHash
	KindList
	KindSet
	KindZSet
	KindStream

	kindEnd
	// kindAny marks a command valid on a key of any kind (TYPE, …).
	kindAny ValueKind = 0xff
)

var kindNames = [...]string{KindString: "string", KindHash: "hash", KindList: "list", KindSet: "set", KindZSet: "zset", KindStream: "stream"}

func (k ValueKind) String() string {
	if k < kindEnd {
		return kindNames[k]
	}
	return fmt.Sprintf("ValueKind(%d)", uint8(k))
}

// collection is the node-local materialized form of a collection record.
// Implementations keep size() current incrementally, and encode() returns a
// canonical (order-independent content → identical bytes) encoding, so that
// digests of equal collections are equal.
type collection interface {
	kind() ValueKind
	size() int64     // accounted bytes of the elements (in memory)
	itemSize() int64 // item bytes: the elements as serialised (itemsize.go)
	count() int      // elements; a collection that reaches 0 is deleted
	encode() []byte
}

func newCollection(k ValueKind) collection {
	switch k {
	case KindHash:
		return newHash()
	case KindList:
		return newList()
	case KindSet:
		return newSet()
	case KindZSet:
		return newZSet()
	case KindStream:
		return newStream()
	}
	return nil
}

// decodeCollection rebuilds a collection from its canonical encoding.
func decodeCollection(k ValueKind, data []byte) (collection, error) {
	c := newCollection(k)
	if c == nil {
		return nil, fmt.Errorf("store: %v is not a collection kind", k)
	}
	dec, ok := c.(interface{ decode([]byte) error })
	if !ok {
		return nil, fmt.Errorf("store: %v cannot be decoded", k)
	}
	if err := dec.decode(data); err != nil {
		return nil, fmt.Errorf("store: decoding %v: %w", k, err)
	}
	return c, nil
}

func mustMarshal(v any) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("store: encoding a collection cannot fail: %v", err))
	}
	return b
}

package hybrid

import (
	"encoding/binary"
	"errors"
)

// envelope is what both tiers store under an entry's key: the serialized
// value plus the metadata every read needs to judge it without another
// round trip. All times are Unix nanoseconds.
//
// Layout (version 1), big-endian:
//
//	byte     0xE1 (magic + version)
//	int64 ×5 created, expires, local, physical, observed
//	uvarint  tag count, then per tag: uvarint length, bytes
//	rest     payload (the serializer's bytes)
type envelope struct {
	// created is when production of the value started (factory start or
	// Set call). A tag invalidated at or after it makes the entry a miss.
	created int64
	// expires is the end of the entry's logical life (its L2 expiry); the
	// eager-refresh point is a fraction of created→expires.
	expires int64
	// local is the end of logical life in the tier holding this copy: equal
	// to expires in L2, ≤ expires in L1 (LocalCacheExpiration), and past it
	// only for a fail-safe value being served for its throttle window.
	local int64
	// physical is when the tier drops the copy (its TTL): local plus the
	// fail-safe extension, and in L1 never past L2's physical.
	physical int64
	// observed is, in L1, when this instance read or produced the value
	// (a local clear-all drops copies observed before it); 0 in L2.
	observed int64
	tags     []string
	payload  []byte
}

const (
	envMagic      = 0xE1
	envHeaderSize = 1 + 5*8
)

var errBadEnvelope = errors.New("hybrid: malformed cache envelope")

func (e *envelope) encode() []byte {
	n := envHeaderSize + binary.MaxVarintLen64 + len(e.payload)
	for _, t := range e.tags {
		n += binary.MaxVarintLen64 + len(t)
	}
	b := make([]byte, envHeaderSize, n)
	b[0] = envMagic
	binary.BigEndian.PutUint64(b[1:], uint64(e.created))
	binary.BigEndian.PutUint64(b[9:], uint64(e.expires))
	binary.BigEndian.PutUint64(b[17:], uint64(e.local))
	binary.BigEndian.PutUint64(b[25:], uint64(e.physical))
	binary.BigEndian.PutUint64(b[33:], uint64(e.observed))
	b = binary.AppendUvarint(b, uint64(len(e.tags)))
	for _, t := range e.tags {
		b = binary.AppendUvarint(b, uint64(len(t)))
		b = append(b, t...)
	}
	return append(b, e.payload...)
}

// decodeEnvelope parses b. The payload aliases b; tags are copied.
func decodeEnvelope(b []byte) (envelope, error) {
	var e envelope
	if len(b) < envHeaderSize+1 || b[0] != envMagic {
		return e, errBadEnvelope
	}
	e.created = int64(binary.BigEndian.Uint64(b[1:]))
	e.expires = int64(binary.BigEndian.Uint64(b[9:]))
	e.local = int64(binary.BigEndian.Uint64(b[17:]))
	e.physical = int64(binary.BigEndian.Uint64(b[25:]))
	e.observed = int64(binary.BigEndian.Uint64(b[33:]))
	rest := b[envHeaderSize:]
	count, n := binary.Uvarint(rest)
	if n <= 0 || count > uint64(len(rest)) {
		return e, errBadEnvelope
	}
	rest = rest[n:]
	if count > 0 {
		e.tags = make([]string, 0, count)
	}
	for range count {
		l, n := binary.Uvarint(rest)
		if n <= 0 || l > uint64(len(rest)-n) {
			return envelope{}, errBadEnvelope
		}
		e.tags = append(e.tags, string(rest[n:n+int(l)]))
		rest = rest[n+int(l):]
	}
	e.payload = rest
	return e, nil
}

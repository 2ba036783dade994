package store

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// Digest is an order-independent fingerprint of a segment's live content:
// the wrapping sum of a 64-bit hash of every live record (key, value,
// version, expiry) and their count. Two nodes holding the same live records
// have equal digests whatever order they applied them in; the migration
// proof (R-MIG-2/3) compares digests, not revisions.
type Digest struct {
	Sum   uint64
	Count int
}

// Digest returns the segment's content digest.
func (g *Segment) Digest() Digest {
	return g.DigestAt(g.store.clock.NowNano())
}

// DigestAt is the digest of the records live at now (Unix ns): two copies
// compared at one instant agree even when a key expires between their
// reads (the migration proof, R-MIG-2).
func (g *Segment) DigestAt(now int64) Digest {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var d Digest
	var h xxhash.Digest
	var buf [24]byte
	for r := range g.items.all() {
		if !r.liveAt(now) {
			continue
		}
		d.Sum += recordHash(&h, &buf, r)
		d.Count++
	}
	return d
}

func recordHash(h *xxhash.Digest, buf *[24]byte, r *Record) uint64 {
	h.Reset()
	binary.LittleEndian.PutUint64(buf[0:], uint64(len(r.Key())))
	binary.LittleEndian.PutUint64(buf[8:], r.Version())
	binary.LittleEndian.PutUint64(buf[16:], uint64(r.ExpiresAt()))
	_, _ = h.Write(buf[:])
	_, _ = h.WriteString(r.Key())
	switch {
	case r.coll() != nil:
		_, _ = h.Write([]byte{byte(r.Kind)})
		_, _ = h.Write(r.coll().encode())
	case r.Kind != KindString:
		// An exported collection (a snapshot's record) carries its
		// encoding as the value: it hashes as the live collection does.
		_, _ = h.Write([]byte{byte(r.Kind)})
		_, _ = h.Write(r.Value())
	default:
		_, _ = h.Write(r.Value())
	}
	return h.Sum64()
}

// SnapshotDigest is the digest a segment holding exactly snap's live records
// would have now (Segment.Digest of the installed snapshot).
func (s *Store) SnapshotDigest(snap *Snapshot) Digest {
	now := s.clock.NowNano()
	var d Digest
	var h xxhash.Digest
	var buf [24]byte
	for i := range snap.Records {
		r := &snap.Records[i]
		if !r.liveAt(now) {
			continue
		}
		d.Sum += recordHash(&h, &buf, r)
		d.Count++
	}
	return d
}

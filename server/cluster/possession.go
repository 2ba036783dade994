package cluster

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zaris-io/zaris/internal/mpsafe"

	"github.com/zaris-io/zaris/server/cluster/failover"
)

// PossessionQuery asks a node about one partition's segments.
type PossessionQuery struct {
	Identity string `msgpack:"i"`
	First    int    `msgpack:"f"`
	Last     int    `msgpack:"l"`
	// DigestAt asks for each segment's content digest over the records
	// live at this instant (Unix ns; a migration's proof check); 0 = none.
	DigestAt int64 `msgpack:"d,omitempty"`
}

// SegmentHolding is what a node holds of one segment: its applied revision
// and the history that copy follows (the owner and ownership generation it
// was replicated from; empty for data the node wrote as owner or never
// received).
type SegmentHolding struct {
	Segment    int    `msgpack:"s"`
	Revision   uint64 `msgpack:"r"`
	Owner      NodeID `msgpack:"o"`
	Generation uint64 `msgpack:"g"`
	// Digest and Count: the content digest asked by DigestAt.
	Digest uint64 `msgpack:"dg,omitempty"`
	Count  int    `msgpack:"c,omitempty"`
}

// ReplicaProgress is, on an owner, how one copy keeps up.
type ReplicaProgress struct {
	Node      NodeID `msgpack:"n"`
	Streaming bool   `msgpack:"s"`
	Lag       uint64 `msgpack:"l"` // revisions behind, over the partition
	// Held: the copy kept later revisions of this owner's lease than the
	// owner holds (it restarted and lost them) and the owner is not
	// certified: restart recovery must pull them from it (R-REP-6).
	Held bool `msgpack:"h,omitempty"`
}

// PossessionReport answers a PossessionQuery (R-REP-5): the live keys held
// over the partition's segments, each segment's holding, and — when the
// node ships the partition — its copies' progress.
type PossessionReport struct {
	HeldKeys int64 `msgpack:"k"`
	// HeldBytes: the accounted bytes of those keys.
	HeldBytes int64             `msgpack:"b,omitempty"`
	Segments  []SegmentHolding  `msgpack:"h"`
	Replicas  []ReplicaProgress `msgpack:"p"`
}

// SyncedSegments counts the segments whose copy follows owner's lease at
// generation: the copy is a prefix of the owner's history (R-REP-5's
// "synced", availability first).
func (r PossessionReport) SyncedSegments(owner NodeID, generation uint64) int {
	n := 0
	for _, h := range r.Segments {
		if h.Owner == owner && h.Generation == generation {
			n++
		}
	}
	return n
}

// LeaseRevisions is the report's holding per segment as failover compares
// copies: the applied revision, and whether the copy follows owner's lease
// at generation (only then do its revisions compare with another copy's).
func (r PossessionReport) LeaseRevisions(owner NodeID, generation uint64) []failover.SegmentRevision {
	out := make([]failover.SegmentRevision, 0, len(r.Segments))
	for _, h := range r.Segments {
		out = append(out, failover.SegmentRevision{Segment: h.Segment, Revision: h.Revision,
			FollowsLease: h.Owner == owner && h.Generation == generation})
	}
	return out
}

// maxPossession bounds a report's encoding (16384 segments at most).
const maxPossession = 4 << 20

// servePossession answers one PeerPossession connection: a 4-byte
// big-endian length and a msgpack query, answered the same way.
func servePossession(c net.Conn, answer func(PossessionQuery) PossessionReport) {
	_ = c.SetDeadline(time.Now().Add(peerHeaderTimeout))
	var q PossessionQuery
	if err := readLenPrefixed(c, &q, 1<<16); err != nil {
		return
	}
	var rep PossessionReport
	if answer != nil {
		rep = answer(q)
	}
	_ = writeLenPrefixed(c, &rep)
}

// queryPossession asks the node at peer target addr ("id@host:port") what
// it holds of p. Only that node answers: a node that took over the address
// refuses, and its empty holdings are never taken for the old node's.
func (m *PeerMux) queryPossession(ctx context.Context, addr string, p *Partition) (PossessionReport, error) {
	return m.queryPossessionQ(ctx, addr, PossessionQuery{Identity: p.Identity, First: p.FirstSegment, Last: p.LastSegment})
}

func (m *PeerMux) queryPossessionQ(ctx context.Context, addr string, q PossessionQuery) (PossessionReport, error) {
	var rep PossessionReport
	err := m.roundTrip(ctx, addr, PeerPossession, &q, &rep)
	return rep, err
}

// roundTrip sends one length-prefixed msgpack request over a new peer
// connection of protocol proto to the node at addr and reads its answer
// into rep (bounded by maxPossession), within ctx's deadline.
func (m *PeerMux) roundTrip(ctx context.Context, addr string, proto byte, q, rep any) error {
	c, err := m.Dial(ctx, addr, proto)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if err := writeLenPrefixed(c, q); err != nil {
		return err
	}
	return readLenPrefixed(c, rep, maxPossession)
}

func writeLenPrefixed(w io.Writer, v any) error {
	body, err := msgpack.Marshal(v)
	if err != nil {
		return err
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
	_, err = w.Write(append(hdr[:], body...))
	return err
}

func readLenPrefixed(r io.Reader, v any, limit uint32) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > limit {
		return fmt.Errorf("cluster: peer message of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	return mpsafe.Unmarshal(body, v)
}

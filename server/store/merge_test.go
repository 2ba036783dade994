package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// checkAccounting recomputes a segment's byte and live counts from its
// records: a merge that forgets one drifts the node's memory accounting.
func checkAccounting(t *testing.T, g *Segment) {
	t.Helper()
	g.mu.RLock()
	defer g.mu.RUnlock()
	var bytes int64
	live := 0
	for r := range g.items.all() {
		bytes += r.accountedBytes()
		if !r.Deleted() {
			live++
		}
	}
	if bytes != g.bytes || live != g.live {
		t.Fatalf("segment %d accounts %d bytes / %d live, holds %d / %d", g.id, g.bytes, g.live, bytes, live)
	}
}

// randomOps drives n random puts, deletes, collection writes and (with
// expire) expiries.
func randomOps(s *Store, rng *rand.Rand, round, n int, expire bool) {
	for range n {
		k := fmt.Sprint("k", rng.IntN(200))
		switch rng.IntN(6) {
		case 0:
			s.Delete(k)
		case 1:
			if expire {
				s.Expire(k, time.Hour)
			}
		case 2:
			s.Exec(kv.Cmd{Op: kv.CmdHSet, Key: "h" + k, Args: [][]byte{[]byte("f"), []byte(fmt.Sprint(round))}})
		default:
			s.Put(k, []byte(fmt.Sprint(round, k)), nil)
		}
	}
}

// shipUpTo applies src's op-log of every segment to dst, up to rev
// (inclusive) per segment.
func shipUpTo(t *testing.T, src, dst *Store, applied []uint64, upTo []uint64) {
	t.Helper()
	for i := range applied {
		ops, err := src.Segment(uint16(i)).OperationsAfter(applied[i])
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			if op.Revision() > upTo[i] {
				break
			}
			if _, err := dst.Segment(uint16(i)).ApplyOp(op); err != nil {
				t.Fatal(err)
			}
			applied[i] = op.Revision()
		}
	}
}

// Reconcile (R-REP-6 step 3): a passive replica of the snapshot's source
// merges it and ends level — stale records replaced, missing ones filled,
// records deleted at the source in between dropped — while the writes it
// received after the snapshot's revision (the live channel during a slow
// bootstrap) stay. A wipe would have dropped them and left the copy behind
// its own acknowledged position.
func TestMergeSnapshotReconcilesAPassiveReplica(t *testing.T) {
	big := func(c *Config) { c.Segments = 4; c.OpLogMaxOps = 1 << 20; c.OpLogMaxBytes = 1 << 30 }
	src, _ := newTestStore(t, big)
	dst, _ := newTestStore(t, big)
	rng := rand.New(rand.NewPCG(7, 7))
	applied := make([]uint64, 4)
	all := []uint64{1 << 62, 1 << 62, 1 << 62, 1 << 62}

	randomOps(src, rng, 0, 800, true)
	shipUpTo(t, src, dst, applied, all) // dst level at R1
	randomOps(src, rng, 1, 800, true)   // dst misses these (below the trim floor, say)
	snaps := make([]Snapshot, 4)
	for i := range snaps {
		snaps[i] = src.Segment(uint16(i)).Snapshot() // at R2
	}
	// (An expiry needs the record it moves: the live channel only carries
	// ones for records the replica holds, which a random mix cannot
	// promise here.)
	randomOps(src, rng, 2, 300, false)
	// The live channel delivers everything after R2 before the snapshot
	// lands: dst holds R1 plus (R2, R3].
	from := make([]uint64, 4)
	for i := range from {
		from[i] = snaps[i].Revision
	}
	shipUpTo(t, src, dst, from, all)

	for i := range 4 {
		g := dst.Segment(uint16(i))
		if short := g.MergeSnapshot(snaps[i]); short != 0 {
			t.Fatalf("segment %d: shortfall %d", i, short)
		}
		checkAccounting(t, g)
		if a, b := src.Segment(uint16(i)).Digest(), g.Digest(); a != b {
			t.Fatalf("segment %d after the merge: %+v, source %+v", i, b, a)
		}
		if g.Revision() != src.Segment(uint16(i)).Revision() {
			t.Fatalf("segment %d at revision %d, source at %d", i, g.Revision(), src.Segment(uint16(i)).Revision())
		}
		// The same snapshot installed whole loses (R2, R3].
		wiped, _ := newTestStore(t, big)
		wiped.Segment(uint16(i)).InstallSnapshot(snaps[i])
		if wiped.Segment(uint16(i)).Digest() == src.Segment(uint16(i)).Digest() && snaps[i].Revision != src.Segment(uint16(i)).Revision() {
			t.Fatalf("segment %d: the test does not exercise writes after the snapshot", i)
		}
	}
	if src.Stats().Items != dst.Stats().Items {
		t.Fatalf("items %d vs %d", src.Stats().Items, dst.Stats().Items)
	}
}

// A merge that cannot make the copy level reports its shortfall (the
// escalation to a wipe on the caller's side).
func TestMergeSnapshotReportsItsShortfall(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.Segments = 1 })
	g := s.Segment(0)
	snap := Snapshot{Segment: 0, Revision: 5, Records: []Record{
		Record{Revision: 3}.WithVersion(1).With("a", []byte("x")),
		Record{Revision: 4, Kind: KindHash}.WithVersion(1).With("h", []byte{0xff, 0x00}), // undecodable
	}}
	if short := g.MergeSnapshot(snap); short != 1 {
		t.Fatalf("shortfall %d, want 1", short)
	}
	checkAccounting(t, g)
	if got := s.Get("a"); got.Status != kv.StatusSuccess || g.Revision() != 5 {
		t.Fatalf("a: %v, revision %d", got.Status, g.Revision())
	}
}

// A snapshot's digest is the digest of the segment that installs it, so a
// replica can tell "already level" (skip) before touching anything.
func TestSnapshotDigestMatchesTheInstalledSegment(t *testing.T) {
	src, _ := newTestStore(t, func(c *Config) { c.Segments = 2 })
	randomOps(src, rand.New(rand.NewPCG(1, 2)), 0, 500, true)
	for i := range 2 {
		snap := src.Segment(uint16(i)).Snapshot()
		if a, b := src.SnapshotDigest(&snap), src.Segment(uint16(i)).Digest(); a != b {
			t.Fatalf("segment %d: snapshot digest %+v, segment %+v", i, a, b)
		}
	}
}

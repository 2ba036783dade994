package replication

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/cluster"
)

// partState is one owned partition's replication as the barrier sees it:
// its shippers (one per replica of the map) and a broadcast channel that
// acks close while sync writes wait.
type partState struct {
	identity    string
	gen         uint64
	first, last int
	shippers    []*shipper
	counted     []bool // per shipper: its copy counts for quorums (not demoted)
	demoted     []cluster.NodeID
	incoming    []cluster.NodeID

	mu      sync.Mutex // guards ch, waiters
	ch      chan struct{}
	waiters int
	gone    chan struct{} // closed when a newer state replaces this one
	retired sync.Once
}

func newPartState(p *cluster.Partition, ships []*shipper) *partState {
	ps := &partState{identity: p.Identity, gen: p.OwnershipGeneration, first: p.FirstSegment, last: p.LastSegment,
		shippers: ships, demoted: slices.Clone(p.Demoted), incoming: slices.Clone(p.Incoming),
		ch: make(chan struct{}), gone: make(chan struct{})}
	for _, s := range ships {
		// A copy a migration is still building counts for no quorum: a
		// write is acknowledged by the copies that hold the partition.
		ps.counted = append(ps.counted, !slices.Contains(p.Demoted, s.key.replica) && !slices.Contains(p.Incoming, s.key.replica))
	}
	return ps
}

// same reports whether p with ships is what ps already describes.
func (ps *partState) same(p *cluster.Partition, ships []*shipper) bool {
	return ps.identity == p.Identity && ps.gen == p.OwnershipGeneration && ps.first == p.FirstSegment &&
		ps.last == p.LastSegment && slices.Equal(ps.shippers, ships) && slices.Equal(ps.demoted, p.Demoted) &&
		slices.Equal(ps.incoming, p.Incoming)
}

func (ps *partState) retire() { ps.retired.Do(func() { close(ps.gone) }) }

// subscribe returns the channel the next ack closes.
func (ps *partState) subscribe() <-chan struct{} {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.waiters++
	return ps.ch
}

func (ps *partState) unsubscribe() {
	ps.mu.Lock()
	ps.waiters--
	ps.mu.Unlock()
}

// notify wakes the waiting sync writes (an ack arrived, a session changed
// state). Without waiters it costs a lock and nothing else.
func (ps *partState) notify() {
	ps.mu.Lock()
	if ps.waiters > 0 {
		close(ps.ch)
		ps.ch = make(chan struct{})
	}
	ps.mu.Unlock()
}

// satisfied reports whether enough replicas applied revision rev of seg.
func (ps *partState) satisfied(q Quorum, seg int, rev uint64) bool {
	counted := 0
	for _, c := range ps.counted {
		if c {
			counted++
		}
	}
	need := QuorumNeed(q, counted)
	if need == 0 {
		return true
	}
	n := 0
	for i, s := range ps.shippers {
		switch {
		case !ps.counted[i]:
		case s.applied[seg-s.first].Load() >= rev:
			n++
		case q == BestEffort && s.state.Load() != stateStreaming:
			n++ // best effort waits only for replicas it can reach
		}
	}
	return n >= need
}

// lowWater is the lowest revision of seg every counted copy has applied
// (rev, the segment's own, when none counts). A demoted copy comes back
// with a foreign history and gets a snapshot: it needs no tombstone.
func (ps *partState) lowWater(seg int, rev uint64) uint64 {
	low := rev
	for i, s := range ps.shippers {
		if a := s.applied[seg-s.first].Load(); ps.counted[i] && a < low {
			low = a
		}
	}
	return low
}

// Wait is the write barrier (R-REP-2): called after a successful write of
// revision rev on segment seg, it returns once the write is applied on the
// partition's quorum of replicas — StatusSuccess — or StatusTimeout when
// SyncTimeout (or ctx) ends first. The write itself stays applied on the
// owner either way: Timeout means "not acknowledged", never "undone".
// Under Async it returns Success at once; BestEffort returns Success after
// the timeout too. A segment this node no longer owns answers Timeout.
func (m *Manager) Wait(ctx context.Context, seg uint16, rev uint64) kv.Status {
	if m.cfg.Mode != Sync {
		return kv.StatusSuccess
	}
	return m.wait(ctx, seg, rev, time.Now().Add(m.cfg.SyncTimeout), false)
}

// WaitAll is Wait for the writes of one batch (one entry per segment): it
// sets status[i] for writes[i]. Every partition's replicas are asked for
// their segments before the first wait, so the partitions' round trips
// overlap — waiting one write after the other left a partition's shipper
// gathering until the previous partition had answered (a batch over two
// partitions took two round trips). One SyncTimeout bounds the whole batch.
func (m *Manager) WaitAll(ctx context.Context, writes []kv.SegmentWrite, status []kv.Status) {
	if m.cfg.Mode != Sync {
		for i := range writes {
			status[i] = kv.StatusSuccess
		}
		return
	}
	route := *m.route.Load()
	var asked [8]*partState // the partitions hurried so far (a node owns few)
	nAsked := 0
	for _, w := range writes {
		if int(w.Segment) >= len(route) || route[w.Segment] == nil {
			continue
		}
		ps := route[w.Segment]
		if ps.satisfied(m.cfg.Quorum, int(w.Segment), w.Revision) {
			continue
		}
		for _, s := range ps.shippers {
			s.want(int(w.Segment))
		}
		if !slices.Contains(asked[:nAsked], ps) {
			for _, s := range ps.shippers {
				s.ship1()
			}
			if nAsked < len(asked) {
				asked[nAsked] = ps
				nAsked++
			}
		}
	}
	deadline := time.Now().Add(m.cfg.SyncTimeout)
	for i, w := range writes {
		status[i] = m.wait(ctx, w.Segment, w.Revision, deadline, true)
	}
}

// wait is one write's barrier until deadline; hurried says its shippers
// were already asked to ship (WaitAll).
func (m *Manager) wait(ctx context.Context, seg uint16, rev uint64, deadline time.Time, hurried bool) kv.Status {
	m.syncWaits.Add(1)
	var timer *time.Timer
	for {
		route := *m.route.Load()
		if int(seg) >= len(route) || route[seg] == nil {
			m.syncTimeouts.Add(1)
			return kv.StatusTimeout
		}
		ps := route[seg]
		ch := ps.subscribe()
		if ps.satisfied(m.cfg.Quorum, int(seg), rev) {
			ps.unsubscribe()
			if timer != nil {
				timer.Stop()
			}
			return kv.StatusSuccess
		}
		if timer == nil {
			if !hurried {
				for _, s := range ps.shippers {
					s.hurry(int(seg))
				}
			}
			timer = time.NewTimer(time.Until(deadline))
			defer timer.Stop()
		}
		select {
		case <-ch:
		case <-ps.gone:
		case <-timer.C:
			ps.unsubscribe()
			if m.cfg.Quorum == BestEffort {
				m.syncBestEffort.Add(1)
				return kv.StatusSuccess
			}
			m.syncTimeouts.Add(1)
			return kv.StatusTimeout
		case <-ctx.Done():
			ps.unsubscribe()
			m.syncTimeouts.Add(1)
			return kv.StatusTimeout
		}
		ps.unsubscribe()
	}
}

// Barrier reports whether sync writes wait (Mode Sync): the front ends
// install Wait only then, so the async path pays nothing.
func (m *Manager) Barrier() bool { return m.cfg.Mode == Sync }

package replication

import "context"

// WaitReplicas is what Redis's WAIT counts (the RESP front end's WAIT):
// how many replicas of seg's partition have applied revision rev. It
// returns as soon as want of them have, or when ctx ends, with the count
// at that moment; 0 for a segment this node does not own or replicate.
// Copies a migration is still building or that were demoted do not count
// (as for the write barrier's quorums).
func (m *Manager) WaitReplicas(ctx context.Context, seg uint16, rev uint64, want int) int {
	for {
		route := *m.route.Load()
		if int(seg) >= len(route) || route[seg] == nil {
			return 0
		}
		ps := route[seg]
		if !ps.hasCounted() {
			return 0 // no replica can ever acknowledge: do not wait for one
		}
		ch := ps.subscribe()
		n := ps.appliedBy(int(seg), rev)
		if n >= want {
			ps.unsubscribe()
			return n
		}
		select {
		case <-ch:
		case <-ps.gone:
		case <-ctx.Done():
			ps.unsubscribe()
			return n
		}
		ps.unsubscribe()
	}
}

// appliedBy counts the counted replicas that applied revision rev of seg.
func (ps *partState) appliedBy(seg int, rev uint64) int {
	n := 0
	for i, s := range ps.shippers {
		if ps.counted[i] && s.applied[seg-s.first].Load() >= rev {
			n++
		}
	}
	return n
}

// hasCounted reports whether some replica's copy counts.
func (ps *partState) hasCounted() bool {
	for _, c := range ps.counted {
		if c {
			return true
		}
	}
	return false
}

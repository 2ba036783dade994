package store

import "github.com/zaris-io/zaris/internal/kv"

// Flush removes every live key of the owned segments, each as a logged
// delete (so replicas and watchers see it), and returns how many it
// removed. A replica segment is its owner's to change: it follows the
// owner's deletes through replication instead.
func (s *Store) Flush() int {
	n := 0
	for _, g := range s.segments {
		n += g.flush(s.clock.NowNano())
	}
	return n
}

// flush tombstones the segment's live keys when it is owned (its lock
// released by defer: a panic must not leave it held).
func (g *Segment) flush(now int64) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.owned || g.fenced {
		// A fenced segment is its cut-over's: its keys are flushed on the
		// new owner by the next flush, not here behind the proof.
		return 0
	}
	// Watches see these deletes with Origin CmdFlush: a flush, not a
	// client's DEL (client-side caching sends one flush for them).
	g.origin = kv.CmdFlush
	defer func() { g.origin = 0 }()
	n := 0
	for r := range g.items.all() {
		if !r.Deleted {
			g.tombstoneLocked(r, OpDelete, now)
			n++
		}
	}
	return n
}

// DBSize counts the live keys of the segments this node owns
// (expired-but-unswept keys excluded; replica copies are not counted).
func (s *Store) DBSize() int {
	n := 0
	now := s.clock.NowNano()
	for _, g := range s.segments {
		g.mu.RLock()
		if !g.owned {
			g.mu.RUnlock()
			continue
		}
		// Only a record with a TTL can be expired-but-unswept: count those
		// off, walking the TTL index rather than the whole table.
		n += g.live
		for _, r := range g.expiring {
			if !r.Deleted && r.expiredAt(now) {
				n--
			}
		}
		g.mu.RUnlock()
	}
	return n
}

func init() {
	registerNode(kv.CmdFlush, func(s *Store, _ kv.Cmd) kv.Reply {
		s.Flush()
		return kv.OKReply()
	})
	registerNode(kv.CmdDBSize, func(s *Store, _ kv.Cmd) kv.Reply {
		return kv.IntReply(int64(s.DBSize()))
	})
}

package store

import "github.com/zaris-io/zaris/internal/kv"

// Flush removes every live key, each as a logged delete (so replicas and
// watchers see it), and returns how many it removed.
func (s *Store) Flush() int {
	n := 0
	for _, g := range s.segments {
		now := s.clock.NowNano()
		g.mu.Lock()
		for _, r := range g.items {
			if !r.Deleted {
				g.tombstoneLocked(r, OpDelete, now)
				n++
			}
		}
		g.mu.Unlock()
	}
	return n
}

// DBSize counts the live keys (expired-but-unswept keys excluded).
func (s *Store) DBSize() int {
	n := 0
	now := s.clock.NowNano()
	for _, g := range s.segments {
		g.mu.RLock()
		if len(g.expiring) == 0 {
			n += g.live
		} else {
			for _, r := range g.items {
				if r.liveAt(now) {
					n++
				}
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

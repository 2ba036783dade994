package store

// Finishing idle resizes (D132). A field table drains its old array a few
// slots per write (D129); a collection whose writes stop in the middle of
// a drain — a hash filled once and then only read, a replica's copy built
// from a snapshot — would keep both arrays (up to 1.5× its slots) and probe
// both on every miss, for as long as it lives. Every collection write and
// every collection record committed notes a table that is draining in its
// segment's queue; the sweeper moves sweepDrainSlots slots a segment a
// tick until each is done.

// sweepDrainSlots is the old-array slots the sweeper moves per segment per
// tick: 16 Ki slots (a million-field table's 1 Mi slots in a few seconds
// at the 100 ms default tick), about as long under the lock as the expiry
// sample's budget.
const sweepDrainSlots = 1 << 14

// fieldTabled is a collection kept in a field table.
type fieldTabled interface{ table() *fieldTable }

func (h *hashColl) table() *fieldTable { return &h.t }
func (s *setColl) table() *fieldTable  { return &s.t }
func (z *zsetColl) table() *fieldTable { return &z.nodes }

// tableOf is c's field table, nil for a list, a stream or nil.
func tableOf(c collection) *fieldTable {
	if ft, ok := c.(fieldTabled); ok {
		return ft.table()
	}
	return nil
}

// noteDrainingLocked queues the table of collection c, stored under key,
// when a resize of it is under way.
func (g *Segment) noteDrainingLocked(key string, c collection) {
	t := tableOf(c)
	if t == nil || t.old == nil {
		return
	}
	if _, queued := g.draining[t]; queued {
		return
	}
	if g.draining == nil {
		g.draining = map[*fieldTable]string{}
	}
	g.draining[t] = key
	g.drainingN.Store(int32(len(g.draining)))
}

// forgetDrainingLocked empties the queue (the segment's content was
// replaced).
func (g *Segment) forgetDrainingLocked() {
	g.draining = nil
	g.drainingN.Store(0)
}

// drainIdleTables moves up to budget old-array slots of the queued tables.
// A table is drained only while the record it was queued under still holds
// it: a key deleted, replaced or moved takes its table out of this
// segment's care (another segment's writers may own it now).
func (g *Segment) drainIdleTables(budget int) {
	if g.drainingN.Load() == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for t, key := range g.draining {
		if budget <= 0 {
			break
		}
		if r := g.items.get(key); r == nil || r.Deleted() || tableOf(r.coll()) != t {
			delete(g.draining, t)
			continue
		}
		budget -= t.drain(budget)
		if t.old == nil {
			delete(g.draining, t)
		}
	}
	g.drainingN.Store(int32(len(g.draining)))
}

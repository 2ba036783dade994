package store

import (
	"sort"

	"github.com/zaris-io/zaris/internal/rdb"
)

// dumpStream is a stream as DUMP writes it: its live entries, Redis 7's
// counters, and its groups by name with their consumers by name and their
// pending entries in id order. A consumer's active-time is its seen-time
// (Zaris keeps one stamp).
func dumpStream(s *streamColl) *rdb.StreamValue {
	id := func(x streamID) rdb.StreamID { return rdb.StreamID{Ms: x.ms, Seq: x.seq} }
	v := &rdb.StreamValue{LastID: id(s.last), FirstID: id(s.firstID), MaxDeletedID: id(s.maxDeleted),
		EntriesAdded: s.entriesAdded, Entries: make([]rdb.StreamEntry, 0, s.entries.live)}
	for it := range s.entries.all() {
		if !it.dead {
			v.Entries = append(v.Entries, rdb.StreamEntry{ID: id(it.id), Fields: it.val})
		}
	}
	// A copy decoded from an encoding older than Redis 7's counters has
	// them at zero: keep them consistent with the entries, as a payload
	// must be.
	v.EntriesAdded = max(v.EntriesAdded, uint64(len(v.Entries)))
	if s.last.less(s.maxDeleted) {
		v.MaxDeletedID = v.LastID
	}
	names := make([]string, 0, len(s.groups))
	for n := range s.groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g := s.groups[n]
		gv := rdb.StreamGroup{Name: []byte(n), LastID: id(g.last), EntriesRead: g.entriesRead}
		consumers := make([]string, 0, len(g.consumers))
		for c := range g.consumers {
			consumers = append(consumers, c)
		}
		sort.Strings(consumers)
		for _, c := range consumers {
			seen := g.consumers[c].seenMs
			gv.Consumers = append(gv.Consumers, rdb.StreamConsumer{Name: []byte(c), SeenMs: seen, ActiveMs: seen})
		}
		for it := range g.pel.all() {
			if !it.dead {
				gv.Pending = append(gv.Pending, rdb.StreamPending{ID: id(it.id), DeliveryMs: it.val.deliveredMs,
					DeliveryCount: it.val.deliveries, Consumer: []byte(it.val.consumer.name)})
			}
		}
		v.Groups = append(v.Groups, gv)
	}
	return v
}

// restoreStream builds a stream from a RESTORE payload's, through the
// checks a replica's copy gets (streamColl.fromWire), keeping each
// consumer's seen-time.
func restoreStream(v *rdb.StreamValue) (*streamColl, error) {
	wid := func(x rdb.StreamID) [2]uint64 { return [2]uint64{x.Ms, x.Seq} }
	w := streamWire{Last: wid(v.LastID), EntriesAdded: v.EntriesAdded, MaxDeleted: wid(v.MaxDeletedID),
		FirstID: wid(v.FirstID), Entries: make([]streamEntryWire, len(v.Entries))}
	for i, e := range v.Entries {
		w.Entries[i] = streamEntryWire{ID: wid(e.ID), Fields: e.Fields}
	}
	seen := map[[2]string]int64{}
	for _, g := range v.Groups {
		gw := streamGroupWire{Name: string(g.Name), Last: wid(g.LastID), EntriesRead1: g.EntriesRead + 1}
		for _, c := range g.Consumers {
			gw.Consumers = append(gw.Consumers, string(c.Name))
			seen[[2]string{gw.Name, string(c.Name)}] = c.SeenMs
		}
		for _, p := range g.Pending {
			gw.Pending = append(gw.Pending, streamPendingWire{ID: wid(p.ID), Consumer: string(p.Consumer),
				DeliveredMs: p.DeliveryMs, Deliveries: p.DeliveryCount})
		}
		w.Groups = append(w.Groups, gw)
	}
	s := newStream()
	if err := s.fromWire(&w, func(g, c string) int64 { return seen[[2]string{g, c}] }); err != nil {
		return nil, err
	}
	return s, nil
}

package store

import (
	"strings"
	"sync"
	"sync/atomic"
)

// RESP WATCH support (issue #13): EXEC must fail when a watched key was
// written after WATCH, even when the key was absent at WATCH and is absent
// again at EXEC (created and deleted in between, which Redis sees because
// every write marks the watchers dirty). A key present at WATCH is judged
// by its record's version and revision; an absent one by the record the
// key has at EXEC — a live record, an expired one or a tombstone — whose
// revision is above the segment's revision at WATCH. Tombstones of such
// keys are kept until their watches end, so the pruner cannot hide a
// write.

// WatchMark is what WATCH remembers of a key.
type WatchMark struct {
	version, revision uint64 // the live record's; 0 when the key was absent
	absent            bool
	segRevision       uint64 // absent: the segment's revision at WATCH
	// expiredVersion: absent, but an expired record not removed yet — its
	// version. Removing it later is not a change (Redis: a key already
	// expired at WATCH that is deleted logically did not change).
	expiredVersion uint64
}

// Absent reports whether the key was absent at WATCH: the watch must be
// ended with Store.Unwatch.
func (m WatchMark) Absent() bool { return m.absent }

// Watch marks key for a later Changed (RESP WATCH). A key absent now is
// registered until Store.Unwatch.
func (a *Atomic) Watch(key string) WatchMark {
	g := a.segFor(key)
	if g == nil {
		return WatchMark{}
	}
	raw := g.items.get(key)
	if raw != nil && raw.liveAt(a.now) {
		return WatchMark{version: raw.Version(), revision: raw.Revision}
	}
	m := WatchMark{absent: true, segRevision: g.revision}
	if raw != nil && !raw.Deleted() {
		m.expiredVersion = raw.Version()
	}
	g.absentWatches.add(key)
	return m
}

// Changed reports whether key was written since the Watch that returned m.
func (a *Atomic) Changed(key string, m WatchMark) bool {
	g := a.segFor(key)
	if g == nil {
		return false
	}
	raw := g.items.get(key)
	if !m.absent {
		return raw == nil || !raw.liveAt(a.now) || raw.Version() != m.version || raw.Revision != m.revision
	}
	if raw == nil || raw.Revision <= m.segRevision {
		return false
	}
	if raw.Deleted() && m.expiredVersion != 0 && raw.Version() == m.expiredVersion {
		return false // the removal of the record already expired at WATCH
	}
	return true
}

// Unwatch ends the watch of a key that was absent at Watch: its tombstones
// may be pruned again.
func (s *Store) Unwatch(key string, m WatchMark) {
	if m.absent {
		s.SegmentFor(key).absentWatches.remove(key)
	}
}

// absentWatches counts the watches of each key watched while absent. Its
// own mutex is a leaf lock: Unwatch runs without the segment's lock.
type absentWatches struct {
	n  atomic.Int32 // total: the pruner skips the map when 0
	mu sync.Mutex
	m  map[string]int32
}

func (w *absentWatches) add(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]int32{}
	}
	if _, ok := w.m[key]; ok {
		w.m[key]++
	} else {
		// The caller's key may alias a network buffer (RESP's views): the
		// map keeps its own copy.
		w.m[strings.Clone(key)] = 1
	}
	w.n.Add(1)
}

func (w *absentWatches) remove(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m[key] <= 0 {
		return
	}
	if w.m[key]--; w.m[key] == 0 {
		delete(w.m, key)
	}
	w.n.Add(-1)
}

func (w *absentWatches) holds(key string) bool {
	if w.n.Load() == 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m[key] > 0
}

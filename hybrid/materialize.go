package hybrid

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/sdk"
)

// lruTouchInterval: a materialized hit validates with L1's TimeToLive, which
// does not count as an access for L1's sampled LRU; at most this often per
// entry it reads the record instead, so hot entries stay young in L1.
const lruTouchInterval = 250 * time.Millisecond

// matEntry is the deserialized value of one L1 record, identified by the
// record's (Version, Revision) — a pair that changes on every write and on
// delete-then-recreate. It is served only while L1 still holds exactly that
// record, so L1's expiry, eviction and invalidation govern it.
//
// The times a hit needs are kept as L1 TTL thresholds, so a hit reads no
// clock: the record's remaining TTL from L1 says where it stands.
type matEntry struct {
	key, l1Key string
	value      any
	version    uint64
	revision   uint64
	// staleBelow: at or below this remaining TTL the record is past its
	// logical life (physical − local) and only fail-safe may use it.
	staleBelow time.Duration
	// refreshBelow: at or below this remaining TTL an eager refresh is due
	// (0 = never).
	refreshBelow time.Duration
	created      int64
	expires      int64
	observed     int64
	tags         []string
	epoch        atomic.Uint64 // tag epoch the tags were last checked at
	touchedTTL   atomic.Int64  // remaining TTL at the last LRU touch
}

func newMatEntry(key, l1k string, value any, env *envelope, r sdk.Result, epoch uint64) *matEntry {
	me := &matEntry{
		key: key, l1Key: l1k, value: value,
		version: r.Version, revision: r.Revision,
		staleBelow: time.Duration(env.physical - env.local),
		created:    env.created, expires: env.expires, observed: env.observed,
		tags: env.tags,
	}
	me.epoch.Store(epoch)
	me.touchedTTL.Store(int64(r.TTL))
	return me
}

// withRefresh sets the eager-refresh threshold from the absolute due time.
func (me *matEntry) withRefresh(due int64, env *envelope) *matEntry {
	if due > 0 && due < env.local {
		me.refreshBelow = time.Duration(env.physical - due)
	}
	return me
}

// backedBy reports whether r (an L1 answer for me.l1Key) is still me's
// record.
func (me *matEntry) backedBy(r sdk.Result) bool {
	return r.Status == sdk.StatusSuccess && r.Version == me.version && r.Revision == me.revision
}

// materializedHit is the lock-free L1 hit: one map load, one L1 metadata
// read, no clock read, no allocation.
func materializedHit[T any](ctx context.Context, h *Cache, key string) (v T, me *matEntry, due, ok bool) {
	x, found := h.mat.Load(key)
	if !found {
		return v, nil, false, false
	}
	me = x.(*matEntry)
	if v, ok = me.value.(T); !ok {
		return v, nil, false, false
	}
	if due, ok = h.validate(ctx, me); !ok {
		var zero T
		return zero, nil, false, false
	}
	h.stats.l1Hits.Add(1)
	if h.tel != nil {
		h.tel.lookup(tierL1)
	}
	return v, me, due, true
}

// validate confirms me against L1 and reports whether a refresh is due.
func (h *Cache) validate(ctx context.Context, me *matEntry) (due, ok bool) {
	if me.epoch.Load() != h.tagEpoch.Load() && !h.revalidate(ctx, me) {
		return false, false
	}
	r, err := h.l1.TimeToLive(ctx, me.l1Key)
	if err != nil {
		return false, false
	}
	if !me.backedBy(r) {
		h.mat.CompareAndDelete(me.key, me)
		return false, false
	}
	if r.TTL <= me.staleBelow {
		return false, false // past its logical life: the fill decides (fail-safe)
	}
	if me.touchedTTL.Load()-int64(r.TTL) >= int64(lruTouchInterval) {
		me.touchedTTL.Store(int64(r.TTL))
		_, _ = h.l1.Get(ctx, me.l1Key)
	}
	return me.refreshBelow > 0 && r.TTL <= me.refreshBelow, true
}

// revalidate re-checks me's tags and the clear-all time after the tag epoch
// moved.
func (h *Cache) revalidate(ctx context.Context, me *matEntry) bool {
	e := h.tagEpoch.Load()
	if me.observed <= h.clearedAt.Load() || !h.tagsValid(ctx, me.tags, me.created) {
		h.mat.CompareAndDelete(me.key, me)
		return false
	}
	me.epoch.Store(e)
	return true
}

// materialize publishes value as the materialized copy of the L1 record r.
// No stripe lock is needed: a copy of a record that is meanwhile replaced
// or deleted fails validation on its first hit.
func (h *Cache) materialize(key, l1k string, value any, env *envelope, r sdk.Result, epoch uint64, p policy) {
	if p.has(DisableMaterialization) {
		return
	}
	h.mat.Store(key, newMatEntry(key, l1k, value, env, r, epoch).withRefresh(h.refreshAt(env), env))
}

package hybrid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"hash/maphash"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/zaris-io/zaris/sdk"
)

// stripeCount stripes the per-key invalidation counters (a power of two).
const stripeCount = 256

// stripe serializes L1 writes against invalidations for the keys hashed to
// it, so that a fill which read a value before an invalidation cannot put
// that value back into L1 after it.
type stripe struct {
	mu  sync.Mutex    // guards L1 writes and deletes of the stripe's keys, and own
	seq atomic.Uint64 // bumped (under mu) by every invalidation of a stripe key
	// own: key → this instance's L2 write its L1 copy holds, kept only
	// with a backplane that reports store changes (WatchBackplane), so
	// that the change the write itself made does not evict the copy.
	own map[string]l2Change
}

// l2Change identifies one change of an L2 key: the segment revision it
// made and the key's version after it (sdk.Result's, sdk.WatchEvent's).
type l2Change struct{ revision, version uint64 }

// ownPerStripe bounds a stripe's own map. Entries normally leave when
// their change comes back (milliseconds); one whose change came before
// the write's answer lingers until the key's next change, so a full map
// is simply emptied — the cost is an L1 copy evicted by its own change.
const ownPerStripe = 64

// forgetOwn drops key's own-write entry (mu held).
func (s *stripe) forgetOwn(key string) {
	if s.own != nil {
		delete(s.own, key)
	}
}

// rememberOwn records that key's L1 copy holds the L2 change c (mu held).
func (s *stripe) rememberOwn(key string, c l2Change) {
	if s.own == nil || len(s.own) >= ownPerStripe {
		s.own = make(map[string]l2Change, 8)
	}
	s.own[key] = c
}

// snapshot is taken when a fill starts; the fill's writes are dropped if an
// invalidation happened since.
type snapshot struct {
	st     *stripe
	seq    uint64 // st.seq at the start
	global uint64 // Cache.globalSeq at the start (clear-all)
	epoch  uint64 // Cache.tagEpoch at the start
	at     int64  // stamp at the start: the fill "observed" its values then
}

func (s snapshot) keyInvalidated() bool { return s.st.seq.Load() != s.seq }

// Cache is a two-tier cache: an in-process embedded Zaris store (L1) in
// front of a shared Zaris store (L2). It is safe for concurrent use; close
// it with Close. See the package documentation.
//
// Locks: a stripe's mu is held across the L1 write or delete of its keys
// and nothing else is taken under it; tagsMu is held only around the tag
// map, never across I/O. No two of them nest.
type Cache struct {
	l1, l2     *sdk.Client
	opts       Options
	ser        sdk.Serializer
	clock      Clock
	log        *slog.Logger
	id         string
	entryNS    string // KeyPrefix + "v:"
	markerNS   string // KeyPrefix + "t:"
	starMarker string // marker key of the "*" tag
	// trackOwn: the backplane reports store changes, the cache's own
	// writes included (stripe.own).
	trackOwn bool

	closed  atomic.Bool
	flights singleflight.Group

	// mat is the materialized L1: key → *matEntry, the deserialized value
	// of the L1 record with the recorded version and revision. A hit is
	// served from it only after L1 confirms that record is still live.
	mat sync.Map

	tagsMu sync.RWMutex     // guards tags, markerTag and markerTS
	tags   map[string]int64 // tag → latest invalidation known (0 = none in L1)
	// markerTag: marker key → tag, for the tags in tags. markerTS: marker
	// key → the latest time read from L2 after the store reported the
	// marker changed (WatchBackplane), which a tag read from L1 meanwhile
	// must not undercut.
	markerTag map[string]string
	markerTS  map[string]int64
	// tagEpoch moves whenever a tag invalidation or a clear-all is learned;
	// a materialized value re-checks its tags when it sees a new epoch.
	tagEpoch atomic.Uint64
	// clearedAt: L1 copies observed at or before it are misses (clear-all).
	clearedAt atomic.Int64

	seed      maphash.Seed
	stripes   [stripeCount]stripe
	globalSeq atomic.Uint64
	lastStamp atomic.Int64

	// refreshing: key → *refreshState, the eager refresh started (or tried)
	// for one generation of the key's entry.
	refreshing sync.Map

	unsubscribe func()
	bgCtx       context.Context // cancelled by Close
	bgCancel    context.CancelFunc
	bg          spawner
	stats       counters
	tel         *telemetry // nil unless Options names a tracer or meter provider
}

type refreshState struct{ created, expires int64 }

// New returns a cache over l1 (an embedded store, typically
// zaris://inproc/<name> with its own memory cap) and l2 (any Zaris store).
// The clients stay the caller's: Close does not close them. New panics if
// l1 or l2 is nil, if both are the same store, or if opts.Validate fails.
func New(l1, l2 *sdk.Client, opts Options) *Cache {
	if l1 == nil || l2 == nil {
		panic("hybrid: New needs both an L1 and an L2 client")
	}
	if l1 == l2 || sameStore(l1.ConnString(), l2.ConnString()) {
		panic("hybrid: L1 and L2 must be different stores")
	}
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	o := opts.withDefaults()
	h := &Cache{
		l1: l1, l2: l2, opts: o,
		ser: o.Serializer, clock: o.Clock, log: o.Logger,
		id:        o.InstanceID,
		entryNS:   o.KeyPrefix + "v:",
		markerNS:  o.KeyPrefix + "t:",
		tags:      map[string]int64{},
		markerTag: map[string]string{},
		markerTS:  map[string]int64{},
		seed:      maphash.MakeSeed(),
	}
	if h.id == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		h.id = hex.EncodeToString(b[:])
	}
	if tel, err := newTelemetry(o); err != nil {
		h.log.Error("hybrid: telemetry off: its instruments could not be made", "err", err)
	} else {
		h.tel = tel
	}
	h.starMarker = h.markerKey("*")
	h.bgCtx, h.bgCancel = context.WithCancel(context.Background())
	if sc, ok := o.Backplane.(storeChangeSource); ok {
		h.trackOwn = true
		if !sc.watches(o.KeyPrefix) {
			h.log.Warn("hybrid: the backplane does not watch this cache's keys: other writers' changes will not reach L1",
				"key_prefix", o.KeyPrefix)
		}
	}
	if o.Backplane != nil {
		h.unsubscribe = o.Backplane.Subscribe(h.onInvalidation)
	}
	h.bg.spawn(h.janitor)
	return h
}

func sameStore(a, b sdk.ConnString) bool {
	if a.Inproc != b.Inproc || a.Store != b.Store || len(a.Endpoints) != len(b.Endpoints) {
		return false
	}
	for i := range a.Endpoints {
		if a.Endpoints[i] != b.Endpoints[i] {
			return false
		}
	}
	return true
}

// Close detaches from the backplane, cancels the context of background
// work (eager refreshes, factories finishing after a soft timeout, the
// janitor) and waits for it — a factory that ignores its context delays
// Close until it returns. Safe to call more than once.
func (h *Cache) Close() error {
	if h.closed.Swap(true) {
		return nil
	}
	if h.unsubscribe != nil {
		h.unsubscribe()
	}
	h.bgCancel()
	h.bg.close()
	h.mat.Clear()
	return nil
}

// InstanceID is this instance's identity on the backplane.
func (h *Cache) InstanceID() string { return h.id }

// --- keys ---

// validKey: non-empty, at most MaxKeyLength bytes, no ASCII control byte.
func (h *Cache) validKey(key string) bool {
	if key == "" || len(key) > h.opts.MaxKeyLength {
		return false
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// l2Key is where key's entry lives in L2: KeyPrefix + "v:" + key, so a
// Redis-style hash tag in the key still groups keys in the cluster.
func (h *Cache) l2Key(key string) string { return h.entryNS + key }

// l1Key is where key's entry lives in L1. It starts with a 4-hex-digit hash
// tag of the key: L1 is one node's private store, so cluster grouping
// means nothing there, and placing the record by 4 bytes instead of the
// whole key makes every L1 lookup — the materialized hit's validation
// above all — cheaper by a CRC16 over the key, while still spreading keys
// over all of L1's segments.
func (h *Cache) l1Key(key string) string {
	f := fnv.New32a()
	_, _ = f.Write([]byte(key))
	sum := f.Sum32()
	var tag [6]byte
	tag[0], tag[5] = '{', '}'
	hex.Encode(tag[1:5], []byte{byte(sum>>24 ^ sum>>8), byte(sum>>16 ^ sum)})
	return string(tag[:]) + h.entryNS + key
}

// StoreKeys returns the keys under which key's entry is stored in L1 and
// in L2 — for operators and tools looking at the stores directly.
func (h *Cache) StoreKeys(key string) (l1, l2 string) { return h.l1Key(key), h.l2Key(key) }

func (h *Cache) stripeOf(key string) *stripe {
	return &h.stripes[maphash.String(h.seed, key)&(stripeCount-1)]
}

func (h *Cache) snapshot(key string) snapshot {
	st := h.stripeOf(key)
	return snapshot{st: st, seq: st.seq.Load(), global: h.globalSeq.Load(), epoch: h.tagEpoch.Load(), at: h.stamp()}
}

// stamp returns the clock strictly increasing within this instance, so an
// entry created before a tag invalidation here always has a smaller time.
func (h *Cache) stamp() int64 {
	now := h.clock.NowNano()
	for {
		last := h.lastStamp.Load()
		next := now
		if next <= last {
			next = last + 1
		}
		if h.lastStamp.CompareAndSwap(last, next) {
			return next
		}
	}
}

// detach keeps ctx's values but not its cancellation: a fill serves every
// caller of the key and outlives the one that started it. Close cancels it.
func (h *Cache) detach(ctx context.Context) context.Context {
	return detachedCtx{Context: h.bgCtx, values: ctx}
}

type detachedCtx struct {
	context.Context // deadline and cancellation: the cache's lifetime
	values          context.Context
}

func (c detachedCtx) Value(key any) any { return c.values.Value(key) }

// --- L1 ---

// readL1 reads and decodes the L1 record at l1k.
func (h *Cache) readL1(ctx context.Context, l1k string) (envelope, sdk.Result, bool) {
	r, err := h.l1.Get(ctx, l1k)
	if err != nil || !r.OK() {
		if err != nil || r.Status != sdk.StatusNotFound {
			h.stats.l1Errors.Add(1)
		}
		return envelope{}, r, false
	}
	env, err := decodeEnvelope(r.Value)
	if err != nil {
		_, _ = h.l1.Delete(ctx, l1k)
		return envelope{}, r, false
	}
	return env, r, true
}

// l1Copy derives the L1 envelope of an L2 envelope: L1's logical life ends
// no later than L2's, its physical life no later than L2's physical.
func (h *Cache) l1Copy(env *envelope, p policy, now, observed int64) envelope {
	c := *env
	c.local = min(now+int64(p.local), env.local)
	c.physical = min(c.local+int64(p.failSafe), env.physical)
	c.observed = observed
	return c
}

// writeL1 stores env in L1 (and materializes value) unless the key was
// invalidated, or L1 cleared, since snap was taken. src is the L2 change
// this instance made that env comes from (zero: a value read, not
// written).
func (h *Cache) writeL1(ctx context.Context, key, l1k string, env *envelope, value any, p policy, snap snapshot, src l2Change) {
	if p.has(DisableLocalCacheWrite) {
		return
	}
	snap.st.mu.Lock()
	defer snap.st.mu.Unlock()
	if snap.st.seq.Load() != snap.seq || h.globalSeq.Load() != snap.global {
		h.stats.l1WritesSkipped.Add(1)
		return
	}
	h.writeL1Locked(ctx, snap.st, key, l1k, env, value, p, snap.epoch, src)
}

// writeL1Locked writes with the key's stripe lock held. A value L1 refuses
// (too large, or already past its life) also removes the previous copy, so
// L1 never keeps serving a value L2 has replaced.
func (h *Cache) writeL1Locked(ctx context.Context, st *stripe, key, l1k string, env *envelope, value any, p policy, epoch uint64, src l2Change) {
	now := h.clock.NowNano()
	ttl := time.Duration(env.physical - now)
	if p.has(DisableLocalCacheWrite) || ttl <= 0 || env.local <= now {
		h.dropL1Locked(ctx, st, key, l1k)
		return
	}
	r, err := h.l1.Put(ctx, l1k, env.encode(), &sdk.PutOptions{TTL: ttl})
	if err != nil || !r.OK() {
		h.stats.l1Errors.Add(1)
		h.log.Debug("hybrid: L1 write refused", "key", key, "status", r.Status, "err", err)
		h.dropL1Locked(ctx, st, key, l1k)
		return
	}
	if h.trackOwn && src.revision != 0 {
		st.rememberOwn(key, src)
	} else {
		st.forgetOwn(key)
	}
	if p.has(DisableMaterialization) {
		h.mat.Delete(key)
		return
	}
	h.mat.Store(key, newMatEntry(key, l1k, value, env, r, epoch).withRefresh(h.refreshAt(env), env))
}

func (h *Cache) dropL1Locked(ctx context.Context, st *stripe, key, l1k string) {
	st.forgetOwn(key)
	h.mat.Delete(key)
	if _, err := h.l1.Delete(ctx, l1k); err != nil {
		h.stats.l1Errors.Add(1)
	}
}

// evictLocal removes key's L1 copy and makes in-flight fills of it drop
// their L1 writes.
func (h *Cache) evictLocal(ctx context.Context, key string) {
	st := h.stripeOf(key)
	st.mu.Lock()
	st.seq.Add(1)
	h.dropL1Locked(ctx, st, key, h.l1Key(key))
	st.mu.Unlock()
	h.refreshing.Delete(key)
}

// evictChanged is evictLocal for a change of key's L2 entry reported by
// the store (InvalidateStoreKey), unless the change is this instance's own
// last write of key, which its L1 copy already holds.
func (h *Cache) evictChanged(ctx context.Context, key string, c l2Change) {
	st := h.stripeOf(key)
	st.mu.Lock()
	if own, ok := st.own[key]; ok && c.revision != 0 && own == c {
		delete(st.own, key)
		st.mu.Unlock()
		h.stats.ownChanges.Add(1)
		return
	}
	st.seq.Add(1)
	h.dropL1Locked(ctx, st, key, h.l1Key(key))
	st.mu.Unlock()
	h.refreshing.Delete(key)
}

// clearLocal makes every L1 copy a miss (a backplane gap).
func (h *Cache) clearLocal() {
	h.clearedAt.Store(h.stamp())
	h.globalSeq.Add(1)
	h.tagEpoch.Add(1)
	h.mat.Clear()
}

// --- L2 ---

// readL2 reads the L2 envelope of key together with the "*" marker, then the
// markers of its tags, learning every marker it sees (which mirrors them in
// L1). found is false on a miss or an unreadable record.
func (h *Cache) readL2(ctx context.Context, l2k string) (env envelope, found bool, err error) {
	res, err := h.l2.ExecuteBatch(ctx, []sdk.BatchItem{{Op: sdk.BatchGet, Key: l2k}, {Op: sdk.BatchGet, Key: h.starMarker}})
	if err != nil {
		return env, false, err
	}
	if len(res) != 2 {
		return env, false, fmt.Errorf("hybrid: L2 batch answered %d of 2 items", len(res))
	}
	if ts, ok := decodeStamp(res[1].Result); ok {
		h.learnTag(ctx, "*", ts)
	}
	switch res[0].Status {
	case sdk.StatusSuccess:
	case sdk.StatusNotFound:
		return env, false, nil
	default:
		return env, false, res[0].Err()
	}
	env, derr := decodeEnvelope(res[0].Value)
	if derr != nil {
		h.log.Warn("hybrid: unreadable L2 entry treated as a miss", "key", l2k, "err", derr)
		return env, false, nil
	}
	if len(env.tags) > 0 {
		keys := make([]string, len(env.tags))
		for i, t := range env.tags {
			keys[i] = h.markerKey(t)
		}
		markers, err := h.l2.GetMany(ctx, keys)
		if err != nil {
			return env, false, err
		}
		for i, m := range markers {
			if ts, ok := decodeStamp(m.Result); ok && i < len(env.tags) {
				h.learnTag(ctx, env.tags[i], ts)
			}
		}
	}
	return env, true, nil
}

// --- judging an envelope ---

type verdict uint8

const (
	verdictMiss  verdict = iota
	verdictFresh         // within its logical life in this tier
	verdictStale         // logically expired, still held for fail-safe
)

// judge decides what an envelope read at now is worth. An entry whose tag
// (or "*") was invalidated at or after its creation is a miss, never stale:
// fail-safe does not resurrect invalidated data. In L1 a copy observed
// before a clear-all is a miss too.
func (h *Cache) judge(ctx context.Context, env *envelope, now int64, inL1 bool) verdict {
	if inL1 && env.observed <= h.clearedAt.Load() {
		return verdictMiss
	}
	if !h.tagsValid(ctx, env.tags, env.created) {
		return verdictMiss
	}
	if now < env.local {
		return verdictFresh
	}
	if now < env.physical {
		return verdictStale
	}
	return verdictMiss
}

func (h *Cache) refreshAt(env *envelope) int64 {
	r := h.opts.EagerRefreshThreshold
	if r <= 0 || env.expires <= env.created {
		return 0
	}
	return env.created + int64(r*float64(env.expires-env.created))
}

// --- writes ---

// produced builds the L2 envelope of a value produced now.
func (h *Cache) produced(payload []byte, created int64, p policy, tags []string) envelope {
	now := h.clock.NowNano()
	expires := now + int64(p.exp)
	return envelope{created: created, expires: expires, local: expires, physical: expires + int64(p.failSafe), tags: tags, payload: payload}
}

// storeValue writes a value produced by a fill to L2 then L1, unless the key
// was invalidated while it was being produced. A value the serializer or
// L2 refuses (too large, capacity) is not cached in either tier.
func (h *Cache) storeValue(ctx context.Context, key, l1k, l2k string, value any, created int64, p policy, tags []string, snap snapshot) {
	if snap.keyInvalidated() {
		h.stats.l1WritesSkipped.Add(1)
		return
	}
	payload, err := h.ser.Marshal(value)
	if err != nil {
		h.notCached(key, "serialize", err)
		return
	}
	env := h.produced(payload, created, p, tags)
	var src l2Change
	if !p.has(DisableDistributedCacheWrite) {
		r, err := h.l2.Put(ctx, l2k, env.encode(), &sdk.PutOptions{TTL: time.Duration(env.physical - h.clock.NowNano())})
		switch {
		case !r.OK(): // a status: L2 answered and refused (the error says why)
			h.notCached(key, "L2 refused the value", err)
			return
		case err != nil: // no answer (transport, context)
			h.l2Failure("write", key, err) // L1 still holds it for its (shorter) life
		default:
			src = l2Change{revision: r.Revision, version: r.Version}
		}
	}
	l1 := h.l1Copy(&env, p, h.clock.NowNano(), snap.at)
	h.writeL1(ctx, key, l1k, &l1, value, p, snap, src)
}

func (h *Cache) notCached(key, why string, err error) {
	h.stats.notCached.Add(1)
	h.log.Warn("hybrid: value returned but not cached", "key", key, "why", why, "err", err)
}

func (h *Cache) l2Failure(op, key string, err error) {
	h.stats.l2Errors.Add(1)
	h.log.Warn("hybrid: L2 "+op+" failed", "key", key, "err", err)
}

// Set stores value under key in L2 then L1, replacing any previous value,
// and tells the other instances to drop their L1 copy. opts and tags are as
// for GetOrCreate. Keys the cache does not store yield ErrInvalidKey; a
// value L2 refuses (sdk.ErrItemTooLarge …) yields that status's error and
// leaves the previous value in place.
func (h *Cache) Set(ctx context.Context, key string, value any, opts *EntryOptions, tags ...string) error {
	if h.closed.Load() {
		return ErrClosed
	}
	if !h.validKey(key) {
		return fmt.Errorf("%w (%d bytes)", ErrInvalidKey, len(key))
	}
	p := h.resolve(opts)
	created := h.stamp()
	payload, err := h.ser.Marshal(value)
	if err != nil {
		return fmt.Errorf("hybrid: encode %q: %w", key, err)
	}
	env := h.produced(payload, created, p, normalizeTags(tags))
	var src l2Change
	if !p.has(DisableDistributedCacheWrite) {
		r, err := h.l2.Put(ctx, h.l2Key(key), env.encode(), &sdk.PutOptions{TTL: time.Duration(env.physical - h.clock.NowNano())})
		if err != nil {
			return fmt.Errorf("hybrid: set %q in L2: %w", key, err)
		}
		if !r.OK() {
			return fmt.Errorf("hybrid: set %q in L2: %w", key, r.Err())
		}
		src = l2Change{revision: r.Revision, version: r.Version}
	}
	st := h.stripeOf(key)
	st.mu.Lock()
	st.seq.Add(1) // fills that read the old value must not write it back
	l1 := h.l1Copy(&env, p, h.clock.NowNano(), created)
	h.writeL1Locked(ctx, st, key, h.l1Key(key), &l1, value, p, h.tagEpoch.Load(), src)
	st.mu.Unlock()
	h.refreshing.Delete(key)
	return h.publish(ctx, Invalidation{Kind: InvalidateKey, Key: key})
}

// Remove deletes key from both tiers and tells the other instances to drop
// their L1 copy. Removing an absent or invalid key is not an error.
func (h *Cache) Remove(ctx context.Context, key string) error {
	if h.closed.Load() {
		return ErrClosed
	}
	if !h.validKey(key) {
		return nil
	}
	var errs []error
	if _, err := h.l2.Delete(ctx, h.l2Key(key)); err != nil {
		errs = append(errs, fmt.Errorf("hybrid: remove %q from L2: %w", key, err))
	}
	h.evictLocal(ctx, key)
	if err := h.publish(ctx, Invalidation{Kind: InvalidateKey, Key: key}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// RemoveByTag invalidates every entry carrying tag, in O(1): it writes a
// timestamp marker in L2 (mirrored in L1) and publishes it; entries created
// before the marker become misses when next read, in either tier. Tag "*"
// invalidates every entry. The entries' memory is reclaimed by their TTL
// or by eviction, not by this call; use Remove to delete a key at once.
func (h *Cache) RemoveByTag(ctx context.Context, tag string) error {
	if h.closed.Load() {
		return ErrClosed
	}
	if tag == "" {
		return nil
	}
	ts := h.stamp()
	if err := h.raiseMarker(ctx, h.l2, h.markerKey(tag), ts); err != nil {
		return fmt.Errorf("hybrid: tag %q marker in L2: %w", tag, err)
	}
	h.learnTag(ctx, tag, ts)
	return h.publish(ctx, Invalidation{Kind: InvalidateTag, Tag: tag, At: ts})
}

// --- backplane ---

func (h *Cache) publish(ctx context.Context, inv Invalidation) error {
	if h.opts.Backplane == nil {
		return nil
	}
	inv.Source, inv.Namespace, inv.SentAt = h.id, h.opts.KeyPrefix, h.clock.NowNano()
	if err := h.opts.Backplane.Publish(ctx, inv); err != nil {
		h.stats.publishErrors.Add(1)
		return fmt.Errorf("hybrid: backplane publish (%s): %w", inv.Kind, err)
	}
	h.stats.published.Add(1)
	return nil
}

func (h *Cache) onInvalidation(inv Invalidation) {
	if inv.Source == h.id || h.closed.Load() {
		return
	}
	if inv.Kind == InvalidateStoreKey {
		h.onStoreChange(inv)
		return
	}
	if inv.Namespace != h.opts.KeyPrefix && !(inv.Kind == InvalidateAll && inv.Namespace == "") {
		return
	}
	if h.tel != nil && inv.SentAt > 0 {
		h.tel.backplaneLag(inv.Kind, time.Duration(h.clock.NowNano()-inv.SentAt))
	}
	ctx := h.bgCtx
	switch inv.Kind {
	case InvalidateKey:
		if h.validKey(inv.Key) {
			h.evictLocal(ctx, inv.Key)
		}
	case InvalidateTag:
		if inv.Tag != "" && inv.At > 0 {
			h.learnTag(ctx, inv.Tag, inv.At)
		}
	case InvalidateAll:
		h.clearLocal()
	}
	// Counted once applied and measured: a reader that sees the count sees
	// the local copy gone and the lag recorded.
	h.stats.received.Add(1)
}

// onStoreChange applies a change of an L2 key reported by the store: an
// entry's evicts the L1 copy (unless it is this instance's own write); a
// tag marker's is read from L2 in the background and learned. Keys outside
// the cache's namespace are not its business.
func (h *Cache) onStoreChange(inv Invalidation) {
	switch {
	case strings.HasPrefix(inv.Key, h.entryNS):
		key := inv.Key[len(h.entryNS):]
		if !h.validKey(key) {
			return
		}
		h.stats.received.Add(1)
		h.evictChanged(h.bgCtx, key, l2Change{revision: inv.Revision, version: inv.Version})
	case strings.HasPrefix(inv.Key, h.markerNS):
		h.stats.received.Add(1)
		marker := inv.Key
		h.bg.spawn(func() { h.refreshMarker(h.bgCtx, marker) })
	}
}

// --- background work ---

// spawner starts goroutines that Close waits for, and refuses to start new
// ones once closing has begun.
type spawner struct {
	mu     sync.Mutex // guards closed and wg.Add
	closed bool
	wg     sync.WaitGroup
}

func (s *spawner) spawn(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

func (s *spawner) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.wg.Wait()
}

// janitor reclaims what L1 no longer backs: materialized values whose
// record expired or was evicted, tag-table rows whose marker expired (and
// the negative rows, re-read on demand), finished refresh guards.
func (h *Cache) janitor() {
	t := time.NewTicker(h.opts.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-h.bgCtx.Done():
			return
		case <-t.C:
			h.sweep(h.bgCtx)
		}
	}
}

func (h *Cache) sweep(ctx context.Context) {
	h.mat.Range(func(k, v any) bool {
		me := v.(*matEntry)
		r, err := h.l1.TimeToLive(ctx, me.l1Key)
		if err != nil {
			return false
		}
		if !me.backedBy(r) || r.TTL <= me.staleBelow {
			h.mat.CompareAndDelete(k, me)
		}
		return true
	})
	now := h.clock.NowNano()
	h.tagsMu.Lock()
	for t, ts := range h.tags {
		if ts == 0 || now-ts > int64(h.opts.TagMarkerTTL) {
			delete(h.tags, t)
		}
	}
	for mk, t := range h.markerTag {
		if _, ok := h.tags[t]; !ok {
			delete(h.markerTag, mk)
		}
	}
	for mk, ts := range h.markerTS {
		if now-ts > int64(h.opts.TagMarkerTTL) {
			delete(h.markerTS, mk)
		}
	}
	h.tagsMu.Unlock()
	h.refreshing.Range(func(k, v any) bool {
		if v.(*refreshState).expires < now {
			h.refreshing.CompareAndDelete(k, v)
		}
		return true
	})
}

// --- observability ---

// Stats is a point-in-time view of the cache's counters.
type Stats struct {
	L1Hits          uint64 // answered from L1 (materialized or bytes)
	L2Hits          uint64 // answered from L2 inside a fill
	FactoryCalls    uint64 // factory invocations, eager refreshes included
	FactoryErrors   uint64 // factory errors, panics and hard timeouts
	FailSafeServed  uint64 // stale values served after a factory failure or timeout
	SoftTimeouts    uint64 // stale values served because the factory was slow
	HardTimeouts    uint64 // factories given up on
	EagerRefreshes  uint64 // background refreshes started
	BackgroundSaves uint64 // late factory answers stored after a soft timeout
	Bypassed        uint64 // calls with an invalid key (factory run, nothing cached)
	NotCached       uint64 // values returned but not stored (do-not-cache, too large, unserializable)
	L1WritesSkipped uint64 // fills whose key was invalidated while they ran
	L1Errors        uint64
	L2Errors        uint64
	Published       uint64 // invalidations sent on the backplane
	PublishErrors   uint64
	Received        uint64 // invalidations applied from other instances (or, from a WatchBackplane, store changes of this cache's keys)
	// OwnChanges counts store changes (WatchBackplane) that were this
	// instance's own last write of a key: its L1 copy was kept.
	OwnChanges uint64
}

type counters struct {
	l1Hits, l2Hits, factoryCalls, factoryErrors, failSafe, softTimeouts, hardTimeouts atomic.Uint64
	eagerRefreshes, backgroundSaves, bypassed, notCached, l1WritesSkipped, l1Errors   atomic.Uint64
	l2Errors, published, publishErrors, received, ownChanges                          atomic.Uint64
}

// Stats returns the current counters.
func (h *Cache) Stats() Stats {
	c := &h.stats
	return Stats{
		L1Hits: c.l1Hits.Load(), L2Hits: c.l2Hits.Load(),
		FactoryCalls: c.factoryCalls.Load(), FactoryErrors: c.factoryErrors.Load(),
		FailSafeServed: c.failSafe.Load(), SoftTimeouts: c.softTimeouts.Load(), HardTimeouts: c.hardTimeouts.Load(),
		EagerRefreshes: c.eagerRefreshes.Load(), BackgroundSaves: c.backgroundSaves.Load(),
		Bypassed: c.bypassed.Load(), NotCached: c.notCached.Load(), L1WritesSkipped: c.l1WritesSkipped.Load(),
		L1Errors: c.l1Errors.Load(), L2Errors: c.l2Errors.Load(),
		Published: c.published.Load(), PublishErrors: c.publishErrors.Load(), Received: c.received.Load(),
		OwnChanges: c.ownChanges.Load(),
	}
}

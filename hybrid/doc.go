// Package hybrid owns the two-tier cache of the Zaris SDK (R-SDK-2): an
// in-process L1 — an embedded Zaris store, zaris://inproc/<name>, with its
// own memory cap — in front of a shared L2, any Zaris store (in production
// the cluster), with stampede protection, lazy tag invalidation, a
// cross-instance invalidation backplane, fail-safe, factory timeouts and
// eager refresh. It reaches both tiers only through the public sdk API
// (Get, Put with CAS and TTL, Delete, TimeToLive, ExecuteBatch), so L2 works
// unchanged against a server. It must not import server/... packages.
//
// # Read path
//
// GetOrCreate checks L1 without locks, then enters the key's single flight
// (golang.org/x/sync/singleflight; one fill per key and instance), checks L1
// again inside it, then L2, and only then runs the factory, writing L2 then
// L1. Entry lifetimes come from EntryOptions: Expiration for L2,
// LocalCacheExpiration for L1, both 5 minutes by default, the L1 one always
// clamped to ≤ the L2 one so that no local copy outlives the shared one.
//
// # Envelope
//
// Both tiers store an envelope: the serialized value (msgpack by default,
// Options.Serializer), the entry's creation time, its tags, its logical
// expiry in that tier and its physical expiry (the store TTL, longer than
// the logical one by FailSafeMaxDuration when fail-safe is on). An entry's
// creation time is when its factory started, so a tag invalidated while
// the factory ran invalidates the result too.
//
// # Materialized L1 values
//
// Deserializing on every L1 hit would cost more than the lookup itself. So
// next to each L1 record the cache may keep the deserialized value in a
// lock-free map (sync.Map), keyed by key and stamped with the L1 record's
// (Version, Revision) — a pair that changes on every write and on
// delete-then-recreate. A hit serves that value only after a TimeToLive on
// L1 (a metadata read: no copy, no allocation) confirms the same record is
// still live; the remaining TTL it returns also tells, without reading a
// clock, whether the entry is past its logical life or due for an eager
// refresh. Hence L1's memory cap (eviction), its expiry and every
// invalidation still govern what is served: a deserialized copy is never
// served after its L1 record is gone. Its memory is reclaimed on the next
// hit or by the janitor (every SweepInterval). Because TimeToLive is not an
// access for L1's sampled LRU, a hit reads the record instead at most every
// 250 ms per entry, keeping hot entries young. Costs to know: the process
// holds each hot value twice (bytes in L1, object in the map; L1's cap
// counts only the bytes), and every caller receives the same value — for
// pointer, slice or map types, treat it as immutable, or set
// DisableMaterialization to get a fresh copy per hit.
//
// # Tags
//
// RemoveByTag is O(1): it writes "tag invalidated at T" as a marker in L2
// (compare-and-set, never moving back) and mirrors it in L1. Nothing is
// scanned; entries are judged lazily on read, in both tiers: an entry
// created at or before one of its tags' markers — or the marker of the
// global tag "*" — is a miss, and fail-safe never resurrects it. Reading
// through L2 fetches the markers of the entry's tags in the same or one
// extra round trip and mirrors any newer one in L1; an L1 hit consults a
// local table of L1 markers, re-checked only when that table changes.
// Tags are arbitrary strings: marker keys hold SHA-256(tag) (128 bits, hex),
// so odd characters, braces or long tags are all fine. Markers live
// TagMarkerTTL (24 h), and entry lifetimes are capped so a marker outlives
// every entry it can invalidate. Invalidated entries keep their memory
// until their TTL or eviction; Remove deletes a key from both tiers at once.
// Timestamps are wall-clock: across machines, clock skew shifts the
// invalidation boundary by the skew.
//
// # Consistency model
//
// L2 is the shared truth. L1 is eventually consistent across instances.
// With a Backplane, Set, Remove and RemoveByTag on one instance evict (or
// invalidate) the L1 copies on the others: the window is the backplane's
// latency — immediate for NewLocalBackplane, one network hop for
// NewPubSubBackplane and NewWatchBackplane, about one poll interval for
// NewJournalBackplane. With NewWatchBackplane any change of an entry in L2
// evicts the copies too, whoever made it (a plain client, a RESP client,
// an expiry, an eviction); with the others, only the caches' own calls do.
// Without one, another instance's L1 copy lives until its
// LocalCacheExpiration, or until a read through L2 reveals a newer tag
// marker. A fill that read a value before an invalidation of its key does
// not write that value to L1 (or, for a factory result, to L2) after it.
// Within one instance, reads after Set/Remove/RemoveByTag see them.
// Stampede protection is per instance: N instances cold on one key may run
// the factory N times; a fleet-wide single load is a distributed lock's
// job, not the cache's.
//
// # Backplanes
//
// NewPubSubBackplane rides the store's
// publish/subscribe (embedded or a server, typically the L2 client), one
// channel for the fleet (default "zaris:hybrid:invalidations"), one compact
// binary message per Set, Remove or RemoveByTag, no keys written and no
// polling. Publish also delivers in-process at once, so caches sharing one
// backplane hear each other without a round trip; a backplane drops the
// echo of its own messages. Pub/sub is fire-and-forget, so whenever the
// subscription ends other than by Close — the receiver fell behind and was
// cut off, the connection was lost, the server restarted — it subscribes
// again with backoff and then clears every subscriber's whole L1, since
// messages may have been missed meanwhile; an undecodable message is
// handled the same way. Until it is back, this instance's L1 converges as
// it would without a backplane.
//
// NewWatchBackplane is server-side invalidation: instead of messages the
// caches send, it follows the store's own changes — one watch (the SDK's
// cluster-wide prefix watch, without values) on the caches' KeyPrefix —
// so an L1 copy is evicted when its L2 entry changes by any writer,
// expiry and eviction included; Set, Remove and RemoveByTag publish
// nothing. A cache keeps the copy its own write made (the change comes
// back with the revision and version its write returned); a changed tag
// marker is read from L2 and applied. The watch resumes on a segment's
// new owner after a failover or a migration; what may still have been
// missed — a segment whose history is gone, a map in which a segment
// changed owner, a watch that ended — clears every L1, never leaving a
// copy stale (DECISIONS D49's rule).
//
// Choosing between the two network backplanes: NewWatchBackplane when
// anything but the caches writes their keys in L2 (it is then the only
// one that evicts what those writers change), or when a Set's cost
// matters — it needs no second round trip; measured against the pub/sub
// backplane on one 3-node cluster (docs/BENCHMARKS.md), about half the
// delivery latency at the median and 1.1–2.1 × the Sets per second.
// NewPubSubBackplane for large fleets or clusters whose partitions move
// often: the watch costs every owner node one stream and one event
// buffer per instance (WatchBackplaneOptions.Buffer), and every move
// clears every L1, where a pub/sub subscription that moves loses at
// most the messages published while it moved.
//
// NewJournalBackplane is for deployments without pub/sub: it needs nothing
// but KV — an invalidation journal in a Zaris store (a sequence key
// advanced by CAS, one entry per sequence with a TTL) that every instance
// polls. A journal reader that finds a hole it cannot fill clears its
// whole L1 rather than risk a missed invalidation. NewLocalBackplane fans
// out in-process only, for several caches in one process sharing one L2.
// Any other transport fits behind the Backplane interface.
//
// # Beyond the original
//
//   - Fail-safe: with FailSafeMaxDuration, a factory error (or hard timeout)
//     with a stale value at hand returns the stale value, then serves it from
//     L1 for FailSafeThrottleDuration before trying the factory again.
//   - Timeouts: after FactorySoftTimeout, a stale value (if any) is returned
//     while the factory finishes in the background and refreshes both tiers;
//     after FactoryHardTimeout the factory's context is cancelled and the
//     call fails with ErrFactoryTimeout.
//   - The factory chooses its entry's options through FactoryContextFrom(ctx):
//     lifetimes, extra tags, or DoNotCache for a "not found" answer.
//   - Eager refresh: past EagerRefreshThreshold of an entry's lifetime, a hit
//     refreshes it in the background, once per generation of the entry.
//   - Flags per call skip L1 or L2 reads or writes, fail-safe, eager refresh
//     or materialization.
//
// # Edges
//
// A panicking factory yields a *PanicError (errors.Is ErrFactoryPanic) to
// every waiter; the key's flight is released. A value the serializer or L2
// refuses (sdk.ErrItemTooLarge, capacity) is still returned by GetOrCreate,
// just not cached; Set reports it. Keys that are empty, longer than
// MaxKeyLength (1024) or hold ASCII control bytes bypass the cache:
// GetOrCreate runs the factory and stores nothing, TryGet misses, Remove is
// a no-op, Set returns ErrInvalidKey. An L2 failure is logged and counted;
// GetOrCreate then behaves as on a miss.
package hybrid

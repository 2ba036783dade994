// Package cache is the distributed-cache integration of the Zaris SDK
// (SPEC R-SDK-1): the Go counterpart of .NET's IDistributedCache, backed by
// any sdk.Client — embedded (zaris://inproc/<name>) or remote — through the
// public sdk API only.
//
// It owns:
//
//   - the Cache interface (Get / Set / Refresh / Remove, nil on a miss) and
//     its implementation DistributedCache, with a key prefix per cache;
//   - entry expiration: absolute, relative-to-now and sliding, all honoured.
//     Unlike the .NET package described in the design articles (whose Refresh
//     is a no-op), sliding expiration really slides here: a Get or Refresh
//     of a sliding entry rewrites its time to live, and the absolute limit
//     caps it, so an entry never outlives its absolute deadline;
//   - the Provider: several named caches, one of them the default.
//
// # Stored format
//
// Every value is stored behind an 18-byte envelope header, so that a reader
// on any instance knows how to slide the entry without a side record:
//
//	offset size  field
//	0      1     magic 0xCA
//	1      1     format version, 1
//	2      8     sliding expiration in nanoseconds, big-endian uint64 (0 = none)
//	10     8     absolute deadline in Unix nanoseconds, big-endian int64 (0 = none)
//	18     …     the caller's bytes, unchanged
//
// The store's own time to live is the entry's current lifetime:
// min(sliding, deadline − now), or deadline − now without sliding, or none.
// A slide is a compare-and-swap rewrite of the same bytes with a fresh time
// to live (Put with IfMatchVersion) — it works the same embedded and remote,
// and a concurrent Set is never overwritten by a slide that read the older
// version. The header counts against the store's per-item cap
// (sdk.ErrItemTooLarge).
//
// Clocks: the absolute deadline is computed with Options.Now (default
// time.Now) and enforced both by the store's TTL and on read. Instances that
// share a cache should have synchronised clocks, as with any absolute
// expiration.
//
// The package imports only the public sdk API; it must not import server/*
// or internal/* packages.
package cache

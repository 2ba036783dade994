// Package store owns the Zaris store engine: the one in-memory implementation
// of a named store that the server and embedded mode (zaris://inproc/…) both
// run. There is never a second implementation (R-SDK-5, DESIGN.md).
//
// A store is 256 segments (R-PLACE-3). Each segment has its own lock, its own
// revision counter (a total order of the segment's mutations, R-KV-1) and a
// bounded op-log of those mutations ordered by revision (R-REP-1). Records are
// immutable once published: a write builds a new *Record, swaps it into the
// segment's table and appends the same pointer to the op-log, so readers, the
// op-log and snapshots share data without copying.
//
// Every mutation — a client write on the owner, a replica apply, a migration
// apply — goes through one apply path (segment.commitLocked) that installs the
// record, adjusts the memory accounting and logs the operation.
//
// Deletes are tombstones (R-KV-4): records with Deleted set, carrying the
// delete's revision, so a stale write older than the delete is refused; they
// are pruned once every replica has passed them (the segment's low-water mark).
//
// Memory (R-MEM): the store is a bounded buffer. Owned data is accounted per
// record; a background loop evicts by sampled LRU from 80 % of the cap down
// to 70 % every second, and at once when a write passes the trigger (the
// write only wakes it: it never pays for eviction inline). A write that would
// make one key's item size — a string's value, a collection's data as
// serialised (itemsize.go) — larger than the per-item cap, or a
// collection's accounted bytes larger than MaxCollectionBytes, is
// ItemTooLarge and changes nothing; in no-eviction
// mode a write that would exceed the cap is CapacityExceeded. With a process
// bound (MaxProcessBytes) eviction works below the cap while the process's
// RSS is over it.
//
// The package is pure in-memory: it must not import networking, the cluster,
// the wire protocol or the SDK.
package store

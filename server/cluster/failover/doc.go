// Package failover holds the failover rules of R-REP-3/4/5/7 as pure
// functions, one per file, each with a table test naming the failure it
// prevents. The invariant they serve: during a failover the partition map
// stays put; only the runtime's active owner moves, behind a per-partition
// epoch that never regresses. It is a leaf package.
package failover

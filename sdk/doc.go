// Package sdk is the Zaris Go client. One Client type serves every topology,
// chosen by the connection string (R-CLIENT-1):
//
//	zaris://inproc/<store>                 embedded: the store engine in this process
//	zaris://host:port[,host:port]/<store>  a server or cluster (native protocol)
//	zariss://…?ca=…&cert=…&key=…&token=…   the same over TLS, with a token
//
// Every method takes a context first. Expected outcomes — a miss, a version
// conflict, a full node — are statuses on the Result (Status, OK, Err), never
// Go errors; an error means transport, context or configuration trouble.
//
// Embedded mode (R-SDK-5) runs the very engine the server runs
// (server/store), with its TTL sweeper and evictor. Two Connects with the
// same inproc name share one store; different names are isolated. It offers
// no durability, no high availability and no sharing across processes: the
// data lives as long as some Client of that name is open in this process.
//
// Cluster (R-CLIENT-2..5). A remote Connect asks the first reachable seed for
// the cluster's routing map; a plain single node has none and is served over
// one connection. With a map the client holds one multiplexed connection per
// node (goroutines calling at once share its writes: the requests of callers
// waiting together leave in one) and an immutable routing table swapped
// atomically: routing a key is
// one placement call and one array index, and every operation — key
// operations, commands, watches — goes straight to the key's owner. The
// table stays honest three ways: the servers push each new map version, the
// client polls every DefaultMapPollInterval, and an answer that says the
// map is wrong (Moved, OwnershipChanging, Migrating, ReplicaSyncPending,
// ReplicaWriteRejected, Unavailable) refreshes it and retries at once,
// within WithMaxAttempts attempts and the call's deadline; only transient
// transport failures back off. Client.Routing reports the table.
//
// Bulk calls (R-CLIENT-4) — GetMany, PutMany, DeleteMany — are thin shells
// over ExecuteBatch. Results come back in the caller's order with a status
// per item; a bulk call is never a transaction. On a cluster the items are
// grouped by owner, one request per owner in parallel, and the items
// answered with a redirect are grouped again on the refreshed map.
//
// Data structures and coordination (R-DS): Hashes, Lists, Sets, SortedSets,
// Counters, Streams, Locks, Tx, Watch, PubSub and Scan are typed surfaces over
// one command path (Client.Do), identical embedded and remote. Locks are
// leases, not correctness fences: a paused holder may still act after its
// lease expired; enforce invariants with PutOptions.IfMatchVersion or Tx (see
// Locks).
//
// Watches and the change feed (R-DS-6, R-OPS-4): a cluster watch keeps, per
// segment, the position of the last change it delivered and resumes on a
// segment's new owner from there after a failover or a migration (no gap,
// no duplicate; a WatchResync event only when that history is gone).
// Client.Changes is the change feed over the same machinery, with a Cursor
// the consumer stores and resumes from (ErrCursorExpired when its history
// is gone).
//
// The package must not import server/cluster or any server networking: the
// embedded backend imports server/store only.
package sdk

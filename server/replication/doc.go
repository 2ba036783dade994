// Package replication ships each partition's op-log from its active owner
// to its replicas over the peer port (R-REP-1/2): catch-up by "operations
// after R", a snapshot when R is below the op-log's trim floor or belongs
// to another history, then a live stream; revision-guarded apply on the
// replica; the per-segment low-water mark that lets the owner prune
// tombstones; and the write barrier that makes a sync write wait for its
// quorum of replicas (ReplicationMode Sync, WriteQuorum All / Majority /
// BestEffort).
//
// One Manager runs per node. On every applied partition map (Apply) it
// starts a shipper per (owned partition, replica) and fences the replica
// sessions the map no longer allows; it serves the replica side of the
// protocol on the peer port (ServePeer, first byte cluster.PeerReplication).
//
// The decisions are pure functions with table tests (catchup.go:
// PlanCatchUp; quorum.go: QuorumNeed); the codec is pure and fuzzed
// (codec.go). The package imports the store engine and the cluster's map
// types; never a protocol front end or the SDK.
//
// # The protocol
//
// A session is one TCP connection from the owner to one replica's peer port,
// first byte 3 (cluster.PeerReplication). Then frames, each
//
//	uint32 big-endian length of what follows | uint8 type | msgpack body
//
// every body a positional msgpack array whose fields are append-only (a
// reader skips trailing fields it does not know). Owner → replica:
//
//	1 Hello      [version, store, cluster, from, partition, identity,
//	              generation, epoch, mapVersion, firstSegment, lastSegment,
//	              incarnation]
//	2 Ops        [segment, [op…]]   op = [kind, record, cmd|nil]
//	3 SnapBegin  [segment, revision, count]
//	4 SnapChunk  [segment, [record…]]
//	5 SnapEnd    [segment, revision, [op…]]   the ops: the segment's live
//	             transaction prepare markers (store.Snapshot.Prepared)
//	6 Ping       []
//
// Replica → owner:
//
//	129 HelloReply [status, message, [[segment, revision, identity, from,
//	                generation, incarnation]…], mapGeneration]
//	                status 0 ok, 1 retry, 2 refused; mapGeneration is the
//	                partition's ownership generation in the replica's map
//	130 Ack        [segment, revision, segment, revision, …]
//
// record = [key, value, version, revision, createdAt, expiresAt, deleted,
// kind, meta|nil] with meta = [contentType, labels|nil]; cmd = [op, key,
// [arg…]]. An Ops frame with no op, sent once per session for a segment
// the replica already holds level, tells it that its copy follows this
// owner. The replica answers every Ping with an Ack (possibly empty), and
// acknowledges the revision it applied for every segment a frame touched:
// under Sync once per read batch, as soon as it is applied; under Async at
// most once per Config.AsyncLinger (the tail of a burst by a timer). A session the replica's map does not allow is
// refused (HelloReply status 2, with the generation it knows), and a
// running session is closed when a new map stops allowing it.
//
// # Batching (issue 17)
//
// The store's commit hook (Store.SetCommitHook) marks a written segment
// dirty for its partition's shippers before the write returns. Under Async
// a shipper then gathers for AsyncLinger (1 ms) before it ships what is
// dirty; under Sync the write does not wake it: the write barrier ships
// (Wait calls hurry) — on the waiting writer's own goroutine when no pass
// is running and no snapshot is due (D100), else by waking the shipper —,
// or a 1 ms timer the write armed when no barrier asks does — a front end
// calls the barrier once its read batch is applied, so a pipelined batch
// leaves in one flush (D99). A batch's barrier
// is WaitAll: every partition it wrote is asked to ship before the first
// wait, so the partitions' round trips overlap and one SyncTimeout bounds
// the batch. The replica decodes
// into a reused frame body and op slice (everything it keeps is copied out,
// a record's key and value in one allocation).
//
// The leader's possession query (cluster.PeerPossession, byte 4) is
// answered by Possession: per segment the revision and the lease the copy
// follows, the live keys held, and the progress of the copies this node
// ships to.
package replication

package native

import "sync/atomic"

// RequestCounts are the requests a Server received since it started, for
// tests and operators: a bulk call that groups keys by owner shows exactly
// one OpBatch per owner on each owner's counters.
type RequestCounts struct {
	Requests   uint64 // every frame after the handshake
	Batches    uint64 // OpBatch frames
	BatchItems uint64 // items inside them
}

// counters are sharded by connection (conn.shard) and summed by Counts:
// one counter every request of every connection added to was a cache line
// both CPUs fought over (issue #17, D65).
type counters [counterShards]counterShard

const counterShards = 8 // a power of two

type counterShard struct {
	requests, batches, batchItems atomic.Uint64
	_                             [40]byte // one shard per cache line
}

// Counts returns the request counters.
func (s *Server) Counts() RequestCounts {
	var c RequestCounts
	for i := range s.counts {
		sh := &s.counts[i]
		c.Requests += sh.requests.Load()
		c.Batches += sh.batches.Load()
		c.BatchItems += sh.batchItems.Load()
	}
	return c
}

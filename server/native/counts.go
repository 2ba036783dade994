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

type counters struct {
	requests, batches, batchItems atomic.Uint64
}

// Counts returns the request counters.
func (s *Server) Counts() RequestCounts {
	return RequestCounts{Requests: s.counts.requests.Load(), Batches: s.counts.batches.Load(),
		BatchItems: s.counts.batchItems.Load()}
}

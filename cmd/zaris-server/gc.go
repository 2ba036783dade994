package main

import (
	"os"
	"runtime/debug"
)

// tuneGC sets the garbage collector's soft memory limit for a cache server
// unless the operator chose with GOMEMLIMIT: the limit is what keeps the
// process inside its bound (--memory-max-rss): the collector runs as often as
// it must to stay under it, and the eviction loop evicts more while RSS is
// over it (docs/DECISIONS.md D12 and the RSS bound). GOGC stays Go's default
// of 100 unless set (D74: 400 let RSS run to five times the live records
// under overwrites, for no CPU measured back).
func tuneGC(memoryMaxBytes, memoryMaxRSS int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		if limit := gcMemoryLimit(memoryMaxBytes, memoryMaxRSS); limit > 0 {
			debug.SetMemoryLimit(limit)
		}
	}
}

// gcMemoryLimit is the Go runtime's soft memory limit for a process bounded
// at memoryMaxRSS: GCLimitFraction of it, the rest left to what the runtime
// does not count (the binary's text, thread stacks outside the heap, pages
// not yet returned). With no RSS bound, 2 × the cap + 256 MiB, as before.
func gcMemoryLimit(memoryMaxBytes, memoryMaxRSS int64) int64 {
	if memoryMaxRSS > 0 {
		return int64(float64(memoryMaxRSS) * gcLimitFraction)
	}
	if memoryMaxBytes > 0 {
		return 2*memoryMaxBytes + 256<<20
	}
	return 0
}

// gcLimitFraction is GOMEMLIMIT / --memory-max-rss.
const gcLimitFraction = 0.90

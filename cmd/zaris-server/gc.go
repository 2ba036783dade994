package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// tuneGC sets the garbage collector's soft memory limit for a cache server
// unless the operator chose with GOMEMLIMIT: the limit is what keeps the
// process inside its bound (--memory-max-rss): the collector runs as often as
// it must to stay under it, and the eviction loop evicts more while RSS is
// over it (docs/DECISIONS.md D12 and the RSS bound). GOGC stays Go's default
// of 100 unless set (D74: 400 let RSS run to five times the live records
// under overwrites, for no CPU measured back) — except that a heap below
// the floor may gather up to the floor's garbage (keepHeapFloor, D83).
func tuneGC(memoryMaxBytes, memoryMaxRSS int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		if limit := gcMemoryLimit(memoryMaxBytes, memoryMaxRSS); limit > 0 {
			debug.SetMemoryLimit(limit)
		}
	}
	if os.Getenv("GOGC") == "" {
		keepHeapFloor(heapFloor(memoryMaxBytes))
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

// maxHeapFloor bounds the garbage a small heap may gather before a
// collection (keepHeapFloor): at most a quarter of the data cap.
const maxHeapFloor = 64 << 20

// heapFloor is the garbage keepHeapFloor lets a small heap gather:
// maxHeapFloor, or a quarter of the data cap when that is smaller.
func heapFloor(memoryMaxBytes int64) uint64 {
	if memoryMaxBytes > 0 && memoryMaxBytes/4 < maxHeapFloor {
		return uint64(memoryMaxBytes / 4)
	}
	return maxHeapFloor
}

// gcPercentFor is the GOGC that sets the next collection's heap goal to
// live + floor when that is above Go's default goal of 2 × live: a heap of
// 20 MiB of records otherwise collects every 20 MiB allocated, several
// times a second under a pipelined write load, each collection's marking
// stealing the event loop's CPU (p99 -P 16 SET 3.3–4.7 ms against
// 2.6–2.7 with no collection at all). A heap over the floor keeps 100.
// The runtime's minimum goal grows with GOGC (runtimeHeapMinimum × GOGC /
// 100): a nearly empty heap's GOGC is held where that minimum is live +
// floor too, or a heap of 1 MiB would wait for 256 MiB of garbage.
func gcPercentFor(live, floor uint64) int {
	if live == 0 || floor <= live {
		return 100
	}
	pct := (floor*100 + live - 1) / live
	if most := (live + floor) * 100 / runtimeHeapMinimum; pct > most {
		pct = most
	}
	return int(max(pct, 100))
}

// runtimeHeapMinimum is the Go runtime's smallest heap goal at GOGC 100.
const runtimeHeapMinimum = 4 << 20

// gcSentinel is garbage whose finalizer runs once per collection.
type gcSentinel struct{ _ [16]byte }

var (
	// floorBytes is the heap floor keepHeapFloor applies; 0 = none (GOGC
	// is left as it is).
	floorBytes atomic.Uint64
	// floorPercent is the GOGC the floor set last (0 before it set one).
	floorPercent atomic.Int32
	floorArmed   sync.Once
)

// keepHeapFloor sets GOGC after every collection from the live heap it left
// (gcPercentFor) for the floor given; 0 stops setting it. One watcher per
// process however often it is called. GOGC in the environment wins: the
// caller does not call it then.
func keepHeapFloor(floor uint64) {
	floorBytes.Store(floor)
	floorArmed.Do(armHeapFloor)
}

func armHeapFloor() {
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var arm func()
	arm = func() {
		runtime.SetFinalizer(new(gcSentinel), func(*gcSentinel) {
			metrics.Read(live)
			if floor := floorBytes.Load(); floor > 0 && live[0].Value.Kind() == metrics.KindUint64 {
				pct := gcPercentFor(live[0].Value.Uint64(), floor)
				debug.SetGCPercent(pct)
				floorPercent.Store(int32(pct))
			}
			arm()
		})
	}
	arm()
}

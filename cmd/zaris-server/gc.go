package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/server/store"
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
		floor := heapFloor(memoryMaxBytes)
		keepHeapFloor(floor)
		collectAfterIndexResizes(floor)
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
			noteCollection(store.DroppedIndexBytes())
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

// The index arrays a wave of record-table resizes drops (D97). A store's
// segments fill evenly, so their tables grow by half at about the same
// key count and drop two thirds of the index within a few thousand
// writes: 10 MiB at 700 k keys of the 1 M-key load. At GOGC 100 that
// garbage waits for the next cycle, up to a doubling of the heap away,
// and RSS keeps it until then: the RSS a 1 M-key load leaves behind moved
// between 106 and 118 B a key with where the cycles fell. Collecting once
// the wave is over frees it for the records that follow.

// droppedAtCollection is store.DroppedIndexBytes at the last collection's
// end: what was dropped before it is free again.
var droppedAtCollection atomic.Int64

// noteCollection records what a finished collection freed of the dropped
// index arrays.
func noteCollection(dropped int64) {
	for {
		old := droppedAtCollection.Load()
		if dropped <= old || droppedAtCollection.CompareAndSwap(old, dropped) {
			return
		}
	}
}

const (
	// resizeWaveQuiet is how long no resize must drop arrays before the
	// wave counts as over: the waves of a fast load last tens of
	// milliseconds, their resizes under a millisecond apart.
	resizeWaveQuiet = 50 * time.Millisecond
	// resizeWaveMaxWait bounds the wait for a quiet moment: a slow load's
	// wave may last minutes.
	resizeWaveMaxWait = time.Second
	// droppedIndexShare: a collection for the dropped arrays when they are
	// at least 1/droppedIndexShare of the live heap.
	droppedIndexShare = 32
)

// heapNow is the heap as runtime/metrics gives it.
type heapNow struct {
	// objects is the heap's objects, dead ones not yet freed included.
	objects uint64
	// collecting: a collection is running.
	collecting bool
}

// collectForDroppedIndex is the rule that starts a collection after a wave
// of resizes: when the live heap (the heap's objects less the arrays
// dropped since the last collection) is at least the floor, the dropped
// arrays are a 32nd of it or more, and no collection is running.
//   - Under the floor the heap may gather the floor's garbage anyway
//     (keepHeapFloor): a collection there would add the cycles the floor
//     saves, for RSS the floor allows.
//   - A smaller share is not worth a cycle, which marks the whole live
//     heap: a slow load's resizes, spread over a long wave, would each
//     start one.
//   - A running collection frees the arrays dropped before it started, and
//     a forced one would wait for it and then mark the heap again: the
//     1 M-key load's wave itself brings the heap to its trigger, and five
//     runs in six collected twice in a row.
func collectForDroppedIndex(h heapNow, droppedSince, floor uint64) bool {
	live := h.objects - min(droppedSince, h.objects)
	return live > 0 && live >= floor && droppedSince >= live/droppedIndexShare && !h.collecting
}

var collectAfterResizesOnce sync.Once

// collectAfterIndexResizes starts, once per process, the goroutine that
// collects after each wave of index resizes when collectForDroppedIndex
// says so (resizeWaves). It sleeps on the store's signal while no table
// resizes.
func collectAfterIndexResizes(floor uint64) {
	collectAfterResizesOnce.Do(func() {
		w := resizeWaves{floor: floor, wake: make(chan struct{}, 1), heap: readHeap, collect: runtime.GC}
		store.NotifyIndexDropped(w.wake)
		go w.run(nil)
	})
}

// resizeWaves waits for the end of each wave of index resizes (no resize
// for resizeWaveQuiet, or resizeWaveMaxWait after its first) and then
// collects if the rule says so.
type resizeWaves struct {
	floor   uint64
	wake    chan struct{} // store.NotifyIndexDropped's
	heap    func() heapNow
	collect func()
}

func (w resizeWaves) run(stop <-chan struct{}) {
	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	for {
		select {
		case <-stop:
			return
		case <-w.wake:
		}
		first := time.Now()
		quiet.Reset(resizeWaveQuiet)
	wave:
		for {
			select {
			case <-stop:
				return
			case <-w.wake:
				if time.Since(first) < resizeWaveMaxWait {
					quiet.Reset(resizeWaveQuiet)
				}
			case <-quiet.C:
				break wave
			}
		}
		dropped := store.DroppedIndexBytes()
		since := uint64(max(dropped-droppedAtCollection.Load(), 0))
		if collectForDroppedIndex(w.heap(), since, w.floor) {
			w.collect()
			noteCollection(dropped)
		}
	}
}

// readHeap reads the heap's objects and whether a collection is running:
// every cycle stops the world twice, at its start and at the end of its
// marking, so the runtime's count of those pauses is odd while one runs.
// (Were a runtime to pause more often, the count would run ahead of twice
// the cycles and collecting would always be true: no collection forced,
// as before D97. TestGCRunningIsReadFromItsPauses checks the count.)
func readHeap() heapNow {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/sched/pauses/total/gc:seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 ||
		s[2].Value.Kind() != metrics.KindFloat64Histogram {
		return heapNow{collecting: true} // an unknown runtime: never force
	}
	var pauses uint64
	for _, n := range s[2].Value.Float64Histogram().Counts {
		pauses += n
	}
	return heapNow{objects: s[0].Value.Uint64(), collecting: pauses > 2*s[1].Value.Uint64()}
}

package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/server/store"
)

// TestGCPercentFor names what each rule of the heap floor prevents.
func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name        string
		live, floor uint64
		want        int
	}{
		{"a small heap of records gathers the floor's garbage, not its own size's (a collection every 20 MiB, several a second under writes)", 20 * mib, 64 * mib, 320},
		{"the goal rounds up: never below live + floor", 10 * mib, 64 * mib, 640},
		{"a small heap's goal is not the runtime's minimum scaled by GOGC (3 MiB live would wait for 85 MiB of garbage)", 3 * mib, 64 * mib, 1675},
		{"a heap at the floor keeps Go's default", 64 * mib, 64 * mib, 100},
		{"a heap over the floor keeps Go's default (2 × live: RSS per key is a goal of its own)", 150 * mib, 64 * mib, 100},
		{"a nearly empty heap waits for the floor, not for 4 MiB × GOGC (no overflow either)", 1, 64 * mib, 1600},
		{"before the first collection reports a live heap: the default", 0, 64 * mib, 100},
		{"no floor: the default", 20 * mib, 0, 100},
	} {
		if got := gcPercentFor(c.live, c.floor); got != c.want {
			t.Errorf("%s: gcPercentFor(%d, %d) = %d, want %d", c.name, c.live, c.floor, got, c.want)
		}
	}
}

// TestHeapFloor: 64 MiB, or a quarter of a smaller data cap (a server
// capped at 32 MiB of data must not let 64 MiB of garbage gather).
func TestHeapFloor(t *testing.T) {
	for _, c := range []struct {
		cap  int64
		want uint64
	}{{1 << 30, 64 << 20}, {256 << 20, 64 << 20}, {32 << 20, 8 << 20}, {0, 64 << 20}} {
		if got := heapFloor(c.cap); got != c.want {
			t.Errorf("heapFloor(%d) = %d, want %d", c.cap, got, c.want)
		}
	}
}

// TestKeepHeapFloorCollectsLessOften: the same garbage from a small live
// heap takes far fewer collections with the floor kept than at GOGC 100.
func TestKeepHeapFloorCollectsLessOften(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	keepHeapFloor(0) // none (another test's run may have started one)
	defer keepHeapFloor(0)
	debug.SetGCPercent(100)
	churn := func() uint32 {
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		var sink [][]byte
		for range 64 << 10 { // 256 MiB in 4 KiB pieces, 1 MiB live at a time
			if len(sink) == 256 {
				sink = sink[:0]
			}
			sink = append(sink, make([]byte, 4<<10))
		}
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		return after.NumGC - before.NumGC
	}
	runtime.GC()
	plain := churn()

	floorPercent.Store(0)
	keepHeapFloor(64 << 20)
	// The floor applies from the collection after it (its finalizer runs
	// on the finalizer goroutine, after the collection returned).
	deadline := time.Now().Add(10 * time.Second)
	for floorPercent.Load() <= 100 {
		if time.Now().After(deadline) {
			t.Fatalf("the floor set no GOGC after collections for 10 s (last %d)", floorPercent.Load())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	floored := churn()
	t.Logf("collections for 256 MiB of garbage: %d at GOGC 100, %d with the floor (GOGC %d)", plain, floored, floorPercent.Load())
	if floored < 2 {
		t.Fatalf("256 MiB of garbage gathered with %d collections: the floor let the heap grow past live + 64 MiB", floored)
	}
	if plain < 8 || floored*4 > plain {
		t.Fatalf("collections for 256 MiB of garbage: %d at GOGC 100, %d with the 64 MiB floor", plain, floored)
	}
}

// TestCollectForDroppedIndex names what each part of the rule prevents
// (D97).
func TestCollectForDroppedIndex(t *testing.T) {
	const mib = 1 << 20
	at := func(objects uint64) heapNow { return heapNow{objects: objects} }
	for _, c := range []struct {
		name           string
		heap           heapNow
		dropped, floor uint64
		want           bool
	}{
		{"a wave's arrays, a 32nd of a heap over the floor, no cycle due: collected, or they stay in RSS until the next cycle",
			at(85 * mib), 10 * mib, 64 * mib, true},
		{"exactly a 32nd", at(66 * mib), 2 * mib, 64 * mib, true},
		{"a heap under the floor gathers the floor's garbage anyway: no cycle the floor saves", at(60 * mib), 10 * mib, 64 * mib, false},
		{"the arrays are not counted as live", at(70 * mib), 10 * mib, 64 * mib, false},
		{"a few resizes of a slow load: not worth marking the whole heap", at(85 * mib), 1 * mib, 64 * mib, false},
		{"nothing dropped since the last cycle (one ran during the wave)", at(85 * mib), 0, 64 * mib, false},
		{"a cycle is running: a forced one would wait for it and mark the heap again",
			heapNow{objects: 96 * mib, collecting: true}, 10 * mib, 64 * mib, false},
		{"an empty heap", heapNow{}, 0, 0, false},
	} {
		if got := collectForDroppedIndex(c.heap, c.dropped, c.floor); got != c.want {
			t.Errorf("%s: collectForDroppedIndex(%+v, %d, %d) = %v", c.name, c.heap, c.dropped, c.floor, got)
		}
	}
}

// TestGCRunningIsReadFromItsPauses: readHeap's count of the collector's
// pauses says no collection runs right after one finished, and says one
// runs at some point of a busy allocation loop (were the runtime to pause
// more than twice a cycle, the first check fails: D97's rule would then
// never collect).
func TestGCRunningIsReadFromItsPauses(t *testing.T) {
	runtime.GC()
	require.False(t, readHeap().collecting, "just after runtime.GC returned")
	var sink [][]byte
	deadline := time.Now().Add(10 * time.Second)
	for !readHeap().collecting {
		if time.Now().After(deadline) {
			t.Fatal("no collection seen running in 10 s of allocation")
		}
		for range 1000 {
			sink = append(sink, make([]byte, 1024))
		}
		if len(sink) > 64<<10 {
			sink = sink[:0]
		}
	}
	runtime.KeepAlive(sink)
}

// TestAResizeWaveIsCollected: a real store filled until its tables grow
// drops index arrays; after the wave, the watcher collects, though the
// collector is otherwise off.
func TestAResizeWaveIsCollected(t *testing.T) {
	const n = 1 << 20
	keys := make([]string, n) // made first: live, not garbage
	for i := range keys {
		keys[i] = fmt.Sprintf("key:%012d", i)
	}
	value := make([]byte, 32)
	s, err := store.New(store.DefaultConfig())
	require.NoError(t, err)
	defer s.Close()

	runtime.GC()
	old := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(old)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	collected := make(chan int64, 16)
	w := resizeWaves{wake: make(chan struct{}, 1), heap: readHeap, collect: func() {
		runtime.GC()
		collected <- store.DroppedIndexBytes()
	}}
	store.NotifyIndexDropped(w.wake)
	defer store.StopIndexDropped(w.wake)
	stop := make(chan struct{})
	defer close(stop)
	go w.run(stop)

	start := store.DroppedIndexBytes()
	check := func(dropped int64) {
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		require.Greater(t, after.NumGC, before.NumGC)
		t.Logf("collected after %d MiB of index arrays were dropped", (dropped-start)>>20)
	}
	for i, k := range keys {
		s.Put(k, value, nil)
		if i%1024 == 0 {
			select {
			case dropped := <-collected:
				check(dropped)
				return
			default:
			}
		}
	}
	select {
	case dropped := <-collected:
		check(dropped)
	case <-time.After(10 * time.Second):
		t.Fatalf("%d keys dropped %d MiB of index arrays and no collection followed in 10 s", n,
			(store.DroppedIndexBytes()-start)>>20)
	}
}

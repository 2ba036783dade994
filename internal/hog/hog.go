// Package hog burns CPU on purpose: spinning goroutines that make a machine
// as busy as a noisy neighbour would, for `make test-stress` (through
// cmd/hog, a separate process) and for the process tests of test/chaos that
// prove a slow node is not taken for a dead one. It is a leaf package.
package hog

import (
	"context"
	"runtime"
	"sync"
)

// Spin runs workers goroutines that never block (workers ≤ 0 = 2 ×
// runtime.NumCPU()) until ctx ends, and returns once they all stopped.
func Spin(ctx context.Context, workers int) {
	if workers <= 0 {
		workers = 2 * runtime.NumCPU()
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			x := uint64(1)
			for i := 0; ; i++ {
				x = x*6364136223846793005 + 1442695040888963407 // busy arithmetic, no allocation
				if i%(1<<16) == 0 && ctx.Err() != nil {
					sink(x)
					return
				}
			}
		})
	}
	wg.Wait()
}

var sinkMu sync.Mutex
var sunk uint64

// sink keeps the loop's result observable, so the compiler keeps the loop.
func sink(x uint64) {
	sinkMu.Lock()
	sunk ^= x
	sinkMu.Unlock()
}

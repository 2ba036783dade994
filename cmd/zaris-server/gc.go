package main

import (
	"os"
	"runtime/debug"
)

// tuneGC sets the garbage collector for a cache server unless the operator
// chose with GOGC / GOMEMLIMIT: the heap is mostly long-lived records, so the
// default GOGC=100 collects far more often than the churn needs, and the
// pauses show up as tail latency. A soft memory limit keeps the process near
// its budget: the owned-data cap plus room for replicas, buffers and garbage.
func tuneGC(memoryMaxBytes int64) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" && memoryMaxBytes > 0 {
		debug.SetMemoryLimit(2*memoryMaxBytes + 256<<20)
	}
}

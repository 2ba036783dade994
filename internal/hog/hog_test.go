package hog

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// Spin keeps the CPUs busy while ctx lives and returns when it ends.
func TestSpinBurnsCPUAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Spin(ctx, 2); close(done) }()
	start := cpuTime(t)
	deadline := time.Now().Add(10 * time.Second)
	for cpuTime(t)-start < 100*time.Millisecond { // the spinners used CPU: an event, not a sleep
		if time.Now().After(deadline) {
			t.Fatal("no CPU burnt in 10 s")
		}
		runtime.Gosched()
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Spin did not return after its context ended")
	}
}

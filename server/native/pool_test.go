package native

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testscale"
)

// gauge tracks how many tasks run at once and the most ever seen.
type gauge struct {
	now, peak atomic.Int32
}

func (g *gauge) enter() {
	n := g.now.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (g *gauge) leave() { g.now.Add(-1) }

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testscale.Eventually(t, 5*time.Second, time.Millisecond, what, cond)
}

// MaxWorkers bounds concurrency: with many submitters and tasks that block,
// exactly max run, the other submitters wait (the push-back on the
// connection), and everything runs once the tasks are released.
func TestPoolBoundsConcurrency(t *testing.T) {
	const minW, maxW, submitters, perSubmitter = 2, 8, 16, 25
	p := newPool(minW, maxW)
	var g gauge
	var done atomic.Int32
	gate := make(chan struct{})
	var submitted sync.WaitGroup
	for range submitters {
		submitted.Add(1)
		go func() {
			defer submitted.Done()
			for range perSubmitter {
				p.submit(func() {
					g.enter()
					defer g.leave()
					<-gate
					done.Add(1)
				})
			}
		}()
	}
	waitUntil(t, "max workers busy", func() bool { return g.now.Load() == maxW })
	if n := p.running.Load(); n > maxW {
		t.Fatalf("%d workers for a max of %d", n, maxW)
	}
	if n := done.Load(); n != 0 {
		t.Fatalf("%d tasks finished while gated", n)
	}
	close(gate)
	submitted.Wait()
	waitUntil(t, "every task", func() bool { return done.Load() == submitters*perSubmitter })
	if peak := g.peak.Load(); peak != maxW {
		t.Fatalf("peak concurrency %d, want exactly max %d", peak, maxW)
	}
	p.close()
	if n := p.running.Load(); n != 0 {
		t.Fatalf("%d workers left after close", n)
	}
}

// Tasks submitted one after another reuse the warm workers: no growth past
// min when nothing runs concurrently.
func TestPoolReusesIdleWorkers(t *testing.T) {
	p := newPool(2, 64)
	defer p.close()
	for range 1000 {
		ran := make(chan struct{})
		p.submit(func() { close(ran) })
		<-ran
	}
	// A worker that has just finished may not be receiving yet, so an
	// occasional extra one is allowed; unbounded growth is not.
	if n := p.running.Load(); n > 4 {
		t.Fatalf("%d workers after sequential submits with min 2", n)
	}
}

// close waits for running tasks: when it returns, every task that had
// started has finished.
func TestPoolCloseWaitsForRunningTasks(t *testing.T) {
	p := newPool(1, 4)
	var g gauge
	var finished atomic.Int32
	gate := make(chan struct{})
	for range 4 {
		p.submit(func() {
			g.enter()
			defer g.leave()
			<-gate
			finished.Add(1)
		})
	}
	waitUntil(t, "four running tasks", func() bool { return g.now.Load() == 4 })
	closed := make(chan struct{})
	go func() { p.close(); close(closed) }()
	<-p.stop // close has begun
	select {
	case <-closed:
		t.Fatal("close returned while tasks were still running")
	case <-time.After(50 * time.Millisecond): // a negative check: close must still be waiting
	}
	close(gate)
	<-closed
	if n := finished.Load(); n != 4 {
		t.Fatalf("close returned with %d of 4 tasks finished", n)
	}
	p.close() // safe twice
}

package server

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The freeze fence (D22). An active owner serves without a lease: if its
// process is frozen (SIGSTOP, a VM pause, a long stall) past failure
// detection, the leader fails it over, and when it resumes its connection
// goroutines would answer the requests queued in their sockets — stale
// reads, and under async replication acknowledged writes that are lost —
// before the node hears the newer map. So the node watches itself: a
// ticker records the monotonic time of its last run, and every read batch
// of the native and RESP front ends and every REST request compares the
// time it read once with that tick (goroutines resume in any order: the
// request paths must not count on the ticker having run first). A stall
// over cluster.Timings.FreezeThreshold fences the node — no segment owned,
// every client operation answers Moved — until cluster.Reconfirm says its
// map is current again; ownership is then re-aligned to the map the node
// applied, as the map-apply path aligns it.
//
// Trace of the race the ordering below closes: the ticker and a reader
// resume together; the ticker fences BEFORE it stores its new tick, so a
// reader that loads the new tick finds the segments already unowned, and a
// reader that loads the old one fences itself (fence is idempotent).

// freezeTick is the detector's cadence.
const freezeTick = 50 * time.Millisecond

// freezeDetector is the lock-free half of the fence, read on the hot path.
type freezeDetector struct {
	base      time.Time    // monotonic origin of last
	last      atomic.Int64 // nanoseconds from base to the ticker's last run
	threshold time.Duration
}

func newFreezeDetector(threshold time.Duration) *freezeDetector {
	d := &freezeDetector{base: time.Now(), threshold: threshold}
	return d
}

// stall is how long before now the ticker last ran.
func (d *freezeDetector) stall(now time.Time) time.Duration {
	return time.Duration(int64(now.Sub(d.base)) - d.last.Load())
}

func (d *freezeDetector) mark(now time.Time) { d.last.Store(int64(now.Sub(d.base))) }

// shouldFence is the fence rule: a node fences itself when it went without
// running for longer than threshold, unless it is already fenced or has no
// peer that could have taken its segments over (a single node, or no map
// yet: nothing owned).
func shouldFence(stall, threshold time.Duration, peers int, fenced bool) bool {
	return stall > threshold && peers > 0 && !fenced
}

// freezeCheck is the front ends' hook, called once per read batch (once
// per REST request) with a time read once for it, before the batch runs.
func (n *Node) freezeCheck(now time.Time) {
	if n.freeze.stall(now) > n.freeze.threshold {
		n.fence(now)
	}
}

// fence unowns every segment unless the rule says otherwise, and starts
// re-confirming the map.
func (n *Node) fence(now time.Time) {
	n.ownMu.Lock()
	select {
	case <-n.freezeStop: // stopping: the ticker no longer runs
		n.ownMu.Unlock()
		return
	default:
	}
	stall := n.freeze.stall(now) // again, under the lock: the ticker may have fenced already
	peers := 0
	if n.aligned != nil {
		peers = len(n.aligned.Nodes) - 1
	}
	if !shouldFence(stall, n.freeze.threshold, peers, n.fenced.Load()) {
		n.ownMu.Unlock()
		return
	}
	n.fenced.Store(true)
	for i := range n.store.Segments() {
		n.store.Segment(uint16(i)).SetOwned(false)
	}
	// The freeze is handled: later checks measure from here, so a ticker
	// that runs only after the fence was lifted does not fence again. Only
	// now: a reader that loads this tick skips the lock, so every segment
	// must already be unowned (marked before the loop, a resumed reader
	// served a stale read from a segment the loop had not reached yet).
	n.freeze.mark(now)
	n.bg.Add(1) // freezeStop is open and cannot close while ownMu is held
	go func() {
		defer n.bg.Done()
		n.reconfirm(now)
	}()
	n.ownMu.Unlock()
	n.fences.Inc()
	n.log.Warn("frozen for "+stall.Round(time.Millisecond).String()+": not serving until the map is re-confirmed",
		"frozen", stall.String(), "threshold", n.freeze.threshold.String())
}

// startFreezeDetector starts the ticker (Start, once the cluster runs).
func (n *Node) startFreezeDetector() {
	n.ownMu.Lock()
	defer n.ownMu.Unlock()
	select {
	case <-n.freezeStop:
		return
	default:
	}
	n.freeze.mark(time.Now())
	n.bg.Add(1)
	go n.freezeLoop()
}

// stopFreezeDetector stops the ticker and any re-confirmation; a fenced
// node stays fenced. Safe to call more than once.
func (n *Node) stopFreezeDetector() {
	n.ownMu.Lock()
	select {
	case <-n.freezeStop:
	default:
		close(n.freezeStop)
	}
	n.ownMu.Unlock()
	n.bg.Wait()
}

// reconfirm waits until the cluster re-confirmed the map after a freeze
// detected at since, then serves the segments the applied map gives this
// node again.
func (n *Node) reconfirm(since time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-n.freezeStop:
			cancel()
		case <-ctx.Done():
		}
	}()
	cl := n.Cluster()
	if cl == nil || cl.Reconfirm(ctx, since) != nil {
		return // stopping: the node stays fenced
	}
	n.ownMu.Lock()
	n.fenced.Store(false)
	var version uint64
	if m := n.aligned; m != nil {
		version = m.Version
		n.applyOwnership(m, true)
	}
	n.ownMu.Unlock()
	n.log.Info("map re-confirmed after a freeze: serving again", "map_version", version,
		"fenced_for", time.Since(since).Round(time.Millisecond).String())
}

// freezeLoop is the detector's ticker; it stops with the node.
func (n *Node) freezeLoop() {
	defer n.bg.Done()
	t := time.NewTicker(freezeTick)
	defer t.Stop()
	for {
		select {
		case <-n.freezeStop:
			return
		case <-t.C:
			now := time.Now()
			if n.freeze.stall(now) > n.freeze.threshold {
				n.fence(now) // before the tick is stored: see the trace above
			}
			n.freeze.mark(now)
		}
	}
}

func newFenceCounter() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: "zaris_freeze_fences_total",
		Help: "Times this node fenced itself after its process was frozen or starved past the freeze threshold."})
}

package server

import (
	"testing"
	"time"
)

func TestShouldFence(t *testing.T) {
	const threshold = time.Second
	for _, tc := range []struct {
		name   string
		stall  time.Duration
		peers  int
		fenced bool
		want   bool
	}{
		{"a frozen owner with peers fences: prevents stale reads and lost writes after a failover it slept through", 4 * time.Second, 2, false, true},
		{"just over the threshold fences: prevents serving through a freeze shorter than failover but long enough to matter", threshold + time.Millisecond, 1, false, true},
		{"a tick late by scheduling jitter does not fence: prevents Moved storms under load", 120 * time.Millisecond, 2, false, false},
		{"exactly the threshold does not fence: prevents fencing on the boundary", threshold, 2, false, false},
		{"a single node never fences: nothing can have taken over, prevents a lone node refusing its own data", time.Minute, 0, false, false},
		{"an already fenced node does not fence again: prevents a second re-confirmation racing the first", 4 * time.Second, 2, true, false},
		{"a reader that loaded a tick newer than its clock read does not fence: prevents a negative stall counting", -time.Millisecond, 2, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := shouldFence(tc.stall, threshold, tc.peers, tc.fenced); got != tc.want {
				t.Fatalf("shouldFence(%v, %v, %d, %v) = %v, want %v", tc.stall, threshold, tc.peers, tc.fenced, got, tc.want)
			}
		})
	}
}

func TestFreezeDetectorStall(t *testing.T) {
	d := newFreezeDetector(time.Second)
	now := d.base.Add(10 * time.Second)
	d.mark(now)
	if got := d.stall(now.Add(3 * time.Second)); got != 3*time.Second {
		t.Fatalf("stall = %v, want 3s", got)
	}
	if got := d.stall(now.Add(-time.Millisecond)); got >= 0 {
		t.Fatalf("stall before the tick = %v, want negative", got)
	}
}

// BenchmarkFreezeCheck is the hot-path cost of the fence per read batch:
// one clock read and one atomic load (the front ends call it once per
// batch, never per request).
func BenchmarkFreezeCheck(b *testing.B) {
	d := newFreezeDetector(time.Hour) // the benchmark runs longer than a real threshold
	d.mark(time.Now())
	fenced := 0
	for b.Loop() {
		if d.stall(time.Now()) > d.threshold {
			fenced++
		}
	}
	if fenced != 0 {
		b.Fatal("fenced")
	}
}

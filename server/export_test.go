package server

import "time"

// SimulateFreeze makes n look frozen for d — its detector's last tick is
// moved d back — and runs the front ends' check as a read batch would.
func SimulateFreeze(n *Node, d time.Duration) {
	n.freeze.last.Add(-int64(d))
	n.freezeCheck(time.Now())
}

// BackdateTick moves n's freeze detector's last tick d back, without a
// check: the next check (FreezeCheck) or tick finds the stall.
func BackdateTick(n *Node, d time.Duration) { n.freeze.last.Add(-int64(d)) }

// FreezeCheck runs the front ends' once-per-read-batch check.
func FreezeCheck(n *Node, now time.Time) { n.freezeCheck(now) }

// Fenced reports whether n is fenced.
func Fenced(n *Node) bool { return n.fenced.Load() }

package server

import "time"

// SimulateFreeze makes n look frozen for d — its detector's last tick is
// moved d back — and runs the front ends' check as a read batch would.
func SimulateFreeze(n *Node, d time.Duration) {
	n.freeze.last.Add(-int64(d))
	n.freezeCheck(time.Now())
}

// Fenced reports whether n is fenced.
func Fenced(n *Node) bool { return n.fenced.Load() }

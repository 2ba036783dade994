package cluster

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// Re-confirming the map after a freeze (D22). A node whose process was
// frozen past failure detection may have been failed over while it slept:
// the server fences it (no segment owned) and calls Reconfirm, which
// returns once the node has heard from the current control-plane leader
// after the freeze and folded the log up to the commit index it learned —
// only then is its applied map at least as new as any failover committed
// while it was frozen.

// FreezeThreshold is how long a node's process may go without running (a
// SIGSTOP, a VM pause, a long stall) before it fences itself: 2 × the
// gossip probe interval (1 s with the defaults). It must stay well below
// the fastest failover — about probe interval × (2 + SuspicionMult),
// 3 s with the defaults — so a node that could have been failed over
// always notices it was frozen.
func (t Timings) FreezeThreshold() time.Duration { return 2 * t.GossipProbeInterval }

// commitRound is how long contact with the leader must last before the
// commit index a follower holds counts as learned after the freeze:
// hashicorp/raft's heartbeats carry no commit index, its replication
// loop sends one every CommitTimeout to 2 × CommitTimeout.
func (t Timings) commitRound() time.Duration { return max(4*t.RaftCommit, 100*time.Millisecond) }

// reconfirmView is what Reconfirm observes of a follower on each poll.
type reconfirmView struct {
	since       time.Time // the freeze was detected (the node resumed) at since
	firstAfter  time.Time // first leader contact seen after since (zero: none yet)
	lastContact time.Time // raft's last contact with a leader
	round       time.Duration
	target      uint64 // commit index learned after the freeze (0: not yet)
	folded      uint64 // the fold consumed the log up to here
	mapCurrent  bool   // the node applied the fold's map (OnMap ran)
}

// reconfirmStep is the follower's rule: a commit index counts as learned
// once leader contact after the freeze has lasted a commit round; the map
// is re-confirmed once the fold reached that index and the node applied
// the fold's map. It returns the target to keep and whether the node may
// serve again.
func reconfirmStep(v reconfirmView) (target uint64, learn, done bool) {
	if v.firstAfter.IsZero() || !v.lastContact.After(v.since) {
		return 0, false, false // no word from a leader since the freeze
	}
	if v.target == 0 {
		if v.lastContact.Sub(v.firstAfter) < v.round {
			return 0, false, false // only heartbeats so far, perhaps
		}
		return 0, true, false // the caller samples the commit index now
	}
	return v.target, false, v.folded >= v.target && v.mapCurrent
}

// ErrNotRunning is returned by Reconfirm when the control plane is not
// running.
var ErrNotRunning = errors.New("cluster: control plane not running")

// Reconfirm blocks until the node's applied map is known to be current
// after a freeze detected at since (see above), or ctx ends. On the leader
// it verifies leadership and waits for a barrier; on a follower it waits
// for leader contact after since, for the fold to reach the commit index
// learned then, and for the leader's applied map to be no newer than its
// own.
func (c *Cluster) Reconfirm(ctx context.Context, since time.Time) error {
	if c.raft == nil {
		return ErrNotRunning
	}
	poll := time.NewTicker(max(c.t.RaftCommit, 10*time.Millisecond))
	defer poll.Stop()
	v := reconfirmView{since: since, round: c.t.commitRound()}
	for {
		if c.raft.State() == raft.Leader {
			v = reconfirmView{since: since, round: v.round} // a follower's progress no longer counts
			// Every entry committed before the barrier is folded once it
			// returns; the control loop then applies the fold's map.
			if c.raft.VerifyLeader().Error() == nil && c.raft.Barrier(c.t.RaftHeartbeat).Error() == nil && c.mapCurrent() {
				return nil
			}
		} else {
			v.lastContact = c.raft.LastContact()
			if v.firstAfter.IsZero() && v.lastContact.After(since) {
				v.firstAfter = v.lastContact
			}
			v.folded, v.mapCurrent = c.foldedIndex(v.target), c.mapCurrent()
			target, learn, done := reconfirmStep(v)
			if done && c.leaderMapNoNewer(ctx) {
				return nil
			}
			if learn {
				target = max(c.raft.CommitIndex(), 1)
			}
			v.target = target
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.stop:
			return ErrNotRunning
		case <-poll.C:
		}
	}
}

// leaderMapNoNewer asks the leader for the map it applied and reports
// whether it is no newer than this node's: a follower's commit index may
// have been learned from an AppendEntries the leader sent late (its
// replication to a node that was frozen backs off), the leader's own map
// cannot lag a failover it committed.
func (c *Cluster) leaderMapNoNewer(ctx context.Context) bool {
	addr, id := c.raft.LeaderWithID()
	if id == "" {
		return false
	}
	if NodeID(id) == c.cfg.Self.ID {
		return true // leader since: the leader path verifies
	}
	ctx, cancel := context.WithTimeout(ctx, c.t.RaftHeartbeat)
	defer cancel()
	lm, err := c.mux.fetchMap(ctx, string(addr))
	if err != nil {
		return false
	}
	am := c.Map()
	return lm == nil || (am != nil && am.Version >= lm.Version)
}

// foldedIndex is how far the fold consumed the log, as far as target
// matters: the last command entry Apply saw (or the last snapshot, when it
// was restored from one since) — or target itself when every entry after
// that, up to target, is one the FSM never sees (a leader's no-op, a
// configuration change, a barrier): raft applies those without the fold.
func (c *Cluster) foldedIndex(target uint64) uint64 {
	idx := c.fsm.index.Load()
	if s, err := strconv.ParseUint(c.raft.Stats()["last_snapshot_index"], 10, 64); err == nil && s > idx {
		idx = s
	}
	if target <= idx || c.raft.AppliedIndex() < target {
		return idx
	}
	for i := target; i > idx; i-- {
		var l raft.Log
		if err := c.logs.GetLog(i, &l); err != nil || l.Type == raft.LogCommand {
			return idx // a command not folded yet (or unreadable: wait)
		}
	}
	return target
}

// mapCurrent reports whether the node applied (OnMap) the fold's map, or a
// newer one (drift repair).
func (c *Cluster) mapCurrent() bool {
	fm, am := c.fsm.Map(), c.Map()
	return fm == nil || (am != nil && am.Version >= fm.Version)
}

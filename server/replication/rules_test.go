package replication

import (
	"testing"
	"time"
)

func TestPlanCatchUp(t *testing.T) {
	owner := lineage{Identity: "p", Owner: "n1", Generation: 3, Incarnation: 7}
	restarted := owner
	restarted.Incarnation = 8
	otherGen := owner
	otherGen.Generation = 2
	otherOwner := owner
	otherOwner.Owner = "n2"
	otherPart := owner
	otherPart.Identity = "q"
	cases := []struct {
		name       string
		replicaRev uint64
		replica    lineage
		ownerRev   uint64
		owner      lineage
		want       CatchUp
	}{
		{"an empty replica replays the whole op-log (no snapshot when the log still reaches back)", 0, lineage{}, 50, owner, CatchUpOps},
		{"an empty replica of an empty owner: nothing to send, no snapshot", 0, lineage{}, 0, owner, CatchUpOps},
		{"a replica of this history replays only what it misses (ops after R)", 40, owner, 50, owner, CatchUpOps},
		{"a replica exactly at the owner's revision: nothing to send", 50, owner, 50, owner, CatchUpOps},
		{"the owner restarted (same lease, new incarnation): never overwrite the replica that kept its writes",
			40, owner, 3, restarted, CatchUpHold},
		{"the owner restarted and wrote past the replica's revision: still hold (the revisions mean other writes)",
			40, owner, 90, restarted, CatchUpHold},
		{"a replica ahead of the owner on the same history: the owner lost state, hold", 60, owner, 50, owner, CatchUpHold},
		{"a replica of a former owner (after a failover): its revisions mean other writes, snapshot",
			40, otherOwner, 50, owner, CatchUpSnapshot},
		{"a replica of an older generation of this owner: snapshot", 40, otherGen, 50, owner, CatchUpSnapshot},
		{"a replica of another partition that held these segments (rebalance): snapshot", 40, otherPart, 50, owner, CatchUpSnapshot},
		{"a replica whose history was forgotten after a failed apply: snapshot", 40, lineage{}, 50, owner, CatchUpSnapshot},
	}
	for _, c := range cases {
		if got := PlanCatchUp(c.replicaRev, c.replica, c.ownerRev, c.owner); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func TestQuorumNeed(t *testing.T) {
	cases := []struct {
		name     string
		q        Quorum
		replicas int
		want     int
	}{
		{"no replica: a sync write is acknowledged on the owner alone (RF 1 or a lost replica)", All, 0, 0},
		{"all, RF 2: the one replica (the W1 barrier)", All, 1, 1},
		{"all, RF 3: both replicas", All, 2, 2},
		{"majority, RF 2: two copies of two, the replica", Majority, 1, 1},
		{"majority, RF 3: two copies of three, one replica (one slow replica does not stall writes)", Majority, 2, 1},
		{"majority, RF 4: three copies of four, two replicas", Majority, 3, 2},
		{"majority, RF 5: three copies of five, two replicas", Majority, 4, 2},
		{"best effort waits for every reachable replica", BestEffort, 2, 2},
	}
	for _, c := range cases {
		if got := QuorumNeed(c.q, c.replicas); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
}

func TestCutOverTxStep(t *testing.T) {
	deadline := time.Unix(100, 0)
	for _, tc := range []struct {
		name    string
		pending int
		now     time.Time
		want    txCutOver
	}{
		{"nothing prepared: the revision is final", 0, deadline.Add(-time.Second), txCutOverProceed},
		{"nothing prepared, even late", 0, deadline.Add(time.Second), txCutOverProceed},
		// Proceeding here would let the commit, which never fails, write on
		// the source after the proof: the target would miss that write.
		{"a transaction prepared: wait for its commit or abort", 1, deadline.Add(-time.Second), txCutOverWait},
		{"at the deadline itself: still waiting", 3, deadline, txCutOverWait},
		{"past the deadline: abort the cut-over, the source keeps it", 1, deadline.Add(time.Nanosecond), txCutOverAbort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cutOverTxStep(tc.pending, tc.now, deadline); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

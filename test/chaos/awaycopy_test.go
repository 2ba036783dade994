package chaos

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/testenv"
	"github.com/zaris-io/zaris/sdk"
)

// A restarted owner waits for a replica that is only away, and an empty
// replica is not promoted over an away owner (issue #14 item 5, D56;
// failover.AwaitCopy, failover.CopyHoldsData): three processes, RF 2,
// sync + all. The replica of a partition is stopped (SIGSTOP), then that
// partition's owner is killed and restarted empty. While the replica is
// declared dead but inside its member grace, the restarted node must not
// serve a miss for an acknowledged key — neither of the partition it owns
// (its replica kept the data) nor of the stopped node's partition it is
// the copy of (it was sent none of it). Serving its hole, then replacing
// the other copy by it when that answers again, is how a WAN follower
// lost mirrored keys across a restart of its applier's node under load.
// Once the replica resumes, every key reads back.
func TestRestartedOwnerWaitsForItsAwayReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process restart test: skipped with -short")
	}
	t.Parallel() // main_test.go: why the process tests run two at a time
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scaled(4*time.Minute))
	defer cancel()
	bin := built(t, "zaris-server")
	logs := &testenv.SyncBuffer{}
	c, err := Start(ctx, Options{Nodes: 3, RF: 2, Mode: "sync", Quorum: "all", Binary: bin, Log: logs,
		// The replica stays away well inside its grace (the restarted
		// owner's join alone waits 10 s for the paused seed).
		Extra: []string{"--member-grace=90s"}})
	if err != nil {
		t.Fatalf("start: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i := range c.N() {
				t.Logf("---- %s log tail\n%s", NodeID(i), c.LogTail(i, 60))
			}
			t.Logf("---- harness\n%s", tail(logs.String(), 40))
		}
		_ = c.Close()
	})
	cl, err := sdk.Connect(ctx, c.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })

	// The partition: its owner and its replica both other than the
	// control-plane leader (whose view decides, and which must stay up).
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx, leader)
	if err != nil {
		t.Fatal(err)
	}
	owner, replica, first, last := -1, -1, 0, 0
	for _, p := range st.Partitions {
		if len(p.Replicas) == 1 && c.Index(p.ActiveOwner) != leader && c.Index(p.Replicas[0]) != leader {
			owner, replica, first, last = c.Index(p.ActiveOwner), c.Index(p.Replicas[0]), p.FirstSlot, p.LastSlot
			break
		}
	}
	if owner < 0 {
		t.Fatalf("no partition owned and replicated away from the leader %s: %s", NodeID(leader), c.Describe(ctx))
	}
	// And the partition the replica owns with the owner as its copy: when
	// the replica stops answering, the restarted owner holds none of it.
	qFirst, qLast := -1, -1
	for _, p := range st.Partitions {
		if c.Index(p.ActiveOwner) == replica && len(p.Replicas) == 1 && c.Index(p.Replicas[0]) == owner {
			qFirst, qLast = p.FirstSlot, p.LastSlot
		}
	}
	var keys, theirs []string
	for i := 0; len(keys) < 200 || qFirst >= 0 && len(theirs) < 200; i++ {
		k := fmt.Sprintf("k:%d", i)
		switch s := int(placement.Slot(k)); {
		case first <= s && s <= last && len(keys) < 200:
			keys = append(keys, k)
		case qFirst <= s && s <= qLast && len(theirs) < 200:
			theirs = append(theirs, k)
		}
	}
	for _, k := range append(keys, theirs...) {
		if res, err := cl.Put(ctx, k, []byte("v"+k), nil); err != nil || res.Status != sdk.StatusSuccess {
			t.Fatalf("put %s: %v %v", k, res.Status, err)
		}
	}

	// The replica stops answering; the owner crashes and comes back empty.
	if err := c.Pause(replica); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = c.Resume(replica)
		}
	})
	if err := c.Kill(owner); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(owner); err != nil {
		t.Fatal(err)
	}
	// Until the restarted owner's membership no longer sees the replica
	// alive (suspected, or memberlist's dead verdict: inside the grace).
	if err := c.poll(ctx, NodeID(replica)+" not alive for the restarted owner", func() (bool, error) {
		s, err := c.Status(ctx, owner)
		if err != nil {
			return false, nil
		}
		for _, n := range s.Nodes {
			if n.ID == NodeID(replica) {
				return n.State != "alive", nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, c.Describe(ctx))
	}
	// A few seconds of reads while the replica is away: the owner may
	// refuse (the keys are unavailable), never answer NotFound.
	away := time.Now()
	for round := 0; time.Since(away) < 3*time.Second; round++ {
		for _, k := range keys {
			if got := respGet(t, c.RESPAddr(owner), k, nil); got == "$-1\r\n" {
				t.Fatalf("%s answered nil (RESP GET) for acknowledged %s %v after its replica %s stopped answering (inside the grace): %s",
					NodeID(owner), k, time.Since(paused).Round(time.Millisecond), NodeID(replica), c.Describe(ctx))
			}
		}
		for _, k := range theirs {
			if got := respGet(t, c.RESPAddr(owner), k, nil); got == "$-1\r\n" {
				t.Fatalf("%s, restarted empty, answered nil (RESP GET) for acknowledged %s of the partition of %s, which stopped answering %v ago (inside the grace): it was promoted without the data: %s",
					NodeID(owner), k, NodeID(replica), time.Since(paused).Round(time.Millisecond), c.Describe(ctx))
			}
		}
		// What a client sees: an error (the keys are unavailable), never
		// a miss. One key per round: each such read waits its deadline.
		k := keys[round%len(keys)]
		rctx, rcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		res, err := cl.Get(rctx, k)
		rcancel()
		if err == nil && res.Status == sdk.StatusNotFound || errors.Is(err, sdk.ErrNotFound) {
			t.Fatalf("the cluster answered NotFound (SDK) for acknowledged %s after the replica %s of its owner %s stopped answering (inside the grace): %s",
				k, NodeID(replica), NodeID(owner), c.Describe(ctx))
		}
	}
	if since := time.Since(paused); since > 60*time.Second {
		t.Fatalf("the replica was away %v: the check ran past the member grace", since)
	}

	if err := c.Resume(replica); err != nil {
		t.Fatal(err)
	}
	resumed = true
	var wrong string
	if err := c.poll(ctx, "every key back", func() (bool, error) {
		for _, k := range append(keys, theirs...) {
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
			res, err := cl.Get(rctx, k)
			rcancel()
			if err != nil || string(res.Value) != "v"+k {
				wrong = fmt.Sprintf("%s: %q %v %v", k, res.Value, res.Status, err)
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("after %s resumed: %v (last: %s)\n%s", NodeID(replica), err, wrong, c.Describe(ctx))
	}
}

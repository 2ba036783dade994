package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The rules that end a wait (pure): each case names the wrong outcome it
// prevents.
func TestRebalanceSettled(t *testing.T) {
	moveInMap := []partitionDoc{{ID: 0, ActiveOwner: "n1", Incoming: []string{"n3"}, MoveTo: "n3"}}
	cases := []struct {
		name string
		doc  clusterDoc
		want bool
	}{
		{"a leader without a status (older server, or not the leader) is not taken for done",
			clusterDoc{Self: "n1", Leader: "n1"}, false},
		{"a request the leader has not planned yet (membership not stable) is not done",
			clusterDoc{Rebalance: &rebalanceDoc{Pending: true}}, false},
		{"an active rebalance between two steps (no move listed) is not done",
			clusterDoc{Rebalance: &rebalanceDoc{Active: true}}, false},
		{"a move listed after the rebalance ended (a flip not committed yet) is not done",
			clusterDoc{Rebalance: &rebalanceDoc{Migrations: []migrationDoc{{Partition: 1}}}}, false},
		{"a move a former leader started, in the map but not in the new leader's status yet, is not done",
			clusterDoc{Rebalance: &rebalanceDoc{}, Partitions: moveInMap}, false},
		{"nothing active, pending or moving is done",
			clusterDoc{Rebalance: &rebalanceDoc{Completed: 5}, Partitions: []partitionDoc{{ActiveOwner: "n1"}}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, why := rebalanceSettled(&c.doc); got != c.want || (!got && why == "") {
				t.Errorf("settled %v (%q), want %v", got, why, c.want)
			}
		})
	}
}

// A request a leader took dies with its leadership before it is planned:
// the wait asks again instead of reporting a rebalance that never ran.
func TestRequestAskAgain(t *testing.T) {
	idle := &rebalanceDoc{}
	cases := []struct {
		name string
		req  request
		doc  clusterDoc
		want bool
	}{
		{"the leader that took the request, settled: a rebalance with nothing to move is done, not re-asked",
			request{Leader: "n1", Term: 2}, clusterDoc{Self: "n1", Term: 2, Rebalance: idle}, false},
		{"a new leader, settled, no rebalance ever seen: the request may be lost, ask again",
			request{Leader: "n1", Term: 2}, clusterDoc{Self: "n2", Term: 3, Rebalance: idle}, true},
		{"the same node in a new term (it lost and regained the lead) forgot it too",
			request{Leader: "n1", Term: 2}, clusterDoc{Self: "n1", Term: 4, Rebalance: idle}, true},
		{"a rebalance was seen active: it ran, a later leader's idle status is its end, not a loss",
			request{Leader: "n1", Term: 2, SawActive: true}, clusterDoc{Self: "n2", Term: 3, Rebalance: idle}, false},
		{"a new leader still busy is not asked again (it resumed the plan from the log)",
			request{Leader: "n1", Term: 2}, clusterDoc{Self: "n2", Term: 3, Rebalance: &rebalanceDoc{Active: true}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.req.ask(&c.doc); got != c.want {
				t.Errorf("ask %v, want %v", got, c.want)
			}
		})
	}
}

// A joiner that holds nothing once the rebalance settles is a spare only
// when the plan counted it: a plan made while the leader did not see it
// alive (CI run 22: "the plan gives n4 no partition" with room for four)
// is asked for again.
func TestAddOutcome(t *testing.T) {
	cases := []struct {
		name                    string
		settled, holds, planned bool
		want                    addStep
	}{
		{"moves in flight: wait", false, false, true, addWait},
		{"settled and the node holds a partition: done", true, true, true, addDone},
		{"holding data is done even if the last plan did not name it (a later plan moved data to it)", true, true, false, addDone},
		{"settled over a plan that counted the node, which gave it nothing: a spare", true, false, true, addSpare},
		{"settled over a plan that did not count the node: not a spare, ask again", true, false, false, addAskAgain},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := addOutcome(c.settled, c.holds, c.planned); got != c.want {
				t.Errorf("addOutcome = %d, want %d", got, c.want)
			}
		})
	}
	d := &clusterDoc{Rebalance: &rebalanceDoc{PlannedOver: []string{"n1", "n4"}}}
	if !plannedOver(d, "n4") || plannedOver(d, "n3") || plannedOver(&clusterDoc{}, "n4") {
		t.Error("plannedOver reads the leader's planned_over list")
	}
}

func TestETA(t *testing.T) {
	cases := []struct {
		name       string
		done, left int
		elapsed    time.Duration
		want       time.Duration
	}{
		{"nothing done yet: no rate, no made-up ETA", 0, 10, 5 * time.Second, -1},
		{"nothing left: zero, even without a rate", 0, 0, 0, 0},
		{"the rate so far: 10 segments in 5 s, 30 left", 10, 30, 5 * time.Second, 15 * time.Second},
	}
	for _, c := range cases {
		if got := eta(c.done, c.left, c.elapsed); got != c.want {
			t.Errorf("%s: eta %v, want %v", c.name, got, c.want)
		}
	}
}

// Progress counts what moved since the command started, across a leader
// change: each leader's counters count from its own start.
func TestProgressAcrossLeaders(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := newProgress(t0)
	p.baseline("n1", &rebalanceDoc{Completed: 10, KeysMoved: 1000, BytesMoved: 5e6})
	doc := func(self string, rb rebalanceDoc) *clusterDoc {
		return &clusterDoc{Self: self, Leader: self, Rebalance: &rb}
	}

	v := p.observe(doc("n1", rebalanceDoc{Active: true, SegmentsTotal: 40, SegmentsLeft: 40, Completed: 10,
		KeysMoved: 1000, BytesMoved: 5e6}), t0.Add(time.Second))
	if v.Moved != (moved{}) || v.SegmentsDone != 0 || v.ETA >= 0 || v.Waiting != "" {
		t.Errorf("at the start: %+v", v)
	}
	v = p.observe(doc("n1", rebalanceDoc{Active: true, SegmentsTotal: 40, SegmentsLeft: 30, Completed: 13,
		KeysMoved: 1300, BytesMoved: 6e6, Migrations: []migrationDoc{{}, {}}}), t0.Add(6*time.Second))
	if v.Moved != (moved{Moves: 3, Keys: 300, Bytes: 1e6}) || v.SegmentsDone != 10 || v.Moving != 2 || v.ETA != 15*time.Second {
		t.Errorf("n1 moved 3: %+v", v)
	}
	// n2 takes over with counters of its own (2 moves before we saw it).
	v = p.observe(doc("n2", rebalanceDoc{Active: true, SegmentsTotal: 40, SegmentsLeft: 20, Completed: 2, KeysMoved: 200,
		BytesMoved: 1e6}), t0.Add(7*time.Second))
	v = p.observe(doc("n2", rebalanceDoc{Active: true, SegmentsTotal: 40, SegmentsLeft: 10, Completed: 5, KeysMoved: 500,
		BytesMoved: 2e6, Aborted: 1}), t0.Add(8*time.Second))
	if v.Moved != (moved{Moves: 6, Aborted: 1, Keys: 600, Bytes: 2e6}) || v.SegmentsDone != 30 {
		t.Errorf("n1's 3 and n2's 3: %+v", v)
	}
	if v := p.observe(nil, t0.Add(9*time.Second)); v.Waiting != "no leader reachable" || v.Moved.Moves != 6 {
		t.Errorf("no leader: %+v", v)
	}
	if got := doneLine("rebalance", v); !strings.Contains(got, "6 moves, 600 keys, 2.0 MB moved (1 moves aborted and restarted)") {
		t.Errorf("done line %q", got)
	}
}

// A rebalance the leader holds (a member suspected) says why it does not
// move: the leader's own word, not a guess from the flags.
func TestProgressShowsWhyTheLeaderHolds(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := newProgress(t0)
	held := "new steps wait until every member of the map is alive: n3 is suspected"
	v := p.observe(&clusterDoc{Self: "n1", Leader: "n1", Rebalance: &rebalanceDoc{Active: true, SegmentsTotal: 40,
		SegmentsLeft: 30, Held: held}}, t0.Add(time.Second))
	if v.Waiting != held || v.SegmentsDone != 10 {
		t.Errorf("held rebalance: %+v", v)
	}
}

// Not a terminal: plain lines, only when something changed (at most one
// a second), never a carriage return.
func TestPrinterLines(t *testing.T) {
	var b bytes.Buffer
	p := &printer{w: &b, what: "rebalance"}
	t0 := time.Unix(1000, 0)
	a := progressView{SegmentsTotal: 40, SegmentsDone: 10, Moving: 2, ETA: 15 * time.Second}
	p.show(a, t0)
	p.show(a, t0.Add(2*time.Second)) // unchanged: nothing
	bNext := a
	bNext.SegmentsDone = 12
	p.show(bNext, t0.Add(2500*time.Millisecond)) // changed: a line
	c := bNext
	c.SegmentsDone = 14
	p.show(c, t0.Add(2700*time.Millisecond)) // changed, but within a second: nothing
	p.end("rebalance done")
	want := "rebalance: 10/40 segments, 2 moving, 0 moves done, 0 keys, 0.0 MB moved, ETA 15s\n" +
		"rebalance: 12/40 segments, 2 moving, 0 moves done, 0 keys, 0.0 MB moved, ETA 15s\n" +
		"rebalance done\n"
	if b.String() != want {
		t.Errorf("lines:\n%s\nwant:\n%s", b.String(), want)
	}
	var tty bytes.Buffer
	tp := &printer{w: &tty, tty: true, what: "drain n2"}
	tp.show(a, t0)
	tp.end("done")
	if s := tty.String(); !strings.HasPrefix(s, "\rdrain n2 [#######-----------------------] 10/40 segments") ||
		!strings.HasSuffix(s, "\r\033[Kdone\n") {
		t.Errorf("terminal: %q", s)
	}
}

func TestWriteMigrations(t *testing.T) {
	now := time.Unix(1000, 0)
	rb := &rebalanceDoc{Active: true, Reason: "drain n2", SegmentsTotal: 40, SegmentsLeft: 30, Completed: 3, Aborted: 1,
		KeysMoved: 300, BytesMoved: 2e6, FencePause: 1500 * time.Microsecond, MaxFencePause: 4 * time.Millisecond,
		Migrations: []migrationDoc{{Partition: 4, First: 96, Last: 99, Source: "n2", Target: "n3", Incoming: []string{"n3"},
			Phase: "copying", Lag: 12, KeysHeld: 450, StartedAt: now.Add(-2 * time.Second), Attempts: 1,
			LastAbort: "DigestMismatch"}}}
	var b bytes.Buffer
	if err := writeMigrations(&b, "n1", rb, now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"PARTITION", "SOURCE → TARGET", "LAST ABORT", "96-99", "n2 → n3", "copying", "450",
		"2s ago", "DigestMismatch", "leader n1: rebalance active (drain n2): 10/40 segments done", "3 moves completed, 1 aborted",
		"fence pause last 1.5ms max 4ms"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}

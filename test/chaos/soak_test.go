package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zaris-io/zaris/sdk"
)

// TestGrowthRule is the soak's memory and goroutine verdict: the medians of
// the first and last windows, a ratio and an absolute slack that must both
// be exceeded. Each row names the mistake it guards against.
func TestGrowthRule(t *testing.T) {
	rss := GrowthRule{MaxRatio: 0.20, Slack: 16 << 20}
	gor := GrowthRule{MaxRatio: 0.10, Slack: 10}
	mib := func(xs ...float64) []float64 {
		for i := range xs {
			xs[i] *= 1 << 20
		}
		return xs
	}
	for _, tc := range []struct {
		name        string
		rule        GrowthRule
		first, last []float64
		judged      bool
		grew        bool
	}{
		{"flat memory is not growth", rss, mib(100, 101, 99), mib(100, 102, 98), true, false},
		{"+50% RSS is growth", rss, mib(100, 100, 100), mib(150, 150, 150), true, true},
		{"+19% RSS is within the ratio", rss, mib(100, 100, 100), mib(119, 119, 119), true, false},
		{"+30% of a small heap below the slack is noise", rss, mib(40, 40, 40), mib(52, 52, 52), true, false},
		{"one spike in the last window does not move the median", rss, mib(100, 100, 100), mib(100, 400, 100), true, false},
		{"a spike in the first window does not hide growth", rss, mib(100, 900, 100), mib(200, 200, 200), true, true},
		{"shrinking is not growth", rss, mib(200, 200), mib(100, 100), true, false},
		{"+10 goroutines of 200 is not growth", gor, []float64{200, 200}, []float64{210, 210}, true, false},
		{"+50 goroutines of 200 is growth", gor, []float64{200, 201, 199}, []float64{250, 251, 249}, true, true},
		{"+15 goroutines of 50 stays within the slack+ratio only if both hold", gor, []float64{50}, []float64{65}, true, true},
		{"+9 goroutines of 50 is below the slack", gor, []float64{50}, []float64{59}, true, false},
		{"an even window takes the middle pair's mean", gor, []float64{100, 100, 300, 300}, []float64{200, 200}, true, false},
		{"no samples in the last window cannot be judged", rss, mib(100), nil, false, false},
		{"no samples in the first window cannot be judged", rss, nil, mib(100), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.rule.Check(tc.first, tc.last)
			if v.Judged != tc.judged || v.Grew != tc.grew {
				t.Fatalf("Check(%v, %v) = %+v, want judged %v grew %v", tc.first, tc.last, v, tc.judged, tc.grew)
			}
		})
	}
	if v := gor.Check([]float64{100, 100, 300, 300}, []float64{200}); v.First != 200 || v.Ratio != 0 {
		t.Fatalf("median of an even window: %+v", v)
	}
}

// TestJudgeResourcesWindows: samples are split into the first and last
// windows of the fault phase, outside samples are ignored, and the rule is
// asserted only on a node whose process lived through both windows.
func TestJudgeResourcesWindows(t *testing.T) {
	t0 := time.Now()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var samples []resSample
	for s := -5; s <= 65; s++ {
		// n1: one process; RSS doubles in the last window.
		rss := float64(100 << 20)
		if s >= 50 {
			rss = 200 << 20
		}
		samples = append(samples, resSample{at: at(s), node: 0, start: 1, rss: rss, gor: 100})
		// n2: restarted at 30 s (start 2), bigger afterwards: shown, not asserted.
		start := 1
		if s >= 30 {
			start = 2
		}
		samples = append(samples, resSample{at: at(s), node: 1, start: start, rss: float64(50<<20) * float64(start), gor: 100})
	}
	// A sample outside the phase with a huge value must not count.
	samples = append(samples, resSample{at: at(70), node: 0, start: 1, rss: 1 << 40, gor: 1e6})
	res := judgeResources(samples, 2, t0, at(60), 10*time.Second, GrowthRule{MaxRatio: 0.2, Slack: 1}, GrowthRule{MaxRatio: 0.1, Slack: 1})
	if n := res[0]; !n.Asserted || !n.RSS.Grew || n.Gor.Grew || n.RSS.First != 100<<20 || n.RSS.Last != 200<<20 || n.SamplesN != 61 {
		t.Fatalf("n1 = %+v", n)
	}
	if n := res[1]; n.Asserted || n.Starts != 2 || !n.RSS.Grew {
		t.Fatalf("n2 = %+v", n)
	}
	rep := SoakReport{Resources: res}
	if f := strings.Join(rep.Failures(), "\n"); !strings.Contains(f, "n1: RSS grew 100%") || strings.Contains(f, "n2") {
		t.Fatalf("failures:\n%s", f)
	}
}

// TestSoakContentsCheck: a retained list, set or stream is checked for
// order, duplicates and acknowledged elements missing above the retention
// boundary; a gap of indeterminate writes is fine.
func TestSoakContentsCheck(t *testing.T) {
	const key = "k"
	newReg := func(kind string, acked, failed []uint64) *soakRegister {
		r := &soakRegister{api: "t", kind: kind, ledger: NewLedger(), failed: map[string]map[uint64]bool{}}
		now := time.Now()
		isFailed := map[uint64]bool{}
		for _, s := range failed {
			isFailed[s] = true
		}
		last := uint64(0)
		for _, s := range append(append([]uint64{}, acked...), failed...) {
			last = max(last, s)
		}
		for s := uint64(1); s <= last; s++ {
			r.ledger.Next(key)
			if isFailed[s] {
				r.markFailed(key, s)
				r.ledger.Fail(0, key, s, now)
			} else {
				r.ledger.Ack(0, key, s, now)
			}
		}
		return r
	}
	elems := func(seqs ...uint64) [][]byte {
		out := make([][]byte, len(seqs))
		for i, s := range seqs {
			out[i] = seqValue(key, s)
		}
		return out
	}
	seq := func(from, to uint64) []uint64 {
		var out []uint64
		for s := from; s <= to; s++ {
			out = append(out, s)
		}
		return out
	}
	without := func(xs []uint64, drop ...uint64) []uint64 {
		var out []uint64
	next:
		for _, x := range xs {
			for _, d := range drop {
				if x == d {
					continue next
				}
			}
			out = append(out, x)
		}
		return out
	}
	for _, tc := range []struct {
		name                string
		kind                string
		failed              []uint64
		attempted           uint64
		stored              []uint64
		lost, dup, misorder int
	}{
		{name: "everything retained", kind: "list", attempted: 10, stored: seq(1, 10)},
		{name: "an indeterminate write that did not land is no gap", kind: "list", failed: []uint64{5}, attempted: 10, stored: without(seq(1, 10), 5)},
		{name: "an acknowledged element missing in the middle is lost", kind: "list", attempted: 10, stored: without(seq(1, 10), 4), lost: 1},
		{name: "elements below the retention boundary may be trimmed", kind: "list", attempted: 100, stored: seq(100-soakKeep+1, 100)},
		{name: "a trim that cut into the retained range loses elements", kind: "stream", attempted: 100, stored: seq(100-soakKeep+3, 100), lost: 2},
		{name: "an element stored twice is a duplicate", kind: "list", attempted: 5, stored: []uint64{1, 2, 3, 3, 4, 5}, dup: 1},
		{name: "out of order in a list is misordered", kind: "list", attempted: 5, stored: []uint64{1, 2, 4, 3, 5}, misorder: 1},
		{name: "a set is unordered", kind: "set", attempted: 5, stored: []uint64{5, 1, 3, 2, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var acked []uint64
			for s := uint64(1); s <= tc.attempted; s++ {
				if !contains(tc.failed, s) {
					acked = append(acked, s)
				}
			}
			r := newReg(tc.kind, acked, tc.failed)
			var res RegisterResult
			r.checkContents(key, elems(tc.stored...), &res)
			if len(res.LostElements) != tc.lost || len(res.Duplicates) != tc.dup || len(res.Misordered) != tc.misorder || res.Counts.Corrupt != 0 {
				t.Fatalf("lost %v dup %v misordered %v corrupt %d; want %d %d %d", res.LostElements, res.Duplicates, res.Misordered,
					res.Counts.Corrupt, tc.lost, tc.dup, tc.misorder)
			}
		})
	}
	r := newReg("list", []uint64{1, 2}, nil)
	var res RegisterResult
	r.checkContents(key, [][]byte{seqValue(key, 1), []byte("other#2#")}, &res)
	if res.Counts.Corrupt != 1 {
		t.Fatalf("an element of another key: corrupt %d, want 1", res.Counts.Corrupt)
	}
}

func contains(xs []uint64, x uint64) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestErrClass: the error table groups failures by status, Redis error code
// or transport failure.
func TestErrClass(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{context.DeadlineExceeded, "deadline"},
		{fmt.Errorf("call: %w", context.DeadlineExceeded), "deadline"},
		{errors.New("dial tcp 127.0.0.1:4000: connect: connection refused"), "connection refused"},
		{errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout"), "i/o timeout"},
		{errors.New("EOF"), "connection lost"},
		{fmt.Errorf("get x: %w", sdk.ErrUnavailable), "Unavailable"},
		{sdk.StatusOwnershipChanging.Err(), "OwnershipChanging"},
		{errors.New("CLUSTERDOWN The cluster is down"), "CLUSTERDOWN"},
		{errors.New("TRYAGAIN Multiple keys request during rehashing of slot"), "TRYAGAIN"},
		{redis.TxFailedErr, "watch conflict"},
		{fmt.Errorf("x: %w", sdk.ErrTxOutcomeUnknown), "tx outcome unknown"},
	} {
		if got := ErrClass(tc.err); got != tc.want {
			t.Errorf("ErrClass(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

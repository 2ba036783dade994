package chaos

import (
	"strings"
	"testing"
	"time"
)

// A configuration run over several rounds is summarised by medians, and
// its ratio to RF 1 is the median of the rounds' own ratios — not the
// ratio of two medians taken from different rounds, which would pair a
// fast round's RF 1 with a slow round's RF 2 (issue #17: the machine's
// noise moves a row by a third between runs).
func TestSummarizeRunsTakesTheMedianOfEachRoundsRatio(t *testing.T) {
	runs := []ThroughputRow{
		{Name: "RF2 sync+all", Ops: 300, Errors: 1, Elapsed: time.Second, OpsPerSec: 30, RatioToRF1: 0.30, ServerCPU: 30 * time.Microsecond},
		{Name: "RF2 sync+all", Ops: 500, Errors: 0, Elapsed: time.Second, OpsPerSec: 50, RatioToRF1: 0.50, ServerCPU: 20 * time.Microsecond},
		{Name: "RF2 sync+all", Ops: 400, Errors: 2, Elapsed: time.Second, OpsPerSec: 40, RatioToRF1: 0.25, ServerCPU: 25 * time.Microsecond},
	}
	got := summarizeRuns(ThroughputRow{Name: "RF2 sync+all", Runs: runs})
	if got.OpsPerSec != 40 || got.ServerCPU != 25*time.Microsecond {
		t.Errorf("medians: ops/s %v server CPU %v, want 40 and 25µs", got.OpsPerSec, got.ServerCPU)
	}
	if got.RatioToRF1 != 0.30 || got.RatioMin != 0.25 || got.RatioMax != 0.50 {
		t.Errorf("ratio %v (%v–%v), want 0.30 (0.25–0.50)", got.RatioToRF1, got.RatioMin, got.RatioMax)
	}
	if got.Ops != 1200 || got.Errors != 3 || got.Elapsed != 3*time.Second || len(got.Runs) != 3 {
		t.Errorf("sums: ops %d errors %d elapsed %v runs %d", got.Ops, got.Errors, got.Elapsed, len(got.Runs))
	}
	if runs[0].OpsPerSec != 30 || runs[2].RatioToRF1 != 0.25 {
		t.Error("summarizeRuns reordered the rounds")
	}
}

func TestPrintThroughputShowsEveryRound(t *testing.T) {
	rf1 := summarizeRuns(ThroughputRow{Name: "RF1", Nodes: 3, Runs: []ThroughputRow{
		{Name: "RF1", Nodes: 3, OpsPerSec: 100, RatioToRF1: 1},
		{Name: "RF1", Nodes: 3, OpsPerSec: 120, RatioToRF1: 1},
	}})
	single := summarizeRuns(ThroughputRow{Name: "RF1 1 node", Nodes: 1, Runs: []ThroughputRow{
		{Name: "RF1 1 node", Nodes: 1, OpsPerSec: 200, RatioToRF1: 2},
		{Name: "RF1 1 node", Nodes: 1, OpsPerSec: 150, RatioToRF1: 1.25},
	}})
	var b strings.Builder
	PrintThroughput(&b, []ThroughputRow{rf1, single}, ThroughputConfig{})
	out := b.String()
	for _, want := range []string{"rounds' ops/s", "100 120", "200 150", "1.25–2.00",
		// each round's 3 nodes over its own single node: 0.50 and 0.80
		"one node: 0.65 (median of 2 rounds; 0.50–0.80)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
}

// A run that fails part-way still reports what it measured: the rounds
// before, and the rows the failing round had finished (the harness printed
// nothing once rounds came in until this kept them).
func TestFinishRoundsKeepsWhatARoundCutShortMeasured(t *testing.T) {
	rows := []ThroughputRow{{Name: "RF1"}, {Name: "RF2 async"}, {Name: "RF2 sync+all"}}
	addRound(rows, []ThroughputRow{{Name: "RF1", OpsPerSec: 100}, {Name: "RF2 async", OpsPerSec: 60}, {Name: "RF2 sync+all", OpsPerSec: 30}},
		[]bool{true, true, true})
	got := finishRounds(rows, []ThroughputRow{{Name: "RF1", OpsPerSec: 200}, {Name: "RF2 async", OpsPerSec: 100}, {}},
		[]bool{true, true, false})
	if len(got) != 3 || len(got[0].Runs) != 2 || len(got[1].Runs) != 2 || len(got[2].Runs) != 1 {
		t.Fatalf("rows %d, runs %d %d %d", len(got), len(got[0].Runs), len(got[1].Runs), len(got[2].Runs))
	}
	if got[1].RatioMin != 0.5 || got[1].RatioMax != 0.6 || got[2].RatioToRF1 != 0.3 {
		t.Fatalf("RF2 async ratios %v–%v, sync %v; want 0.5–0.6 and 0.3", got[1].RatioMin, got[1].RatioMax, got[2].RatioToRF1)
	}
	if none := finishRounds([]ThroughputRow{{Name: "RF1"}}, []ThroughputRow{{}}, []bool{false}); len(none) != 0 {
		t.Fatalf("a configuration that never ran is reported: %+v", none)
	}
}

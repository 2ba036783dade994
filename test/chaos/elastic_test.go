package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testenv"
)

// TestElastic is the short in-suite run of the elastic scenario (issue #12
// item 6): real zaris-server processes, a ledger of acknowledged writes and
// keys written once before scaling; two nodes join (auto-rebalance gives
// each its share, live), then a drain empties a node, with a fault in the
// middle of the moves — a 1 s SIGSTOP at RF 1, a SIGKILL and immediate
// restart of an original node at RF 2. Nothing acknowledged may be lost,
// no fixed key may read back wrong, no read may go back behind an
// acknowledged write, and every node must end up holding its share.
// `make chaos SCENARIO=elastic` is the long run.
func TestElastic(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process elastic test: skipped with -short")
	}
	t.Parallel() // main_test.go: why the process tests run two at a time
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scaled(8*time.Minute))
	defer cancel()
	bin := built(t, "zaris-server")
	for _, tc := range []struct {
		name         string
		rf           int
		mode, quorum string
	}{
		{"rf1", 1, "", ""},
		{"rf2-sync-all", 2, "sync", "all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &testenv.SyncBuffer{}
			start := time.Now()
			rep, err := RunElastic(ctx, ElasticConfig{
				Cluster: Options{Nodes: 3, RF: tc.rf, Mode: tc.mode, Quorum: tc.quorum, Binary: bin, Dir: t.TempDir()},
				Fixed:   1000,
				Out:     logs,
			})
			t.Logf("%s: %s (took %v)", tc.name, rep.Summary(), time.Since(start).Round(time.Second))
			for _, l := range rep.Steps {
				t.Log(l)
			}
			if err != nil || rep.Failed() || rep.Acked == 0 || rep.Moves == 0 {
				for _, l := range append(rep.Details(), rep.Problems...) {
					t.Log(l)
				}
				t.Logf("---- harness\n%s", tail(logs.String(), 120))
				t.Fatalf("elastic run failed (%v): %s", err, rep.Summary())
			}
			if rep.StaleReads > 0 {
				t.Errorf("%d stale reads under sync replication", rep.StaleReads)
			}
		})
	}
}

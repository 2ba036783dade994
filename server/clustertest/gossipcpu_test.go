package clustertest_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/clustertest"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGossipCPU10Nodes runs an idle 10-node cluster with the
// production timings (gossip every 200 ms, probes every 500 ms, digests
// every second), open and then with a cluster secret, and reports the
// process CPU per node over a 10 s window: the difference is what gossip
// encryption (and the authenticated peer connections) cost
// (BENCHMARKS.md). One iteration is enough: go test -bench GossipCPU -benchtime 1x.
func BenchmarkGossipCPU10Nodes(b *testing.B) {
	for _, secret := range []bool{false, true} {
		name := "open"
		if secret {
			name = "secret"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				c := clustertest.Start(b, 10, clustertest.Options{Secret: secret, NoRESP: true, NoHTTP: true,
					Timeout: 90 * time.Second,
					Mutate: func(cfg *server.Config) {
						t := cluster.DefaultTimings()
						t.FormationStable = 500 * time.Millisecond
						cfg.Timings = t
					}})
				const window = 10 * time.Second
				start, cpu0 := time.Now(), cpuTime()
				time.Sleep(window) // the measured window itself, not a synchronisation
				used, wall := cpuTime()-cpu0, time.Since(start)
				b.ReportMetric(100*used.Seconds()/wall.Seconds()/10, "cpu%/node")
				c.StopAll()
			}
		})
	}
}

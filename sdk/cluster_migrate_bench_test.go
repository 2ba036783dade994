package sdk_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/hdr"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/clustertest"
)

// BenchmarkLiveMigration measures a live migration (issue #12,
// docs/BENCHMARKS.md "Live migration"): a node holding ZARIS_MIGRATION_KEYS
// keys (default 1 000 000) of 100 B is joined by a second one, and
// auto-rebalance moves half of the segments to it while a foreground
// client runs GET/SET. It reports the keys and MB moved per second, the
// foreground p50/p99 during the move against steady state before it, and
// the longest write-fence pause. `make bench-migration` runs it once.
func BenchmarkLiveMigration(b *testing.B) {
	keys := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("ZARIS_MIGRATION_KEYS")); err == nil && v > 0 {
		keys = v
	}
	for range b.N {
		runMigrationBench(b, keys)
	}
}

func runMigrationBench(b *testing.B, keys int) {
	opts := clustertest.Options{NoRESP: true, NoHTTP: true, Mutate: func(c *server.Config) {
		c.MemoryMaxBytes = 4 << 30
		c.OpLogMaxOps = 1 << 16
	}}
	cl := clustertest.Start(b, 1, opts)
	c, err := sdk.Connect(context.Background(), cl.ConnString())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	val := make([]byte, 100)
	for i := range val {
		val[i] = byte('a' + i%26)
	}
	const batch = 2000
	items := make([]sdk.KV, 0, batch)
	for i := 0; i < keys; i++ {
		items = append(items, sdk.KV{Key: "mig:" + strconv.Itoa(i), Value: val})
		if len(items) == batch || i == keys-1 {
			if _, err := c.PutMany(ctx, items); err != nil {
				b.Fatal(err)
			}
			items = items[:0]
		}
	}

	// Foreground load: one client, GET/SET alternating on random keys,
	// latencies into the phase's histogram.
	var phase atomic.Pointer[hdr.Histogram]
	var mu sync.Mutex
	steady, moving := hdr.New(), hdr.New()
	phase.Store(steady)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		r := rand.New(rand.NewPCG(1, 2))
		for i := 0; !stop.Load(); i++ {
			k := "mig:" + strconv.Itoa(r.IntN(keys))
			start := time.Now()
			var err error
			if i%2 == 0 {
				_, err = c.Get(ctx, k)
			} else {
				_, err = c.Put(ctx, k, val, nil)
			}
			d := time.Since(start)
			if err != nil {
				continue
			}
			h := phase.Load()
			if h == nil {
				continue
			}
			mu.Lock()
			h.Record(uint64(d.Nanoseconds()))
			mu.Unlock()
		}
	})
	time.Sleep(2 * time.Second) // the steady-state window being measured, not a synchronisation
	phase.Store(moving)

	b.ResetTimer()
	start := time.Now()
	n2 := cl.AddNode()
	n2ID := cluster.NodeID(n2.Config().NodeID)
	var moveStart time.Time // the first map with a move in flight (auto-rebalance waits for stable membership first)
	cl.Eventually(10*time.Minute, "the second node owns half the segments, nothing in flight", func() bool {
		m := cl.Map()
		for _, p := range m.Partitions {
			if p.Migrating() {
				if moveStart.IsZero() {
					moveStart = time.Now()
				}
				return false
			}
		}
		owned := 0
		for s := range m.TotalSegments {
			if m.OwnerOfSegment(s) == n2ID {
				owned++
			}
		}
		return owned >= m.TotalSegments/2 // 1 → 2 nodes: half of the segments move
	})
	if moveStart.IsZero() {
		moveStart = start
	}
	took := time.Since(moveStart)
	b.StopTimer()
	phase.Store(nil)
	stop.Store(true)
	wg.Wait()

	moved := n2.Store().Stats()
	var st cluster.RebalanceStatus
	cl.Eventually(time.Minute, "a leader to report the moves", func() bool {
		leader := cl.Leader()
		if leader == nil {
			return false
		}
		st = leader.Cluster().RebalanceStatus()
		return true
	})
	movedKeys := float64(moved.Items)
	mb := movedKeys * float64(100+len("mig:")+6) / (1 << 20)
	ms := func(h *hdr.Histogram, q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1e6 }
	b.ReportMetric(movedKeys, "keys_moved")
	b.ReportMetric(movedKeys/took.Seconds(), "keys/s")
	b.ReportMetric(mb/took.Seconds(), "MB/s")
	b.ReportMetric(ms(steady, 0.5), "steady_p50_ms")
	b.ReportMetric(ms(steady, 0.99), "steady_p99_ms")
	b.ReportMetric(ms(moving, 0.5), "moving_p50_ms")
	b.ReportMetric(ms(moving, 0.99), "moving_p99_ms")
	b.ReportMetric(float64(st.MaxFencePause.Microseconds())/1e3, "max_fence_ms")
	b.Logf("%d keys on one node; live move of %.0f keys in %v (%.0f keys/s, %.1f MB/s); foreground p50/p99 "+
		"steady %.3f/%.3f ms, during the move %.3f/%.3f ms; %d moves, longest fence pause %v",
		keys, movedKeys, took.Round(time.Millisecond), movedKeys/took.Seconds(), mb/took.Seconds(),
		ms(steady, 0.5), ms(steady, 0.99), ms(moving, 0.5), ms(moving, 0.99), st.Completed, st.MaxFencePause)
}

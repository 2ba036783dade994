package clustertest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/clustertest"
)

// TestFollowerLag measures the WAN follower (docs/BENCHMARKS.md): a 3-node
// primary under writers putting batches as fast as they can, a 1-node
// follower applying its feed. Lag is write acknowledged on the primary →
// change seen in the follower's own change feed; the baseline, measured
// in the same run, is a plain change-feed consumer of the primary (write
// acknowledged → change received). Then the catch-up: a follow started
// from a cursor taken before a disconnect window of writes (the applier
// was away for that long), timed until the follower holds the last write.
// Every acknowledged write must reach the follower. Opt-in figures:
// ZARIS_FOLLOW_BENCH=1 (15 s of writes, a 60 s window); the default run is
// a short smoke of the same.
func TestFollowerLag(t *testing.T) {
	dur, window, writers := 2*time.Second, 2*time.Second, 4
	if os.Getenv("ZARIS_FOLLOW_BENCH") != "" {
		dur, window, writers = 15*time.Second, 60*time.Second, 16
	}
	ctx := context.Background()
	primary := clustertest.Start(t, 3, clustertest.Options{ClusterID: "primary", NoRESP: true, NoHTTP: true,
		Mutate: func(cfg *server.Config) {
			cfg.MemoryMaxBytes = 512 << 20
			cfg.FeedRetentionBytes, cfg.FeedRetentionAge = 8<<20, 10*time.Minute // the window's changes stay resumable
		}})
	follower := clustertest.Start(t, 1, clustertest.Options{ClusterID: "follower", NoRESP: true,
		Mutate: func(cfg *server.Config) { cfg.MemoryMaxBytes = 512 << 20 }})
	pc, err := sdk.Connect(ctx, primary.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	fc, err := sdk.Connect(ctx, follower.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()

	// A cursor of the primary before the disconnect window: its head now.
	probe, err := pc.Changes(ctx, &sdk.ChangesOptions{Prefix: "\xff-none"})
	if err != nil {
		t.Fatal(err)
	}
	before := probe.Cursor()
	probe.Close()

	write := func(prefix string, d time.Duration, ackedAt *sync.Map) (n int64, last string) {
		var count, refused atomic.Int64
		var lastKey atomic.Value
		stop := time.Now().Add(d)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := 0; time.Now().Before(stop); i++ {
					items := make([]sdk.KV, 100)
					for j := range items {
						items[j] = sdk.KV{Key: fmt.Sprintf("%s%02d:%06d:%02d", prefix, w, i, j), Value: []byte("v")}
					}
					res, err := pc.PutMany(ctx, items)
					if err != nil {
						continue
					}
					// Only an item answered OK is acknowledged: under load
					// one owner's part of a batch can time out while the
					// rest is written.
					now := time.Now()
					for _, r := range res {
						if !r.OK() {
							refused.Add(1)
							continue
						}
						if ackedAt != nil {
							ackedAt.Store(items[r.Index].Key, now)
						}
						count.Add(1)
						lastKey.Store(items[r.Index].Key)
					}
				}
			})
		}
		wg.Wait()
		if refused.Load() > 0 {
			t.Logf("%d writes of prefix %q answered without OK (not acknowledged)", refused.Load(), prefix)
		}
		l, _ := lastKey.Load().(string)
		return count.Load(), l
	}

	// 1. The disconnect window: writes while no applier runs.
	winWrites, winLast := write("w", window, nil)
	// 2. The follow starts from the cursor taken before the window.
	cl := follower.WaitLeader().Cluster()
	started := time.Now()
	if err := cl.CommitFollow(ctx, cluster.FollowOp{Kind: cluster.FollowStart, Source: primary.ConnString(),
		Key: "benchkey", Cursor: before.String(), At: started.UnixNano()}); err != nil {
		t.Fatal(err)
	}
	// Caught up: every change of the window applied (each acknowledged
	// write is one change after the cursor), not only its last key — the
	// segments are applied side by side, the last key is no proof.
	applied := func() (n float64) {
		for _, nd := range follower.Running() {
			n += followMetric(t, nd, "zaris_follower_applied_changes_total")
		}
		return n
	}
	testscale.Eventually(t, 10*time.Minute, 50*time.Millisecond, "the follower caught up with the window", func() bool {
		if applied() < float64(winWrites) {
			return false
		}
		r, err := fc.Get(ctx, winLast)
		return err == nil && r.OK()
	})
	catchUp := time.Since(started)

	// 3. Steady state: lag of the follower and of a plain feed consumer.
	type arrival struct {
		mu   sync.Mutex
		lags []time.Duration
		n    atomic.Int64
	}
	var ackedAt sync.Map
	measure := func(c *sdk.Client, into *arrival, done chan struct{}) *sdk.ChangeFeed {
		f, err := c.Changes(ctx, &sdk.ChangesOptions{Prefix: "s", Buffer: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer close(done)
			for {
				ch, err := f.Next(ctx)
				if err != nil {
					return
				}
				now := time.Now()
				into.n.Add(1)
				if at, ok := ackedAt.Load(ch.Key); ok {
					into.mu.Lock()
					into.lags = append(into.lags, now.Sub(at.(time.Time)))
					into.mu.Unlock()
				}
			}
		}()
		return f
	}
	var feedLag, followLag arrival
	feedDone, followDone := make(chan struct{}), make(chan struct{})
	ff := measure(pc, &feedLag, feedDone)
	fl := measure(fc, &followLag, followDone)
	began := time.Now()
	n, last := write("s", dur, &ackedAt)
	elapsed := time.Since(began)
	testscale.Eventually(t, 5*time.Minute, 50*time.Millisecond, "the follower applied every steady-state write", func() bool {
		r, err := fc.Get(ctx, last)
		return err == nil && r.OK() && followLag.n.Load() >= n
	})
	applyDone := time.Since(began)
	ff.Close()
	fl.Close()
	<-feedDone
	<-followDone
	// Every acknowledged write reached the follower.
	missing := 0
	var examples []string
	ackedAt.Range(func(k, _ any) bool {
		r, err := fc.Get(ctx, k.(string))
		for tries := 0; err != nil && tries < 50; tries++ { // a transport error is no answer: ask again
			time.Sleep(100 * time.Millisecond)
			r, err = fc.Get(ctx, k.(string))
		}
		if err != nil || !r.OK() {
			missing++
			examples = append(examples, fmt.Sprintf("%s: %v %v", k, r.Status, err))
		}
		return missing < 10
	})
	if missing > 0 {
		t.Fatalf("%d acknowledged writes never reached the follower (%d changes were fed to it, %d writes acknowledged): %v",
			missing, followLag.n.Load(), n, examples)
	}
	pct := func(a *arrival, q float64) time.Duration {
		a.mu.Lock()
		defer a.mu.Unlock()
		slices.Sort(a.lags)
		if len(a.lags) == 0 {
			return 0
		}
		return a.lags[min(len(a.lags)-1, int(q*float64(len(a.lags))))]
	}
	f50, f99, l50, l99 := pct(&feedLag, .5), pct(&feedLag, .99), pct(&followLag, .5), pct(&followLag, .99)
	ratio := func(a, b time.Duration) string {
		if b == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", float64(a)/float64(b))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "primary writes: %d in %v = %.0f/s (writers=%d, PutMany of 100)\n", n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), writers)
	fmt.Fprintf(&b, "follower applied them all %v after the writes began = %.0f changes/s\n", applyDone.Round(time.Millisecond), float64(n)/applyDone.Seconds())
	fmt.Fprintf(&b, "lag p50/p99: plain feed %v / %v; follower %v / %v (follower/feed: %s / %s)\n",
		f50.Round(time.Millisecond), f99.Round(time.Millisecond), l50.Round(time.Millisecond), l99.Round(time.Millisecond), ratio(l50, f50), ratio(l99, f99))
	fmt.Fprintf(&b, "catch-up after a %v window (%d writes): %v (%.0f changes/s)\n", window, winWrites, catchUp.Round(time.Millisecond), float64(winWrites)/catchUp.Seconds())
	var total, batches, reopens, commits float64
	for _, nd := range follower.Running() {
		total += followMetric(t, nd, "zaris_follower_applied_changes_total")
		batches += followMetric(t, nd, "zaris_follower_batches_total")
		commits += followMetric(t, nd, "zaris_follower_cursor_commits_total")
		reopens += optionalMetric(nd, "zaris_follower_feed_reopens_total") // absent before the pipeline
	}
	if batches > 0 {
		fmt.Fprintf(&b, "mean batch: %.0f changes (%v changes in %v batches); %v cursor commits; %v feed reopens\n",
			total/batches, total, batches, commits, reopens)
	}
	t.Log("\n" + b.String())
}

// optionalMetric is node nd's metric name, or -1 when it has none.
func optionalMetric(nd *server.Node, name string) float64 {
	resp, err := http.Get("http://" + nd.Addr(server.EndpointHTTP).String() + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return f
			}
		}
	}
	return -1
}

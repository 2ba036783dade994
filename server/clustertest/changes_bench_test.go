package clustertest_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
)

// TestChangeFeedThroughput measures the change feed on a real 3-node
// cluster (RF 2, async): writers put as fast as they can for a while, one
// Changes consumer reads every change; it reports writes/s, changes/s and
// the delivery lag (write acknowledged → change received), and checks
// every acknowledged write arrived. Opt-in: ZARIS_FEED_BENCH=1 (numbers
// for docs/BENCHMARKS.md); the default run is a short smoke of the same.
func TestChangeFeedThroughput(t *testing.T) {
	dur, writers := 2*time.Second, 4
	if os.Getenv("ZARIS_FEED_BENCH") != "" {
		dur, writers = 15*time.Second, 32
	}
	c := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, NoHTTP: true, Mutate: func(cfg *server.Config) {
		cfg.ReplicationFactor = 2
	}})
	cl, err := sdk.Connect(context.Background(), c.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	feed, err := cl.Changes(ctx, &sdk.ChangesOptions{Prefix: "tp:", Buffer: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()

	var (
		mu      sync.Mutex
		ackedAt = map[string]time.Time{}
		lags    []time.Duration
		got     atomic.Int64
		acked   atomic.Int64
	)
	received := map[string]time.Time{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			ch, err := feed.Next(ctx)
			if err != nil {
				return
			}
			now := time.Now()
			mu.Lock()
			k := ch.Key + "=" + string(ch.Value)
			received[k] = now
			if at, ok := ackedAt[k]; ok {
				lags = append(lags, now.Sub(at))
			}
			mu.Unlock()
			got.Add(1)
		}
	}()
	stop := time.Now().Add(dur)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				k := "tp:" + strconv.Itoa(w) + ":" + strconv.Itoa(i%64)
				v := strconv.Itoa(i)
				if r, err := cl.Put(ctx, k, []byte(v), nil); err != nil || !r.OK() {
					continue
				}
				acked.Add(1)
				mu.Lock()
				if _, early := received[k+"="+v]; !early {
					ackedAt[k+"="+v] = time.Now()
				}
				mu.Unlock()
			}
		})
	}
	start := time.Now()
	wg.Wait()
	elapsed := time.Since(start)
	eventually(t, 60*time.Second, "every acknowledged write in the feed", func() bool { return got.Load() >= acked.Load() })
	feed.Close()
	<-done
	mu.Lock()
	defer mu.Unlock()
	for k := range ackedAt {
		if _, ok := received[k]; !ok {
			t.Fatalf("acknowledged write %s missing from the feed", k)
		}
	}
	slices.Sort(lags)
	q := func(p float64) time.Duration {
		if len(lags) == 0 {
			return 0
		}
		return lags[min(len(lags)-1, int(p*float64(len(lags))))]
	}
	t.Logf("writers=%d %v: %d writes (%.0f/s), %d changes delivered; lag ack→change p50 %v p99 %v max %v",
		writers, elapsed.Round(time.Millisecond), acked.Load(), float64(acked.Load())/elapsed.Seconds(), got.Load(),
		q(.5), q(.99), q(1))
}

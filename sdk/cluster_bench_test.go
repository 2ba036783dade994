package sdk_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/clustertest"
)

// Cluster benchmarks (R-CLIENT-4, issue 7 item 11) on real clusters
// (server/clustertest), all on loopback in this process: the servers and
// the client share the machine's cores.
//
//	go test -run '^$' -bench 'Cluster' -benchtime 2s ./sdk/

const benchKeys = 1000

func benchFill(b *testing.B, c *sdk.Client) []string {
	b.Helper()
	keys := make([]string, benchKeys)
	kvs := make([]sdk.KV, benchKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench:%d", i)
		kvs[i] = sdk.KV{Key: keys[i], Value: []byte("value-of-some-thirty-two-bytes!!")}
	}
	if _, err := c.PutMany(context.Background(), kvs); err != nil {
		b.Fatal(err)
	}
	return keys
}

// GetMany of 1000 keys on a 4-node cluster (one request per owner, in
// parallel) against a loop of 1000 Gets (1000 sequential round trips). The
// ratio metric is the loop's time over GetMany's, measured in the same run.
func BenchmarkClusterGetMany1000(b *testing.B) {
	ctx := context.Background()
	cl := clustertest.Start(b, 4, clustertest.Options{NoRESP: true, NoHTTP: true})
	c := realConnect(b, cl.ConnString())
	keys := benchFill(b, c)
	b.Run("GetMany", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := c.GetMany(ctx, keys)
			if err != nil || !res[benchKeys-1].OK() {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchKeys, "ns/key")
	})
	b.Run("GetLoop", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, k := range keys {
				if r, err := c.Get(ctx, k); err != nil || !r.OK() {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchKeys, "ns/key")
	})
	b.Run("Ratio", func(b *testing.B) {
		var many, loop time.Duration
		for b.Loop() {
			start := time.Now()
			if _, err := c.GetMany(ctx, keys); err != nil {
				b.Fatal(err)
			}
			many += time.Since(start)
			start = time.Now()
			for _, k := range keys {
				if _, err := c.Get(ctx, k); err != nil {
					b.Fatal(err)
				}
			}
			loop += time.Since(start)
		}
		b.ReportMetric(float64(loop)/float64(many), "loop/getmany")
	})
}

// GetMany of 1000 keys on one node, for reference.
func BenchmarkSingleNodeGetMany1000(b *testing.B) {
	ctx := context.Background()
	ts := startServer(b)
	c, err := sdk.Connect(ctx, "zaris://"+ts.addr+"/default")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	keys := benchFill(b, c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.GetMany(ctx, keys); err != nil {
			b.Fatal(err)
		}
	}
}

// Single-key GET throughput, many goroutines on one client (8 per core, so
// requests pipeline on the connections): through the cluster client
// (routing per call) on 4 nodes and on a 1-node cluster, and through the
// single-connection client of a bare native server. Allocations count the
// servers' too (same process).
func BenchmarkClusterGetParallel(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, c *sdk.Client) {
		keys := benchFill(b, c)
		b.ReportAllocs()
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				r, err := c.Get(ctx, keys[i%benchKeys])
				if err != nil || !r.OK() {
					b.Errorf("get: %+v %v", r, err)
					return
				}
				i++
			}
		})
	}
	for _, n := range []int{4, 1} { // 1: the same server and client code on one node
		b.Run(fmt.Sprintf("cluster-%d", n), func(b *testing.B) {
			cl := clustertest.Start(b, n, clustertest.Options{NoRESP: true, NoHTTP: true})
			run(b, realConnect(b, cl.ConnString()))
		})
	}
	b.Run("single-node", func(b *testing.B) {
		ts := startServer(b)
		c, err := sdk.Connect(ctx, "zaris://"+ts.addr+"/default")
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		run(b, c)
	})
}

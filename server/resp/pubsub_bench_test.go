package resp_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zaris-io/zaris/server/clustertest"
)

// BenchmarkPublishFanOut measures PUBLISH across the cluster bus (issue #14
// measures): a publisher on one node, pipelining batches of 100, and a
// subscriber on another node (on the same node for "1node"); msgs/s is the
// rate at which the subscriber receives, p99-µs the delivery latency (the
// publisher's send time carried in the payload: under a saturating
// pipeline it is mostly queueing; "-serial" publishes one at a time, each
// after the previous reply, for the latency of an unloaded path). "nosub" publishes with no
// subscriber anywhere: the cost of forwarding to every member rather than
// to the interested ones only (D44).
//
//	go test -run XXX -bench PublishFanOut -benchtime 50000x ./server/resp
func BenchmarkPublishFanOut(b *testing.B) {
	for _, bc := range []struct {
		name  string
		nodes int
		sub   bool
		batch int
	}{{"1node", 1, true, 100}, {"3nodes", 3, true, 100}, {"1node-serial", 1, true, 1}, {"3nodes-serial", 3, true, 1},
		{"1node-nosub", 1, false, 100}, {"3nodes-nosub", 3, false, 100}} {
		b.Run(bc.name, func(b *testing.B) {
			cl := clustertest.Start(b, bc.nodes, clustertest.Options{NoHTTP: true})
			nodes := cl.Running()
			ctx := context.Background()
			pubNode, subNode := nodes[0], nodes[0]
			if bc.nodes > 1 {
				pubNode, subNode = nodes[1], nodes[0]
			}
			pub := redis.NewClient(&redis.Options{Addr: pubNode.RESPAddr().String()})
			defer pub.Close()
			var lat []time.Duration
			done := make(chan struct{})
			if bc.sub {
				sc := redis.NewClient(&redis.Options{Addr: subNode.RESPAddr().String()})
				defer sc.Close()
				ps := sc.Subscribe(ctx, "bench")
				defer ps.Close()
				if _, err := ps.Receive(ctx); err != nil {
					b.Fatal(err)
				}
				warmUp(b, cl, ps, "bench")
				ch := ps.Channel(redis.WithChannelSize(1 << 16))
				go func() {
					defer close(done)
					for m := range ch {
						if m.Payload == "warm" {
							continue
						}
						sent, _ := strconv.ParseInt(m.Payload, 10, 64)
						lat = append(lat, time.Duration(time.Now().UnixNano()-sent))
						if len(lat) == b.N {
							return
						}
					}
				}()
			} else {
				close(done)
			}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; {
				p := pub.Pipeline()
				for j := 0; j < bc.batch && i < b.N; j, i = j+1, i+1 {
					p.Publish(ctx, "bench", strconv.FormatInt(time.Now().UnixNano(), 10))
				}
				if _, err := p.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				b.Fatalf("received %d of %d", len(lat), b.N)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
			if len(lat) > 0 {
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			}
		})
	}
}

// warmUp publishes on every node until the subscriber got a message from
// each (the bus links are up).
func warmUp(b *testing.B, cl *clustertest.Cluster, ps *redis.PubSub, channel string) {
	ctx := context.Background()
	for _, nd := range cl.Running() {
		c := redis.NewClient(&redis.Options{Addr: nd.RESPAddr().String()})
		got := false
		for deadline := time.Now().Add(30 * time.Second); !got && time.Now().Before(deadline); {
			c.Publish(ctx, channel, "warm")
			rctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			_, err := ps.ReceiveMessage(rctx)
			cancel()
			got = err == nil
		}
		_ = c.Close()
		if !got {
			b.Fatalf("no message from %s", nd.Config().NodeID)
		}
	}
}

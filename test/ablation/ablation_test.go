package ablation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster/failover"
	"github.com/zaris-io/zaris/server/clustertest"
	"github.com/zaris-io/zaris/server/resp"
	"github.com/zaris-io/zaris/server/store"
)

const (
	keyCount  = 100_000
	valueSize = 32
)

var value = bytes.Repeat([]byte("v"), valueSize)

func keyOf(i int) string { return fmt.Sprintf("key:%012d", i) } // 16 bytes

func appendCommand(b []byte, args ...string) []byte {
	b = fmt.Appendf(b, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// workload is the request of one benchmark and the reply it expects.
type workload struct {
	name  string
	req   func(i int) []byte // the i-th request
	reply []byte             // every request's reply (nil: the request echoed)
}

var (
	getLoad = workload{"GET", func(i int) []byte { return appendCommand(nil, "GET", keyOf(i%keyCount)) },
		[]byte("$32\r\n" + string(value) + "\r\n")}
	setLoad = workload{"SET", func(i int) []byte { return appendCommand(nil, "SET", keyOf(i%keyCount), string(value)) },
		[]byte("+OK\r\n")}
)

// drive sends b.N requests over one connection to addr, pipeline at a time,
// and checks every batch of replies byte for byte. The requests are built
// before the timer starts: the client's cost is one write and one read per
// batch.
func drive(b *testing.B, addr string, w workload, pipeline int, echo bool) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Minute))
	// 64 distinct batches cycled: different keys, no per-request formatting.
	const distinct = 64
	batches := make([][]byte, distinct)
	replies := make([][]byte, distinct)
	for j := range batches {
		for k := range pipeline {
			batches[j] = append(batches[j], w.req(j*pipeline+k)...)
		}
		if echo {
			replies[j] = batches[j]
		} else {
			replies[j] = bytes.Repeat(w.reply, pipeline)
		}
	}
	got := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	b.ResetTimer()
	for done, j := 0, 0; done < b.N; done, j = done+pipeline, (j+1)%distinct {
		if _, err := conn.Write(batches[j]); err != nil {
			b.Fatal(err)
		}
		got = got[:len(replies[j])]
		if _, err := io.ReadFull(conn, got); err != nil {
			b.Fatal(err)
		}
		if !bytes.Equal(got, replies[j]) {
			b.Fatalf("unexpected reply %q, want %q", got, replies[j])
		}
	}
}

// startEcho runs a trivial TCP echo server: one goroutine per connection,
// read into a buffer, write it back.
func startEcho(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 16<<10)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// startNode runs one real node in this process (defaults, RESP on a kernel
// port) with every key of the keyspace set.
func startNode(b *testing.B) string {
	cfg := server.DefaultConfig()
	cfg.NodeID = "ablation"
	cfg.ClientPort, cfg.PeerPort, cfg.GossipPort, cfg.RESPPort = server.EphemeralPort, server.EphemeralPort, server.EphemeralPort, server.EphemeralPort
	cfg.HTTPPort = 0
	n, err := server.NewNode(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = n.Stop(context.Background()) })
	addr := n.RESPAddr().String()
	preload(b, addr)
	return addr
}

// startRedis runs redis-server without persistence, or skips when none is
// installed.
func startRedis(b *testing.B) string {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		b.Skip("redis-server not on the PATH (apt-get install -y redis-server)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("redis-server did not listen on %s: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	preload(b, addr)
	return addr
}

// preload SETs every key once so that GETs hit.
func preload(b *testing.B, addr string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const batch = 1000
	reply := make([]byte, 5*batch)
	for i := 0; i < keyCount; i += batch {
		var req []byte
		for k := i; k < i+batch; k++ {
			req = append(req, setLoad.req(k)...)
		}
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, reply); err != nil {
			b.Fatal(err)
		}
		if !bytes.Equal(reply, bytes.Repeat([]byte("+OK\r\n"), batch)) {
			b.Fatalf("preload: %q", reply[:min(len(reply), 200)])
		}
	}
}

// BenchmarkFloor is the request over loopback: the bare socket (echo), the
// full Zaris RESP path and redis-server, same client.
func BenchmarkFloor(b *testing.B) {
	for _, p := range []int{1, 16} {
		for _, w := range []workload{getLoad, setLoad} {
			b.Run(fmt.Sprintf("socket-echo/%s/P%d", w.name, p), func(b *testing.B) { drive(b, startEcho(b), w, p, true) })
		}
	}
	for _, target := range []struct {
		name  string
		start func(*testing.B) string
	}{{"zaris-resp", startNode}, {"redis", startRedis}} {
		for _, p := range []int{1, 16} {
			for _, w := range []workload{getLoad, setLoad} {
				b.Run(fmt.Sprintf("%s/%s/P%d", target.name, w.name, p), func(b *testing.B) { drive(b, target.start(b), w, p, false) })
			}
		}
	}
}

// BenchmarkParse is the RESP parser alone on one request.
func BenchmarkParse(b *testing.B) {
	lim := resp.Limits{MaxBulkLen: resp.DefaultMaxBulkLen, MaxArgs: resp.DefaultMaxArgs, MaxInline: resp.DefaultMaxInline}
	for _, w := range []workload{getLoad, setLoad} {
		b.Run(w.name, func(b *testing.B) {
			reqs := make([][]byte, 64)
			for i := range reqs {
				reqs[i] = w.req(i)
			}
			var p resp.Parser
			p.Reset()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				args, n, err := p.Next(reqs[i%len(reqs)], &lim)
				if err != nil || n != len(reqs[i%len(reqs)]) || len(args) < 2 {
					b.Fatalf("parse: %d args, %d bytes, %v", len(args), n, err)
				}
			}
		})
	}
}

var sinkSegment int

// BenchmarkRoute is the key's placement: its slot and its segment.
func BenchmarkRoute(b *testing.B) {
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = keyOf(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := keys[i%len(keys)]
		sinkSegment += int(placement.Slot(k)) + int(placement.SegmentOf(k, 256))
	}
}

// BenchmarkStore is the store engine alone over the same keyspace.
func BenchmarkStore(b *testing.B) {
	s, err := store.New(store.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	keys := make([]string, keyCount)
	for i := range keys {
		keys[i] = keyOf(i)
		s.Put(keys[i], value, nil)
	}
	b.Run("GET", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if r := s.Get(keys[i%keyCount]); len(r.Value) != valueSize {
				b.Fatalf("GET: %+v", r)
			}
		}
	})
	b.Run("SET", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			// A fresh value each time, as the front end hands the store a
			// value it owns.
			v := make([]byte, valueSize)
			copy(v, value)
			s.Put(keys[i%keyCount], v, nil)
		}
	})
}

// BenchmarkEncode is the RESP reply alone.
func BenchmarkEncode(b *testing.B) {
	var w resp.Writer
	w.Proto = 2
	b.Run("GET", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			w.B = w.B[:0]
			w.Bulk(value)
		}
	})
	b.Run("SET", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			w.B = w.B[:0]
			w.OK()
		}
	})
	if !bytes.Equal(w.B, []byte("+OK\r\n")) {
		b.Fatalf("encoded %q", w.B)
	}
}

// BenchmarkReplicate is SET on a real 2-node cluster at RF 1 and at RF 2
// (async; sync, quorum all), on keys owned by the node the client talks to: the
// difference is what replication adds to a write.
func BenchmarkReplicate(b *testing.B) {
	for _, rf := range []struct {
		name string
		set  func(*server.Config)
	}{
		{"RF1", func(c *server.Config) { c.ReplicationFactor = 1 }},
		{"RF2-async", func(c *server.Config) {
			c.ReplicationFactor, c.ReplicationMode = 2, server.ReplicationAsync
		}},
		{"RF2-sync", func(c *server.Config) {
			c.ReplicationFactor, c.ReplicationMode, c.WriteQuorum = 2, server.ReplicationSync, server.WriteQuorumAll
		}},
	} {
		b.Run(rf.name, func(b *testing.B) {
			// No auto-rebalance: both nodes are in the first map, and a
			// move started mid-run would answer TRYAGAIN.
			c := clustertest.Start(b, 2, clustertest.Options{NoHTTP: true, Mutate: func(cfg *server.Config) {
				cfg.AutoRebalance = false
				rf.set(cfg)
			}})
			owner := c.Node("n1")
			// Formation may be followed by a rebalance: measure a settled
			// cluster (no move in flight, every partition healthy), on the
			// map every node applied.
			c.Eventually(2*time.Minute, "every partition healthy, no move in flight", func() bool {
				m := c.Map()
				if m == nil {
					return false
				}
				for i := range m.Partitions {
					p := &m.Partitions[i]
					if p.Migrating() || p.HealthState() != failover.Healthy {
						return false
					}
				}
				return true
			})
			c.WaitConverged(time.Minute)
			m := c.Map()
			// Keys n1 owns, so that no request is redirected.
			var owned []int
			for i := 0; len(owned) < 4096 && i < keyCount; i++ {
				if string(m.OwnerOfKey(keyOf(i))) == "n1" {
					owned = append(owned, i)
				}
			}
			if len(owned) == 0 {
				b.Fatal(errors.New("n1 owns no key"))
			}
			w := workload{"SET", func(i int) []byte { return setLoad.req(owned[i%len(owned)]) }, setLoad.reply}
			for _, p := range []int{1, 16} {
				b.Run(fmt.Sprintf("SET/P%d", p), func(b *testing.B) { drive(b, owner.RESPAddr().String(), w, p, false) })
			}
			// The SDK's Put from 16 writers over the native protocol: one
			// multiplexed connection per node, so a node's read batch holds
			// writes of each partition it owns, and the batch's barrier
			// waits for all of them (WaitAll).
			b.Run("SDK-Put/writers=16", func(b *testing.B) { driveSDK(b, c.ConnString(), 16) })
		})
	}
}

// driveSDK runs b.N Puts of 32-byte values through the SDK from writers
// goroutines, every key of the keyspace, each answer checked.
func driveSDK(b *testing.B, conn string, writers int) {
	ctx := context.Background()
	cl, err := sdk.Connect(ctx, conn)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	var next atomic.Int64
	b.SetParallelism(max(1, writers/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r, err := cl.Put(ctx, keyOf(int(next.Add(1))%keyCount), value, nil)
			if err != nil || r.Status != sdk.StatusSuccess {
				b.Errorf("put: %v %v", r.Status, err)
				return
			}
		}
	})
}

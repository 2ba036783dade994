package hybrid_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/hybrid"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/clustertest"
)

// arrivals records when a cache instance's backplane delivered the
// invalidation of each key, and wakes a waiter.
type arrivals struct {
	prefix string // the pair's KeyPrefix
	mu     sync.Mutex
	want   string
	woke   chan time.Time
	count  atomic.Int64 // invalidations of the pair's keys
	last   atomic.Int64 // Unix ns of the latest
}

// watchFor arms the waiter for key and returns its channel.
func (a *arrivals) watchFor(key string) chan time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.want, a.woke = key, make(chan time.Time, 1)
	return a.woke
}

func (a *arrivals) handler(inv hybrid.Invalidation) {
	now := time.Now()
	var key string
	switch {
	case inv.Kind == hybrid.InvalidateKey && inv.Namespace == a.prefix:
		key = inv.Key
	case inv.Kind == hybrid.InvalidateStoreKey && strings.HasPrefix(inv.Key, a.prefix+"v:"):
		key = inv.Key[len(a.prefix)+2:]
	default:
		return
	}
	a.count.Add(1)
	a.last.Store(now.UnixNano())
	a.mu.Lock()
	if key == a.want && a.woke != nil {
		a.woke <- now
		a.woke = nil
	}
	a.mu.Unlock()
}

// backplanePair is a writing and a receiving instance on one backplane
// kind, under their own KeyPrefix.
type backplanePair struct {
	name     string
	writer   *hybrid.Cache
	bp       hybrid.Backplane // the writer's
	received *arrivals
	l2       *sdk.Client // a plain client of the cluster
}

func newBackplanePair(b *testing.B, c *clustertest.Cluster, name string, open func(*sdk.Client, string) hybrid.Backplane) *backplanePair {
	ctx := context.Background()
	prefix := name + ":"
	var caches [2]*hybrid.Cache
	var bps [2]hybrid.Backplane
	for i := range caches {
		l2, err := sdk.Connect(ctx, c.ConnString())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = l2.Close() })
		bps[i] = open(l2, prefix)
		caches[i] = hybrid.New(connect(b, nil, nil), l2, hybrid.Options{Backplane: bps[i], KeyPrefix: prefix, Logger: quiet})
		b.Cleanup(func() { _ = caches[i].Close() })
	}
	p := &backplanePair{name: name, writer: caches[0], bp: bps[0], received: &arrivals{prefix: prefix}}
	b.Cleanup(bps[1].Subscribe(p.received.handler))
	l2, err := sdk.Connect(ctx, c.ConnString())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l2.Close() })
	p.l2 = l2
	return p
}

// newTrackingPair is the reference: a cache without backplane writes, and
// a RESP3 client tracking its prefix (CLIENT TRACKING BCAST, DECISIONS
// D49) on node n1 receives the invalidations.
func newTrackingPair(b *testing.B, c *clustertest.Cluster) *backplanePair {
	ctx := context.Background()
	const prefix = "tr:"
	l2, err := sdk.Connect(ctx, c.ConnString())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l2.Close() })
	h := hybrid.New(connect(b, nil, nil), l2, hybrid.Options{KeyPrefix: prefix, Logger: quiet})
	b.Cleanup(func() { _ = h.Close() })
	p := &backplanePair{name: "tr", writer: h, received: &arrivals{prefix: prefix}, l2: l2}
	dialTracking(b, c.Node("n1").RESPAddr().String(), prefix, p.received)
	// The interest reaches the other owners one bus hop later: wait until
	// a write on each node is heard.
	for _, nd := range c.Running() {
		key := c.KeyOwnedBy(nd.Config().NodeID, prefix+"v:warm:")
		deadline := time.Now().Add(30 * time.Second)
		for heard := false; !heard; {
			if time.Now().After(deadline) {
				b.Fatalf("the tracking client never heard of %s", key)
			}
			woke := p.received.watchFor(key[len(prefix)+2:])
			if _, err := l2.Put(ctx, key, []byte("x"), nil); err != nil {
				b.Fatal(err)
			}
			select {
			case <-woke:
				heard = true
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return p
}

// latency is Set on the writer → the invalidation delivered on the
// receiver's backplane, one write at a time.
func (p *backplanePair) latency(b *testing.B, i int) time.Duration {
	key := fmt.Sprintf("lat:%d", i)
	woke := p.received.watchFor(key)
	start := time.Now()
	if err := p.writer.Set(context.Background(), key, i, nil); err != nil {
		b.Fatal(err)
	}
	select {
	case at := <-woke:
		return at.Sub(start)
	case <-time.After(10 * time.Second):
		b.Fatalf("%s: the invalidation of %s never arrived", p.name, key)
		return 0
	}
}

// throughput runs writers that Set distinct keys for d, then waits for the
// last invalidation: invalidations delivered per second (from the first
// write to the last delivery) and Sets acknowledged per second.
func (p *backplanePair) throughput(b *testing.B, writers int, d time.Duration, put func(ctx context.Context, w, i int) (int, error)) (deliveredPerSec, writesPerSec float64, lost int64) {
	ctx := context.Background()
	before := p.received.count.Load()
	var acked atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; time.Since(start) < d; i++ {
				n, err := put(ctx, w, i)
				if err != nil {
					b.Errorf("%s: %v", p.name, err)
					return
				}
				acked.Add(int64(n))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	want := acked.Load()
	deadline := time.Now().Add(30 * time.Second)
	for p.received.count.Load()-before < want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // draining: poll the counter
	}
	got := p.received.count.Load() - before
	span := time.Duration(p.received.last.Load() - start.UnixNano())
	return float64(got) / span.Seconds(), float64(want) / elapsed.Seconds(), want - got
}

func rounded(v []float64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x + .5)
	}
	return out
}

func pct(d []time.Duration, q float64) time.Duration {
	return d[min(len(d)-1, int(q*float64(len(d))))]
}

// BenchmarkBackplaneInvalidation measures, on one 3-node cluster in one
// run, how fast another instance's L1 hears of a write through
// WatchBackplane (the store's own change tracking) and through
// PubSubBackplane (a message per write): latency of a Set on one instance
// → the invalidation delivered on another (p50, p99), and the most
// invalidations per second delivered while 32 writers Set as fast as they
// can; then each transport alone: pub/sub carrying messages published
// one by one, the watch carrying writes no cache made (PutMany, batches
// of 100). Figures go to docs/BENCHMARKS.md as ratios to the pub/sub
// backplane.
//
//	go test -run XXX -bench BackplaneInvalidation -benchtime 1x -v ./hybrid
func BenchmarkBackplaneInvalidation(b *testing.B) {
	c := clustertest.Start(b, 3, clustertest.Options{NoHTTP: true})
	ctx := context.Background()
	ps := newBackplanePair(b, c, "ps", func(l2 *sdk.Client, _ string) hybrid.Backplane {
		bp, err := hybrid.NewPubSubBackplane(ctx, l2, hybrid.PubSubOptions{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = bp.Close() })
		return bp
	})
	wb := newBackplanePair(b, c, "wb", func(l2 *sdk.Client, prefix string) hybrid.Backplane {
		bp, err := hybrid.NewWatchBackplane(ctx, l2, hybrid.WatchBackplaneOptions{KeyPrefix: prefix, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = bp.Close() })
		return bp
	})
	tr := newTrackingPair(b, c)
	pairs := []*backplanePair{ps, wb, tr}
	const trials = 1000
	const writers = 32
	const window = 3 * time.Second
	const rounds = 3
	for n := 0; n < b.N; n++ {
		// Latency: the two kinds alternate write by write, so both see
		// the same machine.
		lat := map[string][]time.Duration{}
		for i := range trials {
			for j := range pairs {
				p := pairs[(i+j)%len(pairs)]
				lat[p.name] = append(lat[p.name], p.latency(b, n*trials+i))
			}
		}
		for _, d := range lat {
			slices.Sort(d)
		}
		// Throughput. Sets: 32 writers Set distinct keys as fast as they
		// can, for each kind. Transport alone: pub/sub carrying messages
		// published one by one (32 publishers); the watch and the D49
		// tracking path carrying writes no cache made (4 writers of
		// PutMany batches of 100) — pub/sub never hears those at all.
		// Every run is repeated in rounds that alternate the kinds (the
		// machine's load swings); the median round is reported.
		plainWrites := func(p *backplanePair) func(ctx context.Context, w, i int) (int, error) {
			return func(ctx context.Context, w, i int) (int, error) {
				batch := make([]sdk.KV, 100)
				for k := range batch {
					batch[k] = sdk.KV{Key: fmt.Sprintf("%s:v:plain:%d:%d:%d", p.name, w, i, k), Value: []byte("x")}
				}
				res, err := p.l2.PutMany(ctx, batch)
				return len(res), err
			}
		}
		setWrites := func(p *backplanePair, round int) func(ctx context.Context, w, i int) (int, error) {
			return func(ctx context.Context, w, i int) (int, error) {
				return 1, p.writer.Set(ctx, fmt.Sprintf("tp:%d:%d:%d", round, w, i), i, nil)
			}
		}
		type run struct {
			name    string
			p       *backplanePair
			writers int
			put     func(round int) func(ctx context.Context, w, i int) (int, error)
		}
		runs := []run{
			{"ps-set", ps, writers, func(r int) func(context.Context, int, int) (int, error) { return setWrites(ps, r) }},
			{"wb-set", wb, writers, func(r int) func(context.Context, int, int) (int, error) { return setWrites(wb, r) }},
			{"tr-set", tr, writers, func(r int) func(context.Context, int, int) (int, error) { return setWrites(tr, r) }},
			{"ps-alone", ps, writers, func(int) func(context.Context, int, int) (int, error) {
				return func(ctx context.Context, w, i int) (int, error) {
					return 1, ps.bp.Publish(ctx, hybrid.Invalidation{Kind: hybrid.InvalidateKey, Source: "bench", Namespace: "ps:", Key: fmt.Sprintf("pub:%d:%d", w, i)})
				}
			}},
			{"wb-alone", wb, 4, func(int) func(context.Context, int, int) (int, error) { return plainWrites(wb) }},
			{"tr-alone", tr, 4, func(int) func(context.Context, int, int) (int, error) { return plainWrites(tr) }},
		}
		rates := map[string][]float64{}
		writes := map[string][]float64{}
		for round := range rounds {
			for j := range runs {
				r := runs[(round+j)%len(runs)]
				got, acked, lost := r.p.throughput(b, r.writers, window, r.put(n*rounds+round))
				if lost != 0 {
					b.Logf("%s round %d: %d invalidations not delivered", r.name, round, lost)
				}
				rates[r.name] = append(rates[r.name], got)
				writes[r.name] = append(writes[r.name], acked)
			}
		}
		median := func(v []float64) float64 {
			v = slices.Clone(v)
			slices.Sort(v)
			return v[len(v)/2]
		}
		rate := func(name string) float64 { return median(rates[name]) }
		b.Logf("latency Set → other instance's backplane, %d writes each (p50 / p99 / max):", trials)
		for _, p := range pairs {
			d := lat[p.name]
			b.Logf("  %-6s %8v %8v %8v", p.name, pct(d, .5), pct(d, .99), d[len(d)-1])
		}
		b.Logf("invalidations/s delivered, median of %d rounds of %v (all rounds):", rounds, window)
		for _, r := range runs {
			b.Logf("  %-9s %8.0f   %v (writes/s acknowledged %v)", r.name, rate(r.name), rounded(rates[r.name]), rounded(writes[r.name]))
		}
		b.Logf("ratios watch / pubsub: latency p50 %.2f×, p99 %.2f×; invalidations/s with Sets %.2f×; transport alone %.2f×",
			float64(pct(lat["wb"], .5))/float64(pct(lat["ps"], .5)), float64(pct(lat["wb"], .99))/float64(pct(lat["ps"], .99)),
			rate("wb-set")/rate("ps-set"), rate("wb-alone")/rate("ps-alone"))
		b.Logf("reference, D49 tracking / pubsub: latency p50 %.2f×, p99 %.2f×; invalidations/s with Sets %.2f×; transport alone %.2f× (%.2f× the watch)",
			float64(pct(lat["tr"], .5))/float64(pct(lat["ps"], .5)), float64(pct(lat["tr"], .99))/float64(pct(lat["ps"], .99)),
			rate("tr-set")/rate("ps-set"), rate("tr-alone")/rate("ps-alone"), rate("tr-alone")/rate("wb-alone"))
		b.ReportMetric(float64(pct(lat["ps"], .5).Microseconds()), "pubsub-p50-µs")
		b.ReportMetric(float64(pct(lat["ps"], .99).Microseconds()), "pubsub-p99-µs")
		b.ReportMetric(float64(pct(lat["wb"], .5).Microseconds()), "watch-p50-µs")
		b.ReportMetric(float64(pct(lat["wb"], .99).Microseconds()), "watch-p99-µs")
		b.ReportMetric(rate("ps-set"), "pubsub-inv/s")
		b.ReportMetric(rate("wb-set"), "watch-inv/s")
	}
}

// trackingClient is a RESP3 connection with CLIENT TRACKING ON BCAST on a
// key prefix — the invalidation path of DECISIONS D49 (owner → bus → the
// tracking client's node → push), the one a native-protocol subscription
// would have reused. It feeds arrivals like a backplane handler.
type trackingClient struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialTracking(b *testing.B, addr, prefix string, to *arrivals) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	tc := &trackingClient{conn: conn, r: bufio.NewReader(conn)}
	for _, cmd := range [][]string{{"HELLO", "3"}, {"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", prefix + "v:"}} {
		if err := tc.send(cmd...); err != nil {
			b.Fatal(err)
		}
		if _, err := tc.read(); err != nil {
			b.Fatal(err)
		}
	}
	done := make(chan struct{})
	b.Cleanup(func() {
		_ = conn.Close()
		<-done
	})
	go func() {
		defer close(done)
		for {
			v, err := tc.read()
			if err != nil {
				return
			}
			push, ok := v.([]any)
			if !ok || len(push) != 2 || push[0] != "invalidate" {
				continue
			}
			keys, _ := push[1].([]any)
			for _, k := range keys {
				if s, ok := k.(string); ok {
					to.handler(hybrid.Invalidation{Kind: hybrid.InvalidateStoreKey, Key: s})
				}
			}
		}
	}()
}

func (tc *trackingClient) send(args ...string) error {
	buf := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		buf = append(buf, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	_, err := tc.conn.Write(buf)
	return err
}

// read parses one RESP3 value: strings and numbers as string, aggregates
// (arrays, sets, pushes, maps flattened) as []any, nulls as nil.
func (tc *trackingClient) read() (any, error) {
	line, err := tc.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, errors.New("short RESP line")
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', '-', ':', ',', '#', '(':
		return body, nil
	case '_':
		return nil, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		data := make([]byte, n+2)
		if _, err := io.ReadFull(tc.r, data); err != nil {
			return nil, err
		}
		return string(data[:n]), nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		out := make([]any, 0, max(n, 0))
		for range n {
			v, err := tc.read()
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		if line[0] == '|' { // an attribute precedes the value it describes
			return tc.read()
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown RESP type %q", line[0])
}

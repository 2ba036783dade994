package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/internal/hdr"
)

// maxKeyDigits is the widest key index (a 64-bit int in decimal).
const maxKeyDigits = 20

// warmupBatchBytes bounds the bytes of one warmup batch: warmup pipelines
// deeper than the measured run, but not without limit for large values.
const (
	warmupBatchBytes = 4 << 20
	maxWarmupDepth   = 256
)

// run executes one benchmark: connect every client (failing fast on a
// refused connection or handshake), warm the keyspace up if asked, drive
// the load until the duration or request count is reached, and print the
// report to stdout (text, or JSON with cfg.JSON). Progress lines and notes
// go to stderr. The report is returned with any error that made the run
// incomplete: a connection lost mid-run, or ctx canceled (the report then
// covers what completed).
func run(ctx context.Context, cfg Config, stdout, stderr io.Writer) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	tgt, err := resolveTarget(ctx, cfg.address(), cfg.AllowRemote)
	if err != nil {
		return Report{}, err
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	value := makeValue(cfg.DataSize, seed)
	d, err := newDialer(&cfg, tgt, value)
	if err != nil {
		return Report{}, err
	}

	workers, err := connectAll(ctx, d, &cfg, seed)
	if err != nil {
		return Report{}, err
	}
	defer func() {
		for _, w := range workers {
			_ = w.cli.Close()
		}
	}()
	// Canceling ctx closes the connections, which unblocks any worker
	// waiting for responses at once instead of after --timeout.
	for _, w := range workers {
		stop := context.AfterFunc(ctx, func() { _ = w.cli.Close() })
		defer stop()
	}

	rep := newReport(&cfg, d.addr)
	if cfg.warmupEnabled() {
		t0 := time.Now()
		if err := warmup(ctx, workers, &cfg); err != nil {
			return rep, fmt.Errorf("warmup: %w", err)
		}
		rep.WarmupKeys = cfg.Keyspace
		rep.WarmupSeconds = round(time.Since(t0).Seconds(), 3)
		fmt.Fprintf(stderr, "warmup: SET %d keys in %.2fs\n", cfg.Keyspace, rep.WarmupSeconds)
	}

	lim := newLimiter(&cfg, time.Now())
	start := time.Now()
	stopProgress := startProgress(&cfg, workers, start, stderr)
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Go(func() { errs[i] = w.load(ctx, &cfg, lim) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()

	var t totals
	for _, w := range workers {
		t.add(&w.stats)
	}
	rep.fill(&t, elapsed)
	var runErr error
	if failed := countErrors(errs); failed > 0 {
		runErr = fmt.Errorf("%d of %d connections failed during the run; first: %w", failed, len(errs), firstError(errs))
	}
	if ctx.Err() != nil {
		rep.Interrupted = true
		runErr = errors.Join(fmt.Errorf("interrupted: %w", context.Cause(ctx)), runErr)
	}
	if err := rep.write(stdout, cfg.JSON); err != nil {
		return rep, errors.Join(runErr, fmt.Errorf("writing report: %w", err))
	}
	return rep, runErr
}

// makeValue returns the SET value: printable pseudo-random bytes, so a
// value compresses no better than real data and is readable in redis-cli.
func makeValue(n int, seed uint64) []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	r := rand.New(rand.NewPCG(seed, 0x76616c7565))
	v := make([]byte, n)
	for i := range v {
		v[i] = alphabet[r.IntN(len(alphabet))]
	}
	return v
}

// connectAll opens cfg.Connections clients. The first is dialed alone so a
// wrong address, store or token fails with one clear error instead of N.
func connectAll(ctx context.Context, d *dialer, cfg *Config, seed uint64) ([]*worker, error) {
	first, err := d.dialFirst(ctx)
	if err != nil {
		return nil, err
	}
	clients := make([]client, cfg.Connections)
	clients[0] = first
	errs := make([]error, cfg.Connections)
	sem := make(chan struct{}, 64) // dials in flight: a burst of thousands would overflow the accept backlog
	var wg sync.WaitGroup
	for i := 1; i < cfg.Connections; i++ {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			clients[i], errs[i] = d.dial(ctx)
		})
	}
	wg.Wait()
	if err := firstError(errs); err != nil {
		for _, c := range clients {
			if c != nil {
				_ = c.Close()
			}
		}
		return nil, fmt.Errorf("%d of %d connections failed to open; first: %w", countErrors(errs), cfg.Connections, err)
	}

	keys := newKeyGen(cfg)
	depth := max(cfg.Pipeline, warmupDepth(cfg))
	workers := make([]*worker, cfg.Connections)
	for i, c := range clients {
		workers[i] = &worker{
			cli:  c,
			rng:  rand.New(rand.NewPCG(seed, uint64(i))),
			keys: keys,
			reqs: make([]request, depth),
			res:  make([]response, depth),
			// Every key has the same length, so this never grows and the
			// key slices of a batch stay valid while it is filled.
			kbuf: make([]byte, 0, depth*keys.len()),
		}
	}
	return workers, nil
}

func countErrors(errs []error) int {
	n := 0
	for _, err := range errs {
		if err != nil {
			n++
		}
	}
	return n
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func warmupDepth(cfg *Config) int {
	return min(maxWarmupDepth, max(1, warmupBatchBytes/(cfg.DataSize+len(cfg.KeyPrefix)+maxKeyDigits+32)))
}

// warmup SETs every key of the keyspace once, each connection a contiguous
// share, pipelined warmupDepth deep. Any error reply fails it: GETs that
// are supposed to hit would not.
func warmup(ctx context.Context, workers []*worker, cfg *Config) error {
	depth := warmupDepth(cfg)
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		lo := cfg.Keyspace * i / len(workers)
		hi := cfg.Keyspace * (i + 1) / len(workers)
		wg.Go(func() {
			for k := lo; k < hi; k += depth {
				if err := ctx.Err(); err != nil {
					errs[i] = err
					return
				}
				n := min(depth, hi-k)
				reqs := w.fill(n, func(j int) (opKind, int) { return opSet, k + j })
				res := w.res[:n]
				if err := w.cli.roundTrip(reqs, res); err != nil {
					errs[i] = err
					return
				}
				for j := range res {
					if res[j].outcome == outError {
						errs[i] = fmt.Errorf("SET %s: %s", reqs[j].key, res[j].errMsg)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	return firstError(errs)
}

// limiter hands out the requests of a run: none after the deadline, and no
// more than the request budget over all connections.
type limiter struct {
	deadline  time.Time    // zero: no time bound
	bounded   bool         // whether remaining applies
	remaining atomic.Int64 // requests not yet handed out; may go negative
}

func newLimiter(cfg *Config, now time.Time) *limiter {
	l := &limiter{bounded: cfg.Requests > 0}
	if cfg.Duration > 0 {
		l.deadline = now.Add(cfg.Duration)
	}
	l.remaining.Store(cfg.Requests)
	return l
}

// take returns how many of want requests the caller may send now: 0 when
// the run is over.
func (l *limiter) take(want int) int {
	if !l.deadline.IsZero() && !time.Now().Before(l.deadline) {
		return 0
	}
	if !l.bounded {
		return want
	}
	left := l.remaining.Add(-int64(want))
	switch {
	case left >= 0:
		return want
	case left > -int64(want):
		return want + int(left)
	}
	return 0
}

// keyGen formats keys: the prefix, then the index zero-padded to the width
// of the largest index, so every key has the same length.
type keyGen struct {
	prefix string
	width  int
}

func newKeyGen(cfg *Config) keyGen {
	return keyGen{prefix: cfg.KeyPrefix, width: len(strconv.Itoa(cfg.Keyspace - 1))}
}

func (g keyGen) len() int { return len(g.prefix) + g.width }

func (g keyGen) appendKey(dst []byte, i int) []byte {
	dst = append(dst, g.prefix...)
	var digits [maxKeyDigits]byte
	d := strconv.AppendInt(digits[:0], int64(i), 10)
	for range g.width - len(d) {
		dst = append(dst, '0')
	}
	return append(dst, d...)
}

// worker drives one connection from one goroutine, which owns every field
// but stats.
type worker struct {
	cli   client
	rng   *rand.Rand
	stats connStats

	keys keyGen
	reqs []request
	res  []response
	kbuf []byte // backing bytes of the current batch's keys
}

// fill builds a batch of n requests; pick(i) gives the kind and key index
// of the i-th.
func (w *worker) fill(n int, pick func(i int) (opKind, int)) []request {
	w.kbuf = w.kbuf[:0]
	reqs := w.reqs[:n]
	for i := range reqs {
		kind, k := pick(i)
		start := len(w.kbuf)
		w.kbuf = w.keys.appendKey(w.kbuf, k)
		reqs[i] = request{kind: kind, key: w.kbuf[start:len(w.kbuf):len(w.kbuf)]}
	}
	return reqs
}

// load runs batches of cfg.Pipeline random requests until the limiter says
// stop, ctx is canceled, or the connection fails (the error returned).
func (w *worker) load(ctx context.Context, cfg *Config, lim *limiter) error {
	weight := cfg.GetRatio + cfg.SetRatio
	pick := func(int) (opKind, int) {
		kind := opSet
		if w.rng.IntN(weight) < cfg.GetRatio {
			kind = opGet
		}
		return kind, w.rng.IntN(cfg.Keyspace)
	}
	for ctx.Err() == nil {
		n := lim.take(cfg.Pipeline)
		if n == 0 {
			return nil
		}
		reqs := w.fill(n, pick)
		if err := w.cli.roundTrip(reqs, w.res[:n]); err != nil {
			if ctx.Err() != nil {
				return nil // interrupted: the connection was closed under us
			}
			w.stats.lost(n, err)
			return err
		}
		w.stats.record(reqs, w.res[:n])
	}
	return nil
}

// connStats are one connection's measurements.
type connStats struct {
	mu sync.Mutex // guards every field below: the worker writes once per batch, the progress line reads
	// hist holds the latency in nanoseconds of every answered request.
	hist hdr.Histogram
	// ops counts answered requests (errors included); errors counts error
	// replies plus requests lost with a failed connection.
	ops, gets, sets, hits, misses, errors uint64
	firstErr                              string
}

func (s *connStats) record(reqs []request, res []response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range res {
		s.hist.Record(uint64(max(r.latency, 0)))
		if reqs[i].kind == opGet {
			s.gets++
		} else {
			s.sets++
		}
		switch r.outcome {
		case outHit:
			s.hits++
		case outMiss:
			s.misses++
		case outError:
			s.errors++
			if s.firstErr == "" {
				s.firstErr = r.errMsg
			}
		}
	}
	s.ops += uint64(len(res))
}

// lost counts n requests that will never be answered.
func (s *connStats) lost(n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errors += uint64(n)
	if s.firstErr == "" {
		s.firstErr = err.Error()
	}
}

// totals are connStats summed over connections.
type totals struct {
	hist                                  hdr.Histogram
	ops, gets, sets, hits, misses, errors uint64
	firstErr                              string
}

func (t *totals) add(s *connStats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.hist.Merge(&s.hist)
	t.ops += s.ops
	t.gets += s.gets
	t.sets += s.sets
	t.hits += s.hits
	t.misses += s.misses
	t.errors += s.errors
	if t.firstErr == "" {
		t.firstErr = s.firstErr
	}
}

func (t *totals) reset() {
	t.hist.Reset()
	t.ops, t.gets, t.sets, t.hits, t.misses, t.errors, t.firstErr = 0, 0, 0, 0, 0, 0, ""
}

// startProgress prints a line to w every cfg.Progress until the returned
// stop function is called; stop waits for the printer to exit.
func startProgress(cfg *Config, workers []*worker, start time.Time, w io.Writer) (stop func()) {
	if cfg.Progress <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(cfg.Progress)
		defer tick.Stop()
		var t totals
		var lastOps uint64
		last := start
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				t.reset()
				for _, wk := range workers {
					t.add(&wk.stats)
				}
				rate := float64(t.ops-lastOps) / now.Sub(last).Seconds()
				avg := float64(t.ops) / now.Sub(start).Seconds()
				fmt.Fprintf(w, "[%6.1fs] %d ops  %.0f ops/s (avg %.0f)  p99 %.1fµs  errors %d\n",
					now.Sub(start).Seconds(), t.ops, rate, avg, micros(t.hist.ValueAtQuantile(0.99)), t.errors)
				lastOps, last = t.ops, now
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

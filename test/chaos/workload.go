package chaos

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/zaris-io/zaris/sdk"
)

// WorkloadConfig shapes the writers and readers.
type WorkloadConfig struct {
	Keys      int           // distinct keys, overwritten again and again; default 200
	Writers   int           // writer goroutines over disjoint key subsets; default 4
	Readers   int           // reader goroutines over every key; default 2
	Deadline  time.Duration // per call; default 3 s
	ValueSize int           // bytes per value (at least the encoded key and sequence); default 64
	Prefix    string        // key prefix; default "chaos:"
	Seed      uint64
}

func (c *WorkloadConfig) defaults() {
	if c.Keys <= 0 {
		c.Keys = 200
	}
	if c.Writers <= 0 {
		c.Writers = 4
	}
	if c.Readers <= 0 {
		c.Readers = 2
	}
	if c.Deadline <= 0 {
		c.Deadline = 3 * time.Second
	}
	if c.ValueSize <= 0 {
		c.ValueSize = 64
	}
	if c.Prefix == "" {
		c.Prefix = "chaos:"
	}
}

// Workload is the writers and readers of one chaos run, feeding a Ledger.
type Workload struct {
	cfg    WorkloadConfig
	client *sdk.Client
	ledger *Ledger
	keys   []string

	stop       chan struct{}
	wg         sync.WaitGroup
	stopOnce   sync.Once
	readErrs   sync.Mutex // guards readFails
	readFails  int64
	readErrMsg string
}

// Key returns the workload's i-th key.
func (c WorkloadConfig) Key(i int) string { return c.Prefix + strconv.Itoa(i) }

// StartWorkload connects to the cluster with the SDK's default settings
// and starts the writers and readers. log receives the SDK's warnings.
func StartWorkload(ctx context.Context, connString string, cfg WorkloadConfig, log io.Writer) (*Workload, error) {
	cfg.defaults()
	if log == nil {
		log = io.Discard
	}
	cl, err := sdk.Connect(ctx, connString, sdk.WithLogger(slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err != nil {
		return nil, fmt.Errorf("chaos: connect %s: %w", connString, err)
	}
	w := &Workload{cfg: cfg, client: cl, ledger: NewLedger(), stop: make(chan struct{})}
	for i := range cfg.Keys {
		w.keys = append(w.keys, cfg.Key(i))
	}
	for i := range cfg.Writers {
		var mine []string
		for k := i; k < len(w.keys); k += cfg.Writers {
			mine = append(mine, w.keys[k])
		}
		w.wg.Add(1)
		go w.writer(i, mine)
	}
	for i := range cfg.Readers {
		w.wg.Add(1)
		go w.reader(rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1)))
	}
	return w, nil
}

// Ledger is the workload's ledger.
func (w *Workload) Ledger() *Ledger { return w.ledger }

// Keys are the workload's keys.
func (w *Workload) Keys() []string { return w.keys }

func (w *Workload) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

// writer overwrites its keys round robin, each with the next sequence.
func (w *Workload) writer(id int, keys []string) {
	defer w.wg.Done()
	for n := 0; !w.stopped(); n++ {
		key := keys[n%len(keys)]
		seq := w.ledger.Next(key)
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Deadline)
		r, err := w.client.Put(ctx, key, EncodeValue(key, seq, w.cfg.ValueSize), nil)
		cancel()
		if err == nil && r.Status == sdk.StatusSuccess {
			w.ledger.Ack(id, key, seq, time.Now())
			continue
		}
		w.ledger.Fail(id, key, seq, sent)
		// A failing call returned at its deadline or at once (a refused
		// connection): do not spin on the latter.
		if time.Since(sent) < 50*time.Millisecond {
			w.pause(50 * time.Millisecond)
		}
	}
}

// pause sleeps d unless the workload stops first (pacing, not
// synchronisation).
func (w *Workload) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.stop:
	case <-t.C:
	}
}

// reader reads random keys and checks each answer against the ledger.
func (w *Workload) reader(rng *rand.Rand) {
	defer w.wg.Done()
	for !w.stopped() {
		key := w.keys[rng.IntN(len(w.keys))]
		floor := w.ledger.Floor(key)
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Deadline)
		start := time.Now()
		r, err := w.client.Get(ctx, key)
		cancel()
		switch {
		case err == nil && r.Status == sdk.StatusSuccess:
			w.ledger.Read(key, floor, true, r.Value, start)
		case err == nil && r.Status == sdk.StatusNotFound:
			w.ledger.Read(key, floor, false, nil, start)
		default:
			w.readErrs.Lock()
			w.readFails++
			if w.readErrMsg == "" {
				what := "status " + r.Status.String()
				if err != nil {
					what = err.Error()
				}
				w.readErrMsg = fmt.Sprintf("%s get %s: %s", start.UTC().Format("15:04:05.000"), key, what)
			}
			w.readErrs.Unlock()
			if time.Since(start) < 50*time.Millisecond {
				w.pause(50 * time.Millisecond)
			}
		}
	}
}

// Stop stops the writers and readers and waits for them (each returns
// within one call deadline). Safe to call more than once.
func (w *Workload) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	w.wg.Wait()
}

// Result is the outcome of a chaos run.
type Result struct {
	Acked         int64 // acknowledged writes
	Indeterminate int64 // writes that failed (Timeout, deadline, dead connection…)
	Lost          []Lost
	Reads         int64
	ReadErrors    int64
	FirstReadErr  string
	StaleReads    int64
	Corrupt       int64
	StaleEx       []string
	CorruptEx     []string
	Unavailable   time.Duration
	Unverified    []string // keys the final verification could not read at all
}

// Summary is the one summary line of a run.
func (r Result) Summary() string {
	return fmt.Sprintf("acked=%d lost=%d stale_reads=%d unavailable_ms=%d",
		r.Acked, len(r.Lost), r.StaleReads, r.Unavailable.Milliseconds())
}

// Details are the lines printed before the summary.
func (r Result) Details() []string {
	lines := []string{fmt.Sprintf("writes: acked=%d indeterminate=%d; reads: checked=%d errors=%d stale=%d corrupt=%d; unverifiable keys=%d",
		r.Acked, r.Indeterminate, r.Reads, r.ReadErrors, r.StaleReads, r.Corrupt, len(r.Unverified))}
	if r.FirstReadErr != "" {
		lines = append(lines, "first read error: "+r.FirstReadErr)
	}
	for _, s := range r.StaleEx {
		lines = append(lines, "stale read: "+s)
	}
	for _, s := range r.CorruptEx {
		lines = append(lines, "corrupt read: "+s)
	}
	for _, x := range r.Lost {
		lines = append(lines, x.String())
	}
	for _, k := range r.Unverified {
		lines = append(lines, "unverifiable (no answer): "+k)
	}
	return lines
}

// Verify stops the workload (if still running) and reads every key back,
// retrying failures for up to 30 s per key, and returns the run's result.
// Call it after the cluster healed. The client is closed afterwards.
func (w *Workload) Verify(ctx context.Context) Result {
	w.Stop()
	defer w.client.Close()
	now := time.Now()
	c := w.ledger.Counts()
	res := Result{Acked: c.Acked, Indeterminate: c.Failed, Reads: c.Reads, StaleReads: c.Stale, Corrupt: c.Corrupt,
		StaleEx: c.StaleExamples, CorruptEx: c.CorruptExamples, Unavailable: w.ledger.Unavailable(now)}
	w.readErrs.Lock()
	res.ReadErrors, res.FirstReadErr = w.readFails, w.readErrMsg
	w.readErrs.Unlock()
	for _, key := range w.keys {
		var (
			r   sdk.Result
			err error
		)
		deadline := time.Now().Add(30 * time.Second)
		for {
			cctx, cancel := context.WithTimeout(ctx, w.cfg.Deadline)
			r, err = w.client.Get(cctx, key)
			cancel()
			if err == nil && (r.Status == sdk.StatusSuccess || r.Status == sdk.StatusNotFound) {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
			time.Sleep(100 * time.Millisecond) // retry pacing
		}
		switch {
		case err == nil && r.Status == sdk.StatusSuccess:
			if x := w.ledger.Verify(key, true, r.Value); x != nil {
				res.Lost = append(res.Lost, *x)
			}
		case err == nil && r.Status == sdk.StatusNotFound:
			if x := w.ledger.Verify(key, false, nil); x != nil {
				res.Lost = append(res.Lost, *x)
			}
		default:
			res.Unverified = append(res.Unverified, fmt.Sprintf("%s: status %s, err %v", key, r.Status, err))
		}
	}
	return res
}

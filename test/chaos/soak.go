package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/sdk"
)

// The soak scenario (issue #16 item 5, `make soak DURATION=1h`): a mixed
// workload through the SDK and through go-redis's ClusterClient against a
// 3-node RF 2 sync (write quorum all) cluster of real processes, a fault
// every 30 s, and at the end one verdict on data (lost, stale, corrupt),
// transactions (an invariant), pub/sub and watch delivery, and the
// processes' memory and goroutines over time.
//
// Data is checked with the chaos Ledger: every key of every data type is a
// register with one writer whose writes carry the key and a sequence number
// (EncodeValue), so a read tells an old value from the newest acknowledged
// one. A list, a set and a stream hold the last writes of their key (trimmed
// to soakKeep), and their whole retained content is checked at the end: in
// order, no duplicate, no acknowledged element missing.

// SoakConfig is one soak run.
type SoakConfig struct {
	Cluster Options // RF 2, sync, quorum all unless set
	// Duration is the fault phase (the workload runs a little before and
	// after it); default 1 h.
	Duration   time.Duration
	FaultEvery time.Duration // from one fault's start to the next; default 30 s
	Seed       uint64
	Keys       int // keys per data type and client; default 32
	Rate       int // operations per second of each worker goroutine; default 40
	// Window is the length of the first and last windows compared for
	// growth; default Duration/6, at most 10 min.
	Window time.Duration
	Sample time.Duration // resource sampling period; default Window/30, within 1–10 s
	// Warmup is the fault-free run of the workload before the fault phase
	// (the key space fills, the heaps reach their working size); default
	// Duration/10, at most 1 min.
	Warmup time.Duration
	// SamplesFile, if set, receives every resource sample as CSV.
	SamplesFile string
	// OpLogMaxOps is the nodes' --oplog-max-ops (unless Cluster.Extra
	// names it); default 64. The op-logs are bounded (by default 1024
	// entries per segment), but at the soak's write rate the default
	// bound fills for about 20 minutes, which the growth rule cannot tell
	// from a leak; 64 entries fill within the warm-up.
	OpLogMaxOps int
	RSS         GrowthRule // default +20 % and 16 MiB
	Gor         GrowthRule // goroutines; default +10 % and 10
	Out         io.Writer
}

func (c *SoakConfig) defaults() {
	if c.Duration <= 0 {
		c.Duration = time.Hour
	}
	if c.FaultEvery <= 0 {
		c.FaultEvery = 30 * time.Second
	}
	if c.Keys <= 0 {
		c.Keys = 32
	}
	if c.Rate <= 0 {
		c.Rate = 40
	}
	if c.Window <= 0 {
		c.Window = min(10*time.Minute, c.Duration/6)
	}
	if c.Warmup <= 0 {
		c.Warmup = min(time.Minute, c.Duration/10)
	}
	if c.Sample <= 0 {
		c.Sample = min(10*time.Second, max(time.Second, c.Window/30))
	}
	if c.RSS.MaxRatio <= 0 {
		c.RSS = GrowthRule{MaxRatio: 0.20, Slack: 16 << 20}
	}
	if c.Gor.MaxRatio <= 0 {
		c.Gor = GrowthRule{MaxRatio: 0.10, Slack: 10}
	}
	if c.OpLogMaxOps <= 0 {
		c.OpLogMaxOps = 64
	}
	if !slices.ContainsFunc(c.Cluster.Extra, func(f string) bool { return flagName(f) == "oplog-max-ops" }) {
		c.Cluster.Extra = append(slices.Clone(c.Cluster.Extra), "--oplog-max-ops="+strconv.Itoa(c.OpLogMaxOps))
	}
	if c.Cluster.RF == 0 {
		c.Cluster.RF = 2
	}
	if c.Cluster.Mode == "" {
		c.Cluster.Mode = "sync"
	}
	if c.Cluster.Quorum == "" && c.Cluster.Mode == "sync" {
		c.Cluster.Quorum = "all"
	}
}

// soakKeep is how many of the newest elements a list, set or stream keeps.
const soakKeep = 64

// soakDeadline bounds one call of the workload.
const soakDeadline = 3 * time.Second

// --- growth rule ---

// GrowthRule decides whether a series grew between two windows: the median
// of the last window exceeds the median of the first by more than MaxRatio
// (0.2 = +20 %) and by more than Slack (absolute, in the series' unit: a
// few goroutines or MiB of noise are not growth).
type GrowthRule struct {
	MaxRatio float64
	Slack    float64
}

// GrowthVerdict is the rule applied to two windows.
type GrowthVerdict struct {
	First, Last float64 // medians
	Ratio       float64 // Last/First - 1
	Judged      bool    // both windows had samples
	Grew        bool
}

// Check applies the rule to the samples of the first and the last window.
func (g GrowthRule) Check(first, last []float64) GrowthVerdict {
	if len(first) == 0 || len(last) == 0 {
		return GrowthVerdict{}
	}
	v := GrowthVerdict{First: median(first), Last: median(last), Judged: true}
	if v.First > 0 {
		v.Ratio = v.Last/v.First - 1
	}
	v.Grew = v.Last > v.First*(1+g.MaxRatio) && v.Last-v.First > g.Slack
	return v
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// --- counters ---

// OpCount counts one kind of operation.
type OpCount struct{ OK, Failed int64 }

// soakStats counts operations by kind and failures by client and class.
type soakStats struct {
	mu   sync.Mutex // guards both maps
	ops  map[string]*OpCount
	errs map[string]int64
}

func newSoakStats() *soakStats {
	return &soakStats{ops: map[string]*OpCount{}, errs: map[string]int64{}}
}

// count records one operation what ("sdk string write") by api, failed
// when err is not nil.
func (s *soakStats) count(api, what string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	oc := s.ops[what]
	if oc == nil {
		oc = &OpCount{}
		s.ops[what] = oc
	}
	if err == nil {
		oc.OK++
		return
	}
	oc.Failed++
	s.errs[api+" "+ErrClass(err)]++
}

// ErrClass names the class of a failed call for the error table: the
// Zaris status, the Redis error code, or the transport failure.
func ErrClass(err error) string {
	s := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded) || strings.Contains(s, "deadline exceeded"):
		return "deadline"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case strings.Contains(s, "i/o timeout"):
		return "i/o timeout"
	case strings.Contains(s, "server unreachable"):
		return "server unreachable"
	case strings.Contains(s, "connection refused"):
		return "connection refused"
	case strings.Contains(s, "connection reset"), strings.Contains(s, "broken pipe"), s == "EOF", strings.HasSuffix(s, " EOF"),
		strings.Contains(s, "use of closed network connection"), strings.Contains(s, "connection lost"):
		return "connection lost"
	case errors.Is(err, sdk.ErrTxOutcomeUnknown):
		return "tx outcome unknown"
	case errors.Is(err, sdk.ErrTxPartial):
		return "tx partial"
	case errors.Is(err, redis.TxFailedErr):
		return "watch conflict"
	}
	for st := kv.Status(1); st.Valid(); st++ {
		if errors.Is(err, st.Err()) {
			return st.String()
		}
	}
	if f := strings.Fields(s); len(f) > 0 && f[0] == strings.ToUpper(f[0]) && strings.Trim(f[0], "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" {
		return f[0] // a Redis error reply: MOVED, TRYAGAIN, CLUSTERDOWN, ERR…
	}
	if len(s) > 48 {
		s = s[:48] + "…"
	}
	return s
}

// pace waits for the ticker; false when ctx ended.
func pace(ctx context.Context, t *time.Ticker) bool {
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// --- registers: one data type through one client ---

// soakRegister is one data type through one client: keys, each with one
// writer, whose newest element (or field, or score) is a sequence the
// Ledger checks.
type soakRegister struct {
	api, kind string
	keys      []string
	ledger    *Ledger
	// write writes seq to key; nil error = acknowledged.
	write func(ctx context.Context, key string, seq uint64) error
	// read returns key's newest value, EncodeValue-shaped.
	read func(ctx context.Context, key string) (found bool, value []byte, err error)
	// contents returns every retained element of a list, set or stream in
	// stored order (nil for a plain register).
	contents func(ctx context.Context, key string) ([][]byte, error)

	mu     sync.Mutex                 // guards failed
	failed map[string]map[uint64]bool // indeterminate sequences per key
}

func (r *soakRegister) name() string { return r.api + " " + r.kind }

func (r *soakRegister) markFailed(key string, seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed[key] == nil {
		r.failed[key] = map[uint64]bool{}
	}
	r.failed[key][seq] = true
}

func (r *soakRegister) wasFailed(key string, seq uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed[key][seq]
}

func (r *soakRegister) writer(ctx context.Context, st *soakStats, rate int) {
	t := time.NewTicker(time.Second / time.Duration(rate))
	defer t.Stop()
	for n := 0; pace(ctx, t); n++ {
		key := r.keys[n%len(r.keys)]
		seq := r.ledger.Next(key)
		sent := time.Now()
		cctx, cancel := context.WithTimeout(ctx, soakDeadline)
		err := r.write(cctx, key, seq)
		cancel()
		if err == nil {
			r.ledger.Ack(0, key, seq, time.Now())
		} else {
			r.markFailed(key, seq)
			r.ledger.Fail(0, key, seq, sent)
		}
		st.count(r.api, r.name()+" write", err)
	}
}

func (r *soakRegister) reader(ctx context.Context, st *soakStats, rate int, rng *rand.Rand) {
	t := time.NewTicker(time.Second / time.Duration(rate))
	defer t.Stop()
	for pace(ctx, t) {
		key := r.keys[rng.IntN(len(r.keys))]
		floor := r.ledger.Floor(key)
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, soakDeadline)
		found, val, err := r.read(cctx, key)
		cancel()
		if err == nil {
			r.ledger.Read(key, floor, found, val, start)
		} else if ctx.Err() != nil {
			return
		}
		st.count(r.api, r.name()+" read", err)
	}
}

// RegisterResult is one register's final verification.
type RegisterResult struct {
	Name          string
	Counts        Counts
	Lost          []Lost
	LostElements  []string // acknowledged elements missing inside a retained list, set or stream
	Duplicates    []string // an element stored twice
	Misordered    []string
	Unverified    []string
	CheckedKeys   int
	CheckedElems  int
	Indeterminate int
}

// verify reads every key back (retrying for up to 30 s each) and checks it
// against the ledger, and a list's, set's or stream's whole content.
func (r *soakRegister) verify(ctx context.Context) RegisterResult {
	res := RegisterResult{Name: r.name(), Counts: r.ledger.Counts()}
	for _, key := range r.keys {
		var (
			found bool
			val   []byte
			elems [][]byte
			err   error
		)
		deadline := time.Now().Add(30 * time.Second)
		for {
			cctx, cancel := context.WithTimeout(ctx, soakDeadline)
			found, val, err = r.read(cctx, key)
			if err == nil && r.contents != nil {
				elems, err = r.contents(cctx, key)
			}
			cancel()
			if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
			_ = sleepCtx(ctx, 200*time.Millisecond) // retry pacing
		}
		if err != nil {
			res.Unverified = append(res.Unverified, fmt.Sprintf("%s: %v", key, err))
			continue
		}
		res.CheckedKeys++
		if x := r.ledger.Verify(key, found, val); x != nil {
			res.Lost = append(res.Lost, *x)
		}
		if r.contents != nil {
			res.CheckedElems += len(elems)
			r.checkContents(key, elems, &res)
		}
	}
	r.mu.Lock()
	for _, m := range r.failed {
		res.Indeterminate += len(m)
	}
	r.mu.Unlock()
	return res
}

// checkContents checks a retained sequence of elements: each decodes for
// key, they increase strictly (a set is sorted first), and every sequence
// from the retention boundary to the newest element that is absent was an
// indeterminate write.
func (r *soakRegister) checkContents(key string, elems [][]byte, res *RegisterResult) {
	seqs := make([]uint64, 0, len(elems))
	for _, e := range elems {
		seq, err := DecodeValue(key, e)
		if err != nil {
			res.Counts.Corrupt++
			res.Counts.CorruptExamples = append(res.Counts.CorruptExamples, fmt.Sprintf("%s element: %v", key, err))
			continue
		}
		seqs = append(seqs, seq)
	}
	if r.kind == "set" {
		slices.Sort(seqs)
	}
	attempted := r.ledger.attempted(key)
	var boundary uint64 = 1 // every write from here on was kept by every trim
	if attempted > soakKeep {
		boundary = attempted - soakKeep + 1
	}
	present := map[uint64]bool{}
	var prev, newest uint64
	for i, s := range seqs {
		switch {
		case present[s]:
			res.Duplicates = append(res.Duplicates, fmt.Sprintf("%s: seq %d twice", key, s))
		case i > 0 && s < prev:
			res.Misordered = append(res.Misordered, fmt.Sprintf("%s: seq %d after %d", key, s, prev))
		}
		present[s], prev, newest = true, s, max(newest, s)
	}
	// From the boundary to the newest retained element, every acknowledged
	// write is there. One above the newest retained element is the newest
	// value's loss: Ledger.Verify reports it.
	for s := boundary; s < newest; s++ {
		if !present[s] && !r.wasFailed(key, s) {
			res.LostElements = append(res.LostElements, fmt.Sprintf("%s: acknowledged seq %d missing (retained from %d to %d)", key, s, boundary, newest))
		}
	}
}

// attempted is key's highest attempted sequence.
func (l *Ledger) attempted(key string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ks := l.keys[key]; ks != nil {
		return ks.attempted
	}
	return 0
}

func seqValue(key string, seq uint64) []byte { return EncodeValue(key, seq, 48) }

// sdkRegisters are the data types through the SDK.
func sdkRegisters(cl *sdk.Client, keys int) []*soakRegister {
	mk := func(kind string, write func(context.Context, string, uint64) error,
		read func(context.Context, string) (bool, []byte, error),
		contents func(context.Context, string) ([][]byte, error)) *soakRegister {
		r := &soakRegister{api: "sdk", kind: kind, ledger: NewLedger(), write: write, read: read, contents: contents,
			failed: map[string]map[uint64]bool{}}
		for i := range keys {
			r.keys = append(r.keys, fmt.Sprintf("soak:sdk:%s:%d", kind, i))
		}
		return r
	}
	status := func(r sdk.Result, err error) error {
		if err != nil {
			return err
		}
		if r.Status != sdk.StatusSuccess {
			return r.Status.Err()
		}
		return nil
	}
	return []*soakRegister{
		mk("string",
			func(ctx context.Context, k string, s uint64) error {
				return status(cl.Put(ctx, k, seqValue(k, s), nil))
			},
			func(ctx context.Context, k string) (bool, []byte, error) {
				r, err := cl.Get(ctx, k)
				switch {
				case err != nil:
					return false, nil, err
				case r.Status == sdk.StatusNotFound:
					return false, nil, nil
				}
				return true, r.Value, status(r, nil)
			}, nil),
		mk("hash",
			func(ctx context.Context, k string, s uint64) error {
				_, err := cl.Hashes().Set(ctx, k, map[string][]byte{"v": seqValue(k, s), "f" + strconv.FormatUint(s%8, 10): []byte("x")})
				return err
			},
			func(ctx context.Context, k string) (bool, []byte, error) {
				v, ok, err := cl.Hashes().Get(ctx, k, "v")
				return ok, v, err
			},
			nil),
		mk("list",
			func(ctx context.Context, k string, s uint64) error {
				if _, err := cl.Lists().RPush(ctx, k, seqValue(k, s)); err != nil {
					return err
				}
				if s%8 == 0 {
					_ = cl.Lists().Trim(ctx, k, -soakKeep, -1) // retention; a failed trim keeps more
				}
				return nil
			},
			func(ctx context.Context, k string) (bool, []byte, error) {
				v, ok, err := cl.Lists().Index(ctx, k, -1)
				return ok, v, err
			},
			func(ctx context.Context, k string) ([][]byte, error) { return cl.Lists().Range(ctx, k, 0, -1) }),
		mk("zset",
			func(ctx context.Context, k string, s uint64) error {
				_, err := cl.SortedSets().Add(ctx, k, sdk.Member{Member: "v", Score: float64(s)},
					sdk.Member{Member: "m" + strconv.FormatUint(s%8, 10), Score: float64(s)})
				return err
			},
			func(ctx context.Context, k string) (bool, []byte, error) {
				sc, ok, err := cl.SortedSets().Score(ctx, k, "v")
				if !ok || err != nil {
					return false, nil, err
				}
				return true, seqValue(k, uint64(sc)), nil
			}, nil),
		mk("stream",
			func(ctx context.Context, k string, s uint64) error {
				_, err := cl.Streams().Add(ctx, k, []sdk.Field{{Name: "v", Value: seqValue(k, s)}},
					&sdk.AddOptions{Trim: &sdk.StreamTrim{MaxLen: soakKeep}})
				return err
			},
			func(ctx context.Context, k string) (bool, []byte, error) {
				es, err := cl.Streams().RevRange(ctx, k, "+", "-", 1)
				if err != nil || len(es) == 0 {
					return false, nil, err
				}
				v, _ := es[0].Value("v")
				return true, v, nil
			},
			func(ctx context.Context, k string) ([][]byte, error) {
				es, err := cl.Streams().Range(ctx, k, "-", "+", 0)
				out := make([][]byte, 0, len(es))
				for _, e := range es {
					v, _ := e.Value("v")
					out = append(out, v)
				}
				return out, err
			}),
	}
}

// redisRegisters are the data types through go-redis's ClusterClient.
func redisRegisters(rc *redis.ClusterClient, keys int) []*soakRegister {
	mk := func(kind string, write func(context.Context, string, uint64) error,
		read func(context.Context, string) (bool, []byte, error),
		contents func(context.Context, string) ([][]byte, error)) *soakRegister {
		r := &soakRegister{api: "redis", kind: kind, ledger: NewLedger(), write: write, read: read, contents: contents,
			failed: map[string]map[uint64]bool{}}
		for i := range keys {
			r.keys = append(r.keys, fmt.Sprintf("soak:redis:%s:%d", kind, i))
		}
		return r
	}
	bulk := func(v string, err error) (bool, []byte, error) {
		if errors.Is(err, redis.Nil) {
			return false, nil, nil
		}
		if err != nil {
			return false, nil, err
		}
		return true, []byte(v), nil
	}
	strs := func(vs []string, err error) ([][]byte, error) {
		out := make([][]byte, len(vs))
		for i, v := range vs {
			out[i] = []byte(v)
		}
		return out, err
	}
	return []*soakRegister{
		mk("string",
			func(ctx context.Context, k string, s uint64) error { return rc.Set(ctx, k, seqValue(k, s), 0).Err() },
			func(ctx context.Context, k string) (bool, []byte, error) { return bulk(rc.Get(ctx, k).Result()) }, nil),
		mk("hash",
			func(ctx context.Context, k string, s uint64) error {
				return rc.HSet(ctx, k, "v", seqValue(k, s), "f"+strconv.FormatUint(s%8, 10), "x").Err()
			},
			func(ctx context.Context, k string) (bool, []byte, error) { return bulk(rc.HGet(ctx, k, "v").Result()) }, nil),
		mk("list",
			func(ctx context.Context, k string, s uint64) error {
				if err := rc.RPush(ctx, k, seqValue(k, s)).Err(); err != nil {
					return err
				}
				if s%8 == 0 {
					_ = rc.LTrim(ctx, k, -soakKeep, -1).Err() // retention; a failed trim keeps more
				}
				return nil
			},
			func(ctx context.Context, k string) (bool, []byte, error) { return bulk(rc.LIndex(ctx, k, -1).Result()) },
			func(ctx context.Context, k string) ([][]byte, error) { return strs(rc.LRange(ctx, k, 0, -1).Result()) }),
		mk("set",
			func(ctx context.Context, k string, s uint64) error {
				if err := rc.SAdd(ctx, k, seqValue(k, s)).Err(); err != nil {
					return err
				}
				if s%soakKeep == 0 && s > soakKeep {
					// retention: remove the block of soakKeep members below the
					// newest soakKeep (a failed removal keeps more)
					old := make([]any, 0, soakKeep)
					for o := s - 2*soakKeep + 1; o <= s-soakKeep; o++ {
						old = append(old, seqValue(k, o))
					}
					_ = rc.SRem(ctx, k, old...).Err()
				}
				return nil
			},
			func(ctx context.Context, k string) (bool, []byte, error) {
				ms, err := rc.SMembers(ctx, k).Result()
				if err != nil || len(ms) == 0 {
					return false, nil, err
				}
				var best []byte
				var bestSeq uint64
				for _, m := range ms {
					s, err := DecodeValue(k, []byte(m))
					if err != nil {
						return true, []byte(m), nil // a member nobody wrote: corrupt
					}
					if best == nil || s > bestSeq {
						best, bestSeq = []byte(m), s
					}
				}
				return true, best, nil
			},
			func(ctx context.Context, k string) ([][]byte, error) { return strs(rc.SMembers(ctx, k).Result()) }),
		mk("zset",
			func(ctx context.Context, k string, s uint64) error {
				return rc.ZAdd(ctx, k, redis.Z{Member: "v", Score: float64(s)}, redis.Z{Member: "m" + strconv.FormatUint(s%8, 10), Score: float64(s)}).Err()
			},
			func(ctx context.Context, k string) (bool, []byte, error) {
				sc, err := rc.ZScore(ctx, k, "v").Result()
				if errors.Is(err, redis.Nil) {
					return false, nil, nil
				}
				if err != nil {
					return false, nil, err
				}
				return true, seqValue(k, uint64(sc)), nil
			}, nil),
		mk("stream",
			func(ctx context.Context, k string, s uint64) error {
				return rc.XAdd(ctx, &redis.XAddArgs{Stream: k, MaxLen: soakKeep, Values: []any{"v", seqValue(k, s)}}).Err()
			},
			func(ctx context.Context, k string) (bool, []byte, error) {
				es, err := rc.XRevRangeN(ctx, k, "+", "-", 1).Result()
				if err != nil || len(es) == 0 {
					return false, nil, err
				}
				v, _ := es[0].Values["v"].(string)
				return true, []byte(v), nil
			},
			func(ctx context.Context, k string) ([][]byte, error) {
				es, err := rc.XRange(ctx, k, "-", "+").Result()
				out := make([][]byte, 0, len(es))
				for _, e := range es {
					v, _ := e.Values["v"].(string)
					out = append(out, []byte(v))
				}
				return out, err
			}),
	}
}

// --- transactions: transfers keep the total ---

const (
	soakAccounts = 8
	soakBalance  = 1000
)

// TransferResult is one client's transfer workload.
type TransferResult struct {
	API                       string
	Committed, Conflicts      int64
	Aborted, Unknown, Partial int64 // Aborted: failed before the commit (nothing applied)
	Audits, AuditsSkipped     int64 // AuditsSkipped: no consistent snapshot (a transfer moved a balance, or the call failed)
	Violations                int64
	FirstViolation            string
	FinalTotal, ExpectedTotal int64
	FinalChecked              bool
	FinalErr                  string
	// UncertainAmount sums the amounts of the transfers whose outcome the
	// client could not learn (Unknown, Partial): a deviation of the total
	// within it comes from those, one beyond it from a transfer reported
	// committed or aborted.
	UncertainAmount int64
}

// Failed reports a broken invariant.
func (t TransferResult) Failed() bool {
	return t.Violations > 0 || !t.FinalChecked || t.FinalTotal != t.ExpectedTotal
}

type soakTransfers struct {
	api  string
	keys []string
	// transfer moves amount from a to b; (nil, nil) = committed.
	transfer func(ctx context.Context, a, b string, amount int64) error
	// audit reads every balance atomically; ok=false: no consistent read.
	audit func(ctx context.Context) (balances []int64, err error)

	mu  sync.Mutex // guards res
	res TransferResult
}

func (t *soakTransfers) run(ctx context.Context, st *soakStats, rate int, rng *rand.Rand) {
	tk := time.NewTicker(time.Second / time.Duration(rate))
	defer tk.Stop()
	for pace(ctx, tk) {
		a := rng.IntN(len(t.keys))
		b := (a + 1 + rng.IntN(len(t.keys)-1)) % len(t.keys)
		amount := 1 + rng.Int64N(20)
		cctx, cancel := context.WithTimeout(ctx, soakDeadline)
		err := t.transfer(cctx, t.keys[a], t.keys[b], amount)
		cancel()
		if err != nil && ctx.Err() != nil {
			return
		}
		t.mu.Lock()
		switch {
		case err == nil:
			t.res.Committed++
		case errors.Is(err, sdk.ErrConflict) || errors.Is(err, redis.TxFailedErr):
			t.res.Conflicts++
		case errors.Is(err, sdk.ErrTxOutcomeUnknown):
			t.res.Unknown++
			t.res.UncertainAmount += amount
		case errors.Is(err, sdk.ErrTxPartial):
			t.res.Partial++
			t.res.UncertainAmount += amount
		default:
			t.res.Aborted++
		}
		t.mu.Unlock()
		if errors.Is(err, sdk.ErrConflict) || errors.Is(err, redis.TxFailedErr) {
			err = nil // a lost race, not a failure of the cluster
		}
		st.count(t.api, t.api+" tx transfer", err)
	}
}

// auditor checks the total every period.
func (t *soakTransfers) auditor(ctx context.Context, st *soakStats, period time.Duration) {
	tk := time.NewTicker(period)
	defer tk.Stop()
	for pace(ctx, tk) {
		cctx, cancel := context.WithTimeout(ctx, soakDeadline)
		bal, err := t.audit(cctx)
		cancel()
		if err != nil && ctx.Err() != nil {
			return
		}
		if errors.Is(err, sdk.ErrConflict) || errors.Is(err, redis.TxFailedErr) {
			st.count(t.api, t.api+" tx audit", nil) // a transfer moved a balance meanwhile: no snapshot, no failure
		} else {
			st.count(t.api, t.api+" tx audit", err)
		}
		t.mu.Lock()
		if err != nil {
			t.res.AuditsSkipped++
		} else {
			t.res.Audits++
			if sum := total(bal); sum != t.res.ExpectedTotal {
				t.res.Violations++
				if t.res.FirstViolation == "" {
					t.res.FirstViolation = fmt.Sprintf("%s total %d, want %d (balances %v)", time.Now().UTC().Format("15:04:05.000"), sum, t.res.ExpectedTotal, bal)
				}
			}
		}
		t.mu.Unlock()
	}
}

func (t *soakTransfers) final(ctx context.Context) TransferResult {
	var lastErr error
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, soakDeadline)
		bal, err := t.audit(cctx)
		cancel()
		if err == nil {
			t.mu.Lock()
			t.res.FinalChecked, t.res.FinalTotal = true, total(bal)
			t.mu.Unlock()
			break
		}
		lastErr = err
		_ = sleepCtx(ctx, 200*time.Millisecond) // retry pacing
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.res.FinalChecked && lastErr != nil {
		t.res.FinalErr = lastErr.Error()
	}
	return t.res
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func total(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s
}

func sdkTransfers(cl *sdk.Client) *soakTransfers {
	t := &soakTransfers{api: "sdk", res: TransferResult{API: "sdk"}}
	for i := range soakAccounts {
		t.keys = append(t.keys, fmt.Sprintf("soak:sdk:acct:%d", i))
	}
	get := func(ctx context.Context, tx *sdk.Tx, k string) (int64, error) {
		r, err := tx.Get(ctx, k)
		if err != nil {
			return 0, err
		}
		if r.Status != sdk.StatusSuccess {
			return 0, fmt.Errorf("get %s: %w", k, r.Status.Err())
		}
		return strconv.ParseInt(string(r.Value), 10, 64)
	}
	t.transfer = func(ctx context.Context, a, b string, amount int64) error {
		tx := cl.Tx()
		va, err := get(ctx, tx, a)
		if err != nil {
			return err
		}
		vb, err := get(ctx, tx, b)
		if err != nil {
			return err
		}
		tx.Put(a, []byte(strconv.FormatInt(va-amount, 10)), nil).Put(b, []byte(strconv.FormatInt(vb+amount, 10)), nil)
		_, err = tx.Commit(ctx)
		return err
	}
	// A transaction that only reads commits when none of its keys moved
	// since it read them: a consistent snapshot of every balance.
	t.audit = func(ctx context.Context) ([]int64, error) {
		tx := cl.Tx()
		out := make([]int64, len(t.keys))
		for i, k := range t.keys {
			v, err := get(ctx, tx, k)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		if _, err := tx.Commit(ctx); err != nil {
			return nil, err
		}
		return out, nil
	}
	return t
}

func redisTransfers(rc *redis.ClusterClient) *soakTransfers {
	t := &soakTransfers{api: "redis", res: TransferResult{API: "redis"}}
	for i := range soakAccounts {
		t.keys = append(t.keys, fmt.Sprintf("soak:{acct}:%d", i)) // one slot: WATCH/MULTI/EXEC
	}
	t.transfer = func(ctx context.Context, a, b string, amount int64) error {
		return rc.Watch(ctx, func(tx *redis.Tx) error {
			va, err := tx.Get(ctx, a).Int64()
			if err != nil {
				return err
			}
			vb, err := tx.Get(ctx, b).Int64()
			if err != nil {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, a, va-amount, 0)
				p.Set(ctx, b, vb+amount, 0)
				return nil
			})
			return err
		}, a, b)
	}
	// MULTI/EXEC runs the reads under the segment's lock: no transfer in
	// between.
	t.audit = func(ctx context.Context) ([]int64, error) {
		cmds, err := rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range t.keys {
				p.Get(ctx, k)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		out := make([]int64, len(cmds))
		for i, c := range cmds {
			v, err := c.(*redis.StringCmd).Int64()
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return t
}

// setup writes the opening balances (retrying until acknowledged).
func (t *soakTransfers) setup(ctx context.Context, put func(ctx context.Context, k string, v int64) error) error {
	for _, k := range t.keys {
		deadline := time.Now().Add(30 * time.Second)
		for {
			cctx, cancel := context.WithTimeout(ctx, soakDeadline)
			err := put(cctx, k, soakBalance)
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("chaos: soak: opening balance of %s: %w", k, err)
			}
			_ = sleepCtx(ctx, 200*time.Millisecond) // retry pacing
		}
	}
	t.res.ExpectedTotal = soakAccounts * soakBalance
	return nil
}

// --- pub/sub ---

// PubSubResult is one client's publish/subscribe delivery.
type PubSubResult struct {
	API                      string
	Published, PublishFailed int64
	Received                 int64
	Missed                   int64 // acknowledged publishes never received
	MissedInFault            int64 // of Missed, published during a fault or within 10 s of its repair
	Duplicates, Reordered    int64
	Resubscribes             int64
	DeliversAtEnd            bool
	// Asserted: delivery after the final repair is asserted. Not for
	// go-redis's ClusterClient: it publishes on a random node (PUBLISH has
	// no key) and subscribes on the channel's slot owner, while Zaris's
	// RESP pub/sub is node-local, so it gets about 1/N of the messages
	// (reported, not asserted).
	Asserted bool
}

type soakPubSub struct {
	api     string
	channel string
	publish func(ctx context.Context, payload string) error
	// subscribe runs one subscription: calls got for each message until it
	// ends, and returns why; ready is closed once it is in place.
	subscribe func(ctx context.Context, ready func(), got func(payload string)) error

	mu        sync.Mutex // guards every field below
	seq       uint64
	pubAt     []time.Time // by seq-1
	pubOK     []bool
	received  map[uint64]bool
	last      uint64
	res       PubSubResult
	subsReady chan struct{}
	readyOnce sync.Once
}

func newSoakPubSub(api, channel string) *soakPubSub {
	return &soakPubSub{api: api, channel: channel, received: map[uint64]bool{}, subsReady: make(chan struct{}),
		res: PubSubResult{Asserted: true}}
}

func (p *soakPubSub) publisher(ctx context.Context, st *soakStats, rate int) {
	tk := time.NewTicker(time.Second / time.Duration(rate))
	defer tk.Stop()
	for pace(ctx, tk) {
		p.mu.Lock()
		p.seq++
		seq := p.seq
		p.pubAt = append(p.pubAt, time.Now())
		p.pubOK = append(p.pubOK, false)
		p.mu.Unlock()
		cctx, cancel := context.WithTimeout(ctx, soakDeadline)
		err := p.publish(cctx, strconv.FormatUint(seq, 10))
		cancel()
		if err != nil && ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		p.pubOK[seq-1] = err == nil
		if err == nil {
			p.res.Published++
		} else {
			p.res.PublishFailed++
		}
		p.mu.Unlock()
		st.count(p.api, p.api+" publish", err)
	}
}

func (p *soakPubSub) subscriber(ctx context.Context, st *soakStats) {
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			p.mu.Lock()
			p.res.Resubscribes++
			p.mu.Unlock()
		}
		err := p.subscribe(ctx, func() { p.readyOnce.Do(func() { close(p.subsReady) }) }, p.got)
		if ctx.Err() != nil {
			return
		}
		st.count(p.api, p.api+" subscription end", errors.Join(err, errors.New("subscription ended")))
		_ = sleepCtx(ctx, 100*time.Millisecond) // resubscribe pacing
	}
}

func (p *soakPubSub) got(payload string) {
	seq, err := strconv.ParseUint(payload, 10, 64)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.res.Duplicates++ // garbage counts as a delivery nobody published
		return
	}
	p.res.Received++
	switch {
	case p.received[seq]:
		p.res.Duplicates++
	case seq < p.last:
		p.res.Reordered++
	}
	p.received[seq] = true
	p.last = max(p.last, seq)
}

// result counts what was missed; inFault says whether a time lies inside
// a fault window.
func (p *soakPubSub) result(inFault func(time.Time) bool) PubSubResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.res
	r.API = p.api
	for i, ok := range p.pubOK {
		if ok && !p.received[uint64(i+1)] {
			r.Missed++
			if inFault(p.pubAt[i]) {
				r.MissedInFault++
			}
		}
	}
	return r
}

// deliveredAfter reports whether a message published at or after t was
// received.
func (p *soakPubSub) deliveredAfter(t time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.pubAt) - 1; i >= 0 && !p.pubAt[i].Before(t); i-- {
		if p.received[uint64(i+1)] {
			return true
		}
	}
	return false
}

func sdkPubSub(cl *sdk.Client) *soakPubSub {
	p := newSoakPubSub("sdk", "soak:ps:sdk")
	p.publish = func(ctx context.Context, payload string) error {
		_, err := cl.PubSub().Publish(ctx, p.channel, []byte(payload))
		return err
	}
	p.subscribe = func(ctx context.Context, ready func(), got func(string)) error {
		sub, err := cl.PubSub().Subscribe(ctx, p.channel)
		if err != nil {
			return err
		}
		defer sub.Close()
		ready()
		for {
			select {
			case m, ok := <-sub.Messages():
				if !ok {
					return sub.Err()
				}
				got(string(m.Payload))
			case <-ctx.Done():
				return nil
			}
		}
	}
	return p
}

// redisPubSub publishes and subscribes through go-redis: rc is a
// ClusterClient, or a plain client of one node.
func redisPubSub(api string, rc redis.UniversalClient, asserted bool) *soakPubSub {
	p := newSoakPubSub(api, "soak:ps:"+api)
	p.res.Asserted = asserted
	p.publish = func(ctx context.Context, payload string) error { return rc.Publish(ctx, p.channel, payload).Err() }
	p.subscribe = func(ctx context.Context, ready func(), got func(string)) error {
		ps := rc.Subscribe(ctx, p.channel)
		defer ps.Close()
		// ReceiveMessage does not return on ctx's end: closing the
		// subscription does.
		stop := context.AfterFunc(ctx, func() { ps.Close() })
		defer stop()
		if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
			return err
		}
		ready()
		for {
			m, err := ps.ReceiveMessage(ctx)
			if err != nil {
				return err
			}
			got(m.Payload)
		}
	}
	return p
}

// --- watch ---

// WatchResult is the delivery of a prefix watch over the SDK string keys.
type WatchResult struct {
	Sessions, OpenFailures int64
	Ends                   map[string]int64 // why sessions ended
	Events                 int64
	Gaps                   int64 // acknowledged writes skipped inside one session
	Regressions            int64 // an event older than one already seen in the session
	ResyncSkipped          int64 // acknowledged writes between two sessions, covered by the new snapshot only
	DeliversAtEnd          bool
}

type soakWatch struct {
	cl  *sdk.Client
	reg *soakRegister // the watched register (sdk string)

	mu   sync.Mutex // guards res and seen
	res  WatchResult
	seen map[string]uint64 // newest sequence seen per key, across sessions
}

func (w *soakWatch) run(ctx context.Context, st *soakStats) {
	prefix := "soak:sdk:string:"
	for ctx.Err() == nil {
		s, err := w.cl.Watch().Prefix(ctx, prefix, &sdk.WatchOptions{Snapshot: true, IncludeValues: true})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			st.count("sdk", "sdk watch open", err)
			w.mu.Lock()
			w.res.OpenFailures++
			w.mu.Unlock()
			_ = sleepCtx(ctx, 200*time.Millisecond) // reopen pacing
			continue
		}
		st.count("sdk", "sdk watch open", nil)
		session := map[string]uint64{}
		w.mu.Lock()
		w.res.Sessions++
		for _, r := range s.Snapshot() {
			seq, err := DecodeValue(r.Key, r.Value)
			if err != nil {
				continue
			}
			if prev := w.seen[r.Key]; seq > prev {
				w.res.ResyncSkipped += w.ackedBetween(r.Key, prev+1, seq)
				w.seen[r.Key] = seq
			}
			session[r.Key] = seq
		}
		w.mu.Unlock()
		w.consume(ctx, s, session)
		why := "closed"
		if err := s.Err(); err != nil {
			why = ErrClass(err)
			if errors.Is(err, sdk.ErrWatchMoved) {
				why = "moved"
			} else if errors.Is(err, sdk.ErrWatchOverflow) {
				why = "overflow"
			}
		}
		s.Close()
		if ctx.Err() != nil {
			return
		}
		w.mu.Lock()
		w.res.Ends[why]++
		w.mu.Unlock()
	}
}

func (w *soakWatch) consume(ctx context.Context, s *sdk.WatchStream, session map[string]uint64) {
	for {
		var ev sdk.WatchEvent
		var ok bool
		select {
		case ev, ok = <-s.Events():
			if !ok {
				return
			}
		case <-ctx.Done():
			return
		}
		if ev.Kind == sdk.WatchResync {
			// The segment's history was gone on its new owner: its records
			// replace what this session saw of it, like a snapshot.
			w.mu.Lock()
			for _, r := range ev.Records {
				seq, err := DecodeValue(r.Key, r.Value)
				if err != nil {
					continue
				}
				if prev := w.seen[r.Key]; seq > prev {
					w.res.ResyncSkipped += w.ackedBetween(r.Key, prev+1, seq)
					w.seen[r.Key] = seq
				}
				session[r.Key] = seq
			}
			w.mu.Unlock()
			continue
		}
		if ev.Kind != sdk.WatchPut {
			continue
		}
		seq, err := DecodeValue(ev.Key, ev.Value)
		if err != nil {
			continue
		}
		w.mu.Lock()
		w.res.Events++
		last := session[ev.Key]
		switch {
		case seq <= last:
			w.res.Regressions++
		case seq > last+1 && last > 0:
			w.res.Gaps += w.ackedBetween(ev.Key, last+1, seq)
		}
		session[ev.Key] = max(last, seq)
		w.seen[ev.Key] = max(w.seen[ev.Key], seq)
		w.mu.Unlock()
	}
}

// ackedBetween counts the sequences in [from, to) of key that were not
// indeterminate writes (so they were acknowledged).
func (w *soakWatch) ackedBetween(key string, from, to uint64) int64 {
	var n int64
	for s := from; s < to; s++ {
		if !w.reg.wasFailed(key, s) {
			n++
		}
	}
	return n
}

// seenAbove reports whether the watch saw key at a sequence above seq.
func (w *soakWatch) seenAbove(key string, seq uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[key] > seq
}

// --- resources ---

// NodeResources are one node's RSS and goroutine windows.
type NodeResources struct {
	Node     string
	Starts   int // process starts (1: never restarted)
	RSS, Gor GrowthVerdict
	// Heap and OpLog are the live Go heap and the op-log (INFO memory):
	// shown to explain RSS, not judged.
	Heap, OpLog GrowthVerdict
	Asserted    bool // the rule applies: one process lived through both windows
	SamplesN    int
	FirstStart  int
}

type resSample struct {
	at       time.Time
	node     int
	start    int
	rss, gor float64
	// From INFO memory (diagnostics, not judged; 0 when INFO failed):
	// the live Go heap, the op-log, owned + replica data.
	heapLive, oplog, data float64
}

// sampleResources records each serving node's RSS (/proc/PID/statm) and
// goroutines (go_goroutines of /metrics) every period until ctx ends.
func sampleResources(ctx context.Context, c *Cluster, period time.Duration, out *[]resSample, mu *sync.Mutex) {
	tk := time.NewTicker(period)
	defer tk.Stop()
	infos := make([]*redis.Client, c.N())
	for i := range infos {
		infos[i] = redis.NewClient(&redis.Options{Addr: c.RESPAddr(i), DialTimeout: time.Second, ReadTimeout: 2 * time.Second,
			MaxRetries: -1, PoolSize: 1})
		defer infos[i].Close()
	}
	page := float64(os.Getpagesize())
	for pace(ctx, tk) {
		for i := range c.N() {
			pid := c.Pid(i)
			if pid == 0 || c.Paused(i) {
				continue
			}
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
			if err != nil {
				continue
			}
			f := strings.Fields(string(b))
			if len(f) < 2 {
				continue
			}
			pages, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				continue
			}
			gor, err := c.metric(ctx, i, "go_goroutines")
			if err != nil {
				continue
			}
			s := resSample{at: time.Now(), node: i, start: c.Starts(i), rss: pages * page, gor: gor}
			ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
			if info, err := infos[i].Info(ictx, "memory").Result(); err == nil {
				f := infoFields(info)
				s.heapLive, s.oplog, s.data = f["zaris_go_heap_live"], f["zaris_oplog_memory"], f["used_memory"]+f["zaris_replica_memory"]
			}
			cancel()
			mu.Lock()
			*out = append(*out, s)
			mu.Unlock()
		}
	}
}

// infoFields parses the numeric fields of an INFO reply.
func infoFields(info string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[k] = f
		}
	}
	return out
}

// judgeResources applies the growth rules per node to the samples of
// [from, from+w] and [to-w, to]. The rules are asserted on a node whose
// process lived through both windows; a restarted node's figures are
// shown (its last window is a younger process).
func judgeResources(samples []resSample, n int, from, to time.Time, w time.Duration, rss, gor GrowthRule) []NodeResources {
	out := make([]NodeResources, n)
	for i := range n {
		var fr, fg, lr, lg, fh, lh, fo, lo []float64
		starts := map[int]bool{}
		first := -1
		for _, s := range samples {
			if s.node != i || s.at.Before(from) || s.at.After(to) {
				continue
			}
			starts[s.start] = true
			if first < 0 {
				first = s.start
			}
			out[i].SamplesN++
			if !s.at.After(from.Add(w)) {
				fr, fg, fh, fo = append(fr, s.rss), append(fg, s.gor), append(fh, s.heapLive), append(fo, s.oplog)
			}
			if !s.at.Before(to.Add(-w)) {
				lr, lg, lh, lo = append(lr, s.rss), append(lg, s.gor), append(lh, s.heapLive), append(lo, s.oplog)
			}
		}
		out[i].Node, out[i].Starts, out[i].FirstStart = NodeID(i), len(starts), first
		out[i].RSS, out[i].Gor = rss.Check(fr, lr), gor.Check(fg, lg)
		out[i].Heap, out[i].OpLog = rss.Check(fh, lh), rss.Check(fo, lo)
		out[i].Asserted = len(starts) == 1
	}
	return out
}

// --- faults ---

type faultWindow struct{ from, to time.Time }

// soakFaults injects one fault every cfg.FaultEvery (or as soon as the
// cluster healed from the last one): kill -9 and restart on the same data
// dir, and SIGSTOP/SIGCONT for a few seconds, alternately. Kills rotate over
// every node but the first, pauses over every node: the first node's process
// lives through the whole run, so its memory and goroutines are one
// process's.
func soakFaults(ctx context.Context, c *Cluster, cfg SoakConfig, tl *Timeline, counts map[string]int, windows *[]faultWindow, wmu *sync.Mutex) error {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x50a4))
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)) }
	start := time.Now()
	for k := 0; ; k++ {
		at := start.Add(time.Duration(k+1) * cfg.FaultEvery)
		if at.After(start.Add(cfg.Duration)) || ctx.Err() != nil {
			return nil
		}
		if err := sleepCtx(ctx, time.Until(at)); err != nil {
			return nil
		}
		from := time.Now()
		var err error
		var what string
		if k%2 == 0 {
			victim := 1 + (k/2)%(c.N()-1)
			what = "kill -9 " + NodeID(victim)
			err = killFor(ctx, c, tl, victim, between(2*time.Second, 8*time.Second), fmt.Sprintf("soak fault %d", k+1))
		} else {
			victim := (k / 2) % c.N()
			what = "SIGSTOP " + NodeID(victim)
			err = pauseFor(ctx, c, tl, victim, between(2*time.Second, 6*time.Second), fmt.Sprintf("soak fault %d", k+1))
		}
		if err != nil {
			tl.Add("%s failed: %v", what, err)
			return err
		}
		counts[what]++
		hctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		t0 := time.Now()
		err = c.WaitHealthy(hctx)
		cancel()
		wmu.Lock()
		*windows = append(*windows, faultWindow{from, time.Now().Add(10 * time.Second)})
		wmu.Unlock()
		if err != nil {
			tl.Add("cluster not healthy 90s after %s: %v", what, err)
			return fmt.Errorf("chaos: soak: cluster did not heal after %s: %w", what, err)
		}
		tl.Add("healthy again %v after the repair", time.Since(t0).Round(time.Millisecond))
	}
}

// --- the run ---

// SoakReport is the outcome of RunSoak.
type SoakReport struct {
	Config    SoakConfig
	Elapsed   time.Duration // fault phase
	Ops       map[string]OpCount
	Errors    map[string]int64
	Faults    map[string]int
	Registers []RegisterResult
	Transfers []TransferResult
	PubSub    []PubSubResult
	Watch     WatchResult
	Resources []NodeResources
	Crashes   []string
	Problems  []string
	Err       error // harness trouble: a fault could not be injected, the cluster did not heal
}

// Lost is the number of acknowledged writes not found at the end (newest
// values and retained elements).
func (r SoakReport) Lost() int {
	n := 0
	for _, g := range r.Registers {
		n += len(g.Lost) + len(g.LostElements)
	}
	return n
}

// StaleReads is the number of reads older than the acknowledged write.
func (r SoakReport) StaleReads() int64 {
	var n int64
	for _, g := range r.Registers {
		n += g.Counts.Stale
	}
	return n
}

// Failures lists every assertion the run broke (empty: the soak passed).
func (r SoakReport) Failures() []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, g := range r.Registers {
		if len(g.Lost) > 0 {
			add("%s: %d lost: %v", g.Name, len(g.Lost), g.Lost[0])
		}
		if len(g.LostElements) > 0 {
			add("%s: %d acknowledged elements missing: %s", g.Name, len(g.LostElements), g.LostElements[0])
		}
		if g.Counts.Stale > 0 {
			add("%s: %d stale reads: %s", g.Name, g.Counts.Stale, g.Counts.StaleExamples[0])
		}
		if g.Counts.Corrupt > 0 {
			add("%s: %d corrupt reads: %s", g.Name, g.Counts.Corrupt, g.Counts.CorruptExamples[0])
		}
		if len(g.Duplicates) > 0 {
			add("%s: %d duplicate elements: %s", g.Name, len(g.Duplicates), g.Duplicates[0])
		}
		if len(g.Misordered) > 0 {
			add("%s: %d misordered elements: %s", g.Name, len(g.Misordered), g.Misordered[0])
		}
		if len(g.Unverified) > 0 {
			add("%s: %d keys unverifiable: %s", g.Name, len(g.Unverified), g.Unverified[0])
		}
	}
	for _, t := range r.Transfers {
		if t.Failed() {
			dev := t.FinalTotal - t.ExpectedTotal
			why := "beyond the transfers with an uncertain outcome: a transfer reported committed or aborted was applied in part"
			if abs(dev) <= t.UncertainAmount {
				why = fmt.Sprintf("within the %d transfers with an uncertain outcome (amounts %d): one of them applied on one owner only",
					t.Unknown+t.Partial, t.UncertainAmount)
			}
			if !t.FinalChecked {
				add("%s transfers: the final balances could not be read: %s (%d audits saw a wrong total %s)", t.API, t.FinalErr,
					t.Violations, t.FirstViolation)
				continue
			}
			add("%s transfers: invariant broken: %d audits saw a wrong total (first: %s); final total %d of %d, deviation %d %s",
				t.API, t.Violations, t.FirstViolation, t.FinalTotal, t.ExpectedTotal, dev, why)
		}
	}
	for _, p := range r.PubSub {
		if p.Duplicates > 0 {
			add("%s pub/sub: %d duplicate deliveries", p.API, p.Duplicates)
		}
		if !p.DeliversAtEnd && p.Asserted {
			add("%s pub/sub: no message published after the final repair was received", p.API)
		}
		if p.Received == 0 && p.Asserted {
			add("%s pub/sub: nothing received", p.API)
		}
	}
	if !r.Watch.DeliversAtEnd {
		add("watch: no write after the final repair was delivered")
	}
	if r.Watch.Regressions > 0 {
		add("watch: %d events older than one already delivered in the same session", r.Watch.Regressions)
	}
	for _, n := range r.Resources {
		switch {
		case !n.Asserted:
		case !n.RSS.Judged || !n.Gor.Judged:
			add("%s: no resource samples in the first or last window", n.Node)
		case n.RSS.Grew:
			add("%s: RSS grew %.0f%% (%.1f → %.1f MiB)", n.Node, 100*n.RSS.Ratio, n.RSS.First/(1<<20), n.RSS.Last/(1<<20))
		case n.Gor.Grew:
			add("%s: goroutines grew %.0f%% (%.0f → %.0f)", n.Node, 100*n.Gor.Ratio, n.Gor.First, n.Gor.Last)
		}
	}
	for _, c := range r.Crashes {
		add("crash: %s", c)
	}
	for _, p := range r.Problems {
		add("log problem: %s", p)
	}
	if r.Err != nil {
		add("harness: %v", r.Err)
	}
	return out
}

// Failed reports whether any assertion broke.
func (r SoakReport) Failed() bool { return len(r.Failures()) > 0 }

// RunSoak runs the soak and returns its report; an error means the run
// could not start.
func RunSoak(ctx context.Context, cfg SoakConfig) (SoakReport, error) {
	cfg.defaults()
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	o := cfg.Cluster
	if o.Log == nil {
		o.Log = out
	}
	c, err := Start(ctx, o)
	if err != nil {
		return SoakReport{}, err
	}
	defer c.Close()
	if err := c.WaitHealthy(ctx); err != nil {
		return SoakReport{}, err
	}
	tl := NewTimeline(out)
	cl, err := sdk.Connect(ctx, c.ConnString(), sdk.WithLogger(slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelError}))))
	if err != nil {
		return SoakReport{}, fmt.Errorf("chaos: soak: connect: %w", err)
	}
	defer cl.Close()
	addrs := make([]string, c.N())
	for i := range addrs {
		addrs[i] = c.RESPAddr(i)
	}
	rc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, DialTimeout: 2 * time.Second,
		ReadTimeout: soakDeadline, WriteTimeout: soakDeadline, MaxRedirects: 8, PoolSize: 16})
	defer rc.Close()

	st := newSoakStats()
	regs := append(sdkRegisters(cl, cfg.Keys), redisRegisters(rc, cfg.Keys)...)
	txs := []*soakTransfers{sdkTransfers(cl), redisTransfers(rc)}
	if err := txs[0].setup(ctx, func(ctx context.Context, k string, v int64) error {
		r, err := cl.Put(ctx, k, []byte(strconv.FormatInt(v, 10)), nil)
		if err == nil && r.Status != sdk.StatusSuccess {
			err = r.Status.Err()
		}
		return err
	}); err != nil {
		return SoakReport{}, err
	}
	if err := txs[1].setup(ctx, func(ctx context.Context, k string, v int64) error { return rc.Set(ctx, k, v, 0).Err() }); err != nil {
		return SoakReport{}, err
	}
	// Zaris's RESP pub/sub is node-local: the asserted go-redis pair
	// publishes and subscribes on n1, the node no fault kills.
	n1 := redis.NewClient(&redis.Options{Addr: c.RESPAddr(0), DialTimeout: 2 * time.Second,
		ReadTimeout: soakDeadline, WriteTimeout: soakDeadline})
	defer n1.Close()
	pss := []*soakPubSub{sdkPubSub(cl), redisPubSub("redis-n1", n1, true), redisPubSub("redis-cluster", rc, false)}
	watch := &soakWatch{cl: cl, reg: regs[0], seen: map[string]uint64{}, res: WatchResult{Ends: map[string]int64{}}}

	wctx, stopWork := context.WithCancel(context.Background())
	defer stopWork()
	var wg sync.WaitGroup
	for _, p := range pss {
		wg.Go(func() { p.subscriber(wctx, st) })
		select {
		case <-p.subsReady:
		case <-time.After(30 * time.Second):
			stopWork()
			wg.Wait()
			return SoakReport{}, fmt.Errorf("chaos: soak: %s subscription not in place after 30 s", p.api)
		}
		wg.Go(func() { p.publisher(wctx, st, 20) })
	}
	wg.Go(func() { watch.run(wctx, st) })
	for i, r := range regs {
		wg.Go(func() { r.writer(wctx, st, cfg.Rate) })
		rr := rand.New(rand.NewPCG(cfg.Seed, uint64(100+i)))
		wg.Go(func() { r.reader(wctx, st, cfg.Rate, rr) })
	}
	for i, t := range txs {
		tr := rand.New(rand.NewPCG(cfg.Seed, uint64(200+i)))
		wg.Go(func() { t.run(wctx, st, cfg.Rate/2, tr) })
		wg.Go(func() { t.auditor(wctx, st, time.Second) })
	}
	tl.Add("soak: %d registers × %d keys, %d ops/s per worker, transfers, pub/sub, watch; faults every %v for %v; growth windows %v, sampled every %v; extra server flags %s",
		len(regs), cfg.Keys, cfg.Rate, cfg.FaultEvery, cfg.Duration, cfg.Window, cfg.Sample, strings.Join(cfg.Cluster.Extra, " "))

	var (
		samples []resSample
		smu     sync.Mutex
	)
	sctx, stopSampling := context.WithCancel(ctx)
	sdone := make(chan struct{})
	go func() { defer close(sdone); sampleResources(sctx, c, cfg.Sample, &samples, &smu) }()
	wg.Go(func() {
		progress(wctx, tl, st, regs, func() string {
			smu.Lock()
			defer smu.Unlock()
			return latestResources(samples, c.N())
		})
	})
	tl.Add("warm-up: %v without faults", cfg.Warmup)
	_ = sleepCtx(ctx, cfg.Warmup)

	rep := SoakReport{Config: cfg, Faults: map[string]int{}}
	var (
		windows []faultWindow
		wmu     sync.Mutex
	)
	t0 := time.Now()
	rep.Err = soakFaults(ctx, c, cfg, tl, rep.Faults, &windows, &wmu)
	// The last fault's recovery may still run: the fault phase ends at the
	// configured duration at the earliest.
	if rest := cfg.Duration - time.Since(t0); rest > 0 && rep.Err == nil {
		_ = sleepCtx(ctx, rest)
	}
	tEnd := time.Now()
	rep.Elapsed = tEnd.Sub(t0)
	stopSampling()
	<-sdone

	hctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	if err := Heal(hctx, c, tl); err != nil {
		rep.Err = errors.Join(rep.Err, fmt.Errorf("heal: %w", err))
	}
	cancel()
	// Delivery after the repair: a message published now, and a write made
	// now, reach the subscribers and the watch.
	healed := time.Now()
	probeKey := regs[0].keys[0]
	probeFloor := regs[0].ledger.Floor(probeKey)
	pctx, pcancel := context.WithTimeout(ctx, 60*time.Second)
	_ = c.poll(pctx, "delivery after the repair", func() (bool, error) {
		for _, p := range pss {
			if !p.deliveredAfter(healed) {
				return false, nil
			}
		}
		return watch.seenAbove(probeKey, probeFloor), nil
	})
	pcancel()
	stopWork()
	wg.Wait()
	tl.Add("workload stopped; verifying")

	inFault := func(t time.Time) bool {
		wmu.Lock()
		defer wmu.Unlock()
		for _, w := range windows {
			if !t.Before(w.from) && !t.After(w.to) {
				return true
			}
		}
		return false
	}
	for _, p := range pss {
		r := p.result(inFault)
		r.DeliversAtEnd = p.deliveredAfter(healed)
		rep.PubSub = append(rep.PubSub, r)
	}
	watch.mu.Lock()
	rep.Watch = watch.res
	watch.mu.Unlock()
	rep.Watch.DeliversAtEnd = watch.seenAbove(probeKey, probeFloor)

	vctx, vcancel := context.WithTimeout(context.Background(), 10*time.Minute)
	for _, r := range regs {
		rep.Registers = append(rep.Registers, r.verify(vctx))
	}
	for _, t := range txs {
		rep.Transfers = append(rep.Transfers, t.final(vctx))
	}
	vcancel()
	tl.Add("verified")

	st.mu.Lock()
	rep.Ops = map[string]OpCount{}
	for k, v := range st.ops {
		rep.Ops[k] = *v
	}
	rep.Errors = maps.Clone(st.errs)
	st.mu.Unlock()
	smu.Lock()
	rep.Resources = judgeResources(samples, c.N(), t0, tEnd, cfg.Window, cfg.RSS, cfg.Gor)
	if cfg.SamplesFile != "" {
		if err := writeSamples(cfg.SamplesFile, samples, t0); err != nil {
			tl.Add("resource samples: %v", err)
		}
	}
	smu.Unlock()
	rep.Crashes, rep.Problems = c.Crashes(), c.LogProblems()
	if rep.Lost() > 0 || len(rep.Crashes) > 0 {
		for i := range c.N() {
			fmt.Fprintf(out, "---- last lines of %s's log (%s)\n%s\n", NodeID(i), c.LogPath(i), c.LogTail(i, 40))
		}
	}
	return rep, nil
}

// progress adds a line to the timeline every minute: operations so far,
// failures, stale reads.
func progress(ctx context.Context, tl *Timeline, st *soakStats, regs []*soakRegister, resources func() string) {
	tk := time.NewTicker(time.Minute)
	defer tk.Stop()
	for pace(ctx, tk) {
		var ok, failed, stale, corrupt int64
		st.mu.Lock()
		for _, o := range st.ops {
			ok, failed = ok+o.OK, failed+o.Failed
		}
		st.mu.Unlock()
		for _, r := range regs {
			c := r.ledger.Counts()
			stale, corrupt = stale+c.Stale, corrupt+c.Corrupt
		}
		tl.Add("progress: ops ok=%d failed=%d stale_reads=%d corrupt_reads=%d; %s", ok, failed, stale, corrupt, resources())
	}
}

// latestResources describes each node's newest sample.
func latestResources(samples []resSample, n int) string {
	parts := make([]string, 0, n)
	for i := range n {
		for j := len(samples) - 1; j >= 0; j-- {
			if s := samples[j]; s.node == i {
				parts = append(parts, fmt.Sprintf("%s rss=%.1fMiB heap_live=%.1fMiB oplog=%.1fMiB data=%.1fMiB goroutines=%.0f",
					NodeID(i), s.rss/(1<<20), s.heapLive/(1<<20), s.oplog/(1<<20), s.data/(1<<20), s.gor))
				break
			}
		}
	}
	return strings.Join(parts, ", ")
}

// writeSamples writes the resource samples as CSV: seconds since from,
// node, process start, RSS bytes, goroutines.
func writeSamples(path string, samples []resSample, from time.Time) error {
	var b strings.Builder
	b.WriteString("seconds,node,start,rss_bytes,goroutines,heap_live_bytes,oplog_bytes,data_bytes\n")
	for _, s := range samples {
		fmt.Fprintf(&b, "%.1f,%s,%d,%.0f,%.0f,%.0f,%.0f,%.0f\n", s.at.Sub(from).Seconds(), NodeID(s.node), s.start, s.rss, s.gor,
			s.heapLive, s.oplog, s.data)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// --- the summary ---

// Print writes the summary tables and, last, the one summary line.
func (r SoakReport) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	section := func(header string) {
		tw.Flush()
		fmt.Fprintln(w)
		fmt.Fprintln(tw, header)
	}
	section("operation\tok\tfailed\t")
	for _, k := range slices.Sorted(maps.Keys(r.Ops)) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", k, r.Ops[k].OK, r.Ops[k].Failed)
	}
	section("errors by status\tcount\t")
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		fmt.Fprintf(tw, "%s\t%d\t\n", k, r.Errors[k])
	}
	if len(r.Errors) == 0 {
		fmt.Fprintf(tw, "(none)\t0\t\n")
	}
	section("faults injected\tcount\t")
	nf := 0
	for _, k := range slices.Sorted(maps.Keys(r.Faults)) {
		fmt.Fprintf(tw, "%s\t%d\t\n", k, r.Faults[k])
		nf += r.Faults[k]
	}
	fmt.Fprintf(tw, "total\t%d\t\n", nf)
	section("data\tkeys\telements\tacked\tindeterminate\treads\tstale\tcorrupt\tlost\tlost elements\tduplicates\tunverified\t")
	for _, g := range r.Registers {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", g.Name, g.CheckedKeys, g.CheckedElems, g.Counts.Acked,
			g.Counts.Failed, g.Counts.Reads, g.Counts.Stale, g.Counts.Corrupt, len(g.Lost), len(g.LostElements), len(g.Duplicates), len(g.Unverified))
	}
	section("transfers\tcommitted\tconflicts\taborted\tunknown\tpartial\taudits\taudits failed\tviolations\tfinal total\t")
	for _, t := range r.Transfers {
		final := fmt.Sprintf("%d/%d", t.FinalTotal, t.ExpectedTotal)
		if !t.FinalChecked {
			final = "unread: " + t.FinalErr
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", t.API, t.Committed, t.Conflicts, t.Aborted, t.Unknown, t.Partial,
			t.Audits, t.AuditsSkipped, t.Violations, final)
	}
	section("pub/sub\tpublished\tpublish failed\treceived\tmissed\tmissed in fault\tduplicates\treordered\tresubscribes\tdelivers at end\t")
	for _, p := range r.PubSub {
		api := p.API
		if !p.Asserted {
			api += " (reported only)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%v\t\n", api, p.Published, p.PublishFailed, p.Received, p.Missed,
			p.MissedInFault, p.Duplicates, p.Reordered, p.Resubscribes, p.DeliversAtEnd)
	}
	section("watch\tsessions\topen failures\tevents\tgaps\tskipped between sessions\tregressions\tsession ends\tdelivers at end\t")
	var ends []string
	for _, k := range slices.Sorted(maps.Keys(r.Watch.Ends)) {
		ends = append(ends, fmt.Sprintf("%s=%d", k, r.Watch.Ends[k]))
	}
	fmt.Fprintf(tw, "sdk prefix\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%v\t\n", r.Watch.Sessions, r.Watch.OpenFailures, r.Watch.Events, r.Watch.Gaps,
		r.Watch.ResyncSkipped, r.Watch.Regressions, strings.Join(ends, " "), r.Watch.DeliversAtEnd)
	section("node\tstarts\tsamples\tRSS first MiB\tRSS last MiB\tRSS Δ\tgoroutines first\tgoroutines last\tgoroutines Δ\theap live MiB\top-log MiB\tverdict\t")
	for _, n := range r.Resources {
		verdict := "ok"
		switch {
		case !n.Asserted:
			verdict = "restarted: shown, not asserted"
		case !n.RSS.Judged || !n.Gor.Judged:
			verdict = "NO SAMPLES"
		case n.RSS.Grew || n.Gor.Grew:
			verdict = "GREW"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%+.0f%%\t%.0f\t%.0f\t%+.0f%%\t%.1f → %.1f\t%.1f → %.1f\t%s\t\n", n.Node, n.Starts, n.SamplesN,
			n.RSS.First/(1<<20), n.RSS.Last/(1<<20), 100*n.RSS.Ratio, n.Gor.First, n.Gor.Last, 100*n.Gor.Ratio,
			n.Heap.First/(1<<20), n.Heap.Last/(1<<20), n.OpLog.First/(1<<20), n.OpLog.Last/(1<<20), verdict)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, f := range r.Failures() {
		fmt.Fprintln(w, "FAILED:", f)
	}
	fmt.Fprintln(w, r.Summary())
}

// Summary is the one summary line of a run.
func (r SoakReport) Summary() string {
	var ops, acked int64
	for _, o := range r.Ops {
		ops += o.OK + o.Failed
	}
	for _, g := range r.Registers {
		acked += g.Counts.Acked
	}
	nf := 0
	for _, n := range r.Faults {
		nf += n
	}
	verdict := "PASS"
	if r.Failed() {
		verdict = "FAIL"
	}
	return fmt.Sprintf("soak: %s elapsed=%v ops=%d acked=%d faults=%d lost=%d stale_reads=%d", verdict,
		r.Elapsed.Round(time.Second), ops, acked, nf, r.Lost(), r.StaleReads())
}

package store

import (
	"context"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// expireStep is one command of an expiry scenario and what it must answer.
type expireStep struct {
	advance time.Duration // move the clock first
	op      kv.CmdOp
	args    []string
	want    int64  // the Int reply when wantErr is ""
	wantErr string // the refusal's message
}

// ms is t0 plus d, in Unix milliseconds, as a command argument.
func ms(d time.Duration) string { return strconv.FormatInt(t0.Add(d).UnixMilli(), 10) }

// Issue #13, "EXPIRE GT/LT at the very same instant": the EXPIRE family
// compares absolute milliseconds as Redis 7.0 does — a relative time
// converted once with the store's clock, an expiry set with a finer TTL read
// as the millisecond it falls in, no expiry counted as infinite — and
// PTTL/PEXPIRETIME read back exactly what was set.
func TestExpireCommandsCompareAbsoluteMilliseconds(t *testing.T) {
	t0ms := t0.UnixMilli()
	const noKey, none = -2, -1
	put := func(ttl time.Duration) func(t *testing.T, s *Store) {
		return func(t *testing.T, s *Store) {
			mustStatus(t, s.Put("k", []byte("v"), &kv.PutOptions{TTL: ttl}), kv.StatusSuccess)
		}
	}
	tests := []struct {
		name  string
		start time.Duration // the clock's offset from t0 when the key is made
		setup func(t *testing.T, s *Store)
		steps []expireStep
	}{
		{name: "absolute: the same instant is neither later nor earlier", setup: put(0), steps: []expireStep{
			{op: kv.CmdPExpireAt, args: []string{ms(time.Hour)}, want: 1},
			{op: kv.CmdPExpireAt, args: []string{ms(time.Hour), "GT"}, want: 0},
			{op: kv.CmdPExpireAt, args: []string{ms(time.Hour), "LT"}, want: 0},
			{op: kv.CmdExpireAt, args: []string{strconv.FormatInt(t0.Add(time.Hour).Unix(), 10), "gt"}, want: 0},
			{op: kv.CmdPExpireTime, want: t0ms + 3_600_000},
			{op: kv.CmdPExpireAt, args: []string{ms(time.Hour + time.Millisecond), "GT"}, want: 1},
			{op: kv.CmdPExpireAt, args: []string{ms(time.Hour), "LT"}, want: 1},
			{op: kv.CmdPExpireAt, args: []string{ms(time.Hour), "XX", "LT"}, want: 0},
			{op: kv.CmdPExpireTime, want: t0ms + 3_600_000},
			{op: kv.CmdPTTL, want: 3_600_000},
		}},
		{name: "relative: converted once with the store's clock, within its millisecond", start: 700 * time.Microsecond, setup: put(0), steps: []expireStep{
			{op: kv.CmdPExpire, args: []string{"100000"}, want: 1},
			{op: kv.CmdPExpireTime, want: t0ms + 100_000}, // the millisecond the clock is in, plus 100 s
			{op: kv.CmdPExpire, args: []string{"100000", "GT"}, want: 0},
			{op: kv.CmdExpire, args: []string{"100", "LT"}, want: 0},
			{advance: 200 * time.Microsecond, op: kv.CmdPExpire, args: []string{"100000", "GT"}, want: 0}, // still the same millisecond
			{advance: 100 * time.Microsecond, op: kv.CmdPExpire, args: []string{"100000", "GT"}, want: 1}, // the next one
			{op: kv.CmdPExpireTime, want: t0ms + 100_001},
			{op: kv.CmdPTTL, want: 100_000},
			{advance: 10 * time.Second, op: kv.CmdExpire, args: []string{"100", "LT"}, want: 0},
			{op: kv.CmdExpire, args: []string{"90", "LT"}, want: 0}, // t0 + 10.001 s + 90 s: the same instant
			{op: kv.CmdExpire, args: []string{"89", "LT"}, want: 1},
			{op: kv.CmdPExpireTime, want: t0ms + 99_001},
		}},
		{name: "a finer TTL is read as its millisecond", start: 400 * time.Microsecond, setup: put(time.Second), steps: []expireStep{
			{op: kv.CmdPExpireTime, want: t0ms + 1000},
			{op: kv.CmdPTTL, want: 1000},
			{op: kv.CmdPExpireAt, args: []string{ms(time.Second), "GT"}, want: 0},
			{op: kv.CmdPExpireAt, args: []string{ms(time.Second), "LT"}, want: 0},
			{op: kv.CmdPExpire, args: []string{"1000", "LT"}, want: 0},
			{op: kv.CmdPExpire, args: []string{"999", "LT"}, want: 1},
			{op: kv.CmdPExpireTime, want: t0ms + 999},
		}},
		{name: "no expiry is infinite for GT and LT", setup: put(0), steps: []expireStep{
			{op: kv.CmdExpire, args: []string{"100", "GT"}, want: 0},
			{op: kv.CmdExpire, args: []string{"100", "XX"}, want: 0},
			{op: kv.CmdExpire, args: []string{"100", "XX", "LT"}, want: 0},
			{op: kv.CmdPExpireTime, want: none},
			{op: kv.CmdExpire, args: []string{"100", "LT"}, want: 1},
			{op: kv.CmdExpire, args: []string{"200", "NX"}, want: 0},
			{op: kv.CmdExpire, args: []string{"200", "XX", "GT"}, want: 1},
			{op: kv.CmdPTTL, want: 200_000},
		}},
		{name: "NX sets only the first expiry", setup: put(0), steps: []expireStep{
			{op: kv.CmdPExpire, args: []string{"5000", "nx"}, want: 1},
			{op: kv.CmdPExpire, args: []string{"6000", "NX"}, want: 0},
			{op: kv.CmdPTTL, want: 5000},
		}},
		{name: "a time not in the future deletes the key, after the conditions", setup: put(0), steps: []expireStep{
			{op: kv.CmdExpire, args: []string{"-1", "GT"}, want: 0}, // GT fails on no expiry: the key stays
			{op: kv.CmdPExpireTime, want: none},
			{op: kv.CmdPExpireAt, args: []string{ms(0), "LT"}, want: 1}, // now is not in the future
			{op: kv.CmdPExpireTime, want: noKey},
			{op: kv.CmdPExpire, args: []string{"0"}, want: 0}, // no key
		}},
		{name: "PEXPIRE 0 deletes", setup: put(time.Minute), steps: []expireStep{
			{op: kv.CmdPExpire, args: []string{"0"}, want: 1},
			{op: kv.CmdPTTL, want: noKey},
		}},
		{name: "EXPIREAT in the past deletes", setup: put(0), steps: []expireStep{
			{op: kv.CmdExpireAt, args: []string{"1"}, want: 1},
			{op: kv.CmdPTTL, want: noKey},
		}},
		{name: "a missing key", steps: []expireStep{
			{op: kv.CmdExpire, args: []string{"100"}, want: 0},
			{op: kv.CmdPExpireAt, args: []string{ms(time.Hour), "LT"}, want: 0},
			{op: kv.CmdPTTL, want: noKey},
			{op: kv.CmdPExpireTime, want: noKey},
		}},
		{name: "Redis's checks, in its order, before the key is looked up", steps: []expireStep{
			{op: kv.CmdExpire, args: []string{"x", "NX", "FOO"}, wantErr: "Unsupported option FOO"},
			{op: kv.CmdExpire, args: []string{"1", "a\x00b"}, wantErr: "Unsupported option a"},
			{op: kv.CmdExpire, args: []string{"x", "NX", "XX"}, wantErr: "NX and XX, GT or LT options at the same time are not compatible"},
			{op: kv.CmdPExpire, args: []string{"x", "GT", "LT"}, wantErr: "GT and LT options at the same time are not compatible"},
			{op: kv.CmdPExpire, args: []string{"1.5"}, wantErr: "value is not an integer or out of range"},
			{op: kv.CmdPExpire, args: nil, wantErr: "wrong number of arguments for 'pexpire' command"},
		}},
		{name: "overflow keeps Redis's error", setup: put(0), steps: []expireStep{
			{op: kv.CmdExpire, args: []string{"9223372036854776"}, wantErr: "invalid expire time in 'expire' command"},
			{op: kv.CmdExpire, args: []string{"-9223372036854776"}, wantErr: "invalid expire time in 'expire' command"},
			{op: kv.CmdExpireAt, args: []string{"9223372036854776"}, wantErr: "invalid expire time in 'expireat' command"},
			{op: kv.CmdPExpire, args: []string{"9223372036854775807"}, wantErr: "invalid expire time in 'pexpire' command"},
			{op: kv.CmdPExpire, args: []string{strconv.FormatInt(math.MaxInt64-t0ms, 10)}, want: 1}, // exactly int64 ms
			{op: kv.CmdPExpireTime, want: math.MaxInt64 / int64(time.Millisecond)},                  // kept at 2262-04-11
			{op: kv.CmdPExpireAt, args: []string{"9223372036854775807", "GT"}, want: 0},             // the same instant again
			{op: kv.CmdPExpireAt, args: []string{"9223372036854775807", "LT"}, want: 0},
			{op: kv.CmdExpireAt, args: []string{"9223372036854775", "LT"}, want: 0}, // beyond the cap: compared as it
			{op: kv.CmdExpire, args: []string{"-9223372036854775"}, want: 1},        // far in the past: deleted
			{op: kv.CmdPTTL, want: noKey},
		}},
		{name: "any kind of key", setup: func(t *testing.T, s *Store) {
			if r := s.Exec(kv.NewCmd(kv.CmdHSet, "k", "f", "v")); r.Status != kv.StatusSuccess {
				t.Fatalf("HSET: %v", r.Status)
			}
		}, steps: []expireStep{
			{op: kv.CmdPExpireAt, args: []string{ms(time.Minute), "LT"}, want: 1},
			{op: kv.CmdPExpireTime, want: t0ms + 60_000},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, clk := newTestStore(t)
			clk.Advance(tc.start)
			if tc.setup != nil {
				tc.setup(t, s)
			}
			for i, st := range tc.steps {
				clk.Advance(st.advance)
				r := s.Exec(kv.NewCmd(st.op, "k", st.args...))
				switch {
				case st.wantErr != "":
					if r.Status != kv.StatusBadRequest || r.Message != st.wantErr {
						t.Fatalf("step %d %v %q: %v %q, want BadRequest %q", i, st.op, st.args, r.Status, r.Message, st.wantErr)
					}
				case r.Status != kv.StatusSuccess || r.Type != kv.ReplyInt || r.Int != st.want:
					t.Fatalf("step %d %v %q: %v %v %d %q, want %d", i, st.op, st.args, r.Status, r.Type, r.Int, r.Message, st.want)
				}
			}
		})
	}
}

// The write is one read-compare-write under the segment's lock: with GT
// writers racing, the expiries the op-log records come in increasing order
// (a read and a separate write would let a smaller one land after a
// larger), and the last is the largest tried.
func TestExpireGTRacesKeepTheLatest(t *testing.T) {
	s, _ := newTestStore(t)
	mustStatus(t, s.Put("k", []byte("v"), &kv.PutOptions{TTL: time.Hour}), kv.StatusSuccess)
	base := t0.Add(2 * time.Hour).UnixMilli()
	const writers, each = 4, 200 // at most 801 entries: the op-log keeps 1024
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				at := base + int64(i*writers+w)
				if r := s.Exec(kv.NewCmd(kv.CmdPExpireAt, "k", strconv.FormatInt(at, 10), "GT")); r.Status != kv.StatusSuccess {
					t.Errorf("PEXPIREAT: %v %s", r.Status, r.Message)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	ops, err := s.SegmentFor("k").OperationsAfter(0)
	if err != nil {
		t.Fatal(err)
	}
	last, n := int64(0), 0
	for _, op := range ops {
		if op.Kind != OpExpire {
			continue
		}
		if op.Record.ExpiresAt() <= last {
			t.Fatalf("expiry %d logged after %d", op.Record.ExpiresAt(), last)
		}
		last, n = op.Record.ExpiresAt(), n+1
	}
	want := base + writers*each - 1
	if r := s.Exec(kv.NewCmd(kv.CmdPExpireTime, "k")); r.Int != want || last != want*int64(time.Millisecond) || n == 0 {
		t.Fatalf("PEXPIRETIME %d, last logged %d ns (%d expiries), want %d ms", r.Int, last, n, want)
	}
}

// A replica installs the absolute instant the owner computed, whatever its
// own clock reads; a deletion by a past time replicates as a delete. The
// owner's watchers see "expire" then "del" events.
func TestExpireReplicatesTheAbsoluteInstant(t *testing.T) {
	src, srcClk := newTestStore(t)
	dst, dstClk := newTestStore(t)
	dstClk.Advance(3*time.Second + 250*time.Microsecond) // a replica whose clock reads otherwise
	srcClk.Advance(1500 * time.Microsecond)
	w, _, err := src.Watch(WatchOptions{Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	mustStatus(t, src.Put("k", []byte("v"), nil), kv.StatusSuccess)
	for _, c := range []kv.Cmd{kv.NewCmd(kv.CmdPExpire, "k", "100000"), kv.NewCmd(kv.CmdPExpire, "k", "200000", "GT")} {
		if r := src.Exec(c); r.Int != 1 {
			t.Fatalf("%v: %d %v", c.Op, r.Int, r.Status)
		}
	}
	seg := src.SegmentFor("k").ID()
	replay := func() {
		t.Helper()
		ops, err := src.Segment(seg).OperationsAfter(dst.Segment(seg).Revision())
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			if _, err := dst.Segment(seg).ApplyOp(op); err != nil {
				t.Fatal(err)
			}
		}
	}
	replay()
	want := t0.UnixMilli() + 1 + 200_000 // the owner's millisecond (t0 + 1.5 ms) plus 200 s
	for name, st := range map[string]*Store{"owner": src, "replica": dst} {
		if r := st.Exec(kv.NewCmd(kv.CmdPExpireTime, "k")); r.Int != want {
			t.Fatalf("%s: PEXPIRETIME %d, want %d", name, r.Int, want)
		}
	}
	if r := src.Exec(kv.NewCmd(kv.CmdExpireAt, "k", "1")); r.Int != 1 {
		t.Fatalf("EXPIREAT in the past: %d %v", r.Int, r.Status)
	}
	replay()
	mustStatus(t, dst.Segment(seg).Get("k"), kv.StatusNotFound)

	var kinds []EventKind
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(kinds) < 4 {
		ev, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("events %v: %v", kinds, err)
		}
		kinds = append(kinds, ev.Kind)
		if ev.Kind == EventExpire && ev.ExpiresAt != want*int64(time.Millisecond) && len(kinds) == 3 {
			t.Fatalf("expire event at %d, want %d ms", ev.ExpiresAt, want)
		}
	}
	if wantKinds := []EventKind{EventPut, EventExpire, EventExpire, EventDelete}; !equalKinds(kinds, wantKinds) {
		t.Fatalf("events %v, want %v", kinds, wantKinds)
	}
}

func equalKinds(a, b []EventKind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// PTTL and PEXPIRETIME leave the key's access stamp, as Redis's TTL does
// (LOOKUP_NOTOUCH); GET stamps it.
func TestTTLReadsLeaveTheAccessStamp(t *testing.T) {
	s, clk := newTestStore(t)
	mustStatus(t, s.Put("k", []byte("v"), &kv.PutOptions{TTL: time.Hour}), kv.StatusSuccess)
	clk.Advance(5 * time.Second)
	s.Exec(kv.NewCmd(kv.CmdPTTL, "k"))
	s.Exec(kv.NewCmd(kv.CmdPExpireTime, "k"))
	idle := func() int64 {
		g := s.SegmentFor("k")
		g.mu.RLock()
		defer g.mu.RUnlock()
		info, st := g.inspectLocked("k", clk.NowNano())
		if st != kv.StatusSuccess {
			t.Fatalf("inspect: %v", st)
		}
		return info.IdleMillis
	}
	if got := idle(); got != 5000 {
		t.Fatalf("idle %d ms after PTTL and PEXPIRETIME, want 5000", got)
	}
	mustStatus(t, s.Get("k"), kv.StatusSuccess)
	if got := idle(); got != 0 {
		t.Fatalf("idle %d ms after GET, want 0", got)
	}
}

// PutOptions.ExpireAt (Redis SET … EXAT/PXAT) keeps the instant given, and
// KeepTTL the instant held: neither is a TTL counted again from the write.
func TestPutExpireAtAndKeepTTLKeepTheInstant(t *testing.T) {
	s, clk := newTestStore(t)
	at := t0.Add(time.Hour + 300*time.Microsecond).UnixNano()
	clk.Advance(700 * time.Microsecond)
	mustStatus(t, s.Put("k", []byte("v"), &kv.PutOptions{ExpireAt: at}), kv.StatusSuccess)
	expiresAt := func() int64 {
		g := s.SegmentFor("k")
		g.mu.RLock()
		defer g.mu.RUnlock()
		return g.items.get("k").ExpiresAt()
	}
	if got := expiresAt(); got != at {
		t.Fatalf("ExpiresAt %d, want %d", got, at)
	}
	clk.Advance(5 * time.Second)
	r := mustStatus(t, s.Put("k", []byte("w"), &kv.PutOptions{KeepTTL: true}), kv.StatusSuccess)
	if got := expiresAt(); got != at || r.TTL != time.Duration(at-clk.NowNano()) {
		t.Fatalf("after KeepTTL: ExpiresAt %d TTL %v, want %d", got, r.TTL, at)
	}
	if r := s.Exec(kv.NewCmd(kv.CmdPExpireAt, "k", strconv.FormatInt(t0.Add(time.Hour).UnixMilli(), 10), "LT")); r.Int != 0 {
		t.Fatalf("PEXPIREAT of the same millisecond LT: %d", r.Int)
	}
	for _, o := range []kv.PutOptions{{ExpireAt: at, TTL: time.Second}, {ExpireAt: at, KeepTTL: true}} {
		if r := s.Put("k", []byte("x"), &o); r.Status != kv.StatusBadRequest {
			t.Fatalf("%+v: %v, want BadRequest", o, r.Status)
		}
	}
	mustStatus(t, s.Put("past", []byte("v"), &kv.PutOptions{ExpireAt: clk.NowNano()}), kv.StatusSuccess)
	mustStatus(t, s.Get("past"), kv.StatusNotFound)
}

package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newTestStore(t testing.TB, mutate ...func(*Config)) (*Store, *ManualClock) {
	t.Helper()
	clk := NewManualClock(t0)
	cfg := DefaultConfig()
	cfg.Clock = clk
	cfg.Seed = 1
	// Background loops run on a real ticker; tests drive SweepOnce/EvictOnce
	// explicitly, so make the loops rare to keep results deterministic.
	cfg.SweepInterval = time.Hour
	cfg.EvictionInterval = time.Hour
	cfg.EvictionWake = false
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, clk
}

func mustStatus(t *testing.T, r kv.Result, want kv.Status) kv.Result {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %v, want %v", r.Status, want)
	}
	return r
}

// R-KV-1: versions start at 1 and grow per write; revisions order the segment.
func TestPutGetDeleteVersionsAndRevisions(t *testing.T) {
	s, _ := newTestStore(t)
	mustStatus(t, s.Get("k"), kv.StatusNotFound)
	r1 := mustStatus(t, s.Put("k", []byte("v1"), nil), kv.StatusSuccess)
	if r1.Version != 1 || r1.Revision != 1 {
		t.Fatalf("first put: version %d revision %d, want 1/1", r1.Version, r1.Revision)
	}
	r2 := mustStatus(t, s.Put("k", []byte("v2"), nil), kv.StatusSuccess)
	if r2.Version != 2 || r2.Revision != 2 {
		t.Fatalf("second put: version %d revision %d", r2.Version, r2.Revision)
	}
	g := mustStatus(t, s.Get("k"), kv.StatusSuccess)
	if string(g.Value) != "v2" || g.Version != 2 || g.TTL != 0 {
		t.Fatalf("get = %+v", g)
	}
	d := mustStatus(t, s.Delete("k"), kv.StatusSuccess)
	if d.Revision != 3 {
		t.Fatalf("delete revision %d, want 3", d.Revision)
	}
	mustStatus(t, s.Get("k"), kv.StatusNotFound)
	mustStatus(t, s.Delete("k"), kv.StatusNotFound)
	// Re-creating after a delete is a create: version starts again at 1.
	r4 := mustStatus(t, s.Put("k", []byte("v3"), nil), kv.StatusSuccess)
	if r4.Version != 1 || r4.Revision != 4 {
		t.Fatalf("recreate: version %d revision %d", r4.Version, r4.Revision)
	}
	// Keys in another segment have their own revision counter.
	other := "x"
	for s.SegmentFor(other) == s.SegmentFor("k") {
		other += "x"
	}
	if r := s.Put(other, []byte("v"), nil); r.Revision != 1 {
		t.Fatalf("other segment revision %d, want 1", r.Revision)
	}
	if st := s.Stats(); st.Items != 2 || st.Puts != 4 || st.Deletes != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// R-KV-2: CAS on ItemVersion, create-only.
func TestCompareAndSwap(t *testing.T) {
	s, _ := newTestStore(t)
	mustStatus(t, s.Put("k", []byte("a"), &kv.PutOptions{IfMatchVersion: 1}), kv.StatusConflict)
	mustStatus(t, s.Put("k", []byte("a"), &kv.PutOptions{IfAbsent: true}), kv.StatusSuccess)
	mustStatus(t, s.Put("k", []byte("b"), &kv.PutOptions{IfAbsent: true}), kv.StatusConflict)
	mustStatus(t, s.Put("k", []byte("b"), &kv.PutOptions{IfMatchVersion: 2}), kv.StatusConflict)
	r := mustStatus(t, s.Put("k", []byte("b"), &kv.PutOptions{IfMatchVersion: 1}), kv.StatusSuccess)
	if r.Version != 2 {
		t.Fatalf("version %d", r.Version)
	}
	if g := s.Get("k"); string(g.Value) != "b" {
		t.Fatalf("value %q", g.Value)
	}
	mustStatus(t, s.Put("k", []byte("c"), &kv.PutOptions{IfAbsent: true, IfMatchVersion: 2}), kv.StatusBadRequest)
	s.Delete("k")
	mustStatus(t, s.Put("k", []byte("d"), &kv.PutOptions{IfAbsent: true}), kv.StatusSuccess)
}

func TestConcurrentCASIncrementsLoseNothing(t *testing.T) {
	s, _ := newTestStore(t)
	s.Put("ctr", []byte("0"), nil)
	const workers, per = 8, 200
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < per; {
				g := s.Get("ctr")
				var n int
				fmt.Sscan(string(g.Value), &n)
				if s.Put("ctr", []byte(fmt.Sprint(n+1)), &kv.PutOptions{IfMatchVersion: g.Version}).OK() {
					done++
				}
			}
		}()
	}
	wg.Wait()
	if g := s.Get("ctr"); string(g.Value) != fmt.Sprint(workers*per) {
		t.Fatalf("counter %s, want %d", g.Value, workers*per)
	}
}

// R-KV-3: TTL on put, Expire/Persist/TimeToLive, lazy expiry and the sweeper.
func TestTTLLifecycle(t *testing.T) {
	s, clk := newTestStore(t)
	r := mustStatus(t, s.Put("k", []byte("v"), &kv.PutOptions{TTL: 10 * time.Second}), kv.StatusSuccess)
	if r.TTL != 10*time.Second {
		t.Fatalf("put TTL %v", r.TTL)
	}
	clk.Advance(4 * time.Second)
	if ttl := s.TimeToLive("k").TTL; ttl != 6*time.Second {
		t.Fatalf("ttl %v, want 6s", ttl)
	}
	mustStatus(t, s.Persist("k"), kv.StatusSuccess)
	clk.Advance(time.Hour)
	if g := mustStatus(t, s.Get("k"), kv.StatusSuccess); g.TTL != 0 {
		t.Fatalf("persisted key has TTL %v", g.TTL)
	}
	e := mustStatus(t, s.Expire("k", time.Second), kv.StatusSuccess)
	if e.Version != 1 {
		t.Fatalf("expire changed the version to %d", e.Version)
	}
	clk.Advance(999 * time.Millisecond)
	mustStatus(t, s.Get("k"), kv.StatusSuccess)
	clk.Advance(time.Millisecond)
	// Lazy: the read already misses before the sweeper ran.
	mustStatus(t, s.Get("k"), kv.StatusNotFound)
	mustStatus(t, s.TimeToLive("k"), kv.StatusNotFound)
	mustStatus(t, s.Expire("k", time.Second), kv.StatusNotFound)
	if s.Stats().Expired != 0 {
		t.Fatal("expired counted before the sweep")
	}
	expired, _ := s.SweepOnce()
	if expired != 1 || s.Stats().Expired != 1 || s.Stats().Items != 0 {
		t.Fatalf("sweep expired %d, stats %+v", expired, s.Stats())
	}
	// An expired key is absent for writers too: IfAbsent succeeds, version restarts.
	s.Put("k2", []byte("v"), &kv.PutOptions{TTL: time.Second})
	clk.Advance(2 * time.Second)
	if r := mustStatus(t, s.Put("k2", []byte("w"), &kv.PutOptions{IfAbsent: true}), kv.StatusSuccess); r.Version != 1 {
		t.Fatalf("version after expiry %d", r.Version)
	}
}

func TestSweeperExpiresManyKeysAndLogsThem(t *testing.T) {
	s, clk := newTestStore(t)
	for i := range 5000 {
		s.Put(fmt.Sprint("k", i), []byte("v"), &kv.PutOptions{TTL: time.Second})
	}
	for i := range 100 {
		s.Put(fmt.Sprint("keep", i), []byte("v"), nil)
	}
	clk.Advance(time.Second)
	total := 0
	for range 50 {
		n, _ := s.SweepOnce()
		total += n
		if total == 5000 {
			break
		}
	}
	if total != 5000 || s.Stats().Items != 100 {
		t.Fatalf("swept %d, items %d", total, s.Stats().Items)
	}
	// Expiry is replicated as an op-log entry, never a silent disappearance.
	seg := s.SegmentFor("k1")
	ops, err := seg.OperationsAfter(0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, op := range ops {
		if op.Record.Key() == "k1" && op.Kind == OpExpired && op.Record.Deleted() {
			found = true
		}
	}
	if !found {
		t.Fatal("no OpExpired tombstone for k1 in the op-log")
	}
}

// Bad input gets a typed status and leaves no partial state.
func TestBadInputLeavesNoState(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.MaxItemBytes = 1024; c.MaxKeyBytes = 64 })
	before := s.Stats()
	cases := []struct {
		name string
		res  kv.Result
		want kv.Status
	}{
		{"empty key", s.Put("", []byte("v"), nil), kv.StatusBadRequest},
		{"empty key get", s.Get(""), kv.StatusNotFound},
		{"key over limit", s.Put(strings.Repeat("k", 65), []byte("v"), nil), kv.StatusBadRequest},
		{"value over item cap", s.Put("k", make([]byte, 1025), nil), kv.StatusItemTooLarge},
		{"negative TTL", s.Put("k", []byte("v"), &kv.PutOptions{TTL: -time.Second}), kv.StatusBadRequest},
		{"expire with zero TTL", s.Expire("k", 0), kv.StatusBadRequest},
		{"expire with negative TTL", s.Expire("k", -1), kv.StatusBadRequest},
		{"delete empty key", s.Delete(""), kv.StatusBadRequest},
	}
	for _, c := range cases {
		if c.res.Status != c.want {
			t.Errorf("%s: status %v, want %v", c.name, c.res.Status, c.want)
		}
	}
	if after := s.Stats(); after != before {
		t.Fatalf("rejected writes changed the store: before %+v after %+v", before, after)
	}
	for i := range s.Segments() {
		if s.Segment(uint16(i)).Revision() != 0 {
			t.Fatalf("segment %d revision moved on a rejected write", i)
		}
	}
	mustStatus(t, s.Put("k", make([]byte, 1024), nil), kv.StatusSuccess) // exactly the cap is fine
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Config)
	}{
		{"no unlimited memory", func(c *Config) { c.MaxMemoryBytes = 0 }},
		{"item over memory", func(c *Config) { c.MaxMemoryBytes = 100; c.MaxItemBytes = 200 }},
		{"item past a record's 32-bit lengths", func(c *Config) { c.MaxMemoryBytes = 64 << 30; c.MaxItemBytes = 4 << 30 }},
		{"target above trigger", func(c *Config) { c.EvictionTarget = 0.9 }},
		{"zero segments", func(c *Config) { c.Segments = 0 }},
		{"too many segments", func(c *Config) { c.Segments = 16385 }},
		{"zero key limit", func(c *Config) { c.MaxKeyBytes = 0 }},
		{"unknown policy", func(c *Config) { c.Eviction = 9 }},
	}
	for _, c := range cases {
		cfg := DefaultConfig()
		c.mutate(&cfg)
		if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Validate() = %v, want ErrInvalidConfig", c.name, err)
		}
	}
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.MaxMemoryBytes != 1<<30 || cfg.MaxItemBytes != 4<<20 || cfg.Segments != 256 {
		t.Fatalf("defaults %+v", cfg)
	}
}

// Randomized check of the store against a plain-map model (STYLE 6).
func TestStoreMatchesMapModel(t *testing.T) {
	s, clk := newTestStore(t, func(c *Config) { c.Segments = 8 })
	type entry struct {
		val     string
		version uint64
		expires int64
	}
	model := map[string]entry{}
	rng := rand.New(rand.NewPCG(7, 7))
	now := func() int64 { return clk.NowNano() }
	live := func(k string) (entry, bool) {
		e, ok := model[k]
		if ok && e.expires != 0 && now() >= e.expires {
			return entry{}, false
		}
		return e, ok
	}
	for i := range 20000 {
		k := fmt.Sprint("k", rng.IntN(64))
		switch op := rng.IntN(10); {
		case op < 4:
			v := fmt.Sprint(i)
			var opts kv.PutOptions
			if rng.IntN(4) == 0 {
				opts.TTL = time.Duration(1+rng.IntN(50)) * time.Millisecond
			}
			e, ok := live(k)
			if rng.IntN(5) == 0 {
				opts.IfMatchVersion = e.version + uint64(rng.IntN(2))
			}
			r := s.Put(k, []byte(v), &opts)
			wantOK := opts.IfMatchVersion == 0 || (ok && opts.IfMatchVersion == e.version)
			if r.OK() != wantOK {
				t.Fatalf("step %d put %s: %v, model ok=%v", i, k, r.Status, wantOK)
			}
			if r.OK() {
				ne := entry{val: v, version: 1}
				if ok {
					ne.version = e.version + 1
				}
				if opts.TTL > 0 {
					ne.expires = now() + int64(opts.TTL)
				}
				if r.Version != ne.version {
					t.Fatalf("step %d: version %d, model %d", i, r.Version, ne.version)
				}
				model[k] = ne
			}
		case op < 7:
			r := s.Get(k)
			e, ok := live(k)
			if r.OK() != ok || (ok && (string(r.Value) != e.val || r.Version != e.version)) {
				t.Fatalf("step %d get %s: %+v, model %+v %v", i, k, r, e, ok)
			}
		case op < 8:
			r := s.Delete(k)
			_, ok := live(k)
			if r.OK() != ok {
				t.Fatalf("step %d delete %s: %v, model %v", i, k, r.Status, ok)
			}
			delete(model, k)
		case op < 9:
			clk.Advance(time.Duration(rng.IntN(5)) * time.Millisecond)
		default:
			s.SweepOnce()
		}
	}
}

func TestTombstoneGuardsAgainstStaleWrites(t *testing.T) {
	s, _ := newTestStore(t)
	g := s.SegmentFor("k")
	g.SetLowWaterMark(0) // a replica exists that has applied nothing: keep tombstones
	put := mustStatus(t, s.Put("k", []byte("v"), nil), kv.StatusSuccess)
	del := mustStatus(t, s.Delete("k"), kv.StatusSuccess)
	// A put older than the delete arrives late from another node: refused.
	applied, err := g.ApplyRecord(Record{Revision: put.Revision}.WithVersion(1).With("k", []byte("late")), OpPut)
	if err != nil || applied {
		t.Fatalf("stale put applied=%v err=%v: it would resurrect a deleted key", applied, err)
	}
	mustStatus(t, s.Get("k"), kv.StatusNotFound)
	// The pruner keeps the tombstone while a replica still needs it...
	if _, pruned := s.SweepOnce(); pruned != 0 {
		t.Fatalf("pruned %d tombstones above the low-water mark", pruned)
	}
	// ...and drops it once every replica has passed the delete.
	g.SetLowWaterMark(del.Revision)
	if _, pruned := s.SweepOnce(); pruned != 1 {
		t.Fatalf("pruned %d, want 1", pruned)
	}
	// A newer record applies.
	applied, _ = g.ApplyRecord(Record{Revision: del.Revision + 5}.WithVersion(1).With("k", []byte("new")), OpPut)
	if !applied || string(s.Get("k").Value) != "new" || g.Revision() != del.Revision+5 {
		t.Fatalf("newer record not applied")
	}
}

func TestTombstonePrunableRule(t *testing.T) {
	cases := []struct {
		name           string
		tomb, low, seg uint64
		hasLow         bool
		want           bool
	}{
		{"a replica has not applied the delete: a late put would resurrect the key", 10, 9, 12, true, false},
		{"every replica applied the delete", 10, 10, 12, true, true},
		{"no replicas: nothing can send a stale write", 10, 0, 12, false, true},
		{"low-water mark zero with replicas keeps everything", 1, 0, 12, true, false},
	}
	for _, c := range cases {
		if got := tombstonePrunable(c.tomb, c.low, c.hasLow, c.seg); got != c.want {
			t.Errorf("%s: got %v", c.name, got)
		}
	}
}

func TestOpLogOrderTrimAndPin(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.Segments = 1; c.OpLogMaxOps = 10 })
	g := s.Segment(0)
	s.Put("a", []byte("1"), nil)
	s.Expire("a", time.Minute)
	s.Persist("a")
	s.Delete("a")
	ops, err := g.OperationsAfter(0)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []OpKind{OpPut, OpExpire, OpPersist, OpDelete}
	if len(ops) != len(kinds) {
		t.Fatalf("%d ops", len(ops))
	}
	for i, op := range ops {
		if op.Kind != kinds[i] || op.Revision() != uint64(i+1) {
			t.Fatalf("op %d = %v@%d", i, op.Kind, op.Revision())
		}
	}
	if ops, _ := g.OperationsAfter(2); len(ops) != 2 || ops[0].Revision() != 3 {
		t.Fatalf("after 2: %v", ops)
	}
	// Fill past the bound: the floor rises and older requests are refused,
	// never answered partially.
	for i := range 20 {
		s.Put("b", []byte(fmt.Sprint(i)), nil)
	}
	if g.TrimFloor() != 14 { // 24 ops, 10 kept
		t.Fatalf("floor %d", g.TrimFloor())
	}
	if _, err := g.OperationsAfter(13); !errors.Is(err, ErrBelowTrimFloor) {
		t.Fatalf("after 13: %v, want ErrBelowTrimFloor", err)
	}
	if ops, err := g.OperationsAfter(14); err != nil || len(ops) != 10 {
		t.Fatalf("after 14: %d ops, %v", len(ops), err)
	}
	if _, err := g.OperationsAfter(99); err == nil {
		t.Fatal("asking beyond the current revision must fail")
	}
	// A pinned floor holds every later op despite the bound (a migration
	// snapshot anchored at 24 needs the delta after it).
	release, err := g.PinTrimFloor(24)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.PinTrimFloor(3); !errors.Is(err, ErrBelowTrimFloor) {
		t.Fatalf("pin below floor: %v", err)
	}
	for i := range 50 {
		s.Put("c", []byte(fmt.Sprint(i)), nil)
	}
	if ops, err := g.OperationsAfter(24); err != nil || len(ops) != 50 {
		t.Fatalf("pinned: %d ops, %v", len(ops), err)
	}
	release()
	release() // idempotent
	if g.TrimFloor() != 64 {
		t.Fatalf("floor after release %d, want 64", g.TrimFloor())
	}
}

func TestOpLogByteBound(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.Segments = 1; c.OpLogMaxBytes = 1000 })
	for range 10 {
		s.Put("big", make([]byte, 400), nil)
	}
	ops, err := s.Segment(0).OperationsAfter(s.Segment(0).TrimFloor())
	if err != nil || len(ops) != 2 {
		t.Fatalf("%d ops retained (%v), want 2 under a 1000-byte bound", len(ops), err)
	}
}

// Replaying a segment's op-log on another node converges to the same
// content: the storage side of replication (R-REP-1).
func TestReplayAndSnapshotConverge(t *testing.T) {
	src, clk := newTestStore(t, func(c *Config) { c.Segments = 4 })
	dst, _ := newTestStore(t, func(c *Config) { c.Segments = 4 })
	rng := rand.New(rand.NewPCG(3, 3))
	applied := make([]uint64, 4)
	ship := func() {
		for i := range 4 {
			ops, err := src.Segment(uint16(i)).OperationsAfter(applied[i])
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range ops {
				if _, err := dst.Segment(uint16(i)).ApplyRecord(op.Record, op.Kind); err != nil {
					t.Fatal(err)
				}
				applied[i] = op.Revision()
			}
		}
	}
	for round := range 20 {
		for range 200 {
			k := fmt.Sprint("k", rng.IntN(300))
			switch rng.IntN(5) {
			case 0:
				src.Delete(k)
			case 1:
				src.Expire(k, time.Duration(1+rng.IntN(3))*time.Millisecond)
			default:
				src.Put(k, []byte(fmt.Sprint(round, k)), nil)
			}
		}
		clk.Advance(time.Millisecond)
		src.SweepOnce()
		ship()
		// Re-shipping the same ops is idempotent: every one is stale now.
		for i := range 4 {
			ops, _ := src.Segment(uint16(i)).OperationsAfter(0)
			for _, op := range ops {
				if ok, _ := dst.Segment(uint16(i)).ApplyRecord(op.Record, op.Kind); ok {
					t.Fatalf("re-applied %v@%d", op.Kind, op.Revision())
				}
			}
		}
	}
	for i := range 4 {
		a, b := src.Segment(uint16(i)), dst.Segment(uint16(i))
		if a.Digest() != b.Digest() || a.Revision() != b.Revision() {
			t.Fatalf("segment %d diverged: %+v@%d vs %+v@%d", i, a.Digest(), a.Revision(), b.Digest(), b.Revision())
		}
	}
	// A third node catches up by snapshot instead.
	snapDst, _ := newTestStore(t, func(c *Config) { c.Segments = 4 })
	for i := range 4 {
		snap := src.Segment(uint16(i)).Snapshot()
		snapDst.Segment(uint16(i)).InstallSnapshot(snap)
		if src.Segment(uint16(i)).Digest() != snapDst.Segment(uint16(i)).Digest() {
			t.Fatalf("snapshot of segment %d diverged", i)
		}
		if snapDst.Segment(uint16(i)).TrimFloor() != snap.Revision {
			t.Fatalf("log floor after install %d, want %d", snapDst.Segment(uint16(i)).TrimFloor(), snap.Revision)
		}
	}
	if src.Stats().Items != snapDst.Stats().Items {
		t.Fatalf("items %d vs %d", src.Stats().Items, snapDst.Stats().Items)
	}
}

func TestDigestIsOrderIndependentAndContentSensitive(t *testing.T) {
	a, _ := newTestStore(t, func(c *Config) { c.Segments = 1 })
	b, _ := newTestStore(t, func(c *Config) { c.Segments = 1 })
	a.Put("x", []byte("1"), nil)
	a.Put("y", []byte("2"), nil)
	b.Put("y", []byte("2"), nil)
	b.Put("x", []byte("1"), nil)
	if a.Segment(0).Digest() != b.Segment(0).Digest() {
		t.Fatal("same content, different digests")
	}
	b.Put("x", []byte("1"), nil) // same bytes, new version
	if a.Segment(0).Digest() == b.Segment(0).Digest() {
		t.Fatal("digest ignores the version")
	}
}

func TestOwnedAndReplicaAccountingAreSeparate(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.Segments = 2 })
	var k0, k1 string
	for i := 0; k0 == "" || k1 == ""; i++ {
		k := fmt.Sprint("k", i)
		if s.SegmentFor(k).ID() == 0 && k0 == "" {
			k0 = k
		} else if s.SegmentFor(k).ID() == 1 && k1 == "" {
			k1 = k
		}
	}
	s.Put(k0, make([]byte, 1000), nil)
	s.Put(k1, make([]byte, 1000), nil)
	full := s.Stats().OwnedBytes
	s.Segment(1).SetOwned(false)
	st := s.Stats()
	if st.OwnedBytes != full/2 || st.ReplicaBytes != full/2 || st.Items != 1 || st.ReplicaItems != 1 {
		t.Fatalf("stats %+v", st)
	}
	s.Segment(1).SetOwned(true)
	if st := s.Stats(); st.OwnedBytes != full || st.ReplicaBytes != 0 {
		t.Fatalf("stats after re-own %+v", st)
	}
}

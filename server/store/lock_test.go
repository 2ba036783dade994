package store

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// Each row runs one lock command after advancing the manual clock by
// `after`; rows build on the previous ones. `ttl` is the TTL the key must
// carry afterwards (-1: the key must be absent; 0: not checked).
func TestLockCommands(t *testing.T) {
	s, clk := newTestStore(t)
	s.Put("plain", []byte("x"), nil)
	run(t, s, kv.CmdHSet, "hash", "f", "v")
	const sec = "1000"
	steps := []struct {
		name    string
		after   time.Duration
		op      kv.CmdOp
		key     string
		args    []string
		status  kv.Status
		want    string
		holder  string        // the value the key must hold afterwards ("" = not checked)
		ttl     time.Duration // see above
		version uint64        // Reply.Version, when non-zero
	}{
		{name: "acquire a free lock", op: kv.CmdLockAcquire, key: "L", args: []string{"A", sec}, want: "1", holder: "A", ttl: time.Second, version: 1},
		{name: "a second holder is refused", op: kv.CmdLockAcquire, key: "L", args: []string{"B", sec}, want: "0", holder: "A"},
		{name: "a refused acquire does not move the TTL", after: 400 * time.Millisecond, op: kv.CmdLockAcquire, key: "L", args: []string{"B", "5000"}, want: "0", holder: "A", ttl: 600 * time.Millisecond},
		{name: "re-acquire by the holder renews (a retried Acquire)", op: kv.CmdLockAcquire, key: "L", args: []string{"A", sec}, want: "1", holder: "A", ttl: time.Second, version: 1},
		{name: "renew by a non-holder is refused", op: kv.CmdLockRenew, key: "L", args: []string{"B", "9000"}, want: "0", holder: "A", ttl: time.Second},
		{name: "renew by the holder sets the new TTL, keeps the version", after: 900 * time.Millisecond, op: kv.CmdLockRenew, key: "L", args: []string{"A", "2000"}, want: "1", holder: "A", ttl: 2 * time.Second, version: 1},
		{name: "release by a non-holder is refused and changes nothing", op: kv.CmdLockRelease, key: "L", args: []string{"B"}, want: "0", holder: "A", ttl: 2 * time.Second},
		{name: "release by the holder deletes the lock", op: kv.CmdLockRelease, key: "L", args: []string{"A"}, want: "1", ttl: -1},
		{name: "a second release is refused", op: kv.CmdLockRelease, key: "L", args: []string{"A"}, want: "0", ttl: -1},
		{name: "renew never creates the lock", op: kv.CmdLockRenew, key: "L", args: []string{"A", sec}, want: "0", ttl: -1},
		{name: "free again: B acquires", op: kv.CmdLockAcquire, key: "L", args: []string{"B", "100"}, want: "1", holder: "B", ttl: 100 * time.Millisecond},
		{name: "expiry frees the lock for another holder", after: 100 * time.Millisecond, op: kv.CmdLockAcquire, key: "L", args: []string{"C", sec}, want: "1", holder: "C", ttl: time.Second, version: 1},
		{name: "the expired holder cannot renew", op: kv.CmdLockRenew, key: "L", args: []string{"B", sec}, want: "0", holder: "C"},
		{name: "the expired holder cannot release", op: kv.CmdLockRelease, key: "L", args: []string{"B"}, want: "0", holder: "C", ttl: time.Second},
		{name: "an expired lock cannot be renewed by its holder", after: time.Second, op: kv.CmdLockRenew, key: "L", args: []string{"C", sec}, want: "0", ttl: -1},
		{name: "an expired lock cannot be released by its holder", op: kv.CmdLockRelease, key: "L", args: []string{"C"}, want: "0", ttl: -1},

		{name: "zero ttl", op: kv.CmdLockAcquire, key: "M", args: []string{"A", "0"}, status: kv.StatusBadRequest, ttl: -1},
		{name: "negative ttl", op: kv.CmdLockAcquire, key: "M", args: []string{"A", "-5"}, status: kv.StatusBadRequest, ttl: -1},
		{name: "ttl not a number", op: kv.CmdLockAcquire, key: "M", args: []string{"A", "1s"}, status: kv.StatusBadRequest, ttl: -1},
		{name: "ttl that overflows the clock", op: kv.CmdLockAcquire, key: "M", args: []string{"A", "9223372036854775807"}, status: kv.StatusBadRequest, ttl: -1},
		{name: "renew with a zero ttl", op: kv.CmdLockRenew, key: "M", args: []string{"A", "0"}, status: kv.StatusBadRequest},
		{name: "empty token", op: kv.CmdLockAcquire, key: "M", args: []string{"", sec}, status: kv.StatusBadRequest, ttl: -1},
		{name: "missing ttl", op: kv.CmdLockAcquire, key: "M", args: []string{"A"}, status: kv.StatusBadRequest, ttl: -1},
		{name: "release with extra arguments", op: kv.CmdLockRelease, key: "M", args: []string{"A", "B"}, status: kv.StatusBadRequest},
		{name: "empty key", op: kv.CmdLockAcquire, key: "", args: []string{"A", sec}, status: kv.StatusBadRequest},
		{name: "a lock on a hash key", op: kv.CmdLockAcquire, key: "hash", args: []string{"A", sec}, status: kv.StatusWrongType},
		{name: "release on a hash key", op: kv.CmdLockRelease, key: "hash", args: []string{"A"}, status: kv.StatusWrongType},
		{name: "a plain string key is held by its value", op: kv.CmdLockAcquire, key: "plain", args: []string{"A", sec}, want: "0", holder: "x", ttl: 0},
	}
	for i, st := range steps {
		clk.Advance(st.after)
		r := run(t, s, st.op, st.key, st.args...)
		if r.Status != st.status {
			t.Fatalf("step %d (%s): status %v %q, want %v", i, st.name, r.Status, r.Message, st.status)
		}
		if st.status != kv.StatusSuccess {
			if st.ttl == -1 {
				if g := s.Get(st.key); g.Status != kv.StatusNotFound && st.key != "" {
					t.Fatalf("step %d (%s): a refused command left %q behind: %+v", i, st.name, st.key, g)
				}
			}
			continue
		}
		if got := flat(r); got != st.want {
			t.Fatalf("step %d (%s): reply %s, want %s", i, st.name, got, st.want)
		}
		if st.version != 0 && r.Version != st.version {
			t.Fatalf("step %d (%s): version %d, want %d", i, st.name, r.Version, st.version)
		}
		g := s.Get(st.key)
		if st.ttl == -1 {
			if g.Status != kv.StatusNotFound {
				t.Fatalf("step %d (%s): the lock still exists: %+v", i, st.name, g)
			}
			continue
		}
		if st.holder != "" && string(g.Value) != st.holder {
			t.Fatalf("step %d (%s): held by %q, want %q", i, st.name, g.Value, st.holder)
		}
		if st.ttl > 0 && g.TTL != st.ttl {
			t.Fatalf("step %d (%s): TTL %v, want %v", i, st.name, g.TTL, st.ttl)
		}
		if r.Version != g.Version || r.Revision != g.Revision {
			t.Fatalf("step %d (%s): reply version/revision %d/%d, record %d/%d", i, st.name, r.Version, r.Revision, g.Version, g.Revision)
		}
	}
}

func TestLockTokenTooLarge(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.MaxItemBytes = 16 })
	if r := run(t, s, kv.CmdLockAcquire, "L", strings.Repeat("t", 17), "1000"); r.Status != kv.StatusItemTooLarge {
		t.Fatalf("oversized token: %v", r.Status)
	}
	if r := run(t, s, kv.CmdLockAcquire, "L", strings.Repeat("t", 16), "1000"); r.Int != 1 {
		t.Fatalf("token at the cap: %+v", r)
	}
}

// In no-eviction mode a lock is a write like any other: refused at the cap.
func TestLockCapacityExceeded(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) {
		c.Eviction = NoEviction
		c.MaxMemoryBytes = 4096
		c.MaxItemBytes = 1024
	})
	for i := 0; ; i++ {
		if r := s.Put(fmt.Sprint("fill", i), make([]byte, 200), nil); r.Status == kv.StatusCapacityExceeded {
			break
		}
		if i > 100 {
			t.Fatal("the cap never bit")
		}
	}
	before := s.Stats()
	if r := run(t, s, kv.CmdLockAcquire, "lock:full", strings.Repeat("t", 600), "1000"); r.Status != kv.StatusCapacityExceeded {
		t.Fatalf("acquire over the cap: %v", r.Status)
	}
	if after := s.Stats(); after.OwnedBytes != before.OwnedBytes || after.Items != before.Items {
		t.Fatalf("a refused acquire changed the accounting: %+v → %+v", before, after)
	}
}

// An acquire over an expired, unswept lock replaces it; expiry and release
// return every byte.
func TestLockAccounting(t *testing.T) {
	s, clk := newTestStore(t)
	run(t, s, kv.CmdLockAcquire, "L", "A", "100")
	one := s.Stats()
	if one.Items != 1 || one.OwnedBytes <= 0 {
		t.Fatalf("after acquire: %+v", one)
	}
	clk.Advance(100 * time.Millisecond)
	if r := run(t, s, kv.CmdLockAcquire, "L", "B", "100"); r.Int != 1 {
		t.Fatalf("acquire over an expired lock: %+v", r)
	}
	if st := s.Stats(); st.Items != 1 || st.OwnedBytes != one.OwnedBytes {
		t.Fatalf("replacing an expired lock: %+v, want %+v", st, one)
	}
	clk.Advance(100 * time.Millisecond)
	s.SweepOnce()
	if st := s.Stats(); st.Items != 0 || st.OwnedBytes != 0 {
		t.Fatalf("after expiry and sweep: %+v", st)
	}
	run(t, s, kv.CmdLockAcquire, "L", "C", "100")
	run(t, s, kv.CmdLockRelease, "L", "C")
	s.SweepOnce()
	if st := s.Stats(); st.Items != 0 || st.OwnedBytes != 0 {
		t.Fatalf("after release: %+v", st)
	}
}

// Locks replicate as records: a replica replaying the op-log holds the same
// token with the same absolute expiry, and a lock command logged as an
// effect is refused (R-REP-1).
func TestLockReplicates(t *testing.T) {
	src, clk := newTestStore(t, func(c *Config) { c.Segments = 1 })
	dst, dclk := newTestStore(t, func(c *Config) { c.Segments = 1 })
	var applied uint64
	catchUp := func() {
		t.Helper()
		ops, err := src.Segment(0).OperationsAfter(applied)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			if _, err := dst.Segment(0).ApplyOp(op); err != nil {
				t.Fatalf("apply %v: %v", op.Kind, err)
			}
			applied = op.Revision()
		}
		if a, b := src.Segment(0).Digest(), dst.Segment(0).Digest(); a != b {
			t.Fatalf("diverged: %+v vs %+v", a, b)
		}
	}
	run(t, src, kv.CmdLockAcquire, "L1", "A", "1000")
	run(t, src, kv.CmdLockAcquire, "L2", "B", "1000")
	catchUp()
	clk.Advance(500 * time.Millisecond)
	dclk.Advance(500 * time.Millisecond)
	run(t, src, kv.CmdLockRenew, "L1", "A", "5000")
	run(t, src, kv.CmdLockRelease, "L2", "B")
	catchUp()
	if g := dst.Get("L1"); string(g.Value) != "A" || g.TTL != 5*time.Second {
		t.Fatalf("replica lock: %+v", g)
	}
	if g := dst.Get("L2"); g.Status != kv.StatusNotFound {
		t.Fatalf("released lock on the replica: %+v", g)
	}
	// The replica expires the lock at the same instant as the source.
	clk.Advance(5 * time.Second)
	dclk.Advance(5 * time.Second)
	if a, b := src.Get("L1"), dst.Get("L1"); a.Status != kv.StatusNotFound || b.Status != kv.StatusNotFound {
		t.Fatalf("after expiry: %v / %v", a.Status, b.Status)
	}
	op := Op{Kind: OpCommand, Record: Record{Revision: 1 << 40}.With("L3", nil), Cmd: &kv.Cmd{Op: kv.CmdLockAcquire, Key: "L3", Args: [][]byte{[]byte("A"), []byte("1000")}}}
	if _, err := dst.Segment(0).ApplyOp(op); err == nil {
		t.Fatal("a lock command replayed as an effect was accepted")
	}
	if g := dst.Get("L3"); g.Status != kv.StatusNotFound {
		t.Fatalf("a refused replay left a lock: %+v", g)
	}
}

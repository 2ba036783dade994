package store

import (
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// PutStatus (the RESP front end's string writes, D120) must refuse and
// commit exactly as Put does: a refusal Put reports but PutStatus let
// through would be a SET NX that overwrote, or a write past the
// no-eviction cap.
func TestPutStatusAgreesWithPut(t *testing.T) {
	mk := func() *Store {
		s, _ := newTestStore(t, func(c *Config) {
			c.MaxItemBytes = 1024
			c.MaxMemoryBytes = 64 << 10
			c.Eviction = NoEviction
		})
		return s
	}
	type write struct {
		name  string
		key   string
		value []byte
		opts  *kv.PutOptions
		want  kv.Status
	}
	writes := []write{
		{"create", "k", []byte("v1"), nil, kv.StatusSuccess},
		{"overwrite", "k", []byte("v2"), nil, kv.StatusSuccess},
		{"IfAbsent on a live key", "k", []byte("x"), &kv.PutOptions{IfAbsent: true}, kv.StatusConflict},
		{"IfAbsent on an absent key", "n", []byte("nx"), &kv.PutOptions{IfAbsent: true}, kv.StatusSuccess},
		{"IfMatchVersion that matches", "k", []byte("v3"), &kv.PutOptions{IfMatchVersion: 2}, kv.StatusSuccess},
		{"IfMatchVersion stale", "k", []byte("v4"), &kv.PutOptions{IfMatchVersion: 2}, kv.StatusConflict},
		{"IfMatchVersion on an absent key", "absent", []byte("v"), &kv.PutOptions{IfMatchVersion: 1}, kv.StatusConflict},
		{"with a TTL", "t", []byte("ttl"), &kv.PutOptions{TTL: time.Hour}, kv.StatusSuccess},
		{"KeepTTL keeps it", "t", []byte("kept"), &kv.PutOptions{KeepTTL: true}, kv.StatusSuccess},
		{"ExpireAt", "e", []byte("at"), &kv.PutOptions{ExpireAt: t0.Add(time.Minute).UnixNano()}, kv.StatusSuccess},
		{"negative TTL", "k", []byte("x"), &kv.PutOptions{TTL: -time.Second}, kv.StatusBadRequest},
		{"KeepTTL with a TTL", "k", []byte("x"), &kv.PutOptions{KeepTTL: true, TTL: time.Second}, kv.StatusBadRequest},
		{"IfAbsent with IfMatchVersion", "k", []byte("x"), &kv.PutOptions{IfAbsent: true, IfMatchVersion: 1}, kv.StatusBadRequest},
		{"value over --max-item-bytes", "big", make([]byte, 1025), nil, kv.StatusItemTooLarge},
	}
	// Past the no-eviction cap: values of 1000 bytes until one is refused.
	for i := range 80 {
		writes = append(writes, write{"toward the cap", "fill" + strings.Repeat("x", i), make([]byte, 1000), nil, kv.StatusSuccess})
	}
	viaPut, viaStatus := mk(), mk()
	capped := false
	for i, w := range writes {
		got := viaPut.Put(w.key, w.value, w.opts).Status
		gotStatus := viaStatus.SegmentFor(w.key).PutStatus(w.key, w.value, w.opts)
		if got != gotStatus {
			t.Fatalf("write %d (%s): Put %v, PutStatus %v", i, w.name, got, gotStatus)
		}
		if w.name == "toward the cap" {
			if got == kv.StatusCapacityExceeded {
				capped = true
			}
			continue
		}
		if got != w.want {
			t.Fatalf("write %d (%s): %v, want %v", i, w.name, got, w.want)
		}
	}
	if !capped {
		t.Fatal("no write reached the no-eviction cap: the refusal path went untested")
	}
	for _, w := range writes {
		a, b := viaPut.Get(w.key), viaStatus.Get(w.key)
		if a.Status != b.Status || string(a.Value) != string(b.Value) || a.Version != b.Version || a.TTL != b.TTL {
			t.Fatalf("key %q differs: Put left %v %q v%d ttl %v, PutStatus %v %q v%d ttl %v",
				w.key, a.Status, a.Value, a.Version, a.TTL, b.Status, b.Value, b.Version, b.TTL)
		}
	}
	if a, b := viaPut.Stats(), viaStatus.Stats(); a.Items != b.Items || a.OwnedBytes != b.OwnedBytes || a.Puts != b.Puts {
		t.Fatalf("stores differ: Put %+v, PutStatus %+v", a, b)
	}
	if got := viaStatus.Get("t"); got.TTL <= 0 {
		t.Fatalf("KEEPTTL through PutStatus lost the expiry: %+v", got)
	}
}

// Atomic.PutStatus inside a locked view refuses a key of another segment
// and otherwise writes as Put does.
func TestAtomicPutStatus(t *testing.T) {
	s, _ := newTestStore(t)
	g := s.SegmentFor("a")
	other := "b"
	for i := 0; s.SegmentFor(other) == g; i++ {
		other = "b" + strings.Repeat("x", i)
	}
	g.Atomically(func(a *Atomic) {
		if st := a.PutStatus("a", []byte("1"), nil); st != kv.StatusSuccess {
			t.Errorf("own segment: %v", st)
		}
		if st := a.PutStatus("a", []byte("2"), &kv.PutOptions{IfAbsent: true}); st != kv.StatusConflict {
			t.Errorf("IfAbsent on a live key: %v", st)
		}
		if st := a.PutStatus(other, []byte("1"), nil); st != kv.StatusBadRequest {
			t.Errorf("another segment's key: %v, want BadRequest", st)
		}
	})
	if r := s.Get("a"); string(r.Value) != "1" || r.Version != 1 {
		t.Fatalf("after the view: %+v", r)
	}
	if r := s.Get(other); r.Status != kv.StatusNotFound {
		t.Fatalf("the refused key was written: %+v", r)
	}
}

// GetValue (RESP GET and MGET, D122) answers as Get does in every case a
// GET meets, and its no-touch form leaves the access stamp as it was.
func TestGetValueAgreesWithGet(t *testing.T) {
	s, clk := newTestStore(t)
	mustStatus(t, s.Put("live", []byte("v"), nil), kv.StatusSuccess)
	mustStatus(t, s.Put("soon", []byte("gone"), &kv.PutOptions{TTL: time.Second}), kv.StatusSuccess)
	if r := s.Exec(kv.NewCmd(kv.CmdLPush, "list", "a")); r.Status != kv.StatusSuccess {
		t.Fatalf("LPUSH: %+v", r)
	}
	clk.Advance(2 * time.Second)
	for _, key := range []string{"live", "soon", "list", "missing"} {
		g := s.SegmentFor(key)
		res := g.Get(key)
		v, st := g.GetValue(key)
		if st != res.Status || string(v) != string(res.Value) {
			t.Fatalf("%s: Get %v %q, GetValue %v %q", key, res.Status, res.Value, st, v)
		}
	}
	if v, st := s.SegmentFor("live").GetValue("live"); st != kv.StatusSuccess || string(v) != "v" {
		t.Fatalf("live key: %v %q", st, v)
	}
	if _, st := s.SegmentFor("list").GetValue("list"); st != kv.StatusWrongType {
		t.Fatalf("a list read as a string: %v, want WrongType", st)
	}

	g := s.SegmentFor("live")
	rec := func() *Record { g.mu.RLock(); defer g.mu.RUnlock(); return g.items.get("live") }()
	before := rec.access
	clk.Advance(time.Hour)
	if _, st := g.Untouched().GetValue("live"); st != kv.StatusSuccess || rec.access != before {
		t.Fatalf("no-touch GetValue: %v, access %d → %d", st, before, rec.access)
	}
	if _, st := g.GetValue("live"); st != kv.StatusSuccess || rec.access == before {
		t.Fatalf("GetValue did not stamp the access: %v, access %d", st, rec.access)
	}

	g.SetOwned(false)
	if _, st := g.GetValue("live"); st != kv.StatusMoved {
		t.Fatalf("a segment not owned: %v, want Moved", st)
	}
	g.SetOwned(true)
	g.Atomically(func(a *Atomic) {
		if v, st := a.GetValue("live"); st != kv.StatusSuccess || string(v) != "v" {
			t.Errorf("in a locked view: %v %q", st, v)
		}
	})
}

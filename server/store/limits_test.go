package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// TestRuntimeLimits: SetMaxMemory and SetEviction take effect on the next
// eviction run and write; volatile-ttl evicts the nearest expiry first and
// never a key without a TTL; noeviction refuses at the new cap.
func TestRuntimeLimits(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.MaxMemoryBytes = 64 << 20 })
	val := make([]byte, 1000)
	for i := range 200 {
		s.Put(fmt.Sprint("keep", i), val, nil)
		s.Put(fmt.Sprint("ttl", i), val, &kv.PutOptions{TTL: time.Duration(i+1) * time.Minute})
	}
	if err := s.SetMaxMemory(0); err == nil {
		t.Fatal("a zero cap accepted: there is no unlimited")
	}
	if err := s.SetEviction(EvictionPolicy(99)); err == nil {
		t.Fatal("an unknown policy accepted")
	}
	if err := s.SetEviction(EvictVolatileTTL); err != nil {
		t.Fatal(err)
	}
	owned := s.Stats().OwnedBytes
	if err := s.SetMaxMemory(owned * 9 / 10); err != nil {
		t.Fatal(err)
	}
	if got := s.Config(); got.MaxMemoryBytes != owned*9/10 || got.Eviction != EvictVolatileTTL {
		t.Fatalf("Config() = cap %d policy %v", got.MaxMemoryBytes, got.Eviction)
	}
	if s.EvictOnce(1) == 0 {
		t.Fatal("nothing evicted under a cap below the owned bytes")
	}
	for i := range 200 {
		if !s.Get(fmt.Sprint("keep", i)).OK() {
			t.Fatalf("volatile-ttl evicted keep%d, which has no TTL", i)
		}
	}
	// Nearest expiry first (sampled, so on average): the evicted keys expire
	// sooner than the ones kept.
	var gone, kept, nGone, nKept int
	for i := range 200 {
		if s.Get(fmt.Sprint("ttl", i)).OK() {
			kept, nKept = kept+i, nKept+1
		} else {
			gone, nGone = gone+i, nGone+1
		}
	}
	if nGone == 0 || nKept == 0 || gone/nGone >= kept/nKept {
		t.Fatalf("volatile-ttl: %d evicted (mean index %d), %d kept (mean index %d)", nGone, gone/max(nGone, 1), nKept, kept/max(nKept, 1))
	}
	if err := s.SetEviction(NoEviction); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMaxMemory(s.Stats().OwnedBytes); err != nil {
		t.Fatal(err)
	}
	if r := s.Put("more", val, nil); r.Status != kv.StatusCapacityExceeded {
		t.Fatalf("a write past the new cap under noeviction: %v", r.Status)
	}
}

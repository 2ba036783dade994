package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// TestSweepScanFor: how much of the index's hash array one expiry sample
// reads (D89), and what each bound prevents.
func TestSweepScanFor(t *testing.T) {
	cases := []struct {
		name             string
		slots, expiring  int
		want             int
		failureprevented string
	}{
		{"no key has a TTL", 5000, 0, 0, "a scan of a table with nothing to find"},
		{"an empty table", 0, 0, 0, "a division by an empty table"},
		{"every key has one", 5166, 3906, 52, "a sample reading far more slots than it needs: 20 of them lie within ~27"},
		{"more keys with a TTL than slots read", 100, 4000, sweepSample, "a scan shorter than the sample"},
		{"half have one", 5166, 1953, 2 * sweepSample * 5166 / 1953, "a sample finding too few to judge the expired share"},
		{"10 among 100 k", 131072, 10, sweepMaxScan, "a sweep reading the whole table on every round"},
		{"a few in a small table", 64, 3, 64, "a scan past the table's end, reading slots twice"},
		{"one in a mid-size table", 6000, 1, 6000, "a lone key with a TTL never sampled: the scan covers the table"},
	}
	for _, c := range cases {
		if got := sweepScanFor(c.slots, c.expiring); got != c.want {
			t.Errorf("%s: scan %d slots, want %d (prevents %s)", c.name, got, c.want, c.failureprevented)
		}
	}
}

// TestSweepFindsAFewKeysWithATTLAmongMany: where ten keys of twenty
// thousand have a TTL, the sweeper — which finds them by the mark in the
// index's hash array, not in an index of their own (D89) — still removes
// them once expired, within a few rounds; and it leaves the others alone.
func TestSweepFindsAFewKeysWithATTLAmongMany(t *testing.T) {
	s, clk := newTestStore(t, func(c *Config) { c.Segments = 1 })
	g := s.Segment(0)
	for i := range 20_000 {
		opts := &kv.PutOptions{}
		if i%2000 == 0 {
			opts.TTL = time.Second
		}
		if r := g.Put(fmt.Sprint("key-", i), []byte("v"), opts); r.Status != kv.StatusSuccess {
			t.Fatalf("put %d: %v", i, r.Status)
		}
	}
	if n, _ := s.TTLStats(); n != 10 {
		t.Fatalf("%d keys with a TTL, want 10", n)
	}
	clk.Advance(2 * time.Second)
	rounds := 0
	for n, _ := s.TTLStats(); n > 0; n, _ = s.TTLStats() {
		if rounds++; rounds > 40 {
			t.Fatalf("%d expired keys with a TTL still there after 40 sweeps", n)
		}
		s.SweepOnce()
	}
	if got := s.DBSize(); got != 20_000-10 {
		t.Fatalf("DBSIZE %d after the sweeps, want %d", got, 20_000-10)
	}
}

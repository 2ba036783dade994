package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// TestRandomKeyIsUniformOverLiveOwnedKeys: every live key of an owned
// segment comes up about equally often, on a keyspace dense enough for
// draws and on one so sparse that RandomKey passes over the segments;
// expired keys and keys of segments the node does not own never do (the
// first-key-after-a-random-string rule returned one key 42 % of the time).
func TestRandomKeyIsUniformOverLiveOwnedKeys(t *testing.T) {
	for _, keys := range []int{3, 2000} {
		t.Run(fmt.Sprint(keys, " keys"), func(t *testing.T) {
			st, clk := newTestStore(t)
			if _, ok := st.RandomKey(); ok {
				t.Fatal("RandomKey of an empty store answered a key")
			}
			for i := range keys {
				st.Put(fmt.Sprint("key:", i), []byte("v"), nil)
			}
			st.Put("short-lived", []byte("v"), &kv.PutOptions{TTL: time.Second})
			clk.Advance(2 * time.Second)
			foreign := "not-mine"
			st.Put(foreign, []byte("v"), nil)
			st.SegmentFor(foreign).SetOwned(false)
			owned := map[string]bool{}
			for i := range keys {
				k := fmt.Sprint("key:", i)
				owned[k] = st.SegmentFor(k) != st.SegmentFor(foreign)
			}
			live := 0
			for _, mine := range owned {
				if mine {
					live++
				}
			}
			const perKey = 300
			hits := map[string]int{}
			for range live * perKey {
				k, ok := st.RandomKey()
				if !ok {
					t.Fatal("RandomKey found no key")
				}
				if !owned[k] {
					t.Fatalf("RandomKey returned %q: expired, or of a segment not owned", k)
				}
				hits[k]++
			}
			if len(hits) != live {
				t.Fatalf("%d of %d keys ever returned", len(hits), live)
			}
			for k, n := range hits {
				if r := float64(n) / perKey; r < 0.6 || r > 1.4 { // > 7 σ
					t.Fatalf("%s returned %.2f× the mean", k, r)
				}
			}
		})
	}
}

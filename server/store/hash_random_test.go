package store

import (
	"fmt"
	"math"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
)

// TestHashRandomFieldSpread: randomField draws every field equally often,
// on a table of any load. A walk collecting the fields around a random slot
// (the draw before D103) kept a field within 0.39–1.87× the mean on 2 000
// fields; a plain "first field after a random slot" gave one 8× the mean.
// Bounds: ±6 standard deviations of the binomial count.
func TestHashRandomFieldSpread(t *testing.T) {
	for _, tc := range []struct {
		fields  int
		deleted int // fields deleted after: a table at its sparsest before it shrinks
	}{
		{fields: 20},
		{fields: 2000},
		{fields: 4096, deleted: 4096 - 520},
	} {
		h := newHash()
		for i := range tc.fields {
			h.set([]byte(fmt.Sprint("f", i)), []byte("v"))
		}
		for i := range tc.deleted {
			h.del(fmt.Sprint("f", i))
		}
		left := tc.fields - tc.deleted
		const perField = 400
		hits := map[string]int{}
		for range left * perField {
			hits[randomField(h)]++
		}
		if len(hits) != left {
			t.Fatalf("%d fields: %d ever drawn", left, len(hits))
		}
		tol := 6 * math.Sqrt(perField) / perField
		for f, n := range hits {
			if r := float64(n) / perField; math.Abs(r-1) > tol {
				t.Fatalf("%d fields: %s drawn %.2f× the mean (allowed 1 ± %.2f)", left, f, r, tol)
			}
		}
	}
}

// TestHRandFieldCounts: a positive count gives distinct fields (drawn or
// shuffled), a negative one that many fields, repeats allowed, all real.
func TestHRandFieldCounts(t *testing.T) {
	st, _ := newTestStore(t)
	args := make([]string, 0, 2000)
	for i := range 1000 {
		args = append(args, fmt.Sprint("f", i), fmt.Sprint("v", i))
	}
	run(t, st, kv.CmdHSet, "h", args...)
	for _, count := range []string{"10", "300", "900", "5000", "3074457345618258603", "9223372036854775807"} { // hostile: 3·n overflows
		r := run(t, st, kv.CmdHRandField, "h", count)
		want := min(len(args)/2, atoiTest(t, count))
		if len(r.Array) != want {
			t.Fatalf("HRANDFIELD h %s: %d fields", count, len(r.Array))
		}
		seen := map[string]bool{}
		for _, e := range r.Array {
			if seen[string(e.Bulk)] {
				t.Fatalf("HRANDFIELD h %s repeated %q", count, e.Bulk)
			}
			seen[string(e.Bulk)] = true
		}
	}
	for _, count := range []string{"-10", "-5000"} {
		r := run(t, st, kv.CmdHRandField, "h", count, "WITHVALUES")
		if len(r.Array) != 2*-atoiTest(t, count) {
			t.Fatalf("HRANDFIELD h %s WITHVALUES: %d entries", count, len(r.Array))
		}
		for i := 0; i < len(r.Array); i += 2 {
			f, v := string(r.Array[i].Bulk), string(r.Array[i+1].Bulk)
			if "v"+f[1:] != v {
				t.Fatalf("HRANDFIELD h %s: field %q with value %q", count, f, v)
			}
		}
	}
}

func atoiTest(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHRandFieldCountSpread: the picks of a small count, positive
// (distinct) or negative (repeats allowed), reach every field equally
// often (±6 standard deviations).
func TestHRandFieldCountSpread(t *testing.T) {
	st, _ := newTestStore(t)
	const fields = 2000
	args := make([]string, 0, 2*fields)
	for i := range fields {
		args = append(args, fmt.Sprint("f", i), "v")
	}
	run(t, st, kv.CmdHSet, "h", args...)
	for _, count := range []string{"10", "-10"} {
		hits := map[string]int{}
		const calls = fields * 200 / 10
		for range calls {
			for _, e := range run(t, st, kv.CmdHRandField, "h", count).Array {
				hits[string(e.Bulk)]++
			}
		}
		if len(hits) != fields {
			t.Fatalf("HRANDFIELD h %s: %d of %d fields ever drawn", count, len(hits), fields)
		}
		tol := 6 * math.Sqrt(200) / 200
		for f, n := range hits {
			if r := float64(n) / 200; math.Abs(r-1) > tol {
				t.Fatalf("HRANDFIELD h %s: %s drawn %.2f× the mean", count, f, r)
			}
		}
	}
}

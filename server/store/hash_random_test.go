package store

import (
	"fmt"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
)

// TestHashRandomFieldSpread: randomField reaches every field, exactly
// uniformly on a hash no larger than its window and within the documented
// spread on a large one (a plain "first field of a range" gave one field
// 8× the mean on 5 000 fields).
func TestHashRandomFieldSpread(t *testing.T) {
	for _, tc := range []struct {
		fields   int
		min, max float64 // of the mean
	}{
		{fields: 20, min: 0.75, max: 1.25},
		{fields: 2000, min: 0.25, max: 2.5}, // observed 0.39–1.87 over 30 hashes
	} {
		h := newHash()
		for i := range tc.fields {
			h.set([]byte(fmt.Sprint("f", i)), []byte("v"))
		}
		const perField = 200
		hits := map[string]int{}
		for range tc.fields * perField {
			hits[randomField(h)]++
		}
		if len(hits) != tc.fields {
			t.Fatalf("%d fields: %d ever drawn", tc.fields, len(hits))
		}
		for f, n := range hits {
			if r := float64(n) / perField; r < tc.min || r > tc.max {
				t.Fatalf("%d fields: %s drawn %.2f× the mean", tc.fields, f, r)
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

// TestHRandFieldCountSpread: the picks of a small count come from one walk
// of the hash (randomWindow), and still reach every field with the spread
// a single draw has — no field left out, none far above the mean — with
// positive and negative counts.
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
		for f, n := range hits {
			if r := float64(n) / 200; r < 0.2 || r > 3 {
				t.Fatalf("HRANDFIELD h %s: %s drawn %.2f× the mean", count, f, r)
			}
		}
	}
}

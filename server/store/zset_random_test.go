package store

import (
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
)

// TestZRandMemberSpread: ZRANDMEMBER's draws — one member, a few distinct
// ones, or repeats allowed — reach every member equally often (±6 standard
// deviations), on a set of 100 members and one of 3 000, and return the
// member's own score; a positive count never repeats a member.
func TestZRandMemberSpread(t *testing.T) {
	st, _ := newTestStore(t)
	for _, members := range []int{100, 3000} {
		key := fmt.Sprint("z", members)
		args := make([]string, 0, 2*members)
		for i := range members {
			args = append(args, strconv.Itoa(i), fmt.Sprint("m", i))
		}
		run(t, st, kv.CmdZAdd, key, args...)
		for _, count := range []int{1, 10, -10} {
			const perMember = 300
			hits := map[string]int{}
			for range members * perMember / abs(count) {
				r := run(t, st, kv.CmdZRandMember, key, strconv.Itoa(count), "1")
				if r.Status != kv.StatusSuccess || len(r.Array) != 2*abs(count) {
					t.Fatalf("ZRANDMEMBER %s %d WITHSCORES: %v, %d entries", key, count, r.Status, len(r.Array))
				}
				seen := map[string]bool{}
				for i := 0; i < len(r.Array); i += 2 {
					m, score := string(r.Array[i].Bulk), string(r.Array[i+1].Bulk)
					if "m"+score != m {
						t.Fatalf("ZRANDMEMBER %s %d: member %q with score %q", key, count, m, score)
					}
					if count > 0 && seen[m] {
						t.Fatalf("ZRANDMEMBER %s %d repeated %q", key, count, m)
					}
					seen[m] = true
					hits[m]++
				}
			}
			if len(hits) != members {
				t.Fatalf("ZRANDMEMBER %s %d: %d of %d members ever drawn", key, count, len(hits), members)
			}
			tol := 6 * math.Sqrt(perMember) / perMember
			for m, n := range hits {
				if r := float64(n) / perMember; math.Abs(r-1) > tol {
					t.Fatalf("ZRANDMEMBER %s %d: %s drawn %.2f× the mean (allowed 1 ± %.2f)", key, count, m, r, tol)
				}
			}
		}
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
)

// checkSetIndex fails unless members and the table describe the same
// members, each at the position the table records (what SPOP/SRANDMEMBER's
// O(1) pick relies on).
func checkSetIndex(t *testing.T, s *setColl) {
	t.Helper()
	if s.members.len() != s.t.len() {
		t.Fatalf("members has %d entries, the table %d", s.members.len(), s.t.len())
	}
	if p := s.members.problem(); p != "" {
		t.Fatal(p)
	}
	for i := range s.members.len() {
		m := s.members.at(i)
		e := s.t.entryOf(m)
		if e == nil {
			t.Fatalf("member %q at %d is not in the table", m, i)
		}
		if j := int(binary.LittleEndian.Uint32(entryValue(e))); j != i {
			t.Fatalf("member %q at %d, the table says %d", m, i, j)
		}
	}
}

// TestSetMembersIndexSurvivesAddRemove: swap-removal keeps every member's
// recorded position right; a wrong one would make SPOP return a member that
// is gone or never return one that is there.
func TestSetMembersIndexSurvivesAddRemove(t *testing.T) {
	s := newSet()
	for i := range 1000 {
		s.add(fmt.Sprint("m", i))
	}
	for i := 0; i < 1000; i += 3 {
		s.rem(fmt.Sprint("m", i))
	}
	s.add("m0")
	s.rem("m999")
	s.rem("absent")
	checkSetIndex(t, s)
	for s.members.len() > 0 { // down to empty, shrinking the list on the way
		s.rem(s.members.at(s.members.len() / 2))
		if s.members.len()%97 == 0 {
			checkSetIndex(t, s)
		}
	}
	checkSetIndex(t, s)
}

// problem says what is wrong with the list's layout, "" when nothing.
func (l *memberList) problem() string {
	if l.chunks == nil {
		if l.n != 0 || len(l.flat) > memberChunk {
			return fmt.Sprintf("a slice of %d members (a chunk holds %d), count %d", len(l.flat), memberChunk, l.n)
		}
		return ""
	}
	if l.flat != nil || l.n <= memberChunk/4 || len(l.chunks) != (l.n+memberChunk-1)/memberChunk {
		return fmt.Sprintf("%d members in %d chunks (flat %d)", l.n, len(l.chunks), len(l.flat))
	}
	for i, c := range l.chunks {
		if len(c) != memberChunk {
			return fmt.Sprintf("chunk %d holds %d slots", i, len(c))
		}
	}
	for i := l.n; i < len(l.chunks)*memberChunk; i++ {
		if l.at(i) != "" {
			return fmt.Sprintf("slot %d past the %d members still holds %q", i, l.n, l.at(i))
		}
	}
	return ""
}

// TestSetMembersGrowWithoutCopying: past one chunk, adding members never
// moves those already listed — a slice reallocated and copied all of
// them in the SADD that filled it, tens of milliseconds at 700 k members
// under the segment's lock (D130).
func TestSetMembersGrowWithoutCopying(t *testing.T) {
	s := newSet()
	for i := range memberChunk + 1 {
		s.add(fmt.Sprint("m", i))
	}
	first := &s.members.chunks[0][0]
	for i := memberChunk + 1; i < 100*memberChunk; i++ {
		s.add(fmt.Sprint("m", i))
	}
	if &s.members.chunks[0][0] != first {
		t.Fatal("the members listed before the set grew moved")
	}
	checkSetIndex(t, s)
}

// TestSetRandomPicksAreUniformAndDistinct: SRANDMEMBER over a large set
// hits every member about equally (a walk of the map from a random start
// favours members after gaps), SPOP with a count returns distinct members
// that are then gone, and the set's index stays whole.
func TestSetRandomPicksAreUniformAndDistinct(t *testing.T) {
	st, _ := newTestStore(t)
	const size = 200
	args := make([]string, size)
	for i := range args {
		args[i] = fmt.Sprint("m", i)
	}
	run(t, st, kv.CmdSAdd, "s", args...)

	hits := map[string]int{}
	const draws = 200 * size
	for range draws / 100 {
		r := run(t, st, kv.CmdSRandMember, "s", "100")
		seen := map[string]bool{}
		for _, e := range r.Array {
			m := string(e.Bulk)
			if seen[m] {
				t.Fatalf("SRANDMEMBER s 100 repeated %q", m)
			}
			seen[m] = true
			hits[m]++
		}
	}
	for range draws / 4 {
		hits[string(run(t, st, kv.CmdSRandMember, "s").Bulk)]++
	}
	if len(hits) != size {
		t.Fatalf("%d of %d members ever drawn", len(hits), size)
	}
	mean := float64(draws+draws/4) / size // 250 per member
	for m, n := range hits {
		if float64(n) < mean*0.6 || float64(n) > mean*1.4 { // > 6 σ from the mean
			t.Fatalf("member %s drawn %d times, mean %.0f", m, n, mean)
		}
	}

	popped := map[string]bool{}
	for range size / 10 {
		r := run(t, st, kv.CmdSPop, "s", "10")
		if len(r.Array) != 10 {
			t.Fatalf("SPOP s 10 = %s", flat(r))
		}
		for _, e := range r.Array {
			if popped[string(e.Bulk)] {
				t.Fatalf("SPOP returned %q twice", e.Bulk)
			}
			popped[string(e.Bulk)] = true
			if run(t, st, kv.CmdSIsMember, "s", string(e.Bulk)).Int != 0 {
				t.Fatalf("popped %q is still a member", e.Bulk)
			}
		}
		if card := run(t, st, kv.CmdSCard, "s").Int; int(card)+len(popped) != size {
			t.Fatalf("SCARD %d after popping %d of %d", card, len(popped), size)
		}
	}
	if r := st.Get("s"); r.Status != kv.StatusNotFound {
		t.Fatalf("the emptied set still exists: %v", r.Status)
	}
}

// TestZCountAgainstModel: ZCOUNT from two rank walks agrees with counting
// the members in range, for inclusive, exclusive and infinite bounds over
// scores with many ties (the rank arithmetic's edge).
func TestZCountAgainstModel(t *testing.T) {
	st, _ := newTestStore(t)
	rng := rand.New(rand.NewPCG(7, 7))
	scores := map[string]float64{}
	for i := range 400 {
		sc := float64(rng.IntN(40)) / 2
		m := fmt.Sprint("m", i)
		scores[m] = sc
		run(t, st, kv.CmdZAdd, "z", fmt.Sprint(sc), m)
	}
	bound := func() (string, float64, bool) {
		switch rng.IntN(8) {
		case 0:
			return "-inf", math.Inf(-1), false
		case 1:
			return "+inf", math.Inf(1), false
		}
		v := float64(rng.IntN(44)-2) / 2
		if rng.IntN(2) == 0 {
			return fmt.Sprint("(", v), v, true
		}
		return fmt.Sprint(v), v, false
	}
	for range 2000 {
		loArg, lo, loEx := bound()
		hiArg, hi, hiEx := bound()
		want := 0
		for _, s := range scores {
			if (s > lo || !loEx && s == lo) && (s < hi || !hiEx && s == hi) {
				want++
			}
		}
		if got := run(t, st, kv.CmdZCount, "z", loArg, hiArg); got.Int != int64(want) {
			t.Fatalf("ZCOUNT z %s %s = %s, want %d", loArg, hiArg, flat(got), want)
		}
	}
}

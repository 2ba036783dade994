package store

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
)

// scanColl runs SSCAN/HSCAN/ZSCAN's page from cursor and returns the next
// cursor and the members (fields) on the page.
func scanColl(t *testing.T, s *Store, op kv.CmdOp, key string, cursor uint64, count int) (uint64, []string) {
	t.Helper()
	r := run(t, s, op, key, strconv.FormatUint(cursor, 10), "COUNT", strconv.Itoa(count))
	if r.Status != kv.StatusSuccess || len(r.Array) != 2 {
		t.Fatalf("%v %s %d: %s", op, key, cursor, flat(r))
	}
	next, err := strconv.ParseUint(string(r.Array[0].Bulk), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	stride := 1
	if op != kv.CmdSScan {
		stride = 2 // field value / member score
	}
	var page []string
	for i := 0; i < len(r.Array[1].Array); i += stride {
		page = append(page, string(r.Array[1].Array[i].Bulk))
	}
	return next, page
}

// TestCollectionScanOfLargeCollectionsKeepsItsGuarantee: on collections
// large enough to page from their cached hash order, two interleaved scans
// while members come and go return every member present throughout
// exactly once, never one removed before the scan began, and end with
// cursor 0 — also when the second scan's first page rebuilds the order the
// first scan was reading.
func TestCollectionScanOfLargeCollectionsKeepsItsGuarantee(t *testing.T) {
	const size = 3000
	for _, tc := range []struct {
		op       kv.CmdOp
		add, rem func(s *Store, m string)
	}{
		{kv.CmdSScan, func(s *Store, m string) { s.Exec(kv.NewCmd(kv.CmdSAdd, "c", m)) }, func(s *Store, m string) { s.Exec(kv.NewCmd(kv.CmdSRem, "c", m)) }},
		{kv.CmdHScan, func(s *Store, m string) { s.Exec(kv.NewCmd(kv.CmdHSet, "c", m, "v")) }, func(s *Store, m string) { s.Exec(kv.NewCmd(kv.CmdHDel, "c", m)) }},
		{kv.CmdZScan, func(s *Store, m string) { s.Exec(kv.NewCmd(kv.CmdZAdd, "c", "1", m)) }, func(s *Store, m string) { s.Exec(kv.NewCmd(kv.CmdZRem, "c", m)) }},
	} {
		t.Run(tc.op.String(), func(t *testing.T) {
			st, _ := newTestStore(t)
			for i := range size {
				tc.add(st, fmt.Sprint("keep", i))
				tc.add(st, fmt.Sprint("drop", i))
			}
			for i := range size / 2 {
				tc.rem(st, fmt.Sprint("drop", i)) // gone before any scan
			}
			seen := [2]map[string]int{{}, {}}
			var cursor [2]uint64
			started := [2]bool{true, false}
			done := [2]bool{}
			for step := 0; !done[0] || !done[1]; step++ {
				if step == 20 {
					started[1] = true // a second scan begins halfway: it rebuilds the order
				}
				for i := range 2 {
					if !started[i] || done[i] {
						continue
					}
					next, page := scanColl(t, st, tc.op, "c", cursor[i], 37)
					for _, m := range page {
						seen[i][m]++
					}
					cursor[i], done[i] = next, next == 0
				}
				// Churn between pages: the other half of the drops go,
				// new members arrive.
				if d := size/2 + step; d < size {
					tc.rem(st, fmt.Sprint("drop", d))
				}
				tc.add(st, fmt.Sprint("new", step))
			}
			for step := range 20 { // added before the second scan began, present throughout it
				if m := fmt.Sprint("new", step); seen[1][m] != 1 {
					t.Fatalf("scan 1 returned %s %d times", m, seen[1][m])
				}
			}
			for i := range 2 {
				for k := range size {
					if m := fmt.Sprint("keep", k); seen[i][m] != 1 {
						t.Fatalf("scan %d returned %s %d times", i, m, seen[i][m])
					}
				}
				for k := range size / 2 {
					if m := fmt.Sprint("drop", k); seen[i][m] != 0 {
						t.Fatalf("scan %d returned %s, removed before it began", i, m)
					}
				}
			}
		})
	}
}

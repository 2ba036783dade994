package cluster

import (
	"errors"
	"testing"
)

// TestFoldFollow: the follow state's rules, as every node folds them.
func TestFoldFollow(t *testing.T) {
	var st FollowState
	step := func(op FollowOp, index uint64, wantErr error) {
		t.Helper()
		next, err := FoldFollow(st, op, index)
		if !errors.Is(err, wantErr) {
			t.Fatalf("fold %+v at %d: %v, want %v", op, index, err, wantErr)
		}
		if err != nil && next != st {
			t.Fatalf("a refused op changed the state: %+v → %+v", st, next)
		}
		st = next
	}
	step(FollowOp{Kind: FollowCursor, Generation: 0, Cursor: "c"}, 1, ErrFollowStale)
	step(FollowOp{Kind: FollowStart, Source: "zaris://a/s", Key: "k1", At: 10}, 5, nil)
	if !st.Following() || st.Generation != 5 || st.Key != "k1" || st.StartedAt != 10 {
		t.Fatalf("after start: %+v", st)
	}
	step(FollowOp{Kind: FollowStart, Source: "zaris://a/s", Key: "k2"}, 6, nil) // the same source: no-op
	if st.Generation != 5 || st.Key != "k1" {
		t.Fatalf("a repeated start replaced the follow: %+v", st)
	}
	step(FollowOp{Kind: FollowStart, Source: "zaris://b/s", Key: "k3"}, 7, ErrFollowConflict)
	step(FollowOp{Kind: FollowCursor, Generation: 4, Cursor: "old"}, 8, ErrFollowStale)
	step(FollowOp{Kind: FollowCursor, Generation: 5, Cursor: "c1", Applied: 3, At: 20}, 9, nil)
	if st.Cursor != "c1" || st.Applied != 3 || st.CursorAt != 20 {
		t.Fatalf("after a cursor: %+v", st)
	}
	// Applier claims (D135): each row names the failure it prevents.
	step(FollowOp{Kind: FollowClaim, Generation: 4, Node: "n1"}, 20, ErrFollowStale) // an applier of a replaced follow claims
	step(FollowOp{Kind: FollowClaim, Generation: 5, Node: "n1", At: 21}, 21, nil)
	if st.Claim != 21 || st.ClaimedBy != "n1" || st.ClaimedAt != 21 || st.Cursor != "c1" {
		t.Fatalf("after a claim: %+v", st)
	}
	// A cursor made before any claim (an entry of an older version) no
	// longer moves a claimed follow's cursor.
	step(FollowOp{Kind: FollowCursor, Generation: 5, Cursor: "unclaimed"}, 22, ErrFollowClaimed)
	step(FollowOp{Kind: FollowCursor, Generation: 5, Claim: 21, Cursor: "c2", Applied: 5}, 23, nil)
	step(FollowOp{Kind: FollowClaim, Generation: 5, Node: "n2"}, 24, nil) // the leader moved: n2's applier takes over
	// The deposed applier's session-end commit lands after the new
	// applier started: it must not move the cursor back to what it covered.
	step(FollowOp{Kind: FollowCursor, Generation: 5, Claim: 21, Cursor: "behind"}, 25, ErrFollowClaimed)
	step(FollowOp{Kind: FollowCursor, Generation: 5, Claim: 24, Cursor: "c3", Applied: 9}, 26, nil)
	if st.Cursor != "c3" || st.Claim != 24 || st.ClaimedBy != "n2" {
		t.Fatalf("after the new applier's cursor: %+v", st)
	}
	step(FollowOp{Kind: FollowStop, At: 30}, 30, nil)
	if st.Following() || st.PromotedFrom != "zaris://a/s" || st.PromotedAt != 30 || st.Cursor != "" || st.Key != "" {
		t.Fatalf("after stop: %+v", st)
	}
	if st.Claim != 0 {
		t.Fatalf("a promotion kept the claim: %+v", st)
	}
	step(FollowOp{Kind: FollowCursor, Generation: 5, Claim: 24, Cursor: "late"}, 31, ErrFollowStale) // a stopped applier's last commit
	step(FollowOp{Kind: FollowClaim, Generation: 5, Node: "n2"}, 32, ErrFollowStale)                 // a stopped follow claimed
	step(FollowOp{Kind: FollowStop}, 33, nil)                                                        // promote twice: no-op
	step(FollowOp{Kind: FollowStart, Source: "zaris://b/s", Key: "k4"}, 34, nil)
	if st.Generation != 34 || st.Cursor != "" || st.PromotedFrom != "zaris://a/s" || st.Claim != 0 {
		t.Fatalf("a new follow after a promotion: %+v", st)
	}
}

func TestDecodeFollowRefusesBadEntries(t *testing.T) {
	for _, op := range []FollowOp{{Kind: 0}, {Kind: 9}, {Kind: FollowStart, Source: "zaris://a/s"}, {Kind: FollowStart, Key: "k"}} {
		data, err := EncodeFollow(op)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeFollow(data); !errors.Is(err, ErrBadEntry) {
			t.Fatalf("decode %+v: %v, want ErrBadEntry", op, err)
		}
	}
	for _, data := range [][]byte{nil, {byte(EntryACL)}, {byte(EntryFollow), 0xc1}} {
		if _, err := DecodeFollow(data); !errors.Is(err, ErrBadEntry) {
			t.Fatalf("decode %x: %v, want ErrBadEntry", data, err)
		}
	}
	data, _ := EncodeFollow(FollowOp{Kind: FollowCursor, Generation: 3, Claim: 7, Cursor: "c"})
	if op, err := DecodeFollow(data); err != nil || op.Generation != 3 || op.Claim != 7 || op.Cursor != "c" {
		t.Fatalf("round trip: %+v %v", op, err)
	}
}

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
	step(FollowOp{Kind: FollowStop, At: 30}, 10, nil)
	if st.Following() || st.PromotedFrom != "zaris://a/s" || st.PromotedAt != 30 || st.Cursor != "" || st.Key != "" {
		t.Fatalf("after stop: %+v", st)
	}
	step(FollowOp{Kind: FollowCursor, Generation: 5, Cursor: "late"}, 11, ErrFollowStale) // a stopped applier's last commit
	step(FollowOp{Kind: FollowStop}, 12, nil)                                             // promote twice: no-op
	step(FollowOp{Kind: FollowStart, Source: "zaris://b/s", Key: "k4"}, 13, nil)
	if st.Generation != 13 || st.Cursor != "" || st.PromotedFrom != "zaris://a/s" {
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
	data, _ := EncodeFollow(FollowOp{Kind: FollowCursor, Generation: 3, Cursor: "c"})
	if op, err := DecodeFollow(data); err != nil || op.Generation != 3 || op.Cursor != "c" {
		t.Fatalf("round trip: %+v %v", op, err)
	}
}

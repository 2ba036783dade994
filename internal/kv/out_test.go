package kv

import "testing"

// A large room goes back to the pool cleared: the next connection that
// borrows it sees no reply of the last one (no value stays reachable, and
// nothing stale can be encoded), and the connection keeps only a small room.
func TestLargeRoomReturnsCleared(t *testing.T) {
	for range 20 { // the pool may drop an item; enough rounds to reuse one
		room := LargeOut(300)
		if len(room) != 0 || cap(room) < 300 {
			t.Fatalf("LargeOut(300): len %d cap %d", len(room), cap(room))
		}
		for _, r := range room[:cap(room)] {
			if r.Type != 0 || r.Bulk != nil || r.Array != nil || r.Message != "" {
				t.Fatalf("a borrowed room holds a reply: %+v", r)
			}
		}
		for i := range 300 {
			if i%2 == 0 {
				room = append(room, BulkReply([]byte{byte(i)}))
			} else {
				room = append(room, ArrayReply([]Reply{IntReply(1)}))
			}
		}
		ResetOut(&room)
		if room != nil {
			t.Fatalf("the connection kept a room of %d entries", cap(room))
		}
	}
}

func TestSmallRoomIsKeptEmpty(t *testing.T) {
	room := make([]Reply, 0, RetainedOut)
	room = append(room, BulkReply([]byte("x")))
	ResetOut(&room)
	if len(room) != 0 || cap(room) != RetainedOut {
		t.Fatalf("after ResetOut: len %d cap %d, want 0 %d", len(room), cap(room), RetainedOut)
	}
	if r := room[:1][0]; r.Bulk != nil {
		t.Fatal("ResetOut left a reply's bytes reachable")
	}
}

// Resetting a connection's small room allocates nothing: it runs after
// every command (a heap-moved local here was one allocation per command).
func TestResetOutOfASmallRoomAllocatesNothing(t *testing.T) {
	room := make([]Reply, 0, RetainedOut)
	allocs := testing.AllocsPerRun(100, func() {
		room = append(room, IntReply(1))
		ResetOut(&room)
	})
	if allocs != 0 {
		t.Fatalf("ResetOut of a small room: %.1f allocations", allocs)
	}
}

package kv

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

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

// TestAppendIntegralPrintsWhatGPrints: for every whole number it takes,
// AppendIntegral prints what %.17g (strconv's 'g' with 17 digits, the
// scores' replies) and the shortest form print; it refuses zero (its sign),
// fractions, NaN, infinities and magnitudes from 1e15.
func TestAppendIntegralPrintsWhatGPrints(t *testing.T) {
	vals := []float64{1, -1, 7, 52378, -52378, 1e15 - 1, -(1e15 - 1), 4294967296, 123456789012345}
	rng := rand.New(rand.NewPCG(3, 90))
	for range 100_000 {
		vals = append(vals, float64(rng.Int64N(2e15)-1e15), math.Trunc(rng.NormFloat64()*1e6))
	}
	for _, f := range vals {
		got, ok := AppendIntegral(nil, f)
		if f == 0 {
			if ok {
				t.Fatalf("AppendIntegral took zero")
			}
			continue
		}
		if !ok {
			t.Fatalf("AppendIntegral(%v) refused a whole number below 1e15", f)
		}
		if g := strconv.AppendFloat(nil, f, 'g', 17, 64); string(got) != string(g) {
			t.Fatalf("AppendIntegral(%v) = %s, %%.17g prints %s", f, got, g)
		}
		if sg := strconv.AppendFloat(nil, f, 'f', -1, 64); string(got) != string(sg) {
			t.Fatalf("AppendIntegral(%v) = %s, the shortest form %s", f, got, sg)
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 0.5, -1.5, 1e15, -1e15, 1e300, math.Inf(1), math.Inf(-1), math.NaN()} {
		if _, ok := AppendIntegral(nil, f); ok {
			t.Fatalf("AppendIntegral took %v", f)
		}
	}
}

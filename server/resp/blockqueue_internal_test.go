package resp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The dispatcher's choice of turns (due), row by row, with the failure
// each rule prevents.
func TestBlockQueueTurns(t *testing.T) {
	type waiter struct {
		ticket      uint64
		ready, owed bool
		keys        []string
	}
	for _, tc := range []struct {
		name      string
		waiters   []waiter
		dirty     []string
		writing   []string // keys a RESP write has begun and not ended
		turns     []uint64 // tickets, in order
		heldDirty []string // keys left dirty
	}{
		{name: "the longest waiting is served first, whatever the map's order",
			waiters: []waiter{{3, true, false, []string{"k"}}, {1, true, false, []string{"k"}}, {2, true, false, []string{"k"}}},
			dirty:   []string{"k"}, turns: []uint64{1, 2, 3}},
		{name: "a waiter on no dirty key gets no turn (no wasted wake-ups)",
			waiters: []waiter{{1, true, false, []string{"a"}}, {2, true, false, []string{"b"}}},
			dirty:   []string{"b"}, turns: []uint64{2}},
		{name: "a waiter whose turn a cut-short pass skipped gets it: its key's mark was cleared by that pass",
			waiters: []waiter{{1, true, true, []string{"a"}}},
			turns:   []uint64{1}},
		{name: "a key is held for a waiter not ready yet: a client that blocked later must not take its element, and the key stays dirty for it",
			waiters: []waiter{{1, false, false, []string{"k"}}, {2, true, true, []string{"k"}}, {3, true, false, []string{"k"}}},
			dirty:   []string{"k"}, heldDirty: []string{"k"}},
		{name: "a hold on one key does not stop waiters that blocked before it, nor other keys",
			waiters: []waiter{{1, true, false, []string{"k"}}, {2, false, false, []string{"k"}}, {3, true, false, []string{"j"}}, {4, true, false, []string{"j", "k"}}},
			dirty:   []string{"k", "j"}, turns: []uint64{1, 3}, heldDirty: []string{"k"}},
		{name: "a waiter owed a turn behind one not ready yet waits: it would take the earlier client's element",
			waiters: []waiter{{1, false, false, []string{"k"}}, {2, true, true, []string{"k"}}}},
		{name: "a waiter not ready gets no turn (its goroutine is not listening)",
			waiters: []waiter{{1, false, true, []string{"k"}}},
			dirty:   []string{"j"}},
		{name: "no turn on a key being written: the first waiter looked before the write landed, a later one would take what it brings",
			waiters: []waiter{{1, true, true, []string{"k"}}, {2, true, false, []string{"k"}}, {3, true, false, []string{"j"}}},
			dirty:   []string{"k", "j"}, writing: []string{"k"}, turns: []uint64{3}, heldDirty: []string{"k"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newBlockQueue(nil, nil)
			byTicket := map[*blockWaiter]uint64{}
			for _, w := range tc.waiters {
				bw := &blockWaiter{ticket: w.ticket, ready: w.ready, owed: w.owed, keys: w.keys}
				q.waiters[bw] = struct{}{}
				byTicket[bw] = w.ticket
			}
			for _, k := range tc.dirty {
				q.dirty[k] = 1
			}
			for _, k := range tc.writing {
				q.writing[k] = 1
			}
			turns, _, more := q.due()
			require.True(t, more)
			var got []uint64
			for _, w := range turns {
				got = append(got, w.ticket)
				require.False(t, w.owed, "a waiter given its turn is owed none")
			}
			require.Equal(t, tc.turns, got)
			var left []string
			for k := range q.dirty {
				left = append(left, k)
			}
			require.ElementsMatch(t, tc.heldDirty, left)
		})
	}
	q := newBlockQueue(nil, nil)
	q.running = true
	q.dirty["k"] = 1
	turns, _, more := q.due()
	require.Empty(t, turns)
	require.False(t, more, "with no waiter the dispatcher ends")
	require.False(t, q.running)
	require.Empty(t, q.dirty)
}

// A pass stops before the next turn once a write of a waiter's key has
// begun (markedSince): the turn would let a later waiter take the write's
// element while the earlier one, which looked before it landed, waits —
// the tcl-style "served in blocking order" run lost it under load. end
// marks the key, so the next pass starts over in ticket order.
func TestBlockQueueWriteInFlightStopsThePass(t *testing.T) {
	q := newBlockQueue(nil, nil)
	w1 := &blockWaiter{ticket: 1, ready: true, keys: []string{"k"}}
	w2 := &blockWaiter{ticket: 2, ready: true, keys: []string{"k"}}
	q.waiters[w1], q.waiters[w2] = struct{}{}, struct{}{}
	q.keys["k"] = &keyWatch{refs: 2}
	q.waiting.Store(2)
	q.markLocked("k")
	turns, since, _ := q.due()
	require.Equal(t, []*blockWaiter{w1, w2}, turns)
	require.False(t, q.markedSince(turns[1:], since), "nothing happened yet: w2's turn may follow w1's")

	begun := q.begin([][]byte{[]byte("k"), []byte("other")})
	require.Equal(t, []string{"k"}, begun, "only keys someone waits for")
	require.True(t, q.markedSince(turns[1:], since), "a write in flight stops the pass before w2's turn")
	require.True(t, w2.owed)
	next, _, _ := q.due()
	require.Empty(t, next, "no turn while the write runs")

	q.end(begun)
	require.Empty(t, q.writing)
	next, _, _ = q.due()
	require.Equal(t, []*blockWaiter{w1, w2}, next, "once it landed, a pass in ticket order")

	q.waiting.Store(0)
	require.Nil(t, q.begin([][]byte{[]byte("k")}), "nobody blocked: nothing begun")
}

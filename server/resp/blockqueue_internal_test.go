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

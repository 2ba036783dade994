package resp

import (
	"cmp"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/zaris-io/zaris/internal/panics"
	"github.com/zaris-io/zaris/server/store"
)

// blockQueue serves blocked commands in the order they blocked, Redis's
// rule: of the clients waiting for a key, the one that has waited longest
// is served first (BLPOP's documentation; the tcl suite's "… with multiple
// blocked clients"). Without it every blocked client tried again at once
// on a change and whichever goroutine ran first took the element.
//
// A waiter takes its ticket and its keys' watches where its first try
// failed (on the event loop, in the order the loop read the commands) and
// tries once more there, which covers a change between the first try and
// the watches; it is ready once its own goroutine waits for turns. A
// change of a waited-for key marks it dirty — the store's watch, and
// before that the RESP write that made it (touch) —; a dispatcher
// goroutine then gives a turn, one at a time and in ticket order, to every
// ready waiter on a dirty key. A key with a waiter not ready yet is held
// for it: waiters with later tickets on that key wait for the pass after.
// A waiter tries on its own goroutine during its turn and says when it is
// done, so a waiter served first has taken its elements before the next
// one looks; a key marked again during a pass ends the pass, and the next
// one starts over in ticket order.
type blockQueue struct {
	store *store.Store
	log   *slog.Logger

	mu      sync.Mutex
	ticket  uint64
	waiters map[*blockWaiter]struct{}
	keys    map[string]*keyWatch
	dirty   map[string]uint64 // key → the mark's sequence number (marks)
	writing map[string]int    // key → RESP writes of it begun and not yet marked (begin/end)
	inTurn  *blockWaiter      // the waiter trying now (claimTurn), nil between turns
	turnEnd *sync.Cond        // on mu: signalled when a turn ends
	marks   uint64            // marks made so far
	running bool              // a dispatcher goroutine is on
	waiting atomic.Int32      // len(waiters), read without the lock by touch
	wake    chan struct{}     // cap 1: something is dirty, owed or ready
}

type keyWatch struct {
	refs  int
	watch *store.Watch
}

// blockWaiter is one blocked command's place in the queue.
type blockWaiter struct {
	ticket uint64
	keys   []string
	ready  bool          // its goroutine waits for turns (set by ready)
	owed   bool          // a pass cut short before its turn owes it one
	turn   chan struct{} // the dispatcher's go-ahead
	done   chan struct{} // the waiter's answer: its try is over
	gone   chan struct{} // closed when the waiter leaves the queue
}

func newBlockQueue(s *store.Store, log *slog.Logger) *blockQueue {
	q := &blockQueue{store: s, log: log, waiters: map[*blockWaiter]struct{}{}, keys: map[string]*keyWatch{},
		dirty: map[string]uint64{}, writing: map[string]int{}, wake: make(chan struct{}, 1)}
	q.turnEnd = sync.NewCond(&q.mu)
	return q
}

// join puts a waiter for keys at the back of the queue. It gets turns once
// it is ready; until then the keys it waits on are held for it, so that a
// client that blocked later is not served before it.
func (q *blockQueue) join(keys [][]byte) *blockWaiter {
	w := &blockWaiter{turn: make(chan struct{}), done: make(chan struct{}), gone: make(chan struct{})}
	for _, k := range keys {
		w.keys = append(w.keys, string(k))
	}
	q.mu.Lock()
	q.ticket++
	w.ticket = q.ticket
	q.waiters[w] = struct{}{}
	q.waiting.Store(int32(len(q.waiters)))
	for _, k := range w.keys {
		if kw := q.keys[k]; kw != nil {
			kw.refs++
			continue
		}
		kw := &keyWatch{refs: 1}
		q.keys[k] = kw
		q.watchLocked(k, kw)
	}
	q.startLocked()
	q.mu.Unlock()
	return w
}

// ready says the waiter's goroutine now waits for turns: a key change that
// came before (held for it) gives it one at the next pass.
func (q *blockQueue) ready(w *blockWaiter) {
	q.mu.Lock()
	w.ready = true
	q.mu.Unlock()
	q.poke()
}

// watchLocked subscribes to a key's changes. A key the store refuses to
// watch (an invalid key) never changes: its waiters still get their first
// turn, then wait for the timeout.
func (q *blockQueue) watchLocked(key string, kw *keyWatch) {
	wt, _, err := q.store.Watch(store.WatchOptions{Key: key, Buffer: 64})
	if err != nil {
		return
	}
	kw.watch = wt
	go q.relay(key, kw, wt)
}

// relay marks the key dirty on every change. A watch that ended while
// waiters remain (it overflowed) is taken again, and the key marked dirty
// for what it may have missed.
func (q *blockQueue) relay(key string, kw *keyWatch, wt *store.Watch) {
	for range wt.Events() {
		q.mark(key)
	}
	q.mu.Lock()
	again := q.keys[key] == kw && kw.watch == wt
	if again {
		kw.watch = nil
		q.watchLocked(key, kw)
		q.markLocked(key)
	}
	q.mu.Unlock()
	if again {
		q.poke()
	}
}

func (q *blockQueue) mark(key string) {
	q.mu.Lock()
	q.markLocked(key)
	q.mu.Unlock()
	q.poke()
}

func (q *blockQueue) markLocked(key string) {
	q.marks++
	q.dirty[key] = q.marks
}

func (q *blockQueue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// leave takes the waiter out of the queue; a turn it was being offered is
// skipped.
func (q *blockQueue) leave(w *blockWaiter) {
	q.mu.Lock()
	delete(q.waiters, w)
	q.waiting.Store(int32(len(q.waiters)))
	for _, k := range w.keys {
		kw := q.keys[k]
		if kw == nil {
			continue
		}
		if kw.refs--; kw.refs == 0 {
			delete(q.keys, k)
			delete(q.dirty, k)
			if kw.watch != nil {
				kw.watch.Close()
				kw.watch = nil
			}
		}
	}
	empty := len(q.waiters) == 0
	q.mu.Unlock()
	close(w.gone)
	if empty {
		q.poke() // the dispatcher ends
	}
}

func (q *blockQueue) startLocked() {
	if !q.running {
		q.running = true
		go q.dispatch()
	}
}

// dispatch runs passes while there are waiters, then ends (a node with no
// blocked client has no dispatcher goroutine).
func (q *blockQueue) dispatch() {
	defer func() {
		if v := recover(); v != nil {
			q.mu.Lock()
			q.running = false
			q.inTurn = nil // a write waiting for the turn's end goes on
			q.turnEnd.Broadcast()
			q.mu.Unlock()
			q.log.Error("panic in the blocked-client dispatcher", "panic", panics.Describe(v), "stack", string(debug.Stack()))
		}
	}()
	for range q.wake {
		turns, since, more := q.due()
		for i, w := range turns {
			if !q.claimTurn(turns[i:], since) {
				break // a new pass, in ticket order, with the key's change
			}
			select {
			case w.turn <- struct{}{}:
				select {
				case <-w.done:
				case <-w.gone:
				}
			case <-w.gone:
			}
			q.endTurn()
		}
		if !more {
			return
		}
	}
}

// claimTurn starts rest[0]'s turn unless a key of the waiters still to
// be given theirs changed since the pass began or is being written
// (markedSince); a write that begins afterwards waits for the turn's end
// (begin).
func (q *blockQueue) claimTurn(rest []*blockWaiter, since uint64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.markedSinceLocked(rest, since) {
		return false
	}
	q.inTurn = rest[0]
	return true
}

func (q *blockQueue) endTurn() {
	q.mu.Lock()
	q.inTurn = nil
	q.turnEnd.Broadcast()
	q.mu.Unlock()
}

func (w *blockWaiter) waitsOnAny(keys [][]byte) bool {
	for _, k := range keys {
		for _, wk := range w.keys {
			if wk == string(k) {
				return true
			}
		}
	}
	return false
}

// markedSince reports whether a key of the waiters still to be given their
// turn was marked after mark number since (the pass's start), or is being
// written (begin): the waiters that blocked before them must see the write
// first. The rest of the pass is then left to the next one, which
// starts at once.
func (q *blockQueue) markedSince(rest []*blockWaiter, since uint64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.markedSinceLocked(rest, since)
}

func (q *blockQueue) markedSinceLocked(rest []*blockWaiter, since uint64) bool {
	for _, w := range rest {
		for _, k := range w.keys {
			if q.dirty[k] > since || q.writing[k] > 0 {
				for _, r := range rest {
					r.owed = true
				}
				q.poke()
				return true
			}
		}
	}
	return false
}

// begin says a RESP command is about to write keys, when a client waits
// for one of them: until end, the dispatcher gives no turn on those keys
// (a turn would let a waiter that blocked later take what the write
// brings, while one that blocked first already looked and found nothing).
// It returns the keys to pass to end; nil (one atomic load) while nobody
// is blocked.
func (q *blockQueue) begin(keys [][]byte) []string {
	if q.waiting.Load() == 0 {
		return nil
	}
	var begun []string
	q.mu.Lock()
	// A turn in progress on one of the keys ends first: its waiter looks
	// at the key as it was when the turn was given.
	for q.inTurn != nil && q.inTurn.waitsOnAny(keys) {
		q.turnEnd.Wait()
	}
	for _, k := range keys {
		if _, ok := q.keys[string(k)]; ok {
			q.writing[string(k)]++
			begun = append(begun, string(k))
		}
	}
	q.mu.Unlock()
	return begun
}

// end says the write begun on keys has landed (or failed): the keys are
// marked, and the next pass gives turns on them in ticket order.
func (q *blockQueue) end(keys []string) {
	if len(keys) == 0 {
		return
	}
	q.mu.Lock()
	for _, k := range keys {
		if q.writing[k]--; q.writing[k] <= 0 {
			delete(q.writing, k)
		}
		q.markLocked(k)
	}
	q.mu.Unlock()
	q.poke()
}

// due collects the waiters owed a turn, in blocking order, and clears what
// made them due; more is false when the queue is empty and the dispatcher
// ends (under the lock, so a join after it starts a new one).
func (q *blockQueue) due() (turns []*blockWaiter, since uint64, more bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiters) == 0 {
		q.running = false
		clear(q.dirty)
		return nil, 0, false
	}
	// A key with a waiter not ready yet is held for it: the waiters that
	// blocked after it get no turn, and a dirty key stays dirty for the
	// pass after its ready.
	var held map[string]uint64 // key → the first ticket not ready on it
	for k := range q.writing {
		if held == nil {
			held = map[string]uint64{}
		}
		held[k] = 0 // a write in flight: no turn on it until it lands (end)
	}
	for w := range q.waiters {
		if w.ready {
			continue
		}
		for _, k := range w.keys {
			if held == nil {
				held = map[string]uint64{}
			}
			if t, ok := held[k]; !ok || w.ticket < t {
				held[k] = w.ticket
			}
		}
	}
	for w := range q.waiters {
		if w.ready && !w.heldBack(held) && (w.owed || w.waitsOn(q.dirty)) {
			w.owed = false
			turns = append(turns, w)
		}
	}
	for k := range q.dirty {
		if _, ok := held[k]; !ok {
			delete(q.dirty, k)
		}
	}
	slices.SortFunc(turns, func(a, b *blockWaiter) int { return cmp.Compare(a.ticket, b.ticket) })
	return turns, q.marks, true
}

// heldBack reports whether a key of the waiter is held for a waiter that
// blocked before it.
func (w *blockWaiter) heldBack(held map[string]uint64) bool {
	for _, k := range w.keys {
		if t, ok := held[k]; ok && t < w.ticket {
			return true
		}
	}
	return false
}

func (w *blockWaiter) waitsOn(dirty map[string]uint64) bool {
	for _, k := range w.keys {
		if _, ok := dirty[k]; ok {
			return true
		}
	}
	return false
}

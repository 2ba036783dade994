package follow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zaris-io/zaris/sdk"
)

// The applier's pipeline. One goroutine reads the primary's feed; the
// dispatcher splits the changes by segment into Lanes lanes (segment mod
// Lanes); each lane applies its changes one batch at a time, so the changes
// of one segment — hence of one key — are applied in the feed's order,
// while the lanes apply in parallel (several batches in flight to this
// cluster's owners instead of one round trip after another). While a lane
// applies a batch, the changes of its segments gather in its next batch
// (one write per key); past BatchMax the dispatcher waits for the lane, the
// feed's buffers then fill, and a feed that overflows is reopened from the
// changes already read — the pipeline, not the session, absorbs a primary
// writing faster than this cluster applies.
//
// The applied cursor moves per segment when a lane's batch is
// acknowledged; a committing goroutine records it in raft every
// CommitEvery, or sooner after CommitChanges changes.

type feedItem struct {
	ch  sdk.Change
	err error
}

// lane gathers the changes of its segments and applies them in order.
type lane struct {
	mu      sync.Mutex
	pending *batch // gathered, not yet taken for applying
	spare   *batch // an applied batch, emptied: the next pending (its maps keep their room)
	ready   chan struct{}
	room    chan struct{}
}

func newLane() *lane {
	return &lane{pending: newBatch(), ready: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// take hands the gathered batch over for applying and starts a new one
// (nil: nothing gathered).
func (l *lane) take() *batch {
	l.mu.Lock()
	b := l.pending
	if b.changes == 0 {
		b = nil
	} else if l.pending, l.spare = l.spare, nil; l.pending == nil {
		l.pending = newBatch()
	}
	l.mu.Unlock()
	signal(l.room)
	return b
}

// recycle keeps applied batch b, emptied, for a later take (unless it
// grew far beyond a lane's batch: a resynchronised segment's records).
func (l *lane) recycle(b *batch, max int) {
	if len(b.order) > 2*max {
		return
	}
	b.reset()
	l.mu.Lock()
	l.spare = b
	l.mu.Unlock()
}

// put adds one change to the lane (fold does it under the lane's lock),
// waiting while the lane holds max changes; false when ctx ended first.
func (l *lane) put(ctx context.Context, max int, fold func(*batch)) bool {
	for {
		l.mu.Lock()
		if l.pending.changes < max {
			fold(l.pending)
			l.mu.Unlock()
			signal(l.ready)
			return true
		}
		l.mu.Unlock()
		select {
		case <-l.room:
		case <-ctx.Done():
			return false
		}
	}
}

// pump applies the feed through the lanes until the feed, a lane or a
// commit fails, the follow goes stale, or ctx ends. It returns once every
// lane has stopped: nothing of this session writes after it.
func (a *applier) pump(parent context.Context, feed *sdk.ChangeFeed) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var (
		failOnce sync.Once
		failErr  error
	)
	fail := func(err error) {
		failOnce.Do(func() { failErr = err })
		cancel()
	}

	items := make(chan feedItem, a.o.BatchMax)
	var helpers sync.WaitGroup
	helpers.Go(func() { a.read(ctx, feed, items) })

	lanes := make([]*lane, a.o.Lanes)
	drain := make(chan struct{}) // closed: apply what is gathered, then stop
	var running sync.WaitGroup
	for i := range lanes {
		lanes[i] = newLane()
		l := lanes[i]
		running.Go(func() {
			if err := a.runLane(ctx, l, drain); err != nil {
				fail(err)
			}
		})
	}
	a.commitNow = make(chan struct{}, 1)
	helpers.Go(func() {
		if err := a.commitLoop(ctx, a.commitNow); err != nil {
			fail(err)
		}
	})

	read := a.appliedCursor() // what the dispatcher has handed to the lanes
	var feedErr error
dispatch:
	for feedErr == nil {
		select {
		case <-ctx.Done():
			break dispatch
		case it := <-items:
			if it.err != nil {
				feedErr = it.err
				break dispatch
			}
			if !a.dispatch(ctx, lanes, read, it.ch) {
				break dispatch
			}
		}
	}
	if feedErr != nil && ctx.Err() == nil {
		close(drain) // the feed ended: keep what was read, apply it first
	} else {
		cancel()
	}
	running.Wait()
	cancel()
	helpers.Wait()
	switch {
	case failErr != nil:
		return failErr
	case feedErr != nil:
		var ce *sdk.CursorExpiredError
		if errors.As(feedErr, &ce) {
			a.log.Error("the primary's history no longer reaches the follow cursor: resynchronising from a snapshot", "segment", ce.Segment)
		}
		return fmt.Errorf("the primary's change feed ended: %w", feedErr)
	}
	return parent.Err()
}

// read delivers the feed's changes to items until ctx ends or the feed
// fails. A feed that overflowed (this applier fell behind the primary) is
// reopened from the changes it delivered: the primary replays the rest
// from its history.
func (a *applier) read(ctx context.Context, feed *sdk.ChangeFeed, items chan<- feedItem) {
	defer func() { feed.Close() }()
	for {
		ch, err := feed.Next(ctx)
		if errors.Is(err, sdk.ErrWatchOverflow) && ctx.Err() == nil {
			cur := feed.Cursor()
			feed.Close()
			a.st.reopened()
			next, oerr := a.primary.Changes(ctx, &sdk.ChangesOptions{Cursor: cur, ResyncOnExpired: true, Buffer: a.o.FeedBuffer})
			if oerr == nil {
				feed = next
				continue
			}
			err = fmt.Errorf("reopening the primary's change feed after an overflow: %w", oerr)
		}
		select {
		case items <- feedItem{ch, err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// dispatch hands ch to its lane unless read (the position of what was
// handed over) already covers it; false when ctx ended first.
func (a *applier) dispatch(ctx context.Context, lanes []*lane, read sdk.Cursor, ch sdk.Change) bool {
	pos := sdk.CursorPosition{Epoch: ch.Epoch, Revision: ch.Revision, Key: ch.Key, Version: ch.Version}
	if ch.Kind == sdk.WatchResync {
		// Another history, or one trimmed below the cursor: its records
		// replace the segment, and the revisions restart from its mark.
		a.log.Warn("resynchronising a segment from the primary's snapshot (its history no longer reaches the follow cursor)",
			"segment", ch.Segment, "records", len(ch.Records))
		a.st.resync()
	} else if cur, ok := read[ch.Segment]; ok && ch.Revision <= cur.Revision {
		a.st.skipped() // replayed twice, or older than one applied
		return true
	}
	read[ch.Segment] = pos
	return lanes[int(ch.Segment)%len(lanes)].put(ctx, a.o.BatchMax, func(b *batch) {
		if ch.Kind == sdk.WatchResync {
			b.resync(ch.Segment, ch.Records)
		} else {
			b.add(ch)
		}
		b.pos[ch.Segment] = pos
		b.changes++
	})
}

// runLane applies lane l's batches one at a time until ctx ends or drain
// is closed (then it applies what is gathered and stops).
func (a *applier) runLane(ctx context.Context, l *lane, drain <-chan struct{}) error {
	for {
		last := false
		select {
		case <-ctx.Done():
			return nil
		case <-l.ready:
		case <-drain:
			last = true
		}
		if b := l.take(); b != nil {
			if err := a.current(); err != nil {
				return err // promoted meanwhile: this batch is not applied
			}
			if err := a.apply(ctx, b); err != nil {
				if ctx.Err() != nil {
					return nil // stopped: the batch is applied again next time
				}
				return err
			}
			a.acknowledged(b)
			l.recycle(b, a.o.BatchMax)
		}
		if last {
			return nil
		}
	}
}

// acknowledged moves the applied cursor over batch b.
func (a *applier) acknowledged(b *batch) {
	a.mu.Lock()
	for seg, p := range b.pos {
		a.cursor[seg] = p
	}
	a.applied += uint64(b.changes)
	a.sinceCommit += b.changes
	a.progressed = true
	due := a.sinceCommit >= a.o.CommitChanges
	a.mu.Unlock()
	a.st.applied(b.pos, b.changes)
	if due {
		signal(a.commitNow)
	}
}

// appliedCursor is a copy of the applied cursor.
func (a *applier) appliedCursor() sdk.Cursor {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := make(sdk.Cursor, len(a.cursor))
	for k, v := range a.cursor {
		c[k] = v
	}
	return c
}

// commitLoop commits the applied cursor every CommitEvery and when asked,
// until ctx ends.
func (a *applier) commitLoop(ctx context.Context, now <-chan struct{}) error {
	tick := time.NewTicker(a.o.CommitEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-now:
		}
		if err := a.current(); err != nil {
			return err
		}
		if err := a.commit(ctx); err != nil {
			if ctx.Err() != nil {
				return nil // the session's end commits
			}
			return err
		}
	}
}

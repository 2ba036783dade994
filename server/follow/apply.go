package follow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/store"
)

// How a batch of changes becomes writes on the follower. Every write is
// absolute — a value (with its expiry), a delete, or the key's whole
// current state read from the primary — so a batch keeps one write per
// key (the last), applying a change twice leaves the same key, and keys
// are written in parallel across owners (and the copies of one batch
// copyParallel at a time) with nothing to order but a lane's batches.
//
//   - put: the value and the expiry the change carries;
//   - delete, expired, evicted: a delete (the follower mirrors the primary);
//   - expire, persist, and a collection command (the feed names the
//     command, not its arguments): the key is copied from the primary —
//     its type, content and TTL now, which are at least as new as the
//     change; a later change of the key in the feed writes it again.

type opKind uint8

const (
	opPut opKind = iota + 1
	opDelete
	opCopy
)

type keyOp struct {
	kind  opKind
	value []byte
	// expiresAt is the absolute expiry of a put (zero: none).
	expiresAt time.Time
}

// batch is the writes of a run of changes: one per key.
type batch struct {
	ops   map[string]keyOp
	order []string
	// pos is where the batch leaves each of its segments (the cursor
	// positions its acknowledgement covers).
	pos map[uint16]sdk.CursorPosition
	// resynced: segments whose content is replaced (their live keys on the
	// primary); all: every segment (the full copy).
	resynced map[uint16]map[string]bool
	all      map[string]bool
	changes  int
}

func newBatch() *batch {
	return &batch{ops: map[string]keyOp{}, pos: map[uint16]sdk.CursorPosition{}}
}

// reset empties b for reuse.
func (b *batch) reset() {
	clear(b.ops)
	clear(b.order) // drop the keys' references
	b.order = b.order[:0]
	clear(b.pos)
	b.resynced, b.all, b.changes = nil, nil, 0
}

func (b *batch) set(key string, op keyOp) {
	if _, ok := b.ops[key]; !ok {
		b.order = append(b.order, key)
	}
	b.ops[key] = op
}

// add folds one change of the feed.
func (b *batch) add(ch sdk.Change) {
	switch ch.Kind {
	case sdk.WatchPut:
		b.set(ch.Key, keyOp{kind: opPut, value: ch.Value, expiresAt: ch.ExpiresAt})
	case sdk.WatchDelete, sdk.WatchExpired, sdk.WatchEvicted:
		b.set(ch.Key, keyOp{kind: opDelete})
	default: // expire, persist, a collection command
		b.set(ch.Key, keyOp{kind: opCopy})
	}
}

func (b *batch) record(r sdk.WatchRecord) {
	if r.Value != nil {
		b.set(r.Key, keyOp{kind: opPut, value: r.Value, expiresAt: r.ExpiresAt})
	} else {
		b.set(r.Key, keyOp{kind: opCopy}) // a collection: records carry plain values only
	}
}

// resync replaces segment seg's content with records.
func (b *batch) resync(seg uint16, records []sdk.WatchRecord) {
	if b.resynced == nil {
		b.resynced = map[uint16]map[string]bool{}
	}
	live := make(map[string]bool, len(records))
	for _, r := range records {
		b.record(r)
		live[r.Key] = true
	}
	b.resynced[seg] = live
}

// resyncAll replaces the whole content with records (the full copy).
func (b *batch) resyncAll(records []sdk.WatchRecord) {
	b.all = make(map[string]bool, len(records))
	for _, r := range records {
		b.record(r)
		b.all[r.Key] = true
	}
}

// apply writes batch b to this cluster and returns once every write is
// acknowledged (a failed one is retried by the caller's next session: the
// cursor does not move past an unapplied batch).
func (a *applier) apply(ctx context.Context, b *batch) error {
	items := make([]sdk.BatchItem, 0, len(b.order))
	var copies []string
	now := time.Now()
	for _, k := range b.order {
		op := b.ops[k]
		switch op.kind {
		case opPut:
			var opts *sdk.PutOptions
			if !op.expiresAt.IsZero() {
				ttl := op.expiresAt.Sub(now)
				if ttl <= 0 {
					items = append(items, sdk.BatchItem{Op: sdk.BatchDelete, Key: k})
					continue
				}
				opts = &sdk.PutOptions{TTL: max(ttl, time.Millisecond)}
			}
			items = append(items, sdk.BatchItem{Op: sdk.BatchPut, Key: k, Value: op.value, Options: opts})
		case opDelete:
			items = append(items, sdk.BatchItem{Op: sdk.BatchDelete, Key: k})
		case opCopy:
			copies = append(copies, k)
		}
	}
	if len(items) > 0 {
		res, err := a.local.ExecuteBatch(ctx, items)
		if err != nil {
			return fmt.Errorf("applying %d changes: %w", len(items), err)
		}
		for _, r := range res {
			if r.Status != kv.StatusSuccess && r.Status != kv.StatusNotFound {
				return fmt.Errorf("applying a change of %q: %w", r.Key, refusal(r.Status, r.Detail))
			}
		}
	}
	if err := a.copyKeys(ctx, copies); err != nil {
		return err
	}
	if b.all != nil || len(b.resynced) > 0 {
		if err := a.deleteExtras(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

// refusal is the error of a write this cluster refused; ReadOnly means the
// follow is no longer the current one (its key no longer opens writes).
func refusal(st kv.Status, detail string) error {
	err := kv.StatusError(st, detail)
	if st == kv.StatusReadOnly {
		return fmt.Errorf("%w: %w", ErrStale, err)
	}
	return err
}

// deleteExtras deletes this cluster's keys of the replaced segments that
// the primary does not hold (and no later change of the batch wrote).
func (a *applier) deleteExtras(ctx context.Context, b *batch) error {
	it := a.local.Scan().Scan(ctx, sdk.KeyRange{}, sdk.ScanOptions{PageSize: 1000})
	defer it.Close(ctx)
	var doomed []string
	for it.Next(ctx) {
		k := it.Item().Key
		if _, written := b.ops[k]; written {
			continue
		}
		if b.all == nil {
			if _, ok := b.resynced[placement.SegmentOf(k, store.DefaultSegments)]; !ok {
				continue
			}
		}
		doomed = append(doomed, k)
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("listing the keys to resynchronise: %w", err)
	}
	for len(doomed) > 0 {
		n := min(len(doomed), 1000)
		if _, err := a.local.DeleteMany(ctx, doomed[:n]); err != nil {
			return fmt.Errorf("deleting keys the primary no longer holds: %w", err)
		}
		doomed = doomed[n:]
	}
	return nil
}

// copyParallel bounds the keys of one batch copied at once: a batch holds
// one write per key, so its copies are independent. Each copy is three
// round trips to the primary (type, TTL, content) — over a WAN, most of a
// copy is waiting — and a few to this cluster; one after another, a batch
// of busy collections took that many round trips in sequence.
const copyParallel = 32

// copyKeys copies keys from the primary, copyParallel at a time, and
// returns the first failure once every copy started has ended.
func (a *applier) copyKeys(ctx context.Context, keys []string) error {
	if len(keys) == 1 {
		return a.copyKey(ctx, keys[0])
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	slots := make(chan struct{}, copyParallel)
	for _, k := range keys {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			break
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := a.copyKey(ctx, k); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// copyKey writes key's current state on the primary here: its type, its
// content, its TTL. The state is read in several calls; a key that
// changes type meanwhile is read again.
func (a *applier) copyKey(ctx context.Context, key string) error {
	var err error
	for range 3 {
		if err = a.copyOnce(ctx, key); !errors.Is(err, sdk.ErrWrongType) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("copying %q from the primary: %w", key, err)
	}
	return nil
}

const copyChunk = 512

func (a *applier) copyOnce(ctx context.Context, key string) error {
	p, l := a.primary, a.local
	// Every read of the primary is checked for its status: a refusal
	// (TRYAGAIN, MOVED, … on a busy or moving primary) is an error, retried
	// with the batch — read as an answer, it copied an empty value or
	// deleted the key, and the follow went on without the change.
	tr, err := p.Do(ctx, kv.NewCmd(kv.CmdType, key))
	if err != nil {
		return err
	}
	if tr.Status != kv.StatusSuccess {
		return refusal(tr.Status, tr.Message)
	}
	typ := string(tr.Bulk)
	switch typ {
	case "none":
		return a.del(ctx, key)
	case "string":
		r, err := p.Get(ctx, key)
		if err != nil && !errors.Is(err, sdk.ErrNotFound) {
			return err
		}
		switch r.Status {
		case kv.StatusNotFound:
			return a.del(ctx, key)
		case kv.StatusSuccess:
		default:
			return refusal(r.Status, r.Detail)
		}
		res, err := l.Put(ctx, key, r.Value, &sdk.PutOptions{TTL: r.TTL})
		if err != nil {
			return err
		}
		return res.Err()
	case "hash", "list", "set", "zset", "stream":
	default:
		return fmt.Errorf("a key of type %q cannot be copied", typ)
	}
	ttl, err := p.TimeToLive(ctx, key)
	if err != nil && !errors.Is(err, sdk.ErrNotFound) {
		return err
	}
	switch ttl.Status {
	case kv.StatusNotFound:
		return a.del(ctx, key) // gone since TYPE
	case kv.StatusSuccess:
	default:
		return refusal(ttl.Status, ttl.Detail)
	}
	// Replace: delete, then rebuild (a reader here may see the key missing
	// or partly rebuilt for the time of these calls).
	if err := a.del(ctx, key); err != nil {
		return err
	}
	switch typ {
	case "hash":
		m, err := p.Hashes().GetAll(ctx, key)
		if err != nil {
			return err
		}
		if len(m) > 0 {
			if _, err := l.Hashes().Set(ctx, key, m); err != nil {
				return err
			}
		}
	case "list":
		vals, err := p.Lists().Range(ctx, key, 0, -1)
		if err != nil {
			return err
		}
		for len(vals) > 0 {
			n := min(len(vals), copyChunk)
			if _, err := l.Lists().RPush(ctx, key, vals[:n]...); err != nil {
				return err
			}
			vals = vals[n:]
		}
	case "set":
		ms, err := p.Sets().Members(ctx, key)
		if err != nil {
			return err
		}
		for len(ms) > 0 {
			n := min(len(ms), copyChunk)
			if _, err := l.Sets().Add(ctx, key, ms[:n]...); err != nil {
				return err
			}
			ms = ms[n:]
		}
	case "zset":
		ms, err := p.SortedSets().Range(ctx, key, 0, -1)
		if err != nil {
			return err
		}
		for len(ms) > 0 {
			n := min(len(ms), copyChunk)
			if _, err := l.SortedSets().Add(ctx, key, ms[:n]...); err != nil {
				return err
			}
			ms = ms[n:]
		}
	case "stream":
		es, err := p.Streams().Range(ctx, key, "-", "+", 0)
		if err != nil {
			return err
		}
		for _, e := range es {
			if _, err := l.Streams().Add(ctx, key, e.Fields, &sdk.AddOptions{ID: e.ID}); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("a key of type %q cannot be copied", typ)
	}
	if ttl.TTL > 0 {
		if _, err := l.Expire(ctx, key, ttl.TTL); err != nil {
			return err
		}
	}
	return nil
}

func (a *applier) del(ctx context.Context, key string) error {
	r, err := a.local.Delete(ctx, key)
	if err != nil && !errors.Is(err, sdk.ErrNotFound) {
		return err
	}
	if r.Status != kv.StatusSuccess && r.Status != kv.StatusNotFound {
		return refusal(r.Status, r.Detail)
	}
	return nil
}

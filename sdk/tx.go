package sdk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/store"
)

// Multi-key transactions (R-DS-4): optimistic reads and a two-phase commit
// coordinated by this client across the owners of the keys.
//
//	tx := c.Tx()
//	from, _ := tx.Get(ctx, "acct:a")   // remembers the version it saw
//	to, _ := tx.Get(ctx, "acct:b")
//	tx.Put("acct:a", debit(from.Value), nil).Put("acct:b", credit(to.Value), nil)
//	res, err := tx.Commit(ctx)
//	if errors.Is(err, sdk.ErrConflict) { /* something moved: nothing changed, run it again */ }
//
// Commit groups every key by owner and sends each owner TX.PREPARE (in
// parallel): the owner checks that every key read is still at the version
// read, that no other transaction holds any of the keys, and reserves them
// until the prepare timeout. If every owner voted yes, TX.COMMIT is sent to
// all of them, else TX.ABORT. The wire encoding lives in server/store/tx.go.
// An owner's prepared state is on its replicas before it votes (D41): if it
// fails before the commit reaches it, the commit is sent again to the
// promoted owner, which holds the transaction.
//
// A transaction is Serializable over the keys it read and wrote: it commits
// only if none of them moved since it read them. It is heavier than one
// compare-and-swap (two round trips, short-lived reservations that make
// other writers of those keys see Conflict meanwhile): use it when an
// invariant spans keys.

// DefaultTxPrepareTimeout is how long the owners keep a prepared
// transaction's reservations waiting for its commit. A coordinator that dies
// between the phases blocks the keys for at most this long.
const DefaultTxPrepareTimeout = 5 * time.Second

// Errors of Commit beyond the statuses' sentinels.
var (
	// ErrTxDone: Commit was already called on this Tx. Start a new one.
	ErrTxDone = errors.New("zaris: transaction already committed")
	// ErrTxOutcomeUnknown: the context ended (or the client closed) after
	// every owner prepared but before every commit was acknowledged. The
	// writes may or may not be applied; an owner that never got the commit
	// releases the keys after the prepare timeout.
	ErrTxOutcomeUnknown = errors.New("zaris: transaction outcome unknown")
	// ErrTxPartial: some owners applied their writes and others had let the
	// prepared state lapse before the commit reached them (the commit came
	// later than the prepare timeout). Only possible with several owners;
	// choose a prepare timeout well above the commit latency.
	ErrTxPartial = errors.New("zaris: transaction partially applied")
)

// TxResult is the outcome of Commit.
type TxResult struct {
	// Status is Success when every write was applied; otherwise nothing was
	// (Conflict: a read moved, a write condition failed, a key was reserved
	// by another transaction, or the prepared state lapsed; BadRequest,
	// ItemTooLarge, CapacityExceeded: the owner refused the request).
	Status Status
	// Message is the refusing owner's reason (names the key), if any.
	Message string
	// Writes answers the staged writes in staging order: Op, Key and the
	// write's Version and Revision (NotFound for a delete of a key that was
	// absent). Empty unless Status is Success.
	Writes []ItemResult
}

// OK reports Status == StatusSuccess.
func (r TxResult) OK() bool { return r.Status == StatusSuccess }

// Err is nil when OK, else an error for which errors.Is(err, ErrConflict)
// (etc.) holds.
func (r TxResult) Err() error {
	if r.Status == StatusSuccess {
		return nil
	}
	if r.Message != "" {
		return fmt.Errorf("zaris: transaction: %s: %w", r.Message, r.Status.Err())
	}
	return fmt.Errorf("zaris: transaction: %w", r.Status.Err())
}

// Tx stages the reads and writes of one transaction. Build it with
// Client.Tx, read with Get, stage with Put and Delete, finish with Commit.
// It is safe for concurrent use, but it is one transaction: Commit once.
type Tx struct {
	c       *Client
	routes  txRouter
	timeout time.Duration

	mu     sync.Mutex // guards every field below
	reads  map[string]store.TxRead
	order  []string // read keys in first-read order
	writes []store.TxWrite
	staged map[string]int // key → index in writes
	done   bool
	// prepared is called between the phases (OnPrepared).
	prepared func(id string)
}

// Tx starts a transaction.
func (c *Client) Tx() *Tx {
	var r txRouter = singleOwner{c}
	if br, ok := c.be.(txRouter); ok {
		r = br // a backend that knows several owners routes the phases itself
	}
	return &Tx{c: c, routes: r, timeout: DefaultTxPrepareTimeout,
		reads: map[string]store.TxRead{}, staged: map[string]int{}}
}

// SetPrepareTimeout sets how long the owners hold the reservations of the
// prepared transaction waiting for the commit (store.MinTxTimeout ..
// store.MaxTxTimeout; default DefaultTxPrepareTimeout).
func (t *Tx) SetPrepareTimeout(d time.Duration) *Tx {
	t.mu.Lock()
	t.timeout = d
	t.mu.Unlock()
	return t
}

// OnPrepared sets a function Commit calls after every owner voted yes and
// before the first TX.COMMIT is sent, with the transaction's id: the one
// instant a failure leaves prepared state waiting for its commit. Tests use
// it to stop an owner exactly there; it must not call this Tx.
func (t *Tx) OnPrepared(fn func(id string)) *Tx {
	t.mu.Lock()
	t.prepared = fn
	t.mu.Unlock()
	return t
}

// Get reads key through the client and remembers the version it saw
// (including "absent"); Commit fails with Conflict if it moved meanwhile.
// A key already staged by this transaction reads as staged, without a round
// trip. The first read of a key is the one checked. A read that returns
// another status (WrongType, …) is not recorded.
func (t *Tx) Get(ctx context.Context, key string) (Result, error) {
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		return Result{}, ErrTxDone
	}
	if i, ok := t.staged[key]; ok {
		w := t.writes[i]
		t.mu.Unlock()
		if w.Op == store.TxDelete {
			return Result{Status: StatusNotFound}, nil
		}
		return Result{Status: StatusSuccess, Value: cloneBytes(w.Value), TTL: w.TTL}, nil
	}
	t.mu.Unlock()
	r, err := t.c.Get(ctx, key)
	if err != nil {
		return r, err
	}
	var seen store.TxRead
	switch r.Status {
	case StatusSuccess:
		seen = store.TxRead{Key: key, Version: r.Version, Revision: r.Revision}
	case StatusNotFound:
		seen = store.TxRead{Key: key}
	default:
		return r, nil
	}
	t.mu.Lock()
	if _, again := t.reads[key]; !again {
		t.reads[key] = seen
		t.order = append(t.order, key)
	}
	t.mu.Unlock()
	return r, nil
}

// Put stages a write of value under key; the value is copied. opts may be
// nil; IfMatchVersion and IfAbsent are checked at the prepare, TTL counts
// from the commit. A later Put or Delete of the same key replaces it. After
// Commit it has no effect.
func (t *Tx) Put(key string, value []byte, opts *PutOptions) *Tx {
	w := store.TxWrite{Op: store.TxPut, Key: key, Value: cloneBytes(value)}
	if w.Value == nil {
		w.Value = []byte{}
	}
	if opts != nil {
		w.TTL, w.IfMatchVersion, w.IfAbsent = opts.TTL, opts.IfMatchVersion, opts.IfAbsent
		w.ContentType, w.Labels = opts.ContentType, maps.Clone(opts.Labels)
	}
	t.stage(w)
	return t
}

// Delete stages the removal of key (a no-op at commit if it is absent).
func (t *Tx) Delete(key string) *Tx {
	t.stage(store.TxWrite{Op: store.TxDelete, Key: key})
	return t
}

func (t *Tx) stage(w store.TxWrite) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return
	}
	if i, ok := t.staged[w.Key]; ok {
		t.writes[i] = w
		return
	}
	t.staged[w.Key] = len(t.writes)
	t.writes = append(t.writes, w)
}

// Commit validates the reads and applies the writes on every owner, all or
// nothing.
//
//   - Success: every write applied; TxResult.Writes has their versions.
//   - A read moved, a key was held by another transaction, a condition
//     failed: nothing changed; TxResult.Status is Conflict and the error
//     wraps ErrConflict (errors.Is). Run the transaction again from its
//     reads. Other refusals (BadRequest, ItemTooLarge, CapacityExceeded)
//     likewise change nothing and wrap their status's sentinel.
//   - Transport failure before every owner prepared: nothing changed, the
//     error says why.
//   - Once every owner prepared, failed commits are retried until ctx ends;
//     if it ends first the error wraps ErrTxOutcomeUnknown. ErrTxPartial is
//     the one case of a split outcome (see its doc).
func (t *Tx) Commit(ctx context.Context) (TxResult, error) {
	if err := t.c.check(ctx); err != nil {
		return TxResult{}, err
	}
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		return TxResult{}, ErrTxDone
	}
	t.done = true
	reads := make([]store.TxRead, len(t.order))
	for i, k := range t.order {
		reads[i] = t.reads[k]
	}
	writes, timeout, hook := t.writes, t.timeout, t.prepared
	t.mu.Unlock()
	if len(reads) == 0 && len(writes) == 0 {
		return TxResult{Status: StatusSuccess, Writes: []ItemResult{}}, nil
	}

	// A prepare refused with a redirect status (the owner's map says the
	// key is not its own) changed nothing and was aborted everywhere: the
	// keys are grouped again on the refreshed map, under a new id.
	for attempt := 1; ; attempt++ {
		c := newCoordinator(t.routes, splitByOwner(reads, writes, timeout, t.routes.ownerOf), timeout)
		res, err, ok := c.prepare(ctx)
		if ok {
			if hook != nil {
				hook(c.id)
			}
			return c.commit(ctx, writes)
		}
		if !res.Status.Redirect() {
			return res, err
		}
		if attempt >= txRedirectAttempts || !t.routes.reroute(ctx) {
			if !routingOnly(res.Status) {
				return res, err
			}
			// Where a key lives is the SDK's business: a transaction whose
			// owners kept changing ends Timeout or Unavailable like any
			// call, never Moved (seen reaching the soak's application).
			st, msg, cerr := unsettled(ctx, res.Status, attempt)
			res.Status, res.Message = st, msg
			if cerr != nil {
				return res, cerr
			}
			return res, res.Err()
		}
	}
}

// txRedirectAttempts bounds the prepares of one Commit across map changes.
const txRedirectAttempts = 5

// --- owners ---

// txOwner names the node that owns a key for a transaction's phases ("" is
// the only owner of a single-connection client).
type txOwner string

// txRouter is the owner-resolution hook. Single-connection backends have one
// owner (singleOwner); a backend that knows several (the cluster client)
// implements txRouter itself and Client.Tx picks it up.
type txRouter interface {
	// ownerOf names the owner of key.
	ownerOf(key string) txOwner
	// doOn sends a node-level command to owner.
	doOn(ctx context.Context, owner txOwner, cmd kv.Cmd) (kv.Reply, error)
	// reroute refreshes the owners after a prepare was refused with a
	// redirect status; false when another attempt cannot route differently.
	reroute(ctx context.Context) bool
}

// singleOwner routes every key to the client's one connection.
type singleOwner struct{ c *Client }

func (singleOwner) ownerOf(string) txOwner { return "" }

func (r singleOwner) doOn(ctx context.Context, _ txOwner, cmd kv.Cmd) (kv.Reply, error) {
	return r.c.Do(ctx, cmd)
}

func (singleOwner) reroute(context.Context) bool { return false }

// groupByOwner groups keys by their owner, keeping their order within each
// group. With one owner it returns one group.
func groupByOwner(keys []string, ownerOf func(string) txOwner) map[txOwner][]string {
	groups := map[txOwner][]string{}
	for _, k := range keys {
		o := ownerOf(k)
		groups[o] = append(groups[o], k)
	}
	return groups
}

// txPart is one owner's share of a transaction.
type txPart struct {
	// id names this part on its owner and on the owner's replicas: the
	// transaction's id and the part's number, so that a node holding two
	// parts (an owner promoted for another's partition) keeps them apart.
	id       string
	owner    txOwner
	req      store.TxPrepareRequest
	writeIdx []int // writeIdx[i]: the index in the staged writes of req.Writes[i]
}

// splitByOwner builds one prepare request per owner, in a stable owner order.
func splitByOwner(reads []store.TxRead, writes []store.TxWrite, timeout time.Duration, ownerOf func(string) txOwner) []*txPart {
	keys := make([]string, 0, len(reads)+len(writes))
	for _, r := range reads {
		keys = append(keys, r.Key)
	}
	for _, w := range writes {
		keys = append(keys, w.Key)
	}
	groups := groupByOwner(keys, ownerOf)
	owners := slices.Sorted(maps.Keys(groups))
	parts := make(map[txOwner]*txPart, len(owners))
	out := make([]*txPart, len(owners))
	for i, o := range owners {
		p := &txPart{owner: o, req: store.TxPrepareRequest{Timeout: timeout}}
		parts[o], out[i] = p, p
	}
	// Every read and write lands in its owner's request, in staging order.
	owner := make(map[string]txOwner, len(keys))
	for o, ks := range groups {
		for _, k := range ks {
			owner[k] = o
		}
	}
	for _, r := range reads {
		p := parts[owner[r.Key]]
		p.req.Reads = append(p.req.Reads, r)
	}
	for i, w := range writes {
		p := parts[owner[w.Key]]
		p.req.Writes = append(p.req.Writes, w)
		p.writeIdx = append(p.writeIdx, i)
	}
	return out
}

// newTxID returns a random 128-bit transaction id in hex.
func newTxID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead)
	return hex.EncodeToString(b[:])
}

// --- the coordinator ---

// coordinator runs the two phases of one transaction over its parts.
type coordinator struct {
	routes txRouter
	id     string
	parts  []*txPart
	// deadline is when the owners' reservations lapse, at the latest (the
	// prepare was sent after it was set): past it no copy commits anymore.
	deadline time.Time
}

// newCoordinator names the transaction and each of its parts
// ("<id>.<part>").
func newCoordinator(routes txRouter, parts []*txPart, timeout time.Duration) *coordinator {
	c := &coordinator{routes: routes, id: newTxID(), parts: parts, deadline: time.Now().Add(timeout)}
	for i, p := range parts {
		p.id = c.id + "." + strconv.Itoa(i)
	}
	return c
}

type phaseReply struct {
	reply kv.Reply
	err   error
}

// each runs fn for every part, in parallel when there are several, and
// returns the answers in part order.
func (c *coordinator) each(fn func(p *txPart) phaseReply) []phaseReply {
	out := make([]phaseReply, len(c.parts))
	if len(c.parts) == 1 {
		out[0] = fn(c.parts[0])
		return out
	}
	var wg sync.WaitGroup
	for i, p := range c.parts {
		wg.Go(func() { out[i] = fn(p) })
	}
	wg.Wait()
	return out
}

// abortTimeout bounds the best-effort abort after a failed prepare; the
// reservations lapse by themselves anyway.
const abortTimeout = 2 * time.Second

// prepare runs phase one. ok=false: the transaction is over (aborted on
// every owner) and res, err are Commit's answer.
func (c *coordinator) prepare(ctx context.Context) (res TxResult, err error, ok bool) {
	votes := c.each(func(p *txPart) phaseReply {
		cmd, err := store.TxPrepareCmd(p.id, &p.req)
		if err != nil {
			return phaseReply{err: err}
		}
		r, err := c.routes.doOn(ctx, p.owner, cmd)
		return phaseReply{r, err}
	})
	var failed *phaseReply
	for i := range votes {
		if v := &votes[i]; v.err != nil || v.reply.Status != StatusSuccess {
			if failed == nil || (failed.err == nil && v.err != nil) {
				failed = v // a transport error explains more than a vote
			}
		}
	}
	if failed == nil {
		return TxResult{}, nil, true
	}
	// Abort everywhere, including owners that voted no or did not answer:
	// the abort is remembered, so a prepare still in flight is refused.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	c.each(func(p *txPart) phaseReply {
		r, err := c.routes.doOn(actx, p.owner, store.TxAbortCmd(p.id))
		return phaseReply{r, err}
	})
	if failed.err != nil {
		return TxResult{}, fmt.Errorf("zaris: transaction prepare (nothing applied): %w", failed.err), false
	}
	res = TxResult{Status: failed.reply.Status, Message: failed.reply.Message}
	return res, res.Err(), false
}

// commit outcome of one owner.
type commitOutcome uint8

const (
	commitApplied commitOutcome = iota
	commitLapsed                // the owner applied nothing: its prepared state lapsed
	commitUnknown               // no definitive answer before ctx ended
)

// commit runs phase two on every owner, retrying each until it answers
// definitively or ctx ends.
func (c *coordinator) commit(ctx context.Context, writes []store.TxWrite) (TxResult, error) {
	outcomes := make([]commitOutcome, len(c.parts))
	var why []string
	res := TxResult{Status: StatusSuccess, Writes: make([]ItemResult, len(writes))}
	answers := make([]partCommit, len(c.parts))
	c.each(func(p *txPart) phaseReply {
		i := slices.Index(c.parts, p)
		answers[i] = c.commitOne(ctx, p)
		return phaseReply{}
	})
	for i, a := range answers {
		p := c.parts[i]
		switch {
		case a.err != nil:
			outcomes[i] = commitUnknown
			why = append(why, a.err.Error())
		case a.lapsed != "":
			outcomes[i] = commitLapsed
			why = append(why, a.lapsed)
		default:
			for j, gi := range p.writeIdx {
				w, r := writes[gi], a.results[j]
				op := BatchPut
				if w.Op == store.TxDelete {
					op = BatchDelete
				}
				res.Writes[gi] = ItemResult{Index: gi, Op: op, Key: w.Key,
					Result: Result{Status: r.Status, Version: r.Version, Revision: r.Revision}}
			}
		}
	}
	applied, lapsed, unknown := 0, 0, 0
	for _, o := range outcomes {
		switch o {
		case commitApplied:
			applied++
		case commitLapsed:
			lapsed++
		default:
			unknown++
		}
	}
	switch {
	case unknown > 0:
		return TxResult{}, fmt.Errorf("%w: transaction %s: %d of %d owners unconfirmed: %v", ErrTxOutcomeUnknown, c.id, unknown, len(c.parts), why)
	case lapsed > 0 && applied > 0:
		return TxResult{}, fmt.Errorf("%w: transaction %s: %d of %d owners let it lapse before the commit: %v", ErrTxPartial, c.id, lapsed, len(c.parts), why)
	case lapsed > 0:
		r := TxResult{Status: StatusConflict, Message: fmt.Sprintf("prepared state lapsed before the commit (prepare timeout too short?): %v", why)}
		return r, r.Err()
	}
	return res, nil
}

// Commit retry backoff: transient failures only; the first retry is quick.
const (
	commitRetryMin = 5 * time.Millisecond
	commitRetryMax = 250 * time.Millisecond
)

// regroupCommit is the owners a part's commit goes to after a map refresh:
// every owner, in the map ownerOf reads, of a write still unconfirmed,
// each with every write of the part it owns (an owner answers for all the
// writes of the part in its segments, including ones another call already
// confirmed). Owners of reads only need no answer: their reservations
// lapse.
func regroupCommit(pending map[txOwner][]int, writes []store.TxWrite, ownerOf func(string) txOwner) map[txOwner][]int {
	open := map[int]bool{}
	for _, js := range pending {
		for _, j := range js {
			open[j] = true
		}
	}
	byOwner := map[txOwner][]int{}
	for j, w := range writes {
		o := ownerOf(w.Key)
		byOwner[o] = append(byOwner[o], j)
	}
	next := map[txOwner][]int{}
	for o, js := range byOwner {
		if slices.ContainsFunc(js, func(j int) bool { return open[j] }) {
			next[o] = js
		}
	}
	return next
}

// partCommit is the outcome of phase two for one part: its writes'
// results (in the part's order), or why it lapsed, or err when no
// definitive answer came.
type partCommit struct {
	results []kv.Reply
	lapsed  string
	err     error
}

// commitOne sends TX.COMMIT for one part until it is answered
// definitively. The first attempt goes to the owner that prepared. When a
// call gets a routing status, a transport error or an answer that does not
// cover the expected writes, the owner may have failed over (its replicas
// hold the prepared state, server/store/txrepl.go) or the partition moved:
// the map is refreshed and the commit, idempotent by id, is sent to the
// current owner of each of the part's keys, until the transaction's
// deadline (then every copy has let it lapse) or ctx ends.
//
// Success and Conflict (expired, aborted) are definitive; Timeout (applied,
// not yet acknowledged by the replicas) is asked again. NotFound
// ("unknown transaction") is definitive on the first attempt — the owner
// never applied it — and, for an owner with writes to apply, past the
// deadline; before it, the map may still be catching up with a failover.
func (c *coordinator) commitOne(ctx context.Context, p *txPart) partCommit {
	all := make([]int, len(p.req.Writes))
	for j := range all {
		all[j] = j
	}
	// pending: the owners still to confirm, each with the part's writes it
	// answers for (indexes into p.req.Writes, in order).
	pending := map[txOwner][]int{p.owner: all}
	results := make([]kv.Reply, len(p.req.Writes))
	delay := commitRetryMin
	first := true
	var last error
	for {
		rerouteNeeded := false
		for _, owner := range slices.Sorted(maps.Keys(pending)) {
			js := pending[owner]
			r, err := c.routes.doOn(ctx, owner, store.TxCommitCmd(p.id))
			pastDeadline := time.Now().After(c.deadline)
			switch {
			case err == nil && r.Status == StatusSuccess && len(r.Array) == len(js):
				for k, j := range js {
					results[j] = r.Array[k]
				}
				delete(pending, owner)
			case err == nil && r.Status == StatusSuccess:
				last, rerouteNeeded = fmt.Errorf("commit on %q answered %d results for %d writes", owner, len(r.Array), len(js)), true
			case err == nil && r.Status == StatusConflict:
				return partCommit{lapsed: r.Message}
			case err == nil && r.Status == StatusNotFound && len(js) == 0:
				delete(pending, owner) // nothing to apply there: its reservations lapse
			case err == nil && r.Status == StatusNotFound && (first || pastDeadline):
				return partCommit{lapsed: r.Message}
			case err == nil && r.Status == StatusTimeout:
				// Applied on the owner, not yet acknowledged by its replicas
				// (a sync write barrier waiting out a dead replica): the
				// same commit, asked again, answers again once they are.
				last = fmt.Errorf("owner %q answered %v %s", owner, r.Status, r.Message)
			case err == nil && (r.Status.Redirect() || r.Status == StatusNotFound):
				last, rerouteNeeded = fmt.Errorf("owner %q answered %v %s", owner, r.Status, r.Message), true
			case err == nil:
				return partCommit{err: fmt.Errorf("commit answered %v %s", r.Status, r.Message)}
			default:
				if errors.Is(err, ErrClosed) {
					return partCommit{err: err}
				}
				last, rerouteNeeded = err, true
			}
		}
		first = false
		if len(pending) == 0 {
			return partCommit{results: results}
		}
		if ctx.Err() != nil {
			return partCommit{err: fmt.Errorf("%w (last: %v)", ctx.Err(), last)}
		}
		if rerouteNeeded {
			// Regroup what is still unconfirmed on the refreshed map: a
			// confirmed owner is not asked again, so its results stand.
			_ = c.routes.reroute(ctx)
			pending = regroupCommit(pending, p.req.Writes, c.routes.ownerOf)
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return partCommit{err: fmt.Errorf("%w (last: %v)", ctx.Err(), last)}
		case <-timer.C:
		}
		delay = min(2*delay, commitRetryMax)
	}
}

package sdk

// The operations of the cluster client: every one resolves its key's owner
// in the current routing table and retries as retryDecision says; bulk
// calls group by owner; node-level commands, transactions and scans reach
// the owners they concern.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/store"
)

// --- retries ---

// withDeadline bounds an operation (all its attempts) by the default call
// timeout when ctx has no deadline.
func (b *clusterBackend) withDeadline(ctx context.Context) (context.Context, *boundCtx) {
	return boundBy(ctx, b.callTO)
}

// again acts on one attempt's retryDecision: false when the operation ends
// here (final answer, attempts spent, or ctx over). A redirect refreshes the
// map and retries at once if the map moved; if it did not (yet), the owner
// knows of a change not published yet, and the retry backs off like a
// transient failure.
func (b *clusterBackend) again(ctx context.Context, rs *retryState, seen uint64, act retryAction) bool {
	retry := b.retry(ctx, rs, seen, act)
	if retry && b.observed {
		noteRetry(ctx)
	}
	return retry
}

// retry is again's decision.
func (b *clusterBackend) retry(ctx context.Context, rs *retryState, seen uint64, act retryAction) bool {
	if act == retryRefused {
		act = b.onRefused()
	}
	if act == retryNo {
		return false
	}
	rs.attempts++
	if rs.attempts >= b.maxAttempts || ctx.Err() != nil {
		return false
	}
	b.stats.retries.Add(1)
	if act == retryRefused {
		// No copy can take the partition over: only a map that already
		// names another owner is worth a retry. One refresh, then the
		// call ends Unavailable now rather than at its deadline.
		if err := b.refresh(ctx, seen); err == nil && b.table.Load().version > seen {
			b.stats.redirects.Add(1)
			return true
		}
		return false
	}
	if act == retryRedirect {
		b.stats.redirects.Add(1)
		if err := b.refresh(ctx, seen); err == nil && b.table.Load().version > seen {
			return true
		}
	}
	return sleep(ctx, rs.nextDelay(jitter))
}

// onRefused is what a call does when every address of its owner refused
// the connection: where a copy can take the partitions over (replication
// factor above 1, or unknown: a server that does not say) it rides through
// the failover like any transient failure; at replication factor 1 nothing
// serves those keys until the owner is back, and retryRefused stays.
func (b *clusterBackend) onRefused() retryAction {
	if b.rf != 1 {
		return retryTransient
	}
	return retryRefused
}

// suspectMap starts a map refresh in the background (without waiting for
// it) after a final answer that a failover can explain: a Timeout (under
// sync replication, an owner cut off from its replicas times out every
// write until it hears it was replaced), Unavailable, or no answer at all
// within the caller's deadline (a stopped or unreachable owner). The
// answer itself is the caller's — a timed-out write is not retried — but
// the next call routes by the newest map the members know instead of
// waiting for the next poll.
func (b *clusterBackend) suspectMap(st Status, err error, seen uint64) {
	switch {
	case err == nil && (st == StatusTimeout || st == StatusUnavailable):
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnreachable)):
	default:
		return
	}
	b.flightMu.Lock()
	defer b.flightMu.Unlock()
	if b.flight != nil || b.table.Load().version > seen {
		return
	}
	f := &refreshFlight{done: make(chan struct{})}
	if b.goFunc(func() { b.fly(f) }) {
		b.flight = f
	}
}

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// keyOp runs one single-key operation on the owner of key, retrying as
// retryDecision says.
func (b *clusterBackend) keyOp(ctx context.Context, op wire.Opcode, key string, value []byte, opts *PutOptions, ttl time.Duration) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	ctx, bound := b.withDeadline(ctx)
	defer bound.release()
	idempotent := op == wire.OpGet || op == wire.OpTTL
	var rs retryState
	for {
		t := b.table.Load()
		var r Result
		var err error
		if n := t.route(key); n == nil {
			r = Result{Status: StatusUnavailable} // an unowned segment: the map is wrong
		} else {
			switch op {
			case wire.OpGet:
				r, err = n.be.get(ctx, key)
			case wire.OpPut:
				r, err = n.be.put(ctx, key, value, opts)
			case wire.OpDelete:
				r, err = n.be.delete(ctx, key)
			case wire.OpExpire:
				r, err = n.be.expire(ctx, key, ttl)
			case wire.OpPersist:
				r, err = n.be.persist(ctx, key)
			default:
				r, err = n.be.timeToLive(ctx, key)
			}
		}
		if !b.again(ctx, &rs, t.version, retryDecision(r.Status, err, idempotent)) {
			b.suspectMap(r.Status, err, t.version)
			if errors.Is(err, errRefused) {
				r.Status = StatusUnavailable
			}
			if err == nil && routingOnly(r.Status) {
				st, _, cerr := unsettled(ctx, r.Status, rs.attempts)
				return Result{Status: st}, cerr
			}
			return r, err
		}
	}
}

// routingOnly reports a status that only tells the SDK where to go next
// (Unavailable is an answer in its own right).
func routingOnly(s kv.Status) bool { return s.Redirect() && s != StatusUnavailable }

// unsettled is the answer of a call that ended on a redirect: the owner
// kept changing (or was fenced) until the deadline or the last attempt. A
// routing status is the SDK's business, never the application's: the call
// ends Timeout when its deadline passed, else Unavailable.
func unsettled(ctx context.Context, last kv.Status, attempts int) (kv.Status, string, error) {
	if err := ctx.Err(); err != nil {
		return StatusTimeout, fmt.Sprintf("the deadline passed while the key's partition changed hands (last answer %v)", last), err
	}
	return StatusUnavailable, fmt.Sprintf("the key's owner was still changing after %d attempts (last answer %v)", attempts, last), nil
}

func (b *clusterBackend) get(ctx context.Context, key string) (Result, error) {
	return b.keyOp(ctx, wire.OpGet, key, nil, nil, 0)
}

func (b *clusterBackend) put(ctx context.Context, key string, value []byte, opts *PutOptions) (Result, error) {
	return b.keyOp(ctx, wire.OpPut, key, value, opts, 0)
}

func (b *clusterBackend) delete(ctx context.Context, key string) (Result, error) {
	return b.keyOp(ctx, wire.OpDelete, key, nil, nil, 0)
}

func (b *clusterBackend) expire(ctx context.Context, key string, ttl time.Duration) (Result, error) {
	return b.keyOp(ctx, wire.OpExpire, key, nil, nil, ttl)
}

func (b *clusterBackend) persist(ctx context.Context, key string) (Result, error) {
	return b.keyOp(ctx, wire.OpPersist, key, nil, nil, 0)
}

func (b *clusterBackend) timeToLive(ctx context.Context, key string) (Result, error) {
	return b.keyOp(ctx, wire.OpTTL, key, nil, nil, 0)
}

// --- bulk (R-CLIENT-4) ---

// batchGroup is the items of one owner in one round: indexes into the
// caller's items, in caller order.
type batchGroup struct {
	n   *node // nil: the items' segments have no owner in this table
	idx []int
}

// groupBatch groups the items todo by the owner of their key in t.
func (t *routingTable) groupBatch(items []BatchItem, todo []int) []batchGroup {
	slot := make(map[*node]int, len(t.owners)+1)
	var groups []batchGroup
	for _, i := range todo {
		n := t.route(items[i].Key)
		g, ok := slot[n]
		if !ok {
			g = len(groups)
			slot[n] = g
			groups = append(groups, batchGroup{n: n})
		}
		groups[g].idx = append(groups[g].idx, i)
	}
	return groups
}

// batch stamps every item with its caller index, groups the items by owner
// and sends one OpBatch per owner, in parallel (split only where a frame
// would exceed the server's limit); the results land at their index. Items
// answered with a redirect status are grouped again against the refreshed
// table and sent again — never the stale plan. An owner that cannot be
// reached answers its items Unavailable (the request was not sent) or
// Timeout (it was sent and the answer lost: it may have been applied);
// when no item got an answer the call returns the transport error instead.
func (b *clusterBackend) batch(ctx context.Context, items []BatchItem) ([]ItemResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx, bound := b.withDeadline(ctx)
	defer bound.release()
	out := make([]ItemResult, len(items))
	todo := make([]int, len(items))
	for i := range todo {
		todo[i] = i
	}
	unanswered := make([]bool, len(items)) // the item's last attempt got no server answer
	var lastErr error
	var rs retryState
	for {
		t := b.table.Load()
		groups := t.groupBatch(items, todo)
		errs := make([]error, len(groups))
		sent := make([]int, len(groups)) // items of the group answered before its error
		fanOut(len(groups), func(g int) {
			if groups[g].n != nil {
				sent[g], errs[g] = sendGroup(ctx, groups[g], items, out)
			}
		})
		var next []int
		redirect, transient := false, false
		for g, grp := range groups {
			if grp.n == nil {
				for _, i := range grp.idx {
					out[i] = ItemResult{Index: i, Op: items[i].Op, Key: items[i].Key, Result: Result{Status: StatusUnavailable}}
				}
			}
			if err := errs[g]; err != nil {
				act := retryDecision(0, err, allGets(items, grp.idx))
				if act == retryRefused && b.onRefused() == retryRefused {
					act = retryNo // the owner is down and nothing takes over: Unavailable now
				} else if act == retryRefused {
					act = retryTransient
				}
				if act == retryNo && !errors.Is(err, ErrUnreachable) {
					return nil, err // the context ended, the client closed, a refusal
				}
				st := StatusTimeout
				if wasNotSent(err) {
					st = StatusUnavailable
				}
				answered, failed := grp.idx[:sent[g]], grp.idx[sent[g]:] // a large group's first frames may have been answered
				for _, i := range failed {
					out[i] = ItemResult{Index: i, Op: items[i].Op, Key: items[i].Key, Result: Result{Status: st}}
					unanswered[i] = true
				}
				lastErr = err
				if act == retryTransient {
					next, transient = append(next, failed...), true
				}
				grp.idx = answered
			}
			for _, i := range grp.idx {
				unanswered[i] = false
				if out[i].Status.Redirect() {
					next, redirect = append(next, i), true
				}
			}
		}
		act := retryNo
		switch {
		case redirect:
			act = retryRedirect
		case transient:
			act = retryTransient
		}
		if len(next) == 0 || !b.again(ctx, &rs, t.version, act) {
			if lastErr != nil && !slices.Contains(unanswered, false) {
				return nil, lastErr
			}
			for _, i := range next {
				if routingOnly(out[i].Status) {
					st, _, _ := unsettled(ctx, out[i].Status, rs.attempts)
					out[i].Result = Result{Status: st}
				}
			}
			return out, nil
		}
		todo = next
	}
}

// sendGroup sends one owner's items (split only where a frame would exceed
// the server's limit), each answer landing at its caller index. It returns
// how many of the group's items were answered before an error.
func sendGroup(ctx context.Context, g batchGroup, items []BatchItem, out []ItemResult) (int, error) {
	return g.n.be.batchInto(ctx, items, g.idx, out)
}

func allGets(items []BatchItem, idx []int) bool {
	for _, i := range idx {
		if items[i].Op != BatchGet {
			return false
		}
	}
	return true
}

// fanOut runs fn(0..n-1) in parallel (inline when n is 1) and waits.
func fanOut(n int, fn func(i int)) {
	if n == 1 {
		fn(0)
		return
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fn(i) })
	}
	wg.Wait()
}

// --- commands ---

// exec runs a key's command on its owner; node-level commands go to the
// owners they concern (execNode).
func (b *clusterBackend) exec(ctx context.Context, cmd kv.Cmd) (kv.Reply, error) {
	if err := ctx.Err(); err != nil {
		return kv.Reply{}, err
	}
	ctx, bound := b.withDeadline(ctx)
	defer bound.release()
	if cmd.Op.NodeLevel() {
		return b.execNode(ctx, cmd)
	}
	var rs retryState
	for {
		t := b.table.Load()
		var r kv.Reply
		var err error
		if n := t.route(cmd.Key); n == nil {
			r = kv.StatusReply(StatusUnavailable)
		} else {
			r, err = n.be.exec(ctx, cmd)
		}
		if !b.again(ctx, &rs, t.version, retryDecision(r.Status, err, false)) {
			b.suspectMap(r.Status, err, t.version)
			if err == nil && routingOnly(r.Status) {
				st, msg, cerr := unsettled(ctx, r.Status, rs.attempts)
				return kv.Reply{Status: st, Message: msg}, cerr
			}
			return r, err
		}
	}
}

// execNode runs a node-level command through Client.Do on a cluster: FLUSH
// and DBSIZE on every owner (combined: the first refusal, or OK / the sum);
// TX.PREPARE split by owner like Tx.Commit's first phase; TX.COMMIT and
// TX.ABORT on every owner (owners that never heard of the transaction answer
// NotFound and are left out of the combined reply). SCAN addresses one
// node's session: Client.Scan fans it out.
func (b *clusterBackend) execNode(ctx context.Context, cmd kv.Cmd) (kv.Reply, error) {
	t := b.table.Load()
	switch cmd.Op {
	case kv.CmdScan:
		return kv.BadRequest("SCAN addresses one node's session: on a cluster use Client.Scan, which fans out to every owner"), nil
	case kv.CmdTxPrepare:
		return b.rawPrepare(ctx, t, cmd)
	}
	replies, err := eachOwner(t.owners, func(n *node) (kv.Reply, error) { return n.be.exec(ctx, cmd) })
	if err != nil {
		return kv.Reply{}, err
	}
	switch cmd.Op {
	case kv.CmdTxCommit, kv.CmdTxAbort:
		return combineTxReplies(replies), nil
	case kv.CmdDBSize:
		var sum int64
		for _, r := range replies {
			if !r.OK() {
				return r, nil
			}
			sum += r.Int
		}
		return kv.IntReply(sum), nil
	}
	for _, r := range replies {
		if !r.OK() {
			return r, nil
		}
	}
	return replies[0], nil
}

// eachOwner calls fn on every node in parallel; the first error wins.
func eachOwner(nodes []*node, fn func(n *node) (kv.Reply, error)) ([]kv.Reply, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: the routing map has no owner", ErrUnavailable)
	}
	replies := make([]kv.Reply, len(nodes))
	errs := make([]error, len(nodes))
	fanOut(len(nodes), func(i int) { replies[i], errs[i] = fn(nodes[i]) })
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("zaris: node %s: %w", nodes[i].id, err)
		}
	}
	return replies, nil
}

// combineTxReplies merges the owners' answers to TX.COMMIT or TX.ABORT:
// NotFound (never heard of it) or Moved (holds it only as a replica of its
// owner, D41) only if every owner said so; else the first refusal; else
// Success with the write results concatenated in owner order.
func combineTxReplies(replies []kv.Reply) kv.Reply {
	var out *kv.Reply
	for _, r := range replies {
		switch {
		case r.Status == StatusNotFound, r.Status == StatusMoved:
		case r.Status != StatusSuccess:
			return r
		case out == nil:
			c := r
			c.Array = slices.Clone(r.Array)
			out = &c
		default:
			out.Array = append(out.Array, r.Array...)
		}
	}
	if out == nil {
		return replies[0]
	}
	return *out
}

// rawPrepare sends a hand-made TX.PREPARE: to its owner when its keys have
// one, else split by owner (each part with the same transaction id), the
// first refusal answering for all.
func (b *clusterBackend) rawPrepare(ctx context.Context, t *routingTable, cmd kv.Cmd) (kv.Reply, error) {
	var req store.TxPrepareRequest
	var err error
	if len(cmd.Args) == 2 {
		req, err = store.DecodeTxPrepare(cmd.Args[1])
	}
	if len(cmd.Args) != 2 || err != nil || len(req.Reads)+len(req.Writes) == 0 {
		if len(t.owners) == 0 {
			return kv.StatusReply(StatusUnavailable), nil
		}
		return t.owners[0].be.exec(ctx, cmd) // the owner's validation answers
	}
	r := tableRouter{t}
	parts := splitByOwner(req.Reads, req.Writes, req.Timeout, r.ownerOf)
	replies := make([]kv.Reply, len(parts))
	errs := make([]error, len(parts))
	fanOut(len(parts), func(i int) {
		pc := cmd
		if len(parts) > 1 {
			if pc, errs[i] = store.TxPrepareCmd(string(cmd.Args[0]), &parts[i].req); errs[i] != nil {
				return
			}
		}
		replies[i], errs[i] = r.doOn(ctx, parts[i].owner, pc)
	})
	if err := errors.Join(errs...); err != nil {
		return kv.Reply{}, err
	}
	for _, r := range replies {
		if !r.OK() {
			return r, nil
		}
	}
	return replies[0], nil
}

// --- transactions and scans ---

// tableRouter resolves transaction owners in one table: a node's id names
// it; a key of an unowned segment has the owner "".
type tableRouter struct{ t *routingTable }

func (r tableRouter) ownerOf(key string) txOwner {
	if n := r.t.route(key); n != nil {
		return txOwner(n.id)
	}
	return ""
}

func (r tableRouter) doOn(ctx context.Context, owner txOwner, cmd kv.Cmd) (kv.Reply, error) {
	n := r.t.byID[string(owner)]
	if n == nil {
		return kv.Reply{Status: StatusUnavailable, Message: "no owner for these keys in the routing map"}, nil
	}
	return n.be.exec(ctx, cmd)
}

// ownerOf, doOn and reroute make the cluster a txRouter: Tx.Commit groups
// the keys by owner in the current table and runs each phase on the owner
// by id, so a commit retried after a map change still reaches the node that
// prepared.
func (b *clusterBackend) ownerOf(key string) txOwner { return tableRouter{b.table.Load()}.ownerOf(key) }

func (b *clusterBackend) doOn(ctx context.Context, owner txOwner, cmd kv.Cmd) (kv.Reply, error) {
	t := b.table.Load()
	if n := t.byID[string(owner)]; n == nil && owner != "" {
		return kv.Reply{Status: StatusMoved, Message: "node " + string(owner) + " left the routing map"}, nil
	}
	return tableRouter{t}.doOn(ctx, owner, cmd)
}

func (b *clusterBackend) reroute(ctx context.Context) bool {
	seen := b.table.Load().version
	if err := b.refresh(ctx, seen); err != nil {
		return false
	}
	return b.table.Load().version > seen || sleep(ctx, retryMinDelay)
}

// nodeOwner is one node as a scan owner: its node id names it in resume
// tokens.
type nodeOwner struct{ n *node }

func (o nodeOwner) scanOwnerID() string { return o.n.id }

func (o nodeOwner) doOn(ctx context.Context, cmd kv.Cmd) (kv.Reply, error) {
	return o.n.be.exec(ctx, cmd)
}

// scanOwners lists the owners of the current table: a scan fans out to
// every node that owns a segment.
func (b *clusterBackend) scanOwners() []scanOwner {
	t := b.table.Load()
	owners := make([]scanOwner, len(t.owners))
	for i, n := range t.owners {
		owners[i] = nodeOwner{n}
	}
	return owners
}

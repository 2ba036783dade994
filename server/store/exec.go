package store

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
)

// A handler implements one command. Read handlers run under the segment's
// read lock; write handlers under its write lock, mutating the collection in
// place, and report their effect: the deterministic command that, replayed
// on a replica holding the same state, produces the same state (R-DS-1: one
// op-log entry per mutation, replicated like any key).
type handler struct {
	kind  ValueKind // the kind the key must hold (kindAny: any)
	write bool
	// create: on a missing key the handler runs against a fresh, empty
	// collection that is inserted if the command changed it.
	create bool
	// peek: a read that leaves the key's access stamp as it was (Redis's
	// LOOKUP_NOTOUCH: TTL and its kin).
	peek bool
	// stamps: a write that computes a time from the context's clock (an
	// expiry from a relative TTL, a stream ID or delivery time, a lease)
	// gets the precise clock (writeNow). Every other write reads the
	// coarse one, as reads do: it uses the time only to tell an expired
	// key and to stamp the access, and a precise read was a system-clock
	// read and a shared compare-and-swap on every LPUSH or HSET.
	stamps bool
	run    func(x *execCtx) kv.Reply
	// check, when set, validates the arguments before the key is looked
	// up: Redis parses them first for these commands, so a bad number
	// answers its error even on a key of the wrong type.
	check func(args [][]byte) kv.Reply
}

// intArgs is a check: the arguments at these positions, when present, are
// integers.
func intArgs(at ...int) func(args [][]byte) kv.Reply {
	return func(args [][]byte) kv.Reply {
		for _, i := range at {
			if i < len(args) {
				if _, ok := argInt(args[i]); !ok {
					return errNotInteger
				}
			}
		}
		return kv.Reply{}
	}
}

// execCtx is what a handler sees and reports.
type execCtx struct {
	seg  *Segment
	rec  *Record // the live record, or nil
	coll collection
	cmd  *kv.Cmd
	now  int64
	// apply: replaying an effect on a replica; replies are ignored.
	apply bool
	// noTouch: a CLIENT NO-TOUCH client's command, which leaves the key's
	// access stamp as it was (Redis 7.2: its lookups don't update the LRU).
	noTouch bool
	// view: the multi-segment atomic view the command runs through, or nil
	// (only seg is held): a multi-key handler reaches its other keys
	// through it (multikey.go).
	view *Atomic
	base int64 // a key opened by a multi-key handler: its size when opened

	// Outputs of write handlers.
	effect   *kv.Cmd     // the mutation to log; nil = nothing changed
	newValue []byte      // string commands: the record's new value (may alias Segment.scratch)
	newPaged *pagedValue // string edits of a large value: the new value in pages (newValue nil)
	// event is Redis's keyspace-event name for the write when neither the
	// command's op nor its effect's names it (ZPOP's "zpopmin"/"zpopmax",
	// ZADD INCR's "zincr"): Event.Name.
	event    string
	setValue bool
	delete   bool     // string commands: remove the key (GETDEL)
	grown    *growBuf // APPEND: the new append buffer newValue is a prefix of
	capHit   capHit   // the cap fits refused (itemcap.go)
	room     effectRoom
}

// replies returns an empty slice with room for n replies: the next n
// unused entries of the caller's Cmd.Out when it gave one (grown as
// needed, from kv's pool of large rooms past kv.RetainedOut; its length
// marks what handlers took, for the caller to clear), else a new slice.
// Its capacity is n exactly, so appending past n reallocates rather than
// writing into the next handout.
func (x *execCtx) replies(n int) []kv.Reply {
	out := x.cmd.Out
	if out == nil || n > kv.PooledOut {
		return make([]kv.Reply, 0, n)
	}
	room := *out
	if cap(room)-len(room) < n {
		// Earlier handouts keep the old array; the new one starts empty.
		if want := max(2*cap(room), n, 16); want <= kv.RetainedOut {
			room = make([]kv.Reply, 0, want)
		} else {
			room = kv.LargeOut(n)
		}
	}
	start := len(room)
	*out = room[:start+n]
	return room[start : start : start+n]
}

// bulksOf is an array reply of items, built in replies.
func (x *execCtx) bulksOf(items [][]byte) kv.Reply {
	out := x.replies(len(items))
	for _, b := range items {
		out = append(out, kv.BulkReply(b))
	}
	return kv.ArrayReply(out)
}

// stringBytes is a member or field name as a reply's bytes. A caller that
// gave Cmd.Out encodes the reply before anything else reads it and never
// writes into it, so the bytes alias the string (immutable, kept alive by
// the reply); any other caller may hand them on, and gets a copy.
func (x *execCtx) stringBytes(s string) []byte {
	if x.cmd.Out != nil {
		return unsafe.Slice(unsafe.StringData(s), len(s))
	}
	return []byte(s)
}

// changed records that the command mutated the collection, with the command
// itself as its effect.
func (x *execCtx) changed() { x.effect = x.cmd }

// changedAs records a normalised effect (e.g. HINCRBY logged as HSET). An
// effect of up to four arguments lives in the context's own room: the op-log
// entry copies it before the write returns (newLoggedEffect), so an HSET of
// an existing field or a ZADD of one member allocates neither the command
// nor its argument slice (issue #17).
func (x *execCtx) changedAs(op kv.CmdOp, args ...[]byte) {
	var kept [][]byte // none stays nil, as the variadic call gave it
	if n := len(args); n > 0 && n <= len(x.room.args) {
		kept = x.room.args[:copy(x.room.args[:], args)]
	} else if n > len(x.room.args) {
		kept = slices.Clone(args)
	}
	x.room.cmd = kv.Cmd{Op: op, Key: x.cmd.Key, Args: kept}
	x.effect = &x.room.cmd
}

// admitted reports whether the command runs in a view of a command
// admitted under the memory cap (Atomic.Admit).
func (x *execCtx) admitted() bool { return x.view != nil && x.view.admitted }

// changedArgs records an effect whose argument slice the handler built for
// it (it is kept, not copied).
func (x *execCtx) changedArgs(op kv.CmdOp, args [][]byte) {
	x.room.cmd = kv.Cmd{Op: op, Key: x.cmd.Key, Args: args}
	x.effect = &x.room.cmd
}

// effectRoom is a write context's room for its effect (changedAs) and a
// number formatted into it (a ZADD's resulting score).
type effectRoom struct {
	cmd  kv.Cmd
	args [4][]byte
	num  [32]byte
}

var handlers [256]*handler

func register(op kv.CmdOp, h handler) {
	if handlers[op] != nil {
		panic(fmt.Sprintf("store: command %v registered twice", op))
	}
	if h.kind == KindStream && h.write {
		h.stamps = true // IDs, delivery and seen times
	}
	handlers[op] = &h
}

// CommandWrites reports whether op may mutate the store or its op-log: a
// key command registered as a write, or a node-level write (the three
// transaction phases, which log markers for the replicas, and FLUSH). The
// sync-replication write barrier waits only after those (R-REP-2): a
// TX.PREPARE votes yes only once its prepared state is on the replicas.
func CommandWrites(op kv.CmdOp) bool {
	if op.NodeLevel() {
		return op == kv.CmdTxPrepare || op == kv.CmdTxCommit || op == kv.CmdTxAbort || op == kv.CmdFlush
	}
	return int(op) < len(handlers) && handlers[op] != nil && handlers[op].write
}

// nodeHandlers implement node-level commands (kv.CmdOp.NodeLevel): they see
// the whole store.
var nodeHandlers [256]func(s *Store, cmd kv.Cmd) kv.Reply

func registerNode(op kv.CmdOp, fn func(s *Store, cmd kv.Cmd) kv.Reply) {
	if !op.NodeLevel() || nodeHandlers[op] != nil {
		panic(fmt.Sprintf("store: node command %v registered twice or not node-level", op))
	}
	nodeHandlers[op] = fn
}

// Exec runs a data-structure command (R-DS) on its key's segment, or a
// node-level command on the whole store.
func (s *Store) Exec(cmd kv.Cmd) kv.Reply {
	if cmd.Op.NodeLevel() {
		if fn := nodeHandlers[cmd.Op]; fn != nil {
			return fn(s, cmd)
		}
		return kv.BadRequest("unsupported command " + cmd.Op.String())
	}
	return s.segments[placement.SegmentOf(cmd.Key, len(s.segments))].Exec(cmd)
}

// Exec runs cmd on this segment. The arguments are not retained: whatever a
// handler keeps it copies.
func (g *Segment) Exec(cmd kv.Cmd) kv.Reply {
	var r kv.Reply
	g.exec(&cmd, false, &r)
	return r
}

// exec runs cmd, its reply into *r: the store's layers pass the 96-byte
// reply down by pointer rather than returning it up by value, each copy a
// stall on the stores of the one before (D121). cmd is read, not kept.
func (g *Segment) exec(cmd *kv.Cmd, noTouch bool, r *kv.Reply) {
	h, bad := lookupHandler(g.store, cmd)
	if h == nil {
		*r = kv.BadRequest(bad)
		return
	}
	now := g.store.nowFor(h.write && h.stamps)
	if !h.write {
		g.mu.RLock()
		defer g.mu.RUnlock()
		rc := readCtxs.Get().(*readCtx)
		rc.cmd = *cmd
		rc.x = execCtx{seg: g, cmd: &rc.cmd, now: now, noTouch: noTouch}
		g.runLocked(h, &rc.x, r)
		*rc = readCtx{} // keeps neither the caller's buffers nor a record
		readCtxs.Put(rc)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.writeCtxBusy {
		c := *cmd
		*r = g.execLocked(h, &c, now, nil, noTouch)
		return
	}
	g.writeCtxBusy = true
	defer g.releaseWriteCtxLocked()
	g.writeCmd = *cmd
	g.writeCtx = execCtx{seg: g, cmd: &g.writeCmd, now: now, noTouch: noTouch}
	g.runLocked(h, &g.writeCtx, r)
}

// readCtx is a read command's context and its copy of the command, which
// escape to the handler: pooled, since readers run concurrently under the
// read lock (one per segment, as for writes, cannot serve them) and two
// allocations were most of what a collection read allocated (HGET: 192
// bytes a call).
type readCtx struct {
	x   execCtx
	cmd kv.Cmd
}

var readCtxs = sync.Pool{New: func() any { return new(readCtx) }}

// releaseWriteCtxLocked clears the reused write context: it must not keep
// the caller's buffers or a record alive until the next write.
func (g *Segment) releaseWriteCtxLocked() {
	g.writeCtx, g.writeCmd, g.writeCtxBusy = execCtx{}, kv.Cmd{}, false
}

// lookupHandler is cmd's handler, or nil and why the command is a bad
// request.
func lookupHandler(s *Store, cmd *kv.Cmd) (*handler, string) {
	if st := s.checkKey(cmd.Key); st != kv.StatusSuccess {
		return nil, "invalid key"
	}
	if int(cmd.Op) >= len(handlers) || handlers[cmd.Op] == nil {
		return nil, "unknown command " + cmd.Op.String()
	}
	return handlers[cmd.Op], ""
}

// execLocked runs a command under the caller's lock: the read lock for a
// read handler, the write lock for a write handler.
func (g *Segment) execLocked(h *handler, cmd *kv.Cmd, now int64, view *Atomic, noTouch bool) kv.Reply {
	x := execCtx{seg: g, cmd: cmd, now: now, view: view, noTouch: noTouch}
	var r kv.Reply
	g.runLocked(h, &x, &r)
	return r
}

// runLocked runs the handler on the context x under the caller's lock,
// its reply into *r.
func (g *Segment) runLocked(h *handler, x *execCtx, r *kv.Reply) {
	if !g.owned {
		*r = kv.StatusReply(kv.StatusMoved) // a replica or foreign segment: the client's map is wrong
		return
	}
	cmd, now := x.cmd, x.now
	if h.check != nil {
		if *r = h.check(cmd.Args); r.Status != kv.StatusSuccess {
			return
		}
	}
	if h.write {
		if g.fenced {
			*r = kv.StatusReply(kv.StatusMigrating) // a migration's write fence: retry shortly
			return
		}
		g.execWriteLocked(h, x, r)
		return
	}
	x.rec = g.liveLocked(cmd.Key, now)
	if x.rec != nil {
		if h.kind != kindAny && x.rec.Kind != h.kind {
			*r = kv.StatusReply(kv.StatusWrongType)
			return
		}
		if !x.noTouch && !h.peek {
			g.store.touch(x.rec, now)
		}
		x.coll = x.rec.coll()
	}
	*r = h.run(x)
	if x.rec != nil && r.Status == kv.StatusSuccess {
		r.Version, r.Revision = x.rec.Version(), x.rec.Revision
	}
}

func (g *Segment) liveLocked(key string, now int64) *Record {
	r := g.items.get(key)
	if r == nil || !r.liveAt(now) {
		return nil
	}
	return r
}

func (g *Segment) execWriteLocked(h *handler, x *execCtx, r *kv.Reply) {
	if len(g.txLocks) > 0 && g.txLockedLocked(x.cmd.Key, "", x.now) {
		*r = kv.Reply{Status: kv.StatusConflict, Message: "key reserved by a transaction in progress"}
		return
	}
	// One index lookup: the record, or nil when there is none live.
	x.rec = g.items.get(x.cmd.Key)
	if x.rec != nil && !x.rec.liveAt(x.now) {
		if !x.rec.Deleted() && g.owned {
			// Expired but not swept yet: log its expiry first, so that a
			// replica replaying the effect starts from the same (absent)
			// key instead of applying it to its stale copy.
			g.tombstoneLocked(x.rec, OpExpired, x.now)
		}
		x.rec = nil
	}
	if x.rec != nil {
		if h.kind != kindAny && x.rec.Kind != h.kind {
			*r = kv.StatusReply(kv.StatusWrongType)
			return
		}
		x.coll = x.rec.coll()
	} else if h.create {
		x.coll = newCollection(h.kind)
	}
	var before int64
	if x.coll != nil {
		before = x.coll.size()
	}
	g.store.faultLocked(x.cmd.Key)
	*r = h.run(x)
	if r.Status != kv.StatusSuccess {
		return
	}
	switch {
	case x.setValue:
		if !x.admitted() && (x.rec != nil && g.store.storeFull(g, int64(x.newLen()-x.rec.ValueLen())) ||
			x.rec == nil && g.store.storeFull(g, int64(len(x.cmd.Key)+x.newLen()+recordOverhead))) {
			*r = kv.StatusReply(kv.StatusCapacityExceeded) // no-eviction, full: nothing replaced yet
			return
		}
		prev := g.origin
		if prev == 0 {
			g.origin = x.cmd.Op // INCRBY, APPEND, SETBIT…: Redis names the event after the command
		}
		r.Version, r.Revision = g.replaceValueLocked(x)
		g.origin = prev
	case x.delete:
		if x.rec != nil {
			res := g.tombstoneLocked(x.rec, OpDelete, x.now)
			r.Revision = res.Revision
		}
	case x.effect != nil:
		r.Version, r.Revision = g.commitEffectLocked(x, before)
	case x.rec != nil:
		r.Version, r.Revision = x.rec.Version(), x.rec.Revision
	}
}

// newLen is the length of a string command's new value.
func (x *execCtx) newLen() int {
	if x.newPaged != nil {
		return x.newPaged.n
	}
	return len(x.newValue)
}

// replaceValueLocked installs a string command's new value as a new record
// (a value write: OpPut), keeping the key's TTL and creation time.
func (g *Segment) replaceValueLocked(x *execCtx) (version, revision uint64) {
	// The new record copies the key (the command's may alias a network
	// buffer; the old record's would keep the old record's allocation,
	// value included, alive as long as the key lives).
	// A big new value, fresh from the handler, is kept rather than copied
	// — unless it is the segment's scratch, which the next write reuses.
	v := x.newValue
	var exp int64
	if x.rec != nil {
		exp = x.rec.ExpiresAt()
	}
	var rec *Record
	if x.newPaged != nil {
		rec = pagedRecordOf(strings.Clone(x.cmd.Key), x.newPaged, exp)
	} else if len(x.cmd.Key)+len(v) <= maxInlineTail || len(v) > 0 && &v[0] == &g.scratch[0] {
		rec = newStringRecord(x.cmd.Key, v, exp)
	} else {
		rec = recordOf(strings.Clone(x.cmd.Key), v, Record{}.WithExpiry(exp))
	}
	rec.SetVersion(1)
	rec.access = g.store.freshAccess(x.now) // an overwrite's under LFU: commitLocked
	if x.rec != nil {
		rec.SetVersion(x.rec.Version() + 1)
		if m := x.rec.Meta(); m != nil {
			rec.SetMeta(m)
		}
	}
	g.revision++
	rec.Revision = g.revision
	g.commitLocked(OpPut, rec)
	if x.grown != nil && len(v) > 0 && &rec.Value()[0] == &x.grown.buf[0] {
		g.installGrowableLocked(rec.Key(), x.grown)
	}
	return rec.Version(), rec.Revision
}

// commitEffectLocked finishes a collection mutation: it inserts a new
// record, deletes a collection that became empty (Redis semantics: an empty
// collection does not exist), or bumps the record's version and revision,
// then logs the effect.
func (g *Segment) commitEffectLocked(x *execCtx, before int64) (version, revision uint64) {
	g.origin, g.eventName = x.cmd.Op, x.event
	defer func() { g.origin, g.eventName = 0, "" }()
	rec := x.rec
	if rec != nil && x.coll.count() == 0 {
		g.settleLocked(x.coll.size() - before) // the elements just removed
		res := g.tombstoneLocked(rec, OpDelete, x.now)
		return 0, res.Revision
	}
	if rec == nil {
		if x.coll.count() == 0 {
			return 0, 0
		}
		rec = &Record{Kind: x.coll.kind(), access: g.store.freshAccess(x.now)}
		rec.setParts(string([]byte(x.cmd.Key)), nil, false, x.coll, nil)
		g.revision++
		rec.SetVersion(1)
		rec.Revision = g.revision
		x.effect.Key = rec.Key()
		g.installCollectionLocked(rec, x.effect)
		return rec.Version(), rec.Revision
	}
	g.revision++
	rec.SetVersion(rec.Version() + 1)
	rec.Revision = g.revision
	if !x.noTouch {
		g.store.touch(rec, x.now)
	}
	g.settleLocked(x.coll.size() - before)
	g.logEffectLocked(rec, x.effect)
	return rec.Version(), rec.Revision
}

// settleLocked accounts the growth (or shrinkage) of a collection mutated in
// place.
func (g *Segment) settleLocked(delta int64) {
	g.bytes += delta
	g.store.account(g.owned, delta, 0)
}

func (g *Segment) installCollectionLocked(rec *Record, effect *kv.Cmd) {
	old := g.items.swap(rec)
	if g.growable != nil {
		g.settleGrowableLocked(rec.Key(), rec)
	}
	delta := rec.accountedBytes()
	if old != nil {
		delta -= old.accountedBytes()
	}
	g.countTTLKeysLocked() // a replica's copy of an owner's collection may have a TTL
	g.live++
	g.bytes += delta
	g.store.account(g.owned, delta, 1)
	g.logEffectLocked(rec, effect)
}

// logEffectLocked appends a collection mutation to the op-log: the record's
// header (its collection keeps changing after this entry) and the effect.
func (g *Segment) logEffectLocked(rec *Record, effect *kv.Cmd) {
	g.noteDrainingLocked(rec.Key(), rec.coll())
	logged := g.log.appendEffect(rec, effect)
	g.ops.puts.Add(1)
	g.notifyLocked(OpCommand, rec, logged)
}

// loggedEffect is an op-log entry of a collection mutation — the record's
// header and the effect — in one allocation; loggedEffect1 and
// loggedEffect2 add inline room for the argument slice of the common
// effects (LPUSH/SADD of one element, HSET or ZADD of one pair). Every
// collection write logs one: separately the header, the command and its
// argument slice were three allocations per write (issue #17, the LPUSH
// profile; DECISIONS.md). The argument bytes are still copied into one
// buffer of their own (the command's arguments alias the caller's network
// buffer), inline too when they fit effectInline bytes: an LPUSH of a
// 32-byte element, an HSET of a 20-byte field and a 32-byte value (what
// redis-benchmark sends). The op-log's slab (effectslab.go) reuses these
// slots; the heap forms serve what outlives the log and larger effects.
type loggedEffect struct {
	hdr Record
	cmd kv.Cmd
}

type loggedEffect1 struct {
	loggedEffect
	args [1][]byte
}

type loggedEffect2 struct {
	loggedEffect
	args [2][]byte
}

// effectInline is the argument bytes the small forms carry inline.
const effectInline = 64

type loggedEffect4 struct {
	loggedEffect
	args [4][]byte
}

type loggedEffect4Small struct {
	loggedEffect4
	data [effectInline]byte
}

type loggedEffect1Small struct {
	loggedEffect1
	data [effectInline]byte
}

type loggedEffect2Small struct {
	loggedEffect2
	data [effectInline]byte
}

func newLoggedEffect(rec *Record, effect *kv.Cmd) *loggedEffect {
	var (
		le  *loggedEffect
		buf []byte
	)
	size := cmdBytes(effect)
	switch n := len(effect.Args); {
	case n == 1 && size <= effectInline:
		l := &loggedEffect1Small{}
		le, buf = &l.loggedEffect, l.data[:0:size]
		le.cmd.Args = l.args[:1:1]
	case n == 2 && size <= effectInline:
		l := &loggedEffect2Small{}
		le, buf = &l.loggedEffect, l.data[:0:size]
		le.cmd.Args = l.args[:2:2]
	case n <= 4 && size <= effectInline: // an XADD of one field: ID, field, value
		l := &loggedEffect4Small{}
		le, buf = &l.loggedEffect, l.data[:0:size]
		le.cmd.Args = l.args[:n:n]
	case n == 1:
		l1 := &loggedEffect1{}
		le = &l1.loggedEffect
		le.cmd.Args = l1.args[:1:1] // full capacity: an append never writes past it
	case n == 2:
		l2 := &loggedEffect2{}
		le = &l2.loggedEffect
		le.cmd.Args = l2.args[:2:2]
	case n <= 4:
		l4 := &loggedEffect4{}
		le = &l4.loggedEffect
		le.cmd.Args = l4.args[:n:n]
	default:
		le = &loggedEffect{}
		le.cmd.Args = make([][]byte, n)
	}
	rec.headerInto(&le.hdr)
	// The key is the record's: the command's key may alias a network buffer.
	le.cmd.Op, le.cmd.Key = effect.Op, rec.Key()
	if buf == nil {
		buf = make([]byte, 0, size)
	}
	copyArgs(le.cmd.Args, buf, effect.Args)
	return le
}

// copyArgs copies args one after another into buf (empty, with room for
// them all) and points dst's slices at the copies, each capped at its end.
func copyArgs(dst [][]byte, buf []byte, args [][]byte) {
	for i, a := range args {
		start := len(buf)
		buf = append(buf, a...)
		dst[i] = buf[start:len(buf):len(buf)]
	}
}

// cloneCmd deep-copies a command: the op-log outlives the caller's buffers.
func cloneCmd(c *kv.Cmd) *kv.Cmd {
	n := 0
	for _, a := range c.Args {
		n += len(a)
	}
	buf := make([]byte, 0, n)
	out := &kv.Cmd{Op: c.Op, Key: c.Key, Args: make([][]byte, len(c.Args))}
	copyArgs(out.Args, buf, c.Args)
	return out
}

// applyCommandLocked replays a logged effect on a replica: the same handler
// against the same state yields the same state.
func (g *Segment) applyCommandLocked(hdr Record, cmd *kv.Cmd) error {
	h := handlers[cmd.Op]
	if h == nil || !h.write {
		return fmt.Errorf("store: segment %d: cannot apply %v", g.id, cmd.Op)
	}
	now := g.store.clock.NowNano()
	x := execCtx{seg: g, cmd: cmd, now: now, apply: true}
	x.rec = g.items.get(cmd.Key)
	if x.rec != nil && (x.rec.Deleted() || hdr.Version() == 1) {
		// Version 1: the source created the key anew with this command; what
		// this node holds under the key is an older incarnation.
		x.rec = nil
	}
	if x.rec != nil {
		if h.kind != kindAny && x.rec.Kind != h.kind {
			return fmt.Errorf("store: segment %d: %v on a %v key %q: replica diverged", g.id, cmd.Op, x.rec.Kind, cmd.Key)
		}
		x.coll = x.rec.coll()
	} else if h.create {
		x.coll = newCollection(h.kind)
	}
	var before int64
	if x.coll != nil {
		before = x.coll.size()
	}
	if r := h.run(&x); r.Status != kv.StatusSuccess {
		return fmt.Errorf("store: segment %d: replaying %v failed: %v %s", g.id, cmd.Op, r.Status, r.Message)
	}
	switch {
	case x.setValue, x.delete:
		return fmt.Errorf("store: segment %d: %v is not a collection effect", g.id, cmd.Op)
	case x.effect == nil:
		return nil
	}
	if x.rec != nil && x.coll.count() == 0 {
		g.settleLocked(x.coll.size() - before)
		tomb := recordOf(x.rec.Key(), nil, Record{Revision: hdr.Revision}.WithVersion(hdr.Version()).AsTombstone())
		g.commitLocked(OpDelete, tomb)
		return nil
	}
	if x.rec == nil {
		rec := &Record{Kind: x.coll.kind(), Revision: hdr.Revision, access: g.store.freshAccess(now)}
		rec.setPartsStamped(string([]byte(cmd.Key)), nil, false, x.coll, hdr.Meta(), hdr.ExpiresAt(), hdr.Version())
		g.installCollectionLocked(rec, x.effect)
	} else {
		x.rec.SetVersion(hdr.Version())
		x.rec.Revision = hdr.Revision
		g.settleLocked(x.coll.size() - before)
		g.logEffectLocked(x.rec, x.effect)
	}
	g.revision = max(g.revision, hdr.Revision)
	return nil
}

// --- argument parsing shared by handlers ---

// longDoubleArg is a check: the argument at this position, when present,
// is an increment for Redis's long double arithmetic (HINCRBYFLOAT).
func longDoubleArg(at int) func(args [][]byte) kv.Reply {
	return func(args [][]byte) kv.Reply {
		if at < len(args) {
			if d, ok := parseLongDouble(args[at]); !ok {
				return errNotFloat
			} else if d.IsInf() {
				return kv.BadRequest("value is NaN or Infinity")
			}
		}
		return kv.Reply{}
	}
}

// floatArgs is a check: the arguments at these positions, when present,
// are floats (Redis's getDoubleFromObject).
func floatArgs(at ...int) func(args [][]byte) kv.Reply {
	return func(args [][]byte) kv.Reply {
		for _, i := range at {
			if i < len(args) {
				if _, ok := argFloat(args[i]); !ok {
					return errNotFloat
				}
			}
		}
		return kv.Reply{}
	}
}

// argInt reads an integer as Redis's string2ll does.
func argInt(b []byte) (int64, bool) { return kv.ParseInt(b) }

// argFloat reads a float as Redis's getDoubleFromObject does.
func argFloat(b []byte) (float64, bool) { return kv.ParseDouble(b) }

// arity reports whether the command has minArgs to maxArgs arguments (no
// upper bound when maxArgs < 0); arityError is the reply when it has not.
// A bool, so that it inlines: every handler calls it first, and a call
// that returned the reply too wrote 96 bytes through memory each time.
func arity(x *execCtx, minArgs, maxArgs int) bool {
	n := len(x.cmd.Args)
	return n >= minArgs && (maxArgs < 0 || n <= maxArgs)
}

//go:noinline
func arityError(x *execCtx) kv.Reply {
	return kv.BadRequest(fmt.Sprintf("wrong number of arguments for %v", x.cmd.Op))
}

var errNotInteger = kv.BadRequest("value is not an integer or out of range")
var errNotFloat = kv.BadRequest("value is not a valid float")

// normalizeRange converts Redis-style inclusive start/stop (negative = from
// the end) for a sequence of length n into [lo, hi); empty when lo >= hi.
func normalizeRange(start, stop int64, n int) (lo, hi int) {
	if start < 0 {
		start += int64(n)
	}
	if stop < 0 {
		stop += int64(n)
	}
	start = max(start, 0)
	if stop >= int64(n) {
		stop = int64(n) - 1
	}
	if start > stop || start >= int64(n) {
		return 0, 0
	}
	return int(start), int(stop) + 1
}

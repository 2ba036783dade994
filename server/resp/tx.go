package resp

import (
	"bytes"
	"slices"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/server/metrics"
	"github.com/zaris-io/zaris/server/store"
)

// Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//
// MULTI starts queuing: each command is checked (name, arity, cluster rules)
// and answered +QUEUED, or answered with its error, which makes EXEC fail
// with EXECABORT. EXEC runs the queue inside one store.AtomicallyMany
// block — the write locks of the transaction's segments, so no other
// client's operation on the transaction's keys runs in between — by running each queued command's
// ordinary handler against the block's *store.Atomic view (conn.segment
// returns it while c.tx is set). As in Redis there is no rollback: a
// command that fails at run time (WRONGTYPE, …) is an error element of
// EXEC's array and the others still run.
//
// The keys of a transaction, queued and watched, follow the multi-key rule
// (multikey.go): the first key must be this node's (else MOVED); a key of
// another slot is accepted when its segment is served here too, and EXEC
// then holds the write locks of every segment named (ascending order,
// store.AtomicallyMany); a key of another node is refused with CROSSSLOT
// (a queued one also aborts the transaction), as in Redis Cluster.
//
// WATCH records each key's (version, revision), or for a key that does not
// exist the segment's revision (store.Atomic.Watch), and EXEC, under the
// lock, compares them before running anything: a write, a TTL change, a
// delete or an expiry of a watched key since WATCH — a key created and
// removed again included — makes EXEC answer a null array and run nothing.
//
// Commands that cannot run inside the lock (they block, take other
// segments' locks, change the connection's mode or protocol: SCAN, KEYS,
// DBSIZE, FLUSHALL, SUBSCRIBE, HELLO, CLUSTER, CONFIG SET, CLIENT, INFO, …) are
// refused at queue time with "ERR Command not allowed inside a transaction"
// (and abort the transaction). Keyless commands that touch no key are
// allowed (txKeyless). Blocking commands (BLPOP, BRPOP, XREAD/XREADGROUP
// BLOCK) run without blocking inside EXEC, as in Redis: a null reply when
// there is nothing to serve.

const (
	msgExecAbort      = "EXECABORT Transaction discarded because of previous errors."
	msgNotInTx        = "ERR Command not allowed inside a transaction"
	msgNestedMulti    = "ERR MULTI calls can not be nested"
	msgWatchInMulti   = "ERR WATCH inside MULTI is not allowed"
	msgExecNoMulti    = "ERR EXEC without MULTI"
	msgDiscardNoMulti = "ERR DISCARD without MULTI"
)

// txControl are the commands MULTI does not queue: they act at once.
var txControl = map[string]bool{"multi": true, "exec": true, "discard": true, "watch": true, "quit": true, "reset": true}

// txKeyless are the commands without keys that may be queued: they touch
// no segment, so they run inside the block harmlessly.
var txKeyless = map[string]bool{
	"ping": true, "echo": true, "time": true, "publish": true, "select": true, "unwatch": true,
	"cluster|keyslot": true, "command": true, "command|count": true, "command|info": true,
	"command|docs": true, "command|list": true, "command|getkeys": true,
	"wait":            true, // answers at once inside EXEC, as in Redis
	"pubsub|channels": true, "pubsub|numsub": true, "pubsub|numpat": true, "pubsub|help": true,
	"pubsub|shardchannels": true, "pubsub|shardnumsub": true,
	// the server's own logs and settings read: no key, no segment
	"slowlog|get": true, "slowlog|len": true, "slowlog|reset": true, "slowlog|help": true,
	"latency|latest": true, "latency|history": true, "latency|reset": true, "latency|doctor": true,
	"latency|histogram": true, "latency|help": true, "config|get": true,
}

// txState is a connection's transaction: reader-owned.
type txState struct {
	multi   bool
	dirty   bool // a command was refused while queuing: EXEC aborts
	queue   [][][]byte
	watched []watchedKey
	segs    []uint16 // the segments of the keys watched or queued (distinct)
	writes  bool     // a queued command writes
	denyOOM bool     // a queued command may add data (refused at EXEC when out of memory)
}

type watchedKey struct {
	key  string
	mark store.WatchMark
}

func init() {
	t := func(c *command) *command { c.group = "transactions"; c.metric = metrics.OpOther; return c }
	txFlags := flagNoScript | flagLoading | flagStale | flagFast | flagAllowBusy
	register(
		t(&command{name: "multi", arity: 1, flags: txFlags, since: "1.2.0",
			summary: "Starts a transaction: the following commands are queued (+QUEUED) until EXEC or DISCARD. All their keys must be on this node.", run: cmdMulti}),
		t(&command{name: "exec", arity: 1, flags: flagNoScript | flagLoading | flagStale | flagSkipSlowlog, since: "1.2.0", metric: metrics.OpBatch,
			summary: "Executes the queued commands atomically (the locks of their keys' segments); a null array when a watched key changed, EXECABORT after a queuing error.", run: cmdExec}),
		t(&command{name: "discard", arity: 1, flags: txFlags, since: "2.0.0",
			summary: "Discards the queued commands and forgets the watched keys.", run: cmdDiscard}),
		t(&command{name: "watch", arity: -2, flags: txFlags, first: 1, last: -1, step: 1, since: "2.2.0",
			summary: "Monitors keys (on this node) so that EXEC runs nothing if any of them changes, expires or is deleted first.", run: cmdWatch}),
		t(&command{name: "unwatch", arity: 1, flags: txFlags, since: "2.2.0",
			summary: "Forgets the watched keys.", run: cmdUnwatch}),
	)
}

// txQueue handles a command sent while MULTI is on (execute has checked
// name, arity, authentication and the command's own CROSSSLOT): refuse it,
// or queue a copy of it and answer +QUEUED.
func (c *conn) txQueue(cmd *command, args [][]byte) {
	if !txAllowed(cmd) {
		c.txReject(msgNotInTx)
		return
	}
	for _, i := range cmd.keyIndexes(args) {
		if msg := c.txClaimSlot(args[i]); msg != "" {
			c.txReject(msg)
			return
		}
	}
	if (cmd.name == "sort" || cmd.name == "sort_ro") && sortPatternsNameKeys(args) && c.servesAll() {
		// Its BY or GET pattern names keys of any slot, found only from
		// the elements: on a node that serves every slot the transaction
		// holds them all (rare, and the whole store stands still for it).
		for seg := range c.srv.segs {
			if s := uint16(seg); c.served(s) && !slices.Contains(c.txn.segs, s) {
				c.txn.segs = append(c.txn.segs, s)
			}
		}
	}
	n := 0
	for _, a := range args {
		n += len(a)
	}
	buf := make([]byte, 0, n) // one allocation for the arguments
	cp := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		cp[i] = buf[len(buf)-len(a):]
	}
	c.txn.queue = append(c.txn.queue, cp)
	if cmd.flags&flagWrite != 0 {
		c.txn.writes = true
	}
	if cmd.flags&flagDenyOOM != 0 {
		c.txn.denyOOM = true
	}
	c.out.Simple("QUEUED")
}

// sortPatternsNameKeys reports whether a SORT's arguments have a BY
// pattern with a '*' or a GET pattern other than "#": keys its elements
// name.
func sortPatternsNameKeys(args [][]byte) bool {
	for j := 2; j+1 < len(args); j++ {
		switch {
		case eq(args[j], "BY") && bytes.IndexByte(args[j+1], '*') >= 0,
			eq(args[j], "GET") && string(args[j+1]) != "#":
			return true
		}
	}
	return false
}

// txAllowed reports whether cmd may be queued.
func txAllowed(cmd *command) bool {
	if txKeyless[cmd.name] {
		return true
	}
	return cmd.keys != nil || cmd.step > 0 && cmd.first > 0
}

// txClaimSlot checks that key may join the transaction — the first key
// must be this node's, a later one of another segment must be served here
// too — and records its segment; it returns the error otherwise.
func (c *conn) txClaimSlot(key []byte) string {
	seg := placement.SegmentOf(view(key), c.srv.segs)
	if slices.Contains(c.txn.segs, seg) {
		return ""
	}
	if !c.served(seg) {
		if len(c.txn.segs) == 0 {
			return c.movedError(key)
		}
		return msgCrossSlot
	}
	c.txn.segs = append(c.txn.segs, seg)
	return ""
}

// txReject answers an error for a command sent while queuing; the
// transaction will abort.
func (c *conn) txReject(msg string) {
	c.err(msg)
	c.txn.dirty = true
}

// txReset ends the transaction and forgets the watched keys (ending the
// store's watch of those that were absent).
func (c *conn) txReset() {
	for _, w := range c.txn.watched {
		c.srv.store.Unwatch(w.key, w.mark)
	}
	c.txn = txState{}
}

func cmdMulti(c *conn, _ [][]byte) {
	if c.txn.multi {
		c.err(msgNestedMulti)
		return
	}
	c.txn.multi = true
	c.out.OK()
}

func cmdDiscard(c *conn, _ [][]byte) {
	if !c.txn.multi {
		c.err(msgDiscardNoMulti)
		return
	}
	c.txReset()
	c.out.OK()
}

func cmdUnwatch(c *conn, _ [][]byte) {
	if !c.txn.multi { // queued inside MULTI: EXEC has already forgotten them
		c.txReset()
	}
	c.out.OK()
}

func cmdWatch(c *conn, args [][]byte) {
	if c.txn.multi {
		c.err(msgWatchInMulti)
		return
	}
	// execute checked the keys against the multi-key rule; each must
	// also fit the transaction's.
	for _, kb := range args[1:] {
		if msg := c.txClaimSlot(kb); msg != "" {
			c.err(msg)
			return
		}
	}
	c.srv.store.AtomicallyMany(c.txn.segs, func(a *store.Atomic) {
		for _, kb := range args[1:] {
			c.txn.watched = append(c.txn.watched, watchedKey{key: string(kb), mark: a.Watch(view(kb))})
		}
	})
	c.out.OK()
}

func cmdExec(c *conn, _ [][]byte) {
	if !c.txn.multi {
		c.err(msgExecNoMulti)
		return
	}
	t := c.txn
	c.txn = txState{}
	// The watches end after EXEC's check (txReset's, deferred): until then
	// the store keeps what the check reads.
	defer func() {
		c.txn.watched = t.watched
		c.txReset()
	}()
	if t.dirty {
		c.err(msgExecAbort)
		return
	}
	// The queued commands' replies are EXEC's: CLIENT REPLY SKIP applies to
	// EXEC as a whole, not to its first command.
	mode := c.reply
	c.reply = replyOn
	defer func() { c.reply = mode }()
	run := func() {
		c.out.Array(len(t.queue))
		for _, args := range t.queue {
			c.execute(args)
		}
	}
	if len(t.segs) == 0 { // keyless commands only: nothing to lock
		run()
		c.status = kv.StatusSuccess
		return
	}
	if t.writes && c.srv.blocked.waiting.Load() > 0 {
		// Blocked clients wait: the transaction's writes begin here,
		// before its locks (blockQueue.begin waits for a turn in progress,
		// whose try may need them), and are marked once EXEC ends.
		var keys [][]byte
		for _, args := range t.queue {
			if cmd := lookupCommand(args[0]); cmd != nil && cmd.flags&(flagWrite|flagBlocking) == flagWrite {
				for _, i := range cmd.keyIndexes(args) {
					keys = append(keys, args[i])
				}
			}
		}
		if begun := c.srv.blocked.begin(keys); begun != nil {
			defer c.srv.blocked.end(begun)
		}
	}
	aborted, moving := false, false
	c.srv.store.AtomicallyMany(t.segs, func(a *store.Atomic) {
		if a.Fenced() && t.writes {
			// A live migration's write fence on one of the segments: the
			// block runs whole or not at all, so not now.
			moving = true
			return
		}
		for _, w := range t.watched {
			if a.Changed(w.key, w.mark) {
				aborted = true
				return
			}
		}
		a.Admit() // EXEC passed deniedOOM for its queue: the block runs whole, as in Redis
		c.tx = a
		defer func() { c.tx = nil }()
		run()
	})
	switch {
	case moving:
		c.out.Error("TRYAGAIN a key's slot is moving to another node; the transaction was not run")
	case aborted:
		c.out.NullArray()
	}
	c.status = kv.StatusSuccess
}

package resp

import (
	"context"
	"math"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// Blocking commands (BLPOP, BRPOP, XREAD/XREADGROUP BLOCK). As in Redis the
// connection waits — the commands pipelined after the blocking one wait
// with it — until the command can be served, the timeout passes (a null
// reply), CLIENT UNBLOCK ends the wait (as a timeout, or with the UNBLOCKED
// error), the client goes away or the server shuts down.
//
// Waiting uses the store's watches (R-DS-6) on the keys, through the
// server's blockQueue: a change of a watched key gives every command
// waiting for it a turn to try again, one at a time in the order they
// blocked, so the client that waited longest is served first, as in Redis.
// A periodic check (blockPoll) notices a client that disconnected while
// blocked.

const blockPoll = 250 * time.Millisecond

func init() {
	l := func(c *command) *command { c.group = "list"; return c }
	register(
		l(&command{name: "blpop", arity: -3, flags: flagWrite | flagNoScript | flagBlocking, first: 1, last: -2, step: 1, since: "2.0.0",
			summary: "Removes and returns the first element in a list; blocks until an element is available or the timeout (seconds, 0 = forever) passes.",
			run:     cmdBPop(kv.CmdLPop)}),
		l(&command{name: "brpop", arity: -3, flags: flagWrite | flagNoScript | flagBlocking, first: 1, last: -2, step: 1, since: "2.0.0",
			summary: "Removes and returns the last element in a list; blocks until an element is available or the timeout (seconds, 0 = forever) passes.",
			run:     cmdBPop(kv.CmdRPop)}),
	)
}

func cmdBPop(op kv.CmdOp) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		timeout, ok := parseBlockTimeout(c, args[len(args)-1])
		if !ok {
			return
		}
		keys := args[1 : len(args)-1]
		c.blockOn(keys, true, timeout, func() bool {
			for _, k := range keys {
				r := c.execRaw(op, k)
				switch {
				case c.keepBlocking(r):
				case r.Status != kv.StatusSuccess:
					c.storeError(r.Status, r.Message)
					return true
				case r.Type == kv.ReplyBulk:
					c.out.Array(2)
					c.out.Bulk(k)
					c.out.Bulk(r.Bulk)
					return true
				}
			}
			return false
		})
	}
}

// blockOn runs try until it produces a reply. try writes a reply and
// returns true, or writes nothing and returns false (nothing to serve yet).
// Without blocking, try runs once and must reply. A timeout of 0 waits
// without limit; when the timeout passes the reply is a null array.
func (c *conn) blockOn(keys [][]byte, blocking bool, timeout time.Duration, try func() bool) {
	if try() || !blocking {
		return
	}
	var w *blockWaiter
	if c.tx == nil {
		// The place in the queue is taken now, on the goroutine that ran
		// the first try (the event loop's, in the order the loop read
		// the commands), not after the move to a goroutine of its own;
		// then one more try there covers a change between the first try
		// and the watches, so that afterwards only changes give turns.
		w = c.srv.blocked.join(keys)
		defer c.srv.blocked.leave(w)
		if try() {
			return
		}
	}
	c.leaveLoop() // it waits
	if c.tx != nil {
		// Inside EXEC (a segment lock held) nothing can arrive: Redis too
		// runs a blocking command in a transaction as if it timed out.
		c.out.NullArray()
		return
	}
	// Deliver the replies of the commands before this one first.
	if !c.flush() {
		c.closing = true
		return
	}
	c.blocked.Store(true)
	c.wasBlocked = true
	c.trackBlocking()
	defer c.blocked.Store(false)
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	poll := time.NewTicker(blockPoll)
	defer poll.Stop()
	select {
	case <-c.unblock: // a CLIENT UNBLOCK that claimed the previous wait as it ended
	default:
	}
	c.unblockable.Store(true)
	defer c.unblockable.Store(false)
	c.blockRetry = true
	defer func() { c.blockRetry = false }()
	c.srv.blocked.ready(w)
	for {
		select {
		case <-w.turn:
			served := try()
			w.done <- struct{}{}
			if served {
				return
			}
		case withError := <-c.unblock:
			if withError {
				c.err("UNBLOCKED client unblocked via CLIENT UNBLOCK")
			} else {
				c.out.NullArray() // as if its timeout passed
			}
			return
		case <-poll.C:
			if c.peerClosed() {
				c.closing = true
				return
			}
		case <-expired:
			c.out.NullArray()
			return
		case <-c.stop:
			c.out.NullArray()
			c.closing = true
			return
		}
	}
}

// keepBlocking reports whether a blocked command's retry found its key of
// another type: as in Redis, a client blocked on a list (sorted set,
// stream) stays blocked when the key it waits for is now a string — a
// MULTI that pushed, deleted and SET it woke the wait for nothing —, where
// the command's first try answers WRONGTYPE.
func (c *conn) keepBlocking(r kv.Reply) bool {
	return c.blockRetry && r.Status == kv.StatusWrongType
}

// parseBlockTimeout parses a blocking command's timeout in seconds (0 =
// forever) as Redis 7.0 does: a float (inf accepted, NaN not) converted to
// whole milliseconds rounded up; milliseconds past the 64-bit range —
// ±inf included — are refused as negative, as Redis's conversion makes
// them.
func parseBlockTimeout(c *conn, arg []byte) (time.Duration, bool) {
	if n, ok := parseInt(arg); ok {
		// Whole seconds are exact (Redis's long double holds them; a
		// float64 does not past 2^53).
		if n < 0 || n > math.MaxInt64/1000 {
			c.err("ERR timeout is negative")
			return 0, false
		}
		return time.Duration(min(n*1000, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond, true
	}
	secs, ok := parseFloat(arg)
	if !ok {
		c.err("ERR timeout is not a float or out of range")
		return 0, false
	}
	ms := math.Ceil(secs * 1000)
	if ms < 0 || ms >= math.MaxInt64 || math.IsInf(ms, 0) {
		c.err("ERR timeout is negative")
		return 0, false
	}
	return time.Duration(min(int64(ms), math.MaxInt64/int64(time.Millisecond))) * time.Millisecond, true
}

// guardWait ends a wait bound to a context (WAIT's) as blockOn ends its
// own: it cancels the context on CLIENT UNBLOCK, when the connection is
// stopped (shutdown, CLIENT KILL) and when the client goes away (polled
// every blockPoll) — a WAIT 1 0 with a replica gone otherwise outlived its
// client and held up the node's shutdown. done, called once the wait is
// over, disarms it and reports whether CLIENT UNBLOCK ended it and with
// which reason.
func (c *conn) guardWait(cancel context.CancelFunc) (done func() (unblocked, withError bool)) {
	select {
	case <-c.unblock: // a CLIENT UNBLOCK that claimed an earlier wait as it ended
	default:
	}
	got := make(chan bool, 1)
	stop, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		poll := time.NewTicker(blockPoll)
		defer poll.Stop()
		for {
			select {
			case e := <-c.unblock:
				got <- e
				cancel()
				return
			case <-c.stop:
				cancel()
				return
			case <-poll.C:
				if c.peerClosed() {
					cancel()
					return
				}
			case <-stop:
				return
			}
		}
	}()
	c.blocked.Store(true)
	c.unblockable.Store(true)
	return func() (bool, bool) {
		c.unblockable.Store(false)
		c.blocked.Store(false)
		close(stop)
		<-exited
		select {
		case e := <-got:
			return true, e
		default:
			return false, false
		}
	}
}

// cmdClientUnblock is CLIENT UNBLOCK id [TIMEOUT|ERROR]: it ends the wait
// of the client with that id if it waits in a blocking command or WAIT
// (1), else 0 — a client held by CLIENT PAUSE is not unblocked.
func cmdClientUnblock(c *conn, args [][]byte) {
	if len(args) > 4 { // Redis's addReplySubcommandSyntaxError, the subcommand as typed
		c.err("ERR unknown subcommand or wrong number of arguments for '" + cString(truncate(args[1], 128)) + "'. Try CLIENT HELP.")
		return
	}
	withError := false
	if len(args) == 4 { // Redis reads the reason before the id
		switch {
		case eq(args[3], "TIMEOUT"):
		case eq(args[3], "ERROR"):
			withError = true
		default:
			c.err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	id, ok := parseInt(args[2])
	if !ok {
		c.err(msgNotInteger)
		return
	}
	for _, o := range c.srv.snapshotClients() {
		if o.id == id && o.unblockable.CompareAndSwap(true, false) {
			o.unblock <- withError // buffered: the claim makes this the only send
			c.out.Int(1)
			return
		}
	}
	c.out.Int(0)
}

package resp

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zaris-io/zaris/internal/acl"
	"github.com/zaris-io/zaris/internal/evloop"
	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/store"
)

const (
	initialReadBuffer = 16 << 10
	// flushThreshold: replies are written as soon as this much is pending,
	// even in the middle of a pipelined batch, so a long pipeline of large
	// replies never piles up in memory.
	flushThreshold = 64 << 10
	// maxKeptBuffer: a buffer grown beyond this by one large command or
	// reply is dropped once it is empty.
	maxKeptBuffer = 1 << 20
	// writeChunk: the background writer writes in chunks of this size, each
	// with a fresh WriteTimeout, so the timeout measures lack of progress.
	writeChunk = 1 << 20
)

var errOutputLimit = errors.New("output buffer limit reached")

// conn is one client connection.
//
// Goroutines: serve (the reader) owns everything under "reader-owned"; it
// parses each pipelined command, executes it inline and appends its reply
// to out, and writes the replies once per read batch (flush). It writes to
// the socket itself, with a non-blocking write, as long as the socket takes
// everything; what the socket does not take goes to a background writer
// goroutine, started on first need, and from then on every reply goes
// through its queue until it is drained — so replies stay in order, a client
// that reads slowly never blocks the reader (a client pipelining more than
// the socket buffers hold does not deadlock), and a client that does not read
// at all is disconnected when its queue passes OutputBufferLimit.
type conn struct {
	srv *Server
	nc  net.Conn
	raw syscall.RawConn // plain TCP: non-blocking direct writes; nil under TLS
	id  int64

	// reader-owned
	buf    []byte
	r, w   int // unconsumed input is buf[r:w]
	parser Parser
	lim    Limits
	out    Writer
	// putOpts is SET's options, reused (conn.set).
	putOpts kv.PutOptions
	// replyRoom is where the store builds a command's array reply
	// (kv.Cmd.Out); exec clears what it held once it is written.
	replyRoom []kv.Reply
	zrange    zrangeArgs // a ZRANGE's store arguments (cmd_zset2.go)
	authed    bool
	aclSet    *acl.Set            // the user set aclU was looked up in (acl.go)
	aclU      *acl.User           // the connection's user in aclSet; nil: deleted
	reply     uint8               // CLIENT REPLY mode
	curKey    []byte              // the first key of the command being executed (MOVED); set through setCurKey
	curSeg    int32               // curKey's segment once computed (curSegment), else -1
	multiSeg  bool                // the command being executed writes keys of several segments
	written   writtenSegments     // segments this client wrote, for WAIT (cmd_keys2.go); empty without Config.Replicas
	sub       *store.Subscription // pub/sub; nil until the first (P)SUBSCRIBE
	ssub      *store.Subscription // shard pub/sub; nil until the first SSUBSCRIBE
	closing   bool                // close once the replies so far are written (QUIT, protocol error)
	status    kv.Status           // outcome of the command being executed, for metrics
	readErr   error               // a read error that came with data, reported after it is handled
	clock     time.Time           // when the last read returned: the anchor of its batch's command times (setClock)
	clockUnix int64               // clock.UnixNano()
	clockGen  uint64              // bumped by every setClock
	since     time.Duration       // from clock to the end of the last command run

	// oneSegLocked: the command being executed runs under one segment's
	// lock, planned so (slotLocked).
	oneSegLocked bool
	// named is the command lastName (as sent) named last (lookup).
	named       *command
	lastName    [16]byte
	lastNameLen uint8
	warmTo      int  // buf offset the pipeline read-ahead has looked up to (warm.go)
	warmSum     uint // keeps the read-ahead's loads
	warmKeys    [store.WarmBatch][]byte
	warmFields  [store.WarmBatch][]byte
	warmLasts   [store.WarmBatch][]byte
	rw          evloop.RawWriter
	rd          evloop.RawReader // an event loop's reads
	member      *evloop.Member   // the connection's event loop registration; nil: its own goroutine from the start
	txn         txState          // MULTI/WATCH state
	tx          *store.Atomic    // while EXEC runs: the view every queued command uses
	held        []heldReply      // write replies in out waiting for the write barrier (sync replication)
	flushes     uint64           // flushes so far: tells hold whether a command flushed mid-way
	high        map[uint16]uint64
	verdict     map[uint16]kv.Status
	// barrierWrites and barrierStatus are wait's WaitAll arguments, reused.
	barrierWrites []kv.SegmentWrite
	barrierStatus []kv.Status

	tally tally // counters on their way to the atomics below (tally.go)
	// rawArgs holds execRaw's arguments; rawArgsBusy while the store has them.
	rawArgs     [6][]byte
	rawArgsBusy bool
	// planSegs holds keysPlanOf's segments; view is a multi-key command's
	// locked view (atomicallyMany), viewBusy while one runs in it.
	planSegs [16]uint16
	view     store.Atomic
	viewBusy bool

	// read by CLIENT LIST / INFO from other goroutines
	created time.Time
	// killed: CLIENT KILL closed the connection; it is gone from the
	// listings before its close completes, as Redis frees a client at once.
	killed     atomic.Bool
	lastActive atomic.Int64 // Unix ns of the last command (published by the tally)
	name       atomic.Pointer[string]
	user       atomic.Pointer[string] // the authenticated user; nil = default
	everAuthed atomic.Bool            // authenticated once: the AuthTimeout no longer applies
	libName    atomic.Pointer[string]
	libVer     atomic.Pointer[string]
	lastCmd    atomic.Pointer[command]
	proto      atomic.Int32
	cmds       atomic.Uint64
	netIn      atomic.Uint64
	netOut     atomic.Uint64
	hits       atomic.Uint64
	misses     atomic.Uint64
	stopping   atomic.Bool
	authTimer  *time.Timer   // closes the connection unless it authenticates in time; nil once authenticated at accept
	stop       chan struct{} // closed by stopReading: a blocked command gives up
	stopOnce   sync.Once

	pmu sync.Mutex // held by the reader while it changes subscriptions and by the pub/sub forwarder while it queues messages; taken before wmu

	// background writer
	wmu      sync.Mutex // guards the fields below
	wcond    sync.Cond  // signals wq growth and wclosing to the writer
	wq       []byte     // replies the writer has yet to write
	wspare   []byte
	wbusy    bool // the writer owns the socket: the reader must queue, not write
	wdirect  bool // the reader is writing directly: queue, do not wake the writer
	wstarted bool
	wclosing bool
	werr     error
	wdone    chan struct{}
	// softSince: when the queue went over its class's soft limit (zero:
	// not over); guarded by wmu.
	softSince time.Time

	subShared  atomic.Pointer[store.Subscription] // sub, for the output limits' class (read under wmu)
	ssubShared atomic.Pointer[store.Subscription] // ssub, likewise
	inBuf      atomic.Int64                       // unparsed input bytes (CLIENT LIST qbuf)
	blocked    atomic.Bool                        // waiting in a blocking command or a CLIENT PAUSE
	// unblockable is set while a blocking command waits (blockOn); CLIENT
	// UNBLOCK claims it and sends on unblock (true: answer the error).
	unblockable atomic.Bool
	unblock     chan bool
	errReplies  uint64       // error replies written (reader-owned)
	inScript    bool         // a script's redis.call is running a command
	wasBlocked  bool         // the command being executed blocked: no slowlog entry
	blockRetry  bool         // a blocked command tries again after a wake-up (see keepBlocking)
	mon         monitorState // MONITOR, CLIENT NO-EVICT/NO-TOUCH (clientstate.go)
	trk         trackConn    // CLIENT TRACKING (tracking.go)
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		srv: s, nc: nc, id: s.nextID.Add(1),
		buf:     make([]byte, initialReadBuffer),
		lim:     s.cfg.Limits,
		out:     Writer{Proto: 2, B: make([]byte, 0, 4<<10)},
		authed:  s.defaultNoPass(),
		created: time.Now(),
		curSeg:  -1,
		wdone:   make(chan struct{}),
		stop:    make(chan struct{}),
		unblock: make(chan bool, 1),
	}
	c.wcond.L = &c.wmu
	c.out.OnError = c.countError
	c.parser.Reset()
	if !c.authed {
		c.lim.Unauthenticated = true
	}
	c.proto.Store(2)
	c.setClock(c.created) // never the zero Time: a command's clock is the previous one's plus the monotonic time since
	c.lastActive.Store(c.created.UnixNano())
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil && evloop.RawIO {
			c.raw = rc
		}
	}
	return c
}

func (c *conn) logger() *slog.Logger {
	return c.srv.log.With("client_id", c.id, "remote", c.nc.RemoteAddr().String())
}

// stopReading makes the reader's next read fail, which ends serve after the
// commands already read are answered (graceful shutdown).
func (c *conn) stopReading() {
	c.stopping.Store(true)
	_ = c.nc.SetReadDeadline(time.Now())
	if c.member != nil {
		c.member.Abort(false) // an event loop reads without a deadline: end its input instead
	}
	c.stopOnce.Do(func() { close(c.stop) })
}

// peerClosed reports whether the client has closed its end (checked while
// a command blocks, when the reader is not reading). Under TLS it cannot
// tell and reports false: a blocked command then ends by its timeout, by
// data, or by shutdown.
func (c *conn) peerClosed() bool {
	if c.raw == nil {
		return false
	}
	return rawPeerClosed(c.raw)
}

func (c *conn) serve() {
	defer c.srv.forget(c)
	defer c.finish()
	defer c.stopAuthTimer()
	if tc, ok := c.nc.(interface{ Handshake() error }); ok {
		_ = c.nc.SetDeadline(time.Now().Add(10 * time.Second))
		if err := tc.Handshake(); err != nil {
			c.logger().Info("TLS handshake failed", "err", err)
			return
		}
		_ = c.nc.SetDeadline(time.Time{})
	}
	c.serveLoop()
}

// startAuthTimer closes a connection that has not authenticated in time:
// it cannot hold a client slot (maxclients) for ever.
func (c *conn) startAuthTimer() {
	if c.authed {
		return
	}
	c.authTimer = time.AfterFunc(c.srv.cfg.AuthTimeout, func() {
		if !c.everAuthed.Load() {
			c.srv.stats.authTimeouts.Add(1)
			c.logger().Info("closing a connection that did not authenticate in time", "auth_timeout", c.srv.cfg.AuthTimeout)
			c.abort()
		}
	})
}

func (c *conn) stopAuthTimer() {
	if c.authTimer != nil {
		c.authTimer.Stop()
	}
}

// serveLoop is the reader's loop on its own goroutine: answer what is
// buffered, write the replies, read more (blocking), until the connection
// ends.
func (c *conn) serveLoop() {
	for {
		if !c.handleBuffered() || !c.flush() || c.closing {
			return
		}
		if !c.fill() {
			return
		}
		if fc := c.srv.cfg.FreezeCheck; fc != nil {
			fc(c.clock) // once per read batch, before any of it runs (fill read the clock after the read)
		}
	}
}

// abort closes the connection on behalf of another goroutine (CLIENT KILL,
// the output limit, a failed background write, the auth timeout). A
// connection an event loop serves is only shut down here — its socket
// then reads as ended and the loop, which owns the descriptor, closes it —
// so no descriptor the loop still polls is ever closed under it.
func (c *conn) abort() {
	if c.member != nil && c.member.Abort(true) {
		return
	}
	_ = c.nc.Close()
}

// handleBuffered executes every complete command in the read buffer. It
// reports false when the connection must end without writing anything more.
func (c *conn) handleBuffered() bool {
	ok := c.runBuffered()
	c.publishTally()
	return ok
}

func (c *conn) runBuffered() bool {
	for c.r < c.w {
		args, n, err := c.parser.Next(c.buf[c.r:c.w], &c.lim)
		if err != nil {
			c.out.Error("ERR " + err.Error())
			c.closing = true
			c.logger().Info("closing connection after a protocol error", "err", err)
			return true
		}
		if n == 0 {
			break
		}
		c.r += n
		if len(args) == 0 {
			continue
		}
		if c.r < c.w && c.r >= c.warmTo {
			c.warmAhead(args)
		}
		if crossProtocol(args[0]) {
			c.srv.crossProtocolAttack(c)
			return false
		}
		c.executeContained(args)
		if c.closing {
			return true
		}
		if len(c.out.B) >= flushThreshold {
			c.publishTally() // before the replies tell the client the commands ran
			if !c.flush() {
				return false
			}
		}
	}
	return true
}

// fill reads more input. It reports false when the connection must end.
func (c *conn) fill() bool {
	if !c.makeRoom() {
		return false
	}
	if t := time.Duration(c.srv.live.idleTimeout.Load()); t > 0 && !c.stopping.Load() {
		_ = c.nc.SetReadDeadline(time.Now().Add(t))
	}
	n, err := c.nc.Read(c.buf[c.w:])
	return c.filled(n, err)
}

// fillNow is fill for an event loop: one read that does not wait (the loop
// calls it when the socket is readable; a spurious wake reads nothing).
func (c *conn) fillNow() bool {
	if !c.makeRoom() {
		return false
	}
	n, err := c.rd.Try(c.raw, c.buf[c.w:])
	return c.filled(n, err)
}

// makeRoom reports a read error kept from the previous read, compacts the
// buffer and grows it when full. False when the connection must end.
func (c *conn) makeRoom() bool {
	if c.readErr != nil {
		c.logReadError(c.readErr)
		return false
	}
	if c.r == c.w {
		c.r, c.w, c.warmTo = 0, 0, 0
		if len(c.buf) > maxKeptBuffer {
			c.buf = make([]byte, initialReadBuffer)
		}
	} else if c.r > 0 {
		c.w = copy(c.buf, c.buf[c.r:c.w])
		c.warmTo = max(0, c.warmTo-c.r)
		c.r = 0
	}
	pending := c.w - c.r
	if limit := c.srv.live.queryLimit.Load(); int64(pending) > limit {
		c.logger().Warn("closing connection: query buffer limit reached", "bytes", pending, "limit", limit)
		return false
	}
	c.lim.MaxBulkLen = int(c.srv.live.maxBulkLen.Load()) // CONFIG SET proto-max-bulk-len applies to open connections too
	if c.w == len(c.buf) {
		// Grow as the bytes arrive — towards a declared bulk at most
		// doubling — never to the size a client merely announced: a
		// "$536870912" header alone must not cost 512 MiB.
		size := 2 * len(c.buf)
		if need := c.parser.Need(); need > len(c.buf) {
			size = min(need, size)
		}
		c.grow(size)
	}
	return true
}

// setClock anchors the command times of the batch a read brought.
func (c *conn) setClock(t time.Time) {
	c.clock, c.clockUnix, c.since = t, t.UnixNano(), 0
	c.clockGen++
}

// filled takes the outcome of a read. False when the connection must end.
func (c *conn) filled(n int, err error) bool {
	c.setClock(time.Now())
	if n > 0 {
		c.w += n
		c.inBuf.Store(int64(c.w - c.r))
		c.netIn.Add(uint64(n))
		if err != nil {
			c.readErr = err
		}
		return true
	}
	if err == nil {
		return true
	}
	c.logReadError(err)
	return false
}

func (c *conn) grow(size int) {
	limit := int(min(c.srv.live.queryLimit.Load(), 1<<40)) + 64<<10
	size = min(size, limit)
	if size <= len(c.buf) {
		size = len(c.buf) + initialReadBuffer
	}
	nb := make([]byte, size)
	c.w = copy(nb, c.buf[c.r:c.w])
	c.r = 0
	c.buf = nb
}

func (c *conn) logReadError(err error) {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
	case c.stopping.Load():
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, os.ErrDeadlineExceeded):
		c.logger().Info("closing idle connection", "idle_timeout", time.Duration(c.srv.live.idleTimeout.Load()))
	default:
		c.logger().Debug("read failed; closing", "err", err)
	}
}

// flush hands the pending replies to the socket — once the write barrier,
// if any, confirmed the writes among them (one wait per segment written). It reports false once
// writing has failed or the output limit was passed; the connection is then
// closed.
func (c *conn) flush() bool {
	c.flushes++
	if len(c.held) > 0 {
		c.settle() // hold the writes' replies until the replicas have them
	}
	if c.trk.held {
		defer c.trackFlushed() // its invalidations follow these replies
	}
	b := c.out.B
	if len(b) == 0 {
		return true
	}
	c.netOut.Add(uint64(len(b)))
	c.wmu.Lock()
	if c.werr != nil {
		c.wmu.Unlock()
		c.out.B = b[:0]
		return false
	}
	if c.wbusy || c.raw == nil {
		ok := c.enqueueLocked(b)
		c.wmu.Unlock()
		c.out.B = keep(b)
		return ok
	}
	// The socket is idle: write directly, owning it meanwhile (wdirect), so
	// that what another producer (pub/sub) queues waits behind these bytes.
	c.wdirect = true
	c.wmu.Unlock()
	n, err := c.rw.Try(c.raw, b)
	c.wmu.Lock()
	c.wdirect = false
	ok := true
	switch {
	case err != nil:
		c.werr = err
		ok = false
	case n < len(b) || len(c.wq) > 0:
		// The rest goes before whatever was queued while we wrote.
		queued := c.wq
		c.wq = nil
		ok = c.enqueueLocked(b[n:]) && c.enqueueLocked(queued)
	}
	c.wmu.Unlock()
	c.out.B = keep(b)
	return ok
}

// send queues bytes from a producer other than the reader (pub/sub
// messages), behind the replies already on their way.
func (c *conn) send(b []byte) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return false
	}
	c.netOut.Add(uint64(len(b)))
	return c.enqueueLocked(b)
}

// enqueueLocked appends b to the writer's queue and wakes the background
// writer (unless the reader owns the socket for a direct write: it hands
// the queue over when done), or fails the connection when the queue would
// pass the output limit.
func (c *conn) enqueueLocked(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	if why := c.overOutputLimit(int64(len(c.wq) + len(b))); why != "" {
		c.werr = errOutputLimit
		c.wq = nil
		c.srv.stats.outputDisconnects.Add(1)
		c.logger().Warn("closing connection: output buffer limit reached (the client does not read its replies)",
			"limit", why)
		c.abort() // unblocks the writer
		return false
	}
	if len(c.wq) == 0 && cap(c.wq) < len(b) && cap(b) <= maxKeptBuffer {
		c.wq = append(c.wq[:0], b...)
	} else {
		c.wq = append(c.wq, b...)
	}
	if !c.wdirect {
		c.wbusy = true
		if !c.wstarted {
			c.wstarted = true
			go c.writeLoop()
		}
		c.wcond.Signal()
	}
	return true
}

// keep returns the reply buffer emptied, or a fresh one when a large reply
// grew it.
func keep(b []byte) []byte {
	if cap(b) > maxKeptBuffer {
		return make([]byte, 0, 4<<10)
	}
	return b[:0]
}

// writeLoop is the background writer: it writes the queue until the
// connection closes.
func (c *conn) writeLoop() {
	defer close(c.wdone)
	defer c.guard("(background writer)")
	c.wmu.Lock()
	for {
		for len(c.wq) == 0 && !c.wclosing && c.werr == nil {
			c.wbusy = false
			c.wcond.Wait()
		}
		if c.werr != nil || len(c.wq) == 0 {
			c.wbusy = false
			c.wmu.Unlock()
			return
		}
		buf := c.wq
		c.wq = c.wspare[:0]
		c.wmu.Unlock()
		err := c.writeAll(buf)
		c.wmu.Lock()
		if cap(buf) <= maxKeptBuffer {
			c.wspare = buf[:0]
		} else {
			c.wspare = nil
		}
		if err != nil {
			if c.werr == nil {
				c.werr = err
				if !c.stopping.Load() {
					c.logger().Info("closing connection: writing replies failed", "err", err)
				}
			}
			c.wq = nil
			c.wbusy = false
			c.wmu.Unlock()
			c.abort()
			return
		}
	}
}

func (c *conn) writeAll(b []byte) error {
	for len(b) > 0 {
		chunk := b[:min(len(b), writeChunk)]
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.WriteTimeout))
		n, err := c.nc.Write(chunk)
		b = b[n:]
		if err != nil {
			return err
		}
	}
	return nil
}

// finish waits for the queued replies to be written (bounded by
// WriteTimeout per chunk, or cut short by a forced close), then closes the
// socket.
func (c *conn) finish() {
	c.txReset() // the store's watches of absent keys end with the connection
	if c.mon.monitor.Load() {
		c.srv.monitors.remove(c)
	}
	if c.sub != nil {
		c.sub.Close()
	}
	if c.ssub != nil {
		c.srv.untrackShardConn(c)
		c.ssub.Close()
	}
	c.wmu.Lock()
	c.wclosing = true
	started := c.wstarted
	c.wcond.Signal()
	c.wmu.Unlock()
	if started {
		<-c.wdone
	}
	_ = c.nc.Close()
}

// sortConns orders connections by id.
func sortConns(cs []*conn) {
	slices.SortFunc(cs, func(a, b *conn) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
}

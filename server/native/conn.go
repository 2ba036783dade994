package native

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/zaris-io/zaris/internal/acl"
	"github.com/zaris-io/zaris/internal/evloop"
	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/store"
)

// conn is one client connection. Its reader goroutine (serve) owns fr, out
// and the deadline state; wmu serialises writes to nc between the reader's
// flushes and worker-pool responses.
type conn struct {
	srv *Server
	nc  net.Conn
	// the user the handshake authenticated, and its cached lookup (acl.go)
	userName string
	aclSet   *acl.Set
	aclU     *acl.User
	dr       *deadlineReader
	fr       *wire.FrameReader
	out      []byte // responses of the current read batch, reader-owned
	// replyRoom is where the store builds a data command's array reply
	// (kv.Cmd.Out), cleared once the reply is encoded; reader-owned.
	replyRoom []kv.Reply

	wmu     sync.Mutex // guards writes to nc and werr
	werr    error
	pending sync.WaitGroup // worker-pool tasks of this connection

	consumed int64 // stream bytes taken up by frames so far (reader-owned)
	refused  bool  // a refusal was logged (reader-owned): log only the first
	newBatch bool  // the next frame starts a read batch (reader-owned)
	// lapStart is when the request being dispatched began, as monoSince
	// reads it (reader-owned): the end of the one before it in its read
	// batch, or the read that brought the batch — so timing a request
	// costs one clock read, not two (lap).
	lapStart time.Duration
	timed    bool // the request being dispatched was timed (lap ran)

	stopping atomic.Bool
	log      *slog.Logger
	streams  streamSet // watches and subscriptions of this connection

	// acks are the writes answered in out whose answer waits for the write
	// barrier (reader-owned): settled once per read batch, before out is
	// written, so a pipelined batch of sync writes waits once per segment,
	// not once per write.
	acks []pendingAck
	// barrierWrites and barrierStatus are settle's WaitAll arguments,
	// reused from batch to batch.
	barrierWrites []kv.SegmentWrite
	barrierStatus []kv.Status

	// warmLeft is how many buffered frames the last read-ahead covered,
	// warmSum keeps its loads, warmKeys is its keys' room (warmAhead;
	// reader-owned).
	warmLeft int
	warmSum  uint
	warmKeys [store.WarmBatch][]byte

	curCmd kv.CmdOp // the command being dispatched, for a contained panic's log (reader-owned)

	// shard is the connection's shard of the server's counters and of the
	// observer's (its consecutive requests keep those cache lines on the
	// CPU running it); counts is that shard of the server's.
	shard  uint32
	counts *counterShard

	// clientName is the handshake's ClientName (Config.WriteGate's argument).
	clientName string
	// gateHeld: the reader's current write holds the write gate (admit).
	gateHeld bool

	// member is the connection's event-loop registration (loop.go); nil
	// while it has its own goroutine. raw, rd and wr are the loop's
	// reads and writes.
	member *evloop.Member
	raw    syscall.RawConn
	rd     evloop.RawReader
	wr     evloop.RawWriter
}

// pendingAck is a write answered Success in out, pending the barrier: the
// offset of its status byte, and the segment and revision to wait for.
type pendingAck struct {
	pos   int
	seg   uint16
	rev   uint64
	write int // settle's index of its segment in the barrier's writes
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		srv: s, nc: nc,
		out: make([]byte, 0, 16<<10),
		log: s.log.With("remote", nc.RemoteAddr().String()),
	}
	c.dr = &deadlineReader{c: c, nc: nc, timeout: s.cfg.FrameTimeout, stopping: &c.stopping}
	c.fr = wire.NewFrameReader(c.dr, s.cfg.MaxFrameSize)
	c.shard = s.connSeq.Add(1)
	c.counts = &s.counts[c.shard&(counterShards-1)]
	return c
}

// deadlineReader arms a read deadline when the first bytes of a frame
// arrive, so a started frame must complete within timeout (slow-loris
// guard) while an idle connection between frames waits without one.
type deadlineReader struct {
	c        *conn
	nc       net.Conn
	timeout  time.Duration
	armed    bool
	deadline time.Time    // the read deadline set last (zero: none), which an event loop checks itself
	total    int64        // bytes read from nc
	stopping *atomic.Bool // the conn's: once set, reads must keep failing
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	var (
		n   int
		err error
	)
	if d.c.onLoop() {
		// One read that does not wait; "nothing yet" is an error the
		// frame reader's Fill passes on without keeping it.
		if n, err = d.c.rd.Try(d.c.raw, p); n == 0 && err == nil {
			return 0, errNothingYet
		}
	} else {
		n, err = d.nc.Read(p)
	}
	d.total += int64(n)
	if n > 0 && !d.armed {
		d.armed = true
		d.setDeadline(time.Now().Add(d.timeout))
	}
	return n, err
}

// setDeadline sets the read deadline unless stopReading ran: its deadline
// must win, or a reader re-arming concurrently would keep a busy connection
// reading through a shutdown. stopReading stores the flag before setting
// its deadline and this sets the deadline before loading the flag, so
// whichever runs second leaves "now" in place.
func (d *deadlineReader) setDeadline(t time.Time) {
	d.deadline = t
	_ = d.nc.SetReadDeadline(t)
	if d.stopping.Load() {
		_ = d.nc.SetReadDeadline(time.Now())
	}
}

// frameDone re-evaluates the deadline after a frame was handled, given the
// bytes read but not yet taken up by frames: none when there are none, a
// fresh one when a partial frame is waiting — or, when negative, when the
// rest of an oversized frame being skipped has yet to arrive.
func (d *deadlineReader) frameDone(unread int64) {
	switch {
	case unread == 0 && d.armed:
		d.armed = false
		d.setDeadline(time.Time{})
	case unread != 0:
		d.armed = true
		d.setDeadline(time.Now().Add(d.timeout))
	}
}

// unread is what frameDone needs: FrameReader.Buffered cannot tell an
// oversized frame skipped to its end from one whose body is still to come.
func (c *conn) unread() int64 { return c.dr.total - c.consumed }

// stopReading makes the reader's next read fail, which ends serve after the
// requests already read are answered (graceful shutdown).
func (c *conn) stopReading() {
	c.stopping.Store(true)
	_ = c.nc.SetReadDeadline(time.Now())
	if m := c.member; m != nil {
		m.Abort(false) // an event loop reads without a deadline: end its input instead
	}
}

// abort closes the connection on behalf of another goroutine. A socket an
// event loop polls is only shut down: the loop reads its end and closes it.
func (c *conn) abort() {
	if m := c.member; m != nil && m.Abort(true) {
		return
	}
	_ = c.nc.Close()
}

func (c *conn) serve() {
	if obs := c.srv.cfg.Observer; obs != nil {
		obs.ConnOpened()
	}
	if !c.handshake() {
		c.end()
		return
	}
	c.dr.frameDone(c.unread())
	c.newBatch = true
	if !c.fr.HasFrame() && c.toLoop() {
		return // the loop serves it from now on
	}
	c.serveRest()
}

// serveRest reads and answers frames on the connection's own goroutine
// until it ends.
func (c *conn) serveRest() {
	defer c.end()
	for c.step() {
	}
}

// end releases what the connection holds, once it is over.
func (c *conn) end() {
	c.streams.closeAll() // pushers end with the connection
	c.pending.Wait()     // worker tasks write to nc: let them finish first
	_ = c.nc.Close()
	c.srv.forget(c)
	if obs := c.srv.cfg.Observer; obs != nil {
		obs.ConnClosed()
	}
}

// step reads (waiting, unless a frame is buffered) and answers one frame.
// False when the connection must end.
func (c *conn) step() bool {
	f, err := c.fr.Next()
	if err != nil {
		var tooLarge *wire.FrameTooLargeError
		if errors.As(err, &tooLarge) {
			// The reader skips the body: answer by id and carry on.
			c.consumed += wire.LengthSize + int64(tooLarge.Size)
			c.refuse(tooLarge.ID, tooLarge.Op, kv.StatusBadRequest, err.Error())
			return c.afterFrame()
		}
		c.flush()
		c.logReadError(err)
		return false
	}
	c.consumed += int64(wire.HeaderSize + len(f.Body))
	if c.newBatch {
		if fc := c.srv.cfg.FreezeCheck; fc != nil {
			fc(time.Now()) // once per read batch, never per request
		}
	}
	if c.newBatch && c.srv.cfg.Observer != nil {
		c.lapStart = monoSince()
	}
	c.newBatch = false
	c.warmAhead(f)
	c.timed = false
	if !c.dispatchContained(f) {
		c.flush()
		return false
	}
	if !c.timed && c.srv.cfg.Observer != nil && c.fr.HasFrame() {
		// An untimed request (a ping, a refusal, a stream's start): the
		// next one in the batch begins now, not where this one began.
		c.lapStart = monoSince()
	}
	return c.afterFrame()
}

// warmAhead reads ahead the keys of f and of the requests buffered behind
// it (store.WarmAhead, issue #17): a pipeline's lookups then wait for their
// cache misses together instead of one request at a time. A lone request
// is not read ahead, and the requests a read-ahead covered do not start
// another.
func (c *conn) warmAhead(f wire.Frame) {
	if c.warmLeft > 0 {
		c.warmLeft--
		return
	}
	keys := c.warmKeys[:0]
	if k := wire.LeadingKey(f.Body); k != nil {
		keys = append(keys, k)
	}
	keys, c.warmLeft = c.fr.BufferedKeys(keys, store.WarmBatch-1)
	if len(keys) > 1 {
		c.warmSum += c.srv.cfg.Store.WarmAhead(keys)
	}
}

// maxCoalesced bounds the responses buffered before a write: a read batch
// of small requests for large values must not buffer gigabytes.
const maxCoalesced = 512 << 10

// afterFrame flushes when no complete request is buffered — one write per
// read batch; on an event loop, the loop writes it at the end of its round
// (Flush) — or when the batch's responses grew large, and re-arms the
// frame deadline. It reports false once writing failed: the connection is
// done (write logged why).
func (c *conn) afterFrame() bool {
	hasFrame := c.fr.HasFrame()
	c.newBatch = !hasFrame // the next frame is read from the socket
	switch {
	case len(c.out) >= maxCoalesced, !hasFrame && !c.loopFlushes():
		if !c.flush() {
			return false
		}
	}
	// With a complete request already buffered, the next Next does not read
	// from the socket: the deadline only matters before a read, so a
	// pipelined batch re-arms it once, not once per request.
	if !hasFrame && !c.stopping.Load() {
		c.dr.frameDone(c.unread())
	}
	return true
}

// refuse answers a request that cannot be executed with an error by its
// id. The first refusal on a connection is logged; later ones are not, so a
// misbehaving client cannot flood the log.
func (c *conn) refuse(id uint32, op wire.Opcode, st kv.Status, msg string) {
	c.out = appendError(c.out, id, op, st, msg)
	if !c.refused {
		c.refused = true
		c.log.Info("refused a request; later refusals on this connection are not logged",
			"id", id, "op", op.String(), "status", st.String(), "reason", msg)
	}
}

func (c *conn) logReadError(err error) {
	var ne net.Error
	switch {
	case c.writeFailed():
		// write logged it; the failed read is only its consequence.
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, syscall.ECONNRESET):
		c.log.Debug("client closed the connection")
	case c.stopping.Load():
		c.log.Debug("connection closed by shutdown")
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, os.ErrDeadlineExceeded):
		c.log.Warn("closing connection: a frame did not arrive in time", "frame_timeout", c.srv.cfg.FrameTimeout)
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.log.Info("client disconnected mid-frame", "err", err)
	default:
		c.log.Warn("closing connection after a protocol error", "err", err)
	}
}

// settle runs the write barrier for the writes answered in out: one wait
// per segment, for the highest revision written there, all segments at
// once; a write whose wait failed gets the barrier's status instead of
// Success.
func (c *conn) settle() {
	c.leaveLoop() // the barrier waits for the replicas
	writes := c.barrierWrites[:0]
	for k := range c.acks {
		a := &c.acks[k]
		i := slices.IndexFunc(writes, func(w kv.SegmentWrite) bool { return w.Segment == a.seg })
		if i < 0 {
			i = len(writes)
			writes = append(writes, kv.SegmentWrite{Segment: a.seg})
		}
		writes[i].Revision = max(writes[i].Revision, a.rev)
		a.write = i
	}
	status := slices.Grow(c.barrierStatus[:0], len(writes))[:len(writes)]
	c.srv.cfg.WriteBarrier.WaitAll(context.Background(), writes, status)
	for _, a := range c.acks {
		if st := status[a.write]; st != kv.StatusSuccess && c.out[a.pos] == byte(kv.StatusSuccess) {
			c.out[a.pos] = byte(st)
		}
	}
	c.barrierWrites, c.barrierStatus = writes[:0], status[:0]
	c.acks = c.acks[:0]
}

// flush writes the buffered responses — after the write barrier, when
// writes in them wait for it. It reports false once writing failed.
func (c *conn) flush() bool {
	if len(c.acks) > 0 {
		c.settle()
	}
	if len(c.out) == 0 {
		return true
	}
	ok := c.writeOut(c.out)
	if cap(c.out) > 1<<20 {
		c.out = make([]byte, 0, 16<<10) // do not keep a huge batch's buffer
	} else {
		c.out = c.out[:0]
	}
	return ok
}

// writeOut writes the reader's batch of responses. On an event loop it
// writes what the socket takes now; what it does not take — the client
// reads slowly — is written after the connection left the loop.
func (c *conn) writeOut(b []byte) bool {
	if !c.onLoop() {
		return c.write(b)
	}
	if !c.wmu.TryLock() { // someone else writes (cannot happen on the loop; never wait there)
		c.leaveLoop()
		return c.write(b)
	}
	defer c.wmu.Unlock()
	if c.werr != nil {
		return false
	}
	n, err := c.wr.Try(c.raw, b)
	switch {
	case err != nil:
		return c.writeFailedLocked(err)
	case n == len(b):
		return true
	}
	c.leaveLoop() // wmu still held: nothing else is written between the two parts
	return c.writeLocked(b[n:])
}

func (c *conn) write(b []byte) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(b)
}

func (c *conn) writeLocked(b []byte) bool {
	if c.werr != nil {
		return false
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.WriteTimeout))
	if _, err := c.nc.Write(b); err != nil {
		return c.writeFailedLocked(err)
	}
	return true
}

// writeFailedLocked records a failed write (wmu held); always false.
func (c *conn) writeFailedLocked(err error) bool {
	c.werr = err
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.log.Warn("closing connection: the client does not read its responses", "write_timeout", c.srv.cfg.WriteTimeout)
	} else {
		c.log.Debug("write failed; closing", "err", err)
	}
	// Wake the reader (it may be idle while a worker or a stream
	// wrote): nothing more can be answered on this connection.
	c.stopReading()
	return false
}

func (c *conn) writeFailed() bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.werr != nil
}

func appendError(dst []byte, id uint32, op wire.Opcode, st kv.Status, msg string) []byte {
	dst, start := wire.BeginFrame(dst, id, op, wire.FlagResponse|wire.FlagError)
	dst = wire.AppendErrorResponse(dst, st, msg)
	return wire.EndFrame(dst, start)
}

// refuseNotHandshake answers a first frame that is not a handshake and
// ends the connection.
func (c *conn) refuseNotHandshake(f wire.Frame) {
	st := kv.StatusBadRequest
	if len(c.srv.token) > 0 {
		st = kv.StatusUnauthorized
	}
	c.out = appendError(c.out, f.ID, f.Op, st, "the first frame must be a handshake")
	c.flush()
	c.log.Info("rejected a connection that did not start with a handshake", "op", f.Op)
}

// handshake runs the first exchange. It reports whether the connection may
// go on.
func (c *conn) handshake() bool {
	cfg := &c.srv.cfg
	_ = c.nc.SetWriteDeadline(time.Now().Add(cfg.HandshakeTimeout))
	c.dr.setDeadline(time.Now().Add(cfg.HandshakeTimeout))
	if tc, ok := c.nc.(interface{ Handshake() error }); ok {
		if err := tc.Handshake(); err != nil {
			c.log.Info("TLS handshake failed", "err", err)
			return false
		}
	}
	c.dr.armed = true // the handshake deadline covers the first frame
	// Refuse a first frame that is not a handshake by its header, before
	// waiting for its body: anything else on this port (an HTTP request,
	// another protocol) is closed at once (issue #15 item 4).
	if h, err := c.fr.PeekHeader(); err == nil && h.Op != wire.OpHandshake {
		c.refuseNotHandshake(h)
		return false
	}
	f, err := c.fr.Next()
	if err != nil {
		var tooLarge *wire.FrameTooLargeError
		if errors.As(err, &tooLarge) {
			c.out = appendError(c.out, tooLarge.ID, tooLarge.Op, kv.StatusBadRequest, "handshake frame too large")
			c.flush()
		}
		c.logReadError(err)
		return false
	}
	c.consumed += int64(wire.HeaderSize + len(f.Body))
	if f.Op != wire.OpHandshake {
		c.refuseNotHandshake(f)
		return false
	}
	var req wire.HandshakeRequest
	resp := wire.HandshakeResponse{NodeID: cfg.NodeID, ServerVersion: cfg.Version, MaxFrameSize: uint32(cfg.MaxFrameSize)}
	if err := wire.DecodeHandshakeRequest(f.Body, &req); err != nil {
		resp.Status, resp.Message = kv.StatusBadRequest, "malformed handshake: "+err.Error()
	} else if c.userName = c.srv.authenticate(req.User, req.Token); c.userName == "" {
		// Checked before anything else so an unauthenticated client learns
		// nothing about the store — not even its name.
		resp.Status, resp.Message = kv.StatusUnauthorized, "authentication failed"
	} else if v, ok := wire.NegotiateVersion(req.ProtocolVersion); !ok {
		resp.Status, resp.Message = kv.StatusBadRequest, "unsupported protocol version "+strconv.Itoa(int(req.ProtocolVersion))
	} else if req.Store != cfg.StoreName {
		resp.Status = kv.StatusBadRequest
		resp.Message = "store " + strconv.Quote(req.Store) + " is not served here; this cluster serves " + strconv.Quote(cfg.StoreName)
	} else {
		resp.Status, resp.ProtocolVersion = kv.StatusSuccess, v
		c.clientName = req.ClientName
	}
	c.out, _ = appendHandshake(c.out, f.ID, resp)
	ok := c.flush() && resp.Status == kv.StatusSuccess
	if resp.Status != kv.StatusSuccess {
		c.log.Info("handshake refused", "status", resp.Status, "reason", resp.Message, "client", req.ClientName)
	}
	_ = c.nc.SetWriteDeadline(time.Time{})
	c.dr.setDeadline(time.Time{})
	c.dr.armed = false
	return ok
}

func appendHandshake(dst []byte, id uint32, h wire.HandshakeResponse) ([]byte, int) {
	dst, start := wire.BeginFrame(dst, id, wire.OpHandshake, wire.FlagResponse)
	dst = wire.AppendHandshakeResponse(dst, h)
	return wire.EndFrame(dst, start), start
}

// view returns a string sharing b's memory, for lookups the store does not
// retain (Get, Delete, Expire, Persist, TTL copy nothing of the caller's key).
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func (c *conn) segment(key string) *store.Segment {
	return c.srv.cfg.Store.Segment(placement.SegmentOf(key, c.srv.segs))
}

// processStart anchors monoSince.
var processStart = time.Now()

// monoSince is the monotonic clock's reading as time since processStart:
// one clock read, no time.Time arithmetic.
func monoSince() time.Duration { return time.Since(processStart) }

// lap ends the timing of the request the reader dispatches and starts the
// next one's: its duration since lapStart, with one clock read.
func (c *conn) lap() time.Duration {
	now := monoSince()
	d := now - c.lapStart
	c.lapStart, c.timed = now, true
	return d
}

// dispatch executes one request and appends its response to c.out.
func (c *conn) dispatch(f wire.Frame) {
	obs := c.srv.cfg.Observer
	c.counts.requests.Add(1)
	if !c.permit(f) {
		return
	}
	if !opOnLoop(f.Op) {
		c.leaveLoop() // it may wait (loop.go)
	}
	var (
		res  kv.Result
		wkey []byte // the key a write changed (the write barrier's segment)
	)
	switch f.Op {
	case wire.OpGet, wire.OpDelete, wire.OpPersist, wire.OpTTL:
		kb, err := wire.DecodeKeyRequest(f.Body)
		if err != nil {
			c.badBody(f, err)
			return
		}
		key := view(kb)
		g := c.segment(key)
		switch f.Op {
		case wire.OpGet:
			res = g.Get(key)
		case wire.OpDelete, wire.OpPersist:
			if !c.admit(f) {
				return
			}
			if f.Op == wire.OpDelete {
				res, wkey = g.Delete(key), kb
			} else {
				res, wkey = g.Persist(key), kb
			}
			c.exitWrite()
		default:
			res = g.TimeToLive(key)
		}
	case wire.OpPut:
		var req wire.PutRequest
		if err := wire.DecodePutRequest(f.Body, &req); err != nil {
			c.badBody(f, err)
			return
		}
		if !c.admit(f) {
			return
		}
		res, wkey = c.put(req.Key, req.Value, &req.Options), req.Key
		c.exitWrite()
	case wire.OpExpire:
		kb, ttl, err := wire.DecodeExpireRequest(f.Body)
		if err != nil {
			c.badBody(f, err)
			return
		}
		if !c.admit(f) {
			return
		}
		key := view(kb)
		res, wkey = c.segment(key).Expire(key, ttl), kb
		c.exitWrite()
	case wire.OpBatch:
		c.batch(f)
		return
	case wire.OpCommand:
		var cmd kv.Cmd
		if err := wire.DecodeCommandRequest(f.Body, &cmd); err != nil {
			c.badBody(f, err)
			return
		}
		c.curCmd = cmd.Op
		writes := store.CommandWrites(cmd.Op)
		if writes && !c.admit(f) {
			return
		}
		if cmd.Op.NodeLevel() {
			c.leaveLoop() // a scan, a transaction phase or a flush may wait
		} else {
			cmd.Out = &c.replyRoom // one segment's command, encoded below
		}
		reply := c.srv.cfg.Store.Exec(cmd)
		c.exitWrite()
		if c.srv.cfg.WriteBarrier != nil && reply.Status == kv.StatusSuccess && writes {
			if st := c.commandBarrier(cmd); st != kv.StatusSuccess {
				reply = kv.Reply{Status: st, Message: "not acknowledged by the replicas in time; the write is applied on the owner"}
			}
		}
		c.appendReply(f.ID, f.Op, reply)
		kv.ResetOut(&c.replyRoom) // encoded: keep no value reachable
		if obs != nil {
			obs.Op(c.shard, f.Op, reply.Status, c.lap())
		}
		return
	case wire.OpWatch:
		c.watch(f)
		return
	case wire.OpSubscribe:
		c.subscribe(f)
		return
	case wire.OpEndStream:
		c.appendReply(f.ID, f.Op, c.endStream(f))
		return
	case wire.OpPublish:
		c.appendReply(f.ID, f.Op, c.publish(f))
		return
	case wire.OpRoutingMap:
		c.routingMap(f)
		return
	case wire.OpPing:
		c.out = wire.AppendFrame(c.out, f.ID, f.Op, wire.FlagResponse, f.Body)
		return
	case wire.OpInfo:
		c.out = wire.AppendFrame(c.out, f.ID, f.Op, wire.FlagResponse, wire.AppendInfoResponse(nil, c.info()))
		return
	case wire.OpHandshake:
		c.refuse(f.ID, f.Op, kv.StatusBadRequest, "handshake already done")
		return
	default:
		c.refuse(f.ID, f.Op, kv.StatusBadRequest, "unknown opcode "+f.Op.String())
		return
	}
	if c.srv.cfg.WriteBarrier != nil && res.Status == kv.StatusSuccess && wkey != nil {
		// The answer's status byte follows the frame header and the
		// result's array header (wire.AppendResult); settle patches it.
		c.acks = append(c.acks, pendingAck{pos: len(c.out) + wire.HeaderSize + 1,
			seg: placement.SegmentOf(view(wkey), c.srv.segs), rev: res.Revision})
	}
	c.out = appendResult(c.out, f.ID, f.Op, res)
	if obs != nil {
		obs.Op(c.shard, f.Op, res.Status, c.lap())
	}
}

// commandBarrier waits for the write barrier after a successful write
// command: on its key's segment, or on every owned segment for a
// node-level commit (a transaction's keys, a flush), each at its current
// revision — at or past the command's own writes.
func (c *conn) commandBarrier(cmd kv.Cmd) kv.Status {
	c.leaveLoop() // the barrier waits for the replicas
	st := c.srv.cfg.Store
	var segs []uint16
	if cmd.Op.NodeLevel() {
		for i := range st.Segments() {
			if st.Segment(uint16(i)).Owned() {
				segs = append(segs, uint16(i))
			}
		}
	} else {
		segs = append(segs, placement.SegmentOf(cmd.Key, c.srv.segs))
	}
	writes := make([]kv.SegmentWrite, len(segs))
	for i, seg := range segs {
		writes[i] = kv.SegmentWrite{Segment: seg, Revision: st.Segment(seg).Revision()}
	}
	status := make([]kv.Status, len(writes))
	c.srv.cfg.WriteBarrier.WaitAll(context.Background(), writes, status)
	for _, s := range status {
		if s != kv.StatusSuccess {
			return s
		}
	}
	return kv.StatusSuccess
}

func appendResult(dst []byte, id uint32, op wire.Opcode, res kv.Result) []byte {
	dst, start := wire.BeginFrame(dst, id, op, wire.FlagResponse)
	dst = wire.AppendResult(dst, res)
	return wire.EndFrame(dst, start)
}

func (c *conn) badBody(f wire.Frame, err error) {
	c.refuse(f.ID, f.Op, kv.StatusBadRequest, err.Error())
	if obs := c.srv.cfg.Observer; obs != nil {
		obs.Op(c.shard, f.Op, kv.StatusBadRequest, 0)
	}
}

// put writes the key and value, views of the read buffer: the store copies
// both into the record.
func (c *conn) put(kb, vb []byte, opts *kv.PutOptions) kv.Result {
	st := c.srv.cfg.Store
	if len(vb) > st.MaxItemBytes() {
		return kv.Result{Status: kv.StatusItemTooLarge,
			Detail: fmt.Sprintf("value of %d bytes exceeds --max-item-bytes %d", len(vb), st.MaxItemBytes())}
	}
	key := view(kb) // the store copies key and value into the record
	return c.segment(key).Put(key, vb, opts)
}

// batch runs a Batch request: inline when small, on the worker pool when
// large (its body is copied first: the read buffer moves on).
func (c *conn) batch(f wire.Frame) {
	items, err := wire.DecodeBatchRequest(f.Body, nil)
	if err != nil {
		c.badBody(f, err)
		return
	}
	c.counts.batches.Add(1)
	c.counts.batchItems.Add(uint64(len(items)))
	if len(items) <= c.srv.cfg.PoolBatchThreshold {
		c.out = c.appendBatch(c.out, f.ID, items, true)
		return
	}
	c.leaveLoop() // submitting may wait for a free worker, and the worker writes to the socket
	body := append([]byte(nil), f.Body...)
	id := f.ID
	c.pending.Add(1)
	c.srv.pool.submit(func() {
		defer c.pending.Done()
		defer c.guardRequest(id, wire.OpBatch, "Batch (worker pool)")
		items, _ := wire.DecodeBatchRequest(body, nil) // decoded once already: cannot fail
		c.write(c.appendBatch(nil, id, items, false))
	})
}

// appendBatch runs a batch and appends its answer; onReader is false on a
// worker (the pool's), which times the batch itself.
func (c *conn) appendBatch(dst []byte, id uint32, items []wire.BatchItem, onReader bool) []byte {
	obs := c.srv.cfg.Observer
	var began time.Duration
	if obs != nil && !onReader {
		began = monoSince()
	}
	dst, start := wire.BeginFrame(dst, id, wire.OpBatch, wire.FlagResponse)
	dst = wire.AppendBatchResultHeader(dst, len(items))
	if c.srv.cfg.WriteBarrier != nil {
		return c.appendBatchBarrier(dst, start, items, onReader, began)
	}
	worst := kv.StatusSuccess
	for i := range items {
		res := c.batchItem(&items[i])
		if res.Status != kv.StatusSuccess && res.Status != kv.StatusNotFound {
			worst = res.Status
		}
		dst = wire.AppendResult(dst, res)
	}
	if obs != nil {
		obs.Op(c.shard, wire.OpBatch, worst, c.batchTime(onReader, began))
	}
	return wire.EndFrame(dst, start)
}

// batchTime is a batch's duration: the reader's lap, or on a worker the
// time since began.
func (c *conn) batchTime(onReader bool, began time.Duration) time.Duration {
	if onReader {
		return c.lap()
	}
	return monoSince() - began
}

func (c *conn) batchItem(it *wire.BatchItem) kv.Result {
	switch it.Op {
	case wire.BatchGet:
		key := view(it.Key)
		return c.segment(key).Get(key)
	case wire.BatchPut, wire.BatchDelete:
		held, refused := c.admitItem()
		if refused.Status != kv.StatusSuccess {
			return refused
		}
		defer c.exitItem(held)
		if it.Op == wire.BatchPut {
			return c.put(it.Key, it.Value, &it.Options)
		}
		key := view(it.Key)
		return c.segment(key).Delete(key)
	}
	return kv.Result{Status: kv.StatusBadRequest}
}

// appendBatchBarrier runs a batch under the write barrier: every item
// first, then one wait per segment written (at the highest revision the
// batch wrote there); a write whose segment timed out answers the
// barrier's status.
func (c *conn) appendBatchBarrier(dst []byte, start int, items []wire.BatchItem, onReader bool, began time.Duration) []byte {
	c.leaveLoop() // the barrier waits for the replicas
	results := make([]kv.Result, len(items))
	segs := make([]uint16, len(items))
	high := map[uint16]uint64{}
	for i := range items {
		it := &items[i]
		results[i] = c.batchItem(it)
		if it.Op != wire.BatchGet && results[i].Status == kv.StatusSuccess {
			segs[i] = placement.SegmentOf(view(it.Key), c.srv.segs)
			high[segs[i]] = max(high[segs[i]], results[i].Revision)
		}
	}
	writes := make([]kv.SegmentWrite, 0, len(high))
	for seg, rev := range high {
		writes = append(writes, kv.SegmentWrite{Segment: seg, Revision: rev})
	}
	status := make([]kv.Status, len(writes))
	c.srv.cfg.WriteBarrier.WaitAll(context.Background(), writes, status)
	verdict := make(map[uint16]kv.Status, len(writes))
	for i, w := range writes {
		verdict[w.Segment] = status[i]
	}
	worst := kv.StatusSuccess
	for i := range results {
		res := results[i]
		if items[i].Op != wire.BatchGet && res.Status == kv.StatusSuccess {
			res.Status = verdict[segs[i]]
		}
		if res.Status != kv.StatusSuccess && res.Status != kv.StatusNotFound {
			worst = res.Status
		}
		dst = wire.AppendResult(dst, res)
	}
	if obs := c.srv.cfg.Observer; obs != nil {
		obs.Op(c.shard, wire.OpBatch, worst, c.batchTime(onReader, began))
	}
	return wire.EndFrame(dst, start)
}

func (c *conn) info() wire.InfoResponse {
	st := c.srv.cfg.Store.Stats()
	info := wire.InfoResponse{Status: kv.StatusSuccess, Fields: map[string]string{
		"node_id":          c.srv.cfg.NodeID,
		"store":            c.srv.cfg.StoreName,
		"version":          c.srv.cfg.Version,
		"segments":         strconv.Itoa(st.Segments),
		"items":            strconv.FormatInt(st.Items, 10),
		"owned_bytes":      strconv.FormatInt(st.OwnedBytes, 10),
		"max_memory_bytes": strconv.FormatInt(st.MaxMemoryBytes, 10),
		"evicted":          strconv.FormatUint(st.Evicted, 10),
		"expired":          strconv.FormatUint(st.Expired, 10),
	}}
	if rf := c.srv.cfg.ReplicationFactor; rf > 0 {
		info.Fields["replication_factor"] = strconv.Itoa(rf)
	}
	ls := c.srv.LoopStats()
	info.Fields["event_loops"] = strconv.Itoa(ls.Loops)
	info.Fields["event_loop_clients"] = strconv.Itoa(ls.Connections)
	info.Fields["event_loop_leaves"] = strconv.FormatUint(ls.Leaves, 10)
	return info
}

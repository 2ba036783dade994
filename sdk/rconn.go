package sdk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
)

// rconn is one multiplexed connection to a server: callers append request
// frames to a shared buffer, one writer goroutine writes whatever has
// accumulated in a single syscall (coalescing pipelined requests), and one
// reader goroutine completes the waiting callers by request id.
type rconn struct {
	nc       net.Conn
	endpoint string
	nodeID   string // the server's node id, from the handshake
	maxFrame int

	wmu   sync.Mutex // guards wbuf
	wbuf  []byte
	wkick chan struct{} // capacity 1: "wbuf has data"

	mu     sync.Mutex // guards calls, unary, nextID, err, expiry, expiryAt
	calls  map[uint32]*pendingCall
	unary  int // the calls in calls that are not streams
	nextID uint32
	err    error // set once when the connection breaks
	// expiry fails the calls whose SDK-set deadline passed (expire); it is
	// armed for expiryAt, the earliest such deadline (zero: not armed).
	expiry   *time.Timer
	expiryAt time.Time

	dead atomic.Bool
	done chan struct{} // closed when the connection is finished
}

type response struct {
	flags wire.Flags
	body  []byte
}

// Markers a waiting call receives instead of a response frame's flags
// (flagsExpired lacks FlagResponse, which every answer carries).
const (
	flagsLost    wire.Flags = 0xff // the connection broke
	flagsExpired wire.Flags = 0xfe // the call's deadline passed (expire)
)

type pendingCall struct {
	ch chan response // capacity 1, or the stream buffer for a stream
	// deadline is the SDK-set deadline the connection enforces (zero:
	// the caller's context does).
	deadline time.Time
	// stream: the call is a response stream (watch, subscription): frames
	// with FlagStream are items and keep it registered; the last frame ends it.
	stream bool

	// For streams, the read loop delivers and the read loop or shutdown
	// closes: smu orders the two so a frame is never sent on a closed channel.
	smu    sync.Mutex
	closed bool
}

// offer delivers a stream frame without blocking; false when the consumer
// is too far behind (the channel is full) — or the stream already ended.
func (pc *pendingCall) offer(r response) (sent, ended bool) {
	pc.smu.Lock()
	defer pc.smu.Unlock()
	if pc.closed {
		return false, true
	}
	select {
	case pc.ch <- r:
		return true, false
	default:
		return false, false
	}
}

// end closes a stream's channel once.
func (pc *pendingCall) end() {
	pc.smu.Lock()
	defer pc.smu.Unlock()
	if !pc.closed {
		pc.closed = true
		close(pc.ch)
	}
}

var callPool = sync.Pool{New: func() any { return &pendingCall{ch: make(chan response, 1)} }}

// handshake performs the protocol handshake on nc and starts the
// connection's goroutines.
func handshake(ctx context.Context, nc net.Conn, ep string, req wire.HandshakeRequest) (*rconn, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	// A cancelled context ends the exchange at once too (a deadline in the
	// past wakes the blocked read or write), and the error says so.
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	ended := func(err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("%w (%w)", cerr, err)
		}
		// The connection's deadline is the context's: it can fire a moment
		// before the context reports it.
		if dl, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(dl) {
			return fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
		}
		return err
	}
	frame := wire.AppendFrame(nil, 1, wire.OpHandshake, 0, wire.AppendHandshakeRequest(nil, req))
	if _, err := nc.Write(frame); err != nil {
		return nil, fmt.Errorf("%s: sending handshake: %w", ep, ended(err))
	}
	fr := wire.NewFrameReader(nc, wire.DefaultMaxFrameSize)
	f, err := fr.Next()
	if err != nil {
		return nil, fmt.Errorf("%s: reading handshake response: %w", ep, ended(err))
	}
	if f.Flags.Has(wire.FlagError) {
		var e wire.ErrorResponse
		_ = wire.DecodeErrorResponse(f.Body, &e)
		return nil, &HandshakeError{Endpoint: ep, Status: e.Status, Message: e.Message}
	}
	var resp wire.HandshakeResponse
	if err := wire.DecodeHandshakeResponse(f.Body, &resp); err != nil {
		return nil, fmt.Errorf("%s: malformed handshake response: %w", ep, err)
	}
	if resp.Status != kv.StatusSuccess {
		return nil, &HandshakeError{Endpoint: ep, Status: resp.Status, Message: resp.Message}
	}
	if !wire.SupportedVersion(resp.ProtocolVersion) {
		return nil, &HandshakeError{Endpoint: ep, Status: kv.StatusBadRequest,
			Message: fmt.Sprintf("server chose protocol version %d, which this client does not speak", resp.ProtocolVersion)}
	}
	if !stop() {
		// Cancelled after the answer: the connection's deadline may be in
		// the past already; the caller gave up.
		return nil, fmt.Errorf("%s: handshake: %w", ep, context.Cause(ctx))
	}
	_ = nc.SetDeadline(time.Time{})
	c := &rconn{
		nc: nc, endpoint: ep, nodeID: resp.NodeID, maxFrame: int(resp.MaxFrameSize),
		wkick: make(chan struct{}, 1),
		calls: make(map[uint32]*pendingCall), nextID: 1,
		done: make(chan struct{}),
	}
	if c.maxFrame == 0 {
		c.maxFrame = wire.DefaultMaxFrameSize
	}
	go c.writeLoop()
	go c.readLoop(fr)
	return c, nil
}

func (c *rconn) broken() bool { return c.dead.Load() }

// shutdown breaks the connection and fails every waiting call with err.
func (c *rconn) shutdown(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	c.dead.Store(true)
	calls := c.calls
	c.calls = map[uint32]*pendingCall{}
	c.unary = 0
	if c.expiry != nil {
		c.expiry.Stop()
	}
	c.mu.Unlock()
	_ = c.nc.Close()
	close(c.done)
	for _, pc := range calls {
		if pc.stream {
			pc.end() // the consumer sees the end; Err says the connection was lost
			continue
		}
		pc.ch <- response{flags: flagsLost}
	}
}

// openStream sends a streaming request and returns the channel of its
// frames: items have FlagStream; the last frame does not; the channel is
// closed after it (or when the connection is lost or the consumer fell
// more than buffer frames behind). flags are the request frame's flags
// (FlagStream asks OpRoutingMap for a stream; OpWatch and OpSubscribe
// stream without it).
func (c *rconn) openStream(op wire.Opcode, flags wire.Flags, body func([]byte) []byte, buffer int) (uint32, <-chan response, error) {
	pc := &pendingCall{ch: make(chan response, buffer), stream: true}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return 0, nil, notSent(c.lostErr(err))
	}
	id := c.nextID
	c.nextID++
	if c.nextID == 0 {
		c.nextID = 1
	}
	c.calls[id] = pc
	c.mu.Unlock()
	c.send(id, op, flags, body)
	return id, pc.ch, nil
}

// endStream asks the server to end a stream; its last frame closes the
// stream's channel.
func (c *rconn) endStream(id uint32) {
	c.send(c.reserveID(), wire.OpEndStream, 0, func(dst []byte) []byte { return wire.AppendEndStreamRequest(dst, id) })
}

func (c *rconn) reserveID() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.nextID
	c.nextID++
	if c.nextID == 0 {
		c.nextID = 1
	}
	return id // no waiter: the reply is dropped by the read loop
}

func (c *rconn) send(id uint32, op wire.Opcode, flags wire.Flags, body func([]byte) []byte) {
	c.wmu.Lock()
	var start int
	c.wbuf, start = wire.BeginFrame(c.wbuf, id, op, flags)
	c.wbuf = body(c.wbuf)
	c.wbuf = wire.EndFrame(c.wbuf, start)
	c.wmu.Unlock()
	select {
	case c.wkick <- struct{}{}:
	default:
	}
}

func (c *rconn) roundTrip(ctx context.Context, op wire.Opcode, body func([]byte) []byte) (response, error) {
	pc := callPool.Get().(*pendingCall)
	done, deadline := waitOn(ctx)
	pc.deadline = deadline
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		callPool.Put(pc)
		return response{}, notSent(c.lostErr(err))
	}
	id := c.nextID
	c.nextID++
	if c.nextID == 0 {
		c.nextID = 1 // id 0 is reserved for server pushes
	}
	c.calls[id] = pc
	c.unary++
	if !deadline.IsZero() {
		c.armExpiryLocked(deadline)
	}
	c.mu.Unlock()

	c.send(id, op, 0, body)

	select {
	case resp := <-pc.ch:
		callPool.Put(pc)
		switch resp.flags {
		case flagsLost:
			c.mu.Lock()
			err := c.err
			c.mu.Unlock()
			return response{}, c.lostErr(err)
		case flagsExpired:
			return response{}, context.DeadlineExceeded
		}
		return resp, nil
	case <-done:
		c.mu.Lock()
		_, waiting := c.calls[id]
		if waiting {
			delete(c.calls, id)
			c.unary--
		}
		c.mu.Unlock()
		if waiting {
			callPool.Put(pc) // nobody will send on it any more
		}
		// else: a response or the loss marker is (being) sent on pc.ch; the
		// call is dropped, not pooled, since its channel may still be written.
		return response{}, ctx.Err()
	}
}

// armExpiryLocked makes sure the expiry timer fires by deadline. A call's
// deadline is usually later than the one armed (the same timeout, counted
// from a later start): then nothing is done.
func (c *rconn) armExpiryLocked(deadline time.Time) {
	if !c.expiryAt.IsZero() && !deadline.Before(c.expiryAt) {
		return
	}
	c.expiryAt = deadline
	if c.expiry == nil {
		c.expiry = time.AfterFunc(time.Until(deadline), c.expire)
		return
	}
	c.expiry.Reset(time.Until(deadline))
}

// expire fails the calls whose deadline passed with flagsExpired — the
// request may still be answered; its answer is then dropped, as after a
// caller gives up — and arms the timer for the earliest deadline left.
func (c *rconn) expire() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return // shutdown failed every call
	}
	now := time.Now()
	var expired []*pendingCall
	var next time.Time
	for id, pc := range c.calls {
		switch {
		case pc.stream || pc.deadline.IsZero():
		case !now.Before(pc.deadline):
			delete(c.calls, id)
			c.unary--
			expired = append(expired, pc)
		case next.IsZero() || pc.deadline.Before(next):
			next = pc.deadline
		}
	}
	c.expiryAt = next
	if !next.IsZero() {
		c.expiry.Reset(next.Sub(now))
	}
	c.mu.Unlock()
	for _, pc := range expired {
		pc.ch <- response{flags: flagsExpired}
	}
}

// notSentError marks a failure that happened before the request left this
// process (no connection, or a connection already known to be broken): a
// retry cannot apply it twice. The message is the cause's.
type notSentError struct{ err error }

func (e *notSentError) Error() string { return e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }

func notSent(err error) error {
	if err == nil {
		return nil
	}
	var ns *notSentError
	if errors.As(err, &ns) {
		return err
	}
	return &notSentError{err}
}

// wasNotSent reports whether err says the request never left this process.
func wasNotSent(err error) bool {
	var ns *notSentError
	return errors.As(err, &ns)
}

func (c *rconn) lostErr(err error) error {
	if errors.Is(err, ErrClosed) {
		return ErrClosed
	}
	return fmt.Errorf("%w: connection to %s lost: %w", ErrUnreachable, c.endpoint, err)
}

func (c *rconn) writeLoop() {
	var buf []byte
	for {
		select {
		case <-c.done:
			return
		case <-c.wkick:
		}
		if c.othersInFlight() {
			// The callers whose answers just came in are about to send
			// again: let them append before the write, so one write
			// carries many requests (a yield, not a wait: with nothing
			// else runnable it returns at once).
			runtime.Gosched()
		}
		c.wmu.Lock()
		buf, c.wbuf = c.wbuf, buf[:0]
		c.wmu.Unlock()
		if len(buf) == 0 {
			continue
		}
		if _, err := c.nc.Write(buf); err != nil {
			c.shutdown(err)
			return
		}
		if cap(buf) > 1<<20 {
			buf = nil
		}
	}
}

// othersInFlight reports whether more than one call (streams aside) waits
// on the connection: a lone caller's request is written at once.
func (c *rconn) othersInFlight() bool {
	c.mu.Lock()
	n := c.unary
	c.mu.Unlock()
	return n > 1
}

func (c *rconn) readLoop(fr *wire.FrameReader) {
	for {
		f, err := fr.Next()
		if err != nil {
			c.shutdown(err)
			return
		}
		c.mu.Lock()
		pc := c.calls[f.ID]
		if pc != nil && !(pc.stream && f.Flags.Has(wire.FlagStream)) {
			delete(c.calls, f.ID)
			if !pc.stream {
				c.unary--
			}
		}
		c.mu.Unlock()
		if pc == nil {
			continue // its caller gave up (deadline) or a stream already ended
		}
		resp := response{flags: f.Flags, body: append([]byte(nil), f.Body...)}
		if !pc.stream {
			pc.ch <- resp
			continue
		}
		sent, ended := pc.offer(resp)
		switch {
		case ended:
		case sent:
			if !f.Flags.Has(wire.FlagStream) {
				pc.end()
			}
		default:
			// The consumer fell behind: end the stream here and on the server.
			c.mu.Lock()
			delete(c.calls, f.ID)
			c.mu.Unlock()
			pc.end()
			go c.endStream(f.ID)
		}
	}
}

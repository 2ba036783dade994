package native

import (
	"errors"
	"io"
	"syscall"
	"time"

	"github.com/zaris-io/zaris/internal/evloop"
	"github.com/zaris-io/zaris/internal/wire"
)

// Event loops (D66, internal/evloop). On Linux a plain-TCP connection
// whose handshake is done moves to an event loop, which serves every
// readable connection in turn: whole frames already read are answered
// inline and the batch's responses written without waiting. A loop must
// never wait for anything but its epoll: before a request that may wait —
// a stream (watch, subscribe), a publish, a node-level command (scan, a
// transaction phase, flush), a batch for the worker pool, the write
// barrier of sync replication — or a frame larger than the read buffer, or
// responses the socket does not take at once, the connection leaves the
// loop for good and goes on on the goroutine that ran the loop.

// errNothingYet is the loop's read finding the socket empty: Fill passes
// it on without keeping it.
var errNothingYet = errors.New("native: nothing to read yet")

// onLoop reports whether an event loop serves the connection.
func (c *conn) onLoop() bool { return c.member != nil && c.member.OnLoop() }

// leaveLoop moves the connection off its event loop: this goroutine (the
// connection's reader) stays with it and a new one runs the loop. A no-op
// on a connection with its own goroutine.
func (c *conn) leaveLoop() {
	if !c.onLoop() {
		return
	}
	c.member.Leave()
	c.srv.loopLeaves.Add(1)
}

// toLoop registers the connection on an event loop, after its handshake,
// when nothing complete is buffered (the reader would wait next). False
// when it stays on its goroutine.
func (c *conn) toLoop() bool {
	s := c.srv
	s.mu.Lock()
	if len(s.loops) == 0 || s.shutting || c.stopping.Load() {
		s.mu.Unlock()
		return false
	}
	nc, ok := evloop.Wrap(c.nc)
	if !ok {
		s.mu.Unlock()
		return false
	}
	raw, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		s.mu.Unlock()
		_ = nc.Close()
		return false
	}
	// Under mu: Shutdown reads nc and member under it.
	c.nc, c.dr.nc, c.raw = nc, nc, raw
	c.member = s.loops[s.loopNext.Add(1)%uint32(len(s.loops))].NewMember(nc, c)
	s.mu.Unlock()
	if !c.member.Register() {
		return false // the socket went back to the netpoller: the goroutine serves on
	}
	if c.stopping.Load() {
		c.member.Abort(false) // a shutdown between the check and the registration
	}
	return true
}

// opOnLoop reports whether a request with this opcode may run on the loop
// (a Batch or a Command is checked again once decoded).
func opOnLoop(op wire.Opcode) bool {
	switch op {
	case wire.OpWatch, wire.OpSubscribe, wire.OpEndStream, wire.OpPublish:
		return false
	}
	return true
}

// Ready serves one readiness on the loop (evloop.Handler): one read, then
// every whole frame buffered; the batch's responses are written by the
// last frame's afterFrame. False when the connection must end.
func (c *conn) Ready() bool {
	// Shut down (graceful): answer what was read, read no more. (A socket
	// whose input was shut down may still take a busy client's bytes.)
	stopping := c.stopping.Load()
	var err error
	if !stopping {
		err = c.fr.Fill()
	}
	if err != nil && !errors.Is(err, errNothingYet) {
		if errors.Is(err, io.EOF) && c.fr.Buffered() > 0 {
			err = io.ErrUnexpectedEOF
		}
		c.logReadError(err)
		return false
	}
	c.newBatch = true
	for c.onLoop() {
		if c.fr.Streams() {
			c.leaveLoop() // Next reads the frame as it arrives: not on the loop
			break
		}
		if !c.fr.HasFrame() {
			break
		}
		if !c.step() {
			return false
		}
	}
	if stopping {
		c.flush()
		return false
	}
	if !c.onLoop() {
		return c.flush() // left during the batch: nobody else writes its replies
	}
	return true
}

// loopFlushes reports whether the loop writes the read batch's replies at
// the end of its round (Flush) rather than the batch's last frame: the
// connection is on the loop and not stopping.
func (c *conn) loopFlushes() bool { return c.onLoop() && !c.stopping.Load() }

// Flush writes the replies of the read batch Ready served, once the loop
// has served every connection of its round (evloop.Flusher, D81).
func (c *conn) Flush() bool { return c.flush() }

// ServeLeft goes on, on the goroutine that ran the loop, with a
// connection that left it during Ready.
func (c *conn) ServeLeft(alive bool) {
	if !alive {
		c.end()
		return
	}
	c.serveRest()
}

// Drop ends a connection the loop closes, off the loop (end waits for the
// connection's workers).
func (c *conn) Drop() { go c.end() }

// Expired reports a frame that did not complete in time (the slow-loris
// guard the goroutine model's read deadline is).
func (c *conn) Expired(now time.Time) bool {
	if c.dr.deadline.IsZero() || !now.After(c.dr.deadline) {
		return false
	}
	c.log.Warn("closing connection: a frame did not arrive in time", "frame_timeout", c.srv.cfg.FrameTimeout)
	return true
}

// LoopStats is what the event loops hold: how many run, how many
// connections they serve now, and how many connections left them.
type LoopStats struct {
	Loops, Connections int
	Leaves             uint64
}

// LoopStats reports the event loops' state (INFO, tests).
func (s *Server) LoopStats() LoopStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := LoopStats{Loops: len(s.loops), Leaves: s.loopLeaves.Load()}
	for c := range s.conns {
		if m := c.member; m != nil && m.OnLoop() {
			st.Connections++
		}
	}
	return st
}

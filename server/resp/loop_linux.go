package resp

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// eventLoop is one event loop: an epoll instance (level-triggered: a
// connection not read to the end, or left behind when the loop changed
// goroutines, is reported again) and the connections registered on it.
// Exactly one goroutine runs it at a time; conns is read by that goroutine
// and written by the accepting one, hence the mutex.
type eventLoop struct {
	srv  *Server
	ep   int
	wake int // eventfd registered under wakeID: stop

	mu    sync.Mutex
	conns map[int64]*conn

	stopped   atomic.Bool
	done      chan struct{} // closed by the last runner when stopped
	lastSweep time.Time     // runner-owned
}

// wakeID is the epoll data of the wake eventfd (connection ids start at 1).
const wakeID = 0

// idleSweep is how often a loop looks for connections idle past the
// timeout (the goroutine model's read deadline, coarser).
const idleSweep = time.Second

func newEventLoops(s *Server, n int) ([]*eventLoop, error) {
	loops := make([]*eventLoop, 0, n)
	for range n {
		l, err := newEventLoop(s)
		if err != nil {
			for _, l := range loops {
				l.stop()
			}
			return nil, err
		}
		loops = append(loops, l)
		go l.run()
	}
	return loops, nil
}

func newEventLoop(s *Server) (*eventLoop, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = unix.Close(ep)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	setEventID(&ev, wakeID)
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, wake, &ev); err != nil {
		_ = unix.Close(ep)
		_ = unix.Close(wake)
		return nil, err
	}
	return &eventLoop{srv: s, ep: ep, wake: wake, conns: map[int64]*conn{}, done: make(chan struct{}), lastSweep: time.Now()}, nil
}

func setEventID(ev *unix.EpollEvent, id int64) {
	ev.Fd = int32(uint32(id))
	ev.Pad = int32(uint32(uint64(id) >> 32))
}

func eventID(ev *unix.EpollEvent) int64 {
	return int64(uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32)
}

// adopt registers c on the loop. False when it cannot (the caller then
// serves c on its own goroutine).
func (l *eventLoop) adopt(c *conn) bool {
	if c.raw == nil || l.stopped.Load() {
		return false
	}
	c.lp = l
	c.clock = time.Now()
	c.looped.Store(true)
	l.mu.Lock()
	l.conns[c.id] = c
	l.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP}
	setEventID(&ev, c.id)
	var err error
	cerr := c.raw.Control(func(fd uintptr) { err = unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, int(fd), &ev) })
	if err == nil && cerr == nil {
		return true
	}
	l.mu.Lock()
	delete(l.conns, c.id)
	l.mu.Unlock()
	c.lp = nil
	c.looped.Store(false)
	if lc, ok := c.nc.(*loopNetConn); ok {
		_ = lc.handOver() // its own goroutine reads through the netpoller
	}
	return false
}

// release takes c off the loop (it is closing, or leaving for its own
// goroutine). Called by the goroutine serving c.
func (l *eventLoop) release(c *conn) {
	_ = c.raw.Control(func(fd uintptr) { _ = unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, int(fd), nil) })
	l.mu.Lock()
	delete(l.conns, c.id)
	l.mu.Unlock()
	c.lp = nil
	c.looped.Store(false)
}

// leave takes c off the loop for a goroutine of its own — the caller's:
// a new goroutine runs the loop from now on — and gives its socket back to
// Go's netpoller.
func (l *eventLoop) leave(c *conn) {
	l.release(c)
	go l.run()
	if lc, ok := c.nc.(*loopNetConn); ok {
		if err := lc.handOver(); err != nil {
			c.logger().Debug("handing the socket over from the event loop failed; closing", "err", err)
		}
	}
}

// wrap takes nc's socket out of the netpoller for the loop; nc itself when
// it cannot (the connection then gets its own goroutine).
func wrapForLoop(nc net.Conn) (net.Conn, bool) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc, false
	}
	lc, err := newLoopNetConn(tc)
	if err != nil {
		return nc, false
	}
	return lc, true
}

// run is the loop: wait, then serve every ready connection in turn. A
// connection that leaves the loop takes this goroutine with it (leaveLoop
// started the loop's next runner).
func (l *eventLoop) run() {
	events := make([]unix.EpollEvent, 128)
	for {
		n, err := unix.EpollWait(l.ep, events, int(idleSweep/time.Millisecond))
		if l.stopped.Load() {
			l.exit()
			return
		}
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			// Not expected of a valid epoll descriptor: the loop ends and
			// each of its connections goes on on a goroutine of its own.
			l.srv.log.Error("event loop failed; its connections leave it", "err", err)
			l.stopped.Store(true)
			l.mu.Lock()
			left := make([]*conn, 0, len(l.conns))
			for _, c := range l.conns {
				left = append(left, c)
			}
			l.mu.Unlock()
			for _, c := range left {
				l.release(c)
				go c.serveLeft(true)
			}
			l.exit()
			return
		}
		for i := range events[:n] {
			id := eventID(&events[i])
			if id == wakeID {
				continue // stopped is checked after every wait
			}
			l.mu.Lock()
			c := l.conns[id]
			l.mu.Unlock()
			if c == nil {
				continue
			}
			alive := l.service(c)
			if c.lp == nil { // left the loop: this goroutine is c's now
				c.serveLeft(alive)
				return
			}
			if !alive {
				l.drop(c)
			}
		}
		l.sweepIdle()
	}
}

// service is one read batch of c: read what is there, run it, write the
// replies. False when c must end.
func (l *eventLoop) service(c *conn) bool {
	if !c.fillNow() {
		return false
	}
	if fc := c.srv.cfg.FreezeCheck; fc != nil {
		fc(c.clock)
	}
	return c.handleBuffered() && c.flush() && !c.closing
}

// drop closes c, which the loop serves. Waiting for a background writer
// to finish is done away from the loop.
func (l *eventLoop) drop(c *conn) {
	l.release(c)
	c.wmu.Lock()
	writer := c.wstarted
	c.wmu.Unlock()
	end := func() {
		c.stopAuthTimer()
		c.finish()
		c.srv.forget(c)
	}
	if writer {
		go end()
		return
	}
	end()
}

// sweepIdle closes the connections idle past the configured timeout.
func (l *eventLoop) sweepIdle() {
	t := time.Duration(l.srv.live.idleTimeout.Load())
	now := time.Now()
	if t <= 0 || now.Sub(l.lastSweep) < idleSweep {
		return
	}
	l.lastSweep = now
	var idle []*conn
	l.mu.Lock()
	for _, c := range l.conns {
		if now.Sub(c.clock) > t {
			idle = append(idle, c)
		}
	}
	l.mu.Unlock()
	for _, c := range idle {
		c.logger().Info("closing idle connection", "idle_timeout", t)
		l.drop(c)
	}
}

// exit releases the loop's descriptors; its last runner calls it.
func (l *eventLoop) exit() {
	_ = unix.Close(l.ep)
	_ = unix.Close(l.wake)
	close(l.done)
}

// stop ends the loop once its connections are gone, and waits for it.
func (l *eventLoop) stop() {
	if l.stopped.Swap(true) {
		return
	}
	var one = [8]byte{1}
	_, _ = unix.Write(l.wake, one[:])
	<-l.done
}

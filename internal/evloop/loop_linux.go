package evloop

import (
	"errors"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Loop is one event loop: an epoll instance (level-triggered: a connection
// not read to the end, or left behind when the loop changed goroutines, is
// reported again) and the connections registered on it. Exactly one
// goroutine runs it at a time; members is read by that goroutine and
// written by the registering one, hence the mutex.
type Loop struct {
	log  *slog.Logger
	ep   int
	wake int // eventfd registered under wakeID: Stop

	mu      sync.Mutex
	members map[uint64]*Member
	nextID  atomic.Uint64

	stopped   atomic.Bool
	done      chan struct{} // closed by the last runner
	lastSweep time.Time     // runner-owned
	lastYield time.Time     // runner-owned: see yieldEvery
	yields    atomic.Uint64 // how often a busy runner let the scheduler switch
	// unflushed are the Flusher members the runner served in this round,
	// whose replies wait for its end; flushRound has written those before
	// flushed (runner-owned).
	unflushed []*Member
	flushed   int
}

// Member is a connection registered on a loop.
type Member struct {
	l    *Loop
	id   uint64
	nc   net.Conn
	raw  syscall.RawConn
	h    Handler
	f    Flusher     // h, when its replies wait for the end of a round
	on   atomic.Bool // the loop polls the socket
	left bool        // Leave ran (set by the serving goroutine)
}

// wakeID is the epoll data of the wake eventfd (member ids start at 1).
const wakeID = 0

// Start starts n loops (at most MaxLoops). On an error no loop runs.
func Start(n int, log *slog.Logger) ([]*Loop, error) {
	n = min(n, MaxLoops)
	loops := make([]*Loop, 0, n)
	for range n {
		l, err := newLoop(log)
		if err != nil {
			for _, l := range loops {
				l.Stop()
			}
			return nil, err
		}
		loops = append(loops, l)
		go l.run(nil)
	}
	return loops, nil
}

func newLoop(log *slog.Logger) (*Loop, error) {
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
	return &Loop{log: log, ep: ep, wake: wake, members: map[uint64]*Member{}, done: make(chan struct{}), lastSweep: time.Now()}, nil
}

func setEventID(ev *unix.EpollEvent, id uint64) {
	ev.Fd = int32(uint32(id))
	ev.Pad = int32(uint32(id >> 32))
}

func eventID(ev *unix.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

// Wrap takes nc's socket out of the netpoller for a loop (a *Conn); nc
// itself, and false, when it cannot (not plain TCP: TLS keeps its
// goroutine).
func Wrap(nc net.Conn) (net.Conn, bool) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc, false
	}
	lc, err := NewConn(tc)
	if err != nil {
		return nc, false
	}
	return lc, true
}

// NewMember prepares h's registration: nc is the Conn Wrap returned.
// Nothing is polled until Register.
func (l *Loop) NewMember(nc net.Conn, h Handler) *Member {
	m := &Member{l: l, id: l.nextID.Add(1), nc: nc, h: h}
	m.f, _ = h.(Flusher)
	if sc, ok := nc.(syscall.Conn); ok {
		m.raw, _ = sc.SyscallConn()
	}
	return m
}

// Register starts polling the socket. False when it cannot (the loop
// stopped, the socket closed): the socket is then handed back to the
// netpoller and the caller serves the connection on a goroutine.
func (m *Member) Register() bool {
	l := m.l
	if m.raw == nil || l.stopped.Load() {
		m.handOver()
		return false
	}
	m.on.Store(true)
	l.mu.Lock()
	l.members[m.id] = m
	l.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP}
	setEventID(&ev, m.id)
	var err error
	cerr := m.raw.Control(func(fd uintptr) { err = unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, int(fd), &ev) })
	if err == nil && cerr == nil {
		return true
	}
	m.release()
	m.handOver()
	return false
}

// OnLoop reports whether the loop serves the connection.
func (m *Member) OnLoop() bool { return m.on.Load() }

// release takes m off the loop. Called by the goroutine serving m.
func (m *Member) release() {
	l := m.l
	_ = m.raw.Control(func(fd uintptr) { _ = unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, int(fd), nil) })
	l.mu.Lock()
	delete(l.members, m.id)
	l.mu.Unlock()
	m.on.Store(false)
}

func (m *Member) handOver() {
	if c, ok := m.nc.(*Conn); ok {
		if err := c.HandOver(); err != nil && m.l.log != nil {
			m.l.log.Debug("handing a socket over from the event loop failed; it will read as closed", "err", err)
		}
	}
}

// Leave takes the connection off its loop for a goroutine of its own —
// the caller's, which must be the one running Handler.Ready: a new
// goroutine runs the loop from now on — and gives its socket back to Go's
// netpoller. A no-op once left.
func (m *Member) Leave() {
	if m.left {
		return
	}
	m.left = true
	m.release()
	// The next runner writes first what the round so far left unwritten:
	// this goroutine is the connection's from now on.
	l := m.l
	rest := slices.Clone(l.unflushed[l.flushed:])
	l.unflushed, l.flushed = l.unflushed[:0], 0
	go l.run(rest)
	m.handOver()
}

// Abort shuts the socket down (both directions, or the input only) so that
// the loop reads its end and drops the connection; it reports false when
// the loop no longer serves it (the caller then closes it itself).
func (m *Member) Abort(both bool) bool {
	if !m.on.Load() {
		return false
	}
	how := unix.SHUT_RD
	if both {
		how = unix.SHUT_RDWR
	}
	_ = m.raw.Control(func(fd uintptr) { _ = unix.Shutdown(int(fd), how) })
	return true
}

// run is the loop: wait, then serve every ready connection in turn. A
// connection that leaves the loop takes this goroutine with it (Leave
// started the loop's next runner).
func (l *Loop) run(unflushed []*Member) {
	l.unflushed = append(l.unflushed[:0], unflushed...)
	if m, alive := l.flushRound(); m != nil {
		m.h.ServeLeft(alive)
		return
	}
	events := make([]unix.EpollEvent, 128)
	for {
		n, err := unix.EpollWait(l.ep, events, int(SweepEvery/time.Millisecond))
		if l.stopped.Load() {
			l.exit()
			return
		}
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			l.fail(err)
			return
		}
		for i := range events[:n] {
			id := eventID(&events[i])
			if id == wakeID {
				continue // stopped is checked after every wait
			}
			l.mu.Lock()
			m := l.members[id]
			l.mu.Unlock()
			if m == nil {
				continue
			}
			alive := m.h.Ready()
			if m.left { // this goroutine is the connection's now
				m.h.ServeLeft(alive)
				return
			}
			if !alive {
				m.release()
				m.h.Drop()
			} else if m.f != nil {
				l.unflushed = append(l.unflushed, m)
			}
		}
		if m, alive := l.flushRound(); m != nil {
			m.h.ServeLeft(alive)
			return
		}
		now := time.Now()
		l.sweep(now)
		if now.Sub(l.lastYield) >= yieldEvery {
			l.lastYield = now
			l.yields.Add(1)
			runtime.Gosched()
		}
	}
}

// yieldEvery is how often a busy loop lets the scheduler switch: a
// goroutine that never does for 10 ms is preempted by the runtime's
// monitor (sysmon), which signals its thread and, the loop being in a
// system call most of the time, takes its P away — the loop then waits to
// get one back on another thread — and goes back to polling every 20 µs
// for the next milliseconds: ~30 such preemptions and ~2 000 monitor
// wake-ups a second under a pipelined load (issue #17).
const yieldEvery = 2 * time.Millisecond

// flushRound writes the replies of the round's Flusher members. A member
// whose Flush left the loop (it had to wait) is returned with what Flush
// reported: this goroutine is that connection's now, and the runner Leave
// started writes the rest of the round.
func (l *Loop) flushRound() (left *Member, alive bool) {
	for l.flushed < len(l.unflushed) {
		m := l.unflushed[l.flushed]
		l.unflushed[l.flushed] = nil
		l.flushed++
		ok := m.f.Flush()
		if m.left {
			return m, ok
		}
		if !ok {
			m.release()
			m.h.Drop()
		}
	}
	l.unflushed, l.flushed = l.unflushed[:0], 0
	return nil, false
}

// fail ends a loop whose epoll failed (not expected of a valid
// descriptor): each of its connections goes on on a goroutine of its own.
func (l *Loop) fail(err error) {
	if l.log != nil {
		l.log.Error("event loop failed; its connections leave it", "err", err)
	}
	l.stopped.Store(true)
	for _, m := range l.snapshot() {
		m.left = true
		m.release()
		m.handOver()
		go m.h.ServeLeft(true)
	}
	l.exit()
}

// sweep drops the connections that expired.
func (l *Loop) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < SweepEvery {
		return
	}
	l.lastSweep = now
	for _, m := range l.snapshot() {
		if m.h.Expired(now) {
			m.release()
			m.h.Drop()
		}
	}
}

// snapshot lists the registered members (the runner then works on them
// without holding mu, which registration takes).
func (l *Loop) snapshot() []*Member {
	l.mu.Lock()
	defer l.mu.Unlock()
	all := make([]*Member, 0, len(l.members))
	for _, m := range l.members {
		all = append(all, m)
	}
	return all
}

// exit releases the loop's descriptors; its last runner calls it.
func (l *Loop) exit() {
	_ = unix.Close(l.ep)
	_ = unix.Close(l.wake)
	close(l.done)
}

// Stop ends the loop once its connections are gone, and waits for it.
// Safe to call more than once.
func (l *Loop) Stop() {
	if l.stopped.Swap(true) {
		return
	}
	one := [8]byte{1}
	_, _ = unix.Write(l.wake, one[:])
	<-l.done
}

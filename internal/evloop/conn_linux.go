package evloop

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Conn is the socket of a connection an event loop serves. Its
// descriptor is out of Go's netpoller: were it in both, the runtime's own
// poller would wake a thread for every request the loop reads as well
// (measured: more CPU per request than no loop at all). When the
// connection leaves the loop (HandOver) the socket goes back to the
// netpoller as an ordinary net.Conn, and every call goes there.
//
// The front end reads and writes through SyscallConn while the loop owns
// the socket: a callback runs at once (a callback reporting "not done" is
// called again once poll(2) says the socket is ready).
//
// Until then a blocking Read or Write (the background writer of a client
// that reads slowly) waits in poll(2), holding a thread while the socket
// buffer is full.
type Conn struct {
	mu    sync.RWMutex // R: using fd; W: closing it or handing it over
	fd    int          // -1 once closed or handed over
	inner atomic.Pointer[handedConn]
	laddr net.Addr
	raddr net.Addr
	rdl   atomic.Int64 // read deadline, Unix ns; 0 = none
	wdl   atomic.Int64 // write deadline
}

// handedConn is the net.Conn the socket became when it left the loop.
type handedConn struct {
	nc  net.Conn
	raw syscall.RawConn
}

var _ syscall.Conn = (*Conn)(nil)

// NewConn takes tc's socket out of the netpoller: a duplicate
// descriptor, non-blocking, and tc closed.
func NewConn(tc *net.TCPConn) (*Conn, error) {
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	n := &Conn{fd: fd, laddr: tc.LocalAddr(), raddr: tc.RemoteAddr()}
	_ = tc.Close()
	return n, nil
}

// HandOver gives the socket back to Go's netpoller: from now on every call
// goes to a net.Conn on a duplicate descriptor. Called once the loop no
// longer polls the socket, by the connection's reader. The loop's own
// descriptor stays open until Close: a background write waiting in poll(2)
// on it finishes there (so this never waits for a client to read).
func (n *Conn) HandOver() error {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.fd < 0 {
		return net.ErrClosed
	}
	if n.inner.Load() != nil {
		return nil
	}
	dup, err := unix.FcntlInt(uintptr(n.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(dup), "")
	nc, err := net.FileConn(f) // another duplicate, in the netpoller
	_ = f.Close()
	if err != nil {
		return err
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		_ = nc.Close()
		return errors.New("resp: handed-over socket has no descriptor")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		_ = nc.Close()
		return err
	}
	if d := n.rdl.Load(); d != 0 {
		_ = nc.SetReadDeadline(time.Unix(0, d))
	}
	if d := n.wdl.Load(); d != 0 {
		_ = nc.SetWriteDeadline(time.Unix(0, d))
	}
	n.inner.Store(&handedConn{nc: nc, raw: raw})
	return nil
}

func (n *Conn) Read(b []byte) (int, error) {
	if h := n.inner.Load(); h != nil {
		return h.nc.Read(b)
	}
	return n.io(b, unix.POLLIN, &n.rdl, func(fd int, b []byte) (int, error) {
		k, err := unix.Read(fd, b)
		if k == 0 && err == nil && len(b) > 0 {
			return 0, io.EOF
		}
		return k, err
	})
}

func (n *Conn) Write(b []byte) (int, error) {
	if h := n.inner.Load(); h != nil {
		return h.nc.Write(b)
	}
	total := 0
	for total < len(b) {
		k, err := n.io(b[total:], unix.POLLOUT, &n.wdl, unix.Write)
		total += k
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// io runs op on the descriptor, waiting in poll(2) (up to the deadline)
// while the socket is not ready. After a hand-over it reports the socket
// closed: the caller's next call goes to the handed-over conn.
func (n *Conn) io(b []byte, events int16, deadline *atomic.Int64, op func(int, []byte) (int, error)) (int, error) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	for {
		if n.fd < 0 {
			return 0, net.ErrClosed
		}
		k, err := op(n.fd, b)
		switch {
		case err == io.EOF:
			return 0, io.EOF
		case k > 0:
			return k, nil
		case errors.Is(err, unix.EINTR):
			continue
		case !errors.Is(err, unix.EAGAIN):
			return 0, err
		}
		timeout := -1
		if d := deadline.Load(); d != 0 {
			left := time.Until(time.Unix(0, d))
			if left <= 0 {
				return 0, os.ErrDeadlineExceeded
			}
			timeout = int(left/time.Millisecond) + 1
		}
		fds := []unix.PollFd{{Fd: int32(n.fd), Events: events}}
		if _, err := unix.Poll(fds, timeout); err != nil && !errors.Is(err, unix.EINTR) {
			return 0, err
		}
	}
}

// Close closes the socket. A background write waiting in poll(2) on the
// loop's descriptor is woken first (the write side shut down: it fails at
// once), so closing never waits for a client to read.
func (n *Conn) Close() error {
	n.mu.RLock()
	if n.fd >= 0 {
		_ = unix.Shutdown(n.fd, unix.SHUT_WR)
	}
	n.mu.RUnlock()
	var err error
	if h := n.inner.Load(); h != nil {
		err = h.nc.Close()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fd < 0 {
		if err == nil && n.inner.Load() == nil {
			err = net.ErrClosed
		}
		return err
	}
	if cerr := unix.Close(n.fd); err == nil {
		err = cerr
	}
	n.fd = -1
	return err
}

func (n *Conn) LocalAddr() net.Addr  { return n.laddr }
func (n *Conn) RemoteAddr() net.Addr { return n.raddr }

func (n *Conn) SetDeadline(t time.Time) error {
	_ = n.SetReadDeadline(t)
	return n.SetWriteDeadline(t)
}

func (n *Conn) SetReadDeadline(t time.Time) error {
	n.rdl.Store(deadlineNs(t))
	if h := n.inner.Load(); h != nil {
		return h.nc.SetReadDeadline(t)
	}
	return nil
}

func (n *Conn) SetWriteDeadline(t time.Time) error {
	n.wdl.Store(deadlineNs(t))
	if h := n.inner.Load(); h != nil {
		return h.nc.SetWriteDeadline(t)
	}
	return nil
}

func deadlineNs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// SyscallConn gives the descriptor to the loop's reads and writes and to
// shutdown: the callbacks run at once (the loop only calls them when the
// socket is ready; a callback reporting "not done" is called again after
// poll(2) says the socket is ready).
func (n *Conn) SyscallConn() (syscall.RawConn, error) { return rawConn{n}, nil }

type rawConn struct{ n *Conn }

func (r rawConn) Control(f func(fd uintptr)) error {
	if h := r.n.inner.Load(); h != nil {
		return h.raw.Control(f)
	}
	r.n.mu.RLock()
	if r.n.fd < 0 {
		r.n.mu.RUnlock()
		if h := r.n.inner.Load(); h != nil {
			return h.raw.Control(f)
		}
		return net.ErrClosed
	}
	f(uintptr(r.n.fd))
	r.n.mu.RUnlock()
	return nil
}

func (r rawConn) Read(f func(fd uintptr) bool) error {
	if h := r.n.inner.Load(); h != nil {
		return h.raw.Read(f)
	}
	return r.n.rawIO(f, unix.POLLIN)
}

func (r rawConn) Write(f func(fd uintptr) bool) error {
	if h := r.n.inner.Load(); h != nil {
		return h.raw.Write(f)
	}
	return r.n.rawIO(f, unix.POLLOUT)
}

func (n *Conn) rawIO(f func(fd uintptr) bool, events int16) error {
	n.mu.RLock()
	defer n.mu.RUnlock()
	for {
		if n.fd < 0 {
			return net.ErrClosed // closed, or handed over mid-call: the caller's next call goes there
		}
		if f(uintptr(n.fd)) {
			return nil
		}
		fds := []unix.PollFd{{Fd: int32(n.fd), Events: events}}
		if _, err := unix.Poll(fds, -1); err != nil && !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

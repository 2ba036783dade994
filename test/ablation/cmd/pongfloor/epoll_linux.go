package main

import (
	"net"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// loopConn is one connection's state, owned by its loop.
type loopConn struct {
	fd   int
	in   []byte
	have int
	out  []byte
}

// loop is one event loop: an epoll instance and the connections it owns.
// Only the accept goroutine adds to conns (before registering the fd), and
// only the loop reads and deletes: the atomic slot orders the two.
type loop struct {
	ep    int
	conns []atomic.Pointer[loopConn] // indexed by fd
}

const maxFD = 1 << 16

func serveEpoll(l *net.TCPListener, n int) error {
	loops := make([]*loop, n)
	for i := range loops {
		ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return err
		}
		loops[i] = &loop{ep: ep, conns: make([]atomic.Pointer[loopConn], maxFD)}
		go loops[i].run()
	}
	for i := 0; ; i++ {
		c, err := l.AcceptTCP()
		if err != nil {
			return err
		}
		fd, err := detach(c)
		if err != nil || fd >= maxFD {
			if err == nil {
				_ = unix.Close(fd)
			}
			continue
		}
		lp := loops[i%n]
		lp.conns[fd].Store(&loopConn{fd: fd, in: make([]byte, 16<<10), out: make([]byte, 0, 16<<10)})
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}
		if err := unix.EpollCtl(lp.ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			lp.conns[fd].Store(nil)
			_ = unix.Close(fd)
		}
	}
}

// detach takes a connection's socket out of Go's netpoller: a duplicate
// descriptor, non-blocking, that this program's loops own.
func detach(c *net.TCPConn) (int, error) {
	defer c.Close()
	_ = c.SetNoDelay(true)
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(s uintptr) { fd, derr = unix.Dup(int(s)) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func (lp *loop) run() {
	events := make([]unix.EpollEvent, 256)
	for {
		n, err := unix.EpollWait(lp.ep, events, -1)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		for _, ev := range events[:n] {
			c := lp.conns[ev.Fd].Load()
			if c == nil {
				continue
			}
			if !c.serve() {
				lp.conns[c.fd].Store(nil)
				_ = unix.EpollCtl(lp.ep, unix.EPOLL_CTL_DEL, c.fd, nil)
				_ = unix.Close(c.fd)
			}
		}
	}
}

// serve reads what is ready, answers it and writes the answers: one read
// and one write per readiness (a reply the socket does not take at once is
// written blocking-style by retrying — enough for a floor measurement whose
// replies are a few hundred bytes).
func (c *loopConn) serve() bool {
	n, err := unix.Read(c.fd, c.in[c.have:])
	if n <= 0 {
		return err == unix.EAGAIN
	}
	c.have += n
	var used int
	c.out, used = pongs(c.out[:0], c.in[:c.have])
	c.have = copy(c.in, c.in[used:c.have])
	for b := c.out; len(b) > 0; {
		w, err := unix.Write(c.fd, b)
		if err != nil && err != unix.EAGAIN {
			return false
		}
		if w > 0 {
			b = b[w:]
		}
	}
	return true
}

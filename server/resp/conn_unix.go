//go:build unix

package resp

import (
	"errors"
	"io"
	"syscall"
)

// rawWritable: direct non-blocking writes on the socket are available.
const rawWritable = true

// rawWriteState performs one non-blocking write attempt on a plain TCP
// socket through syscall.RawConn: it writes what the socket buffer takes
// and returns instead of parking the goroutine, so the reader learns at
// once whether the client keeps up. fn is bound once per connection (no
// closure allocation per write).
type rawWriteState struct {
	fn  func(fd uintptr) bool
	buf []byte
	n   int
	err error
}

func (s *rawWriteState) write(fd uintptr) bool {
	for len(s.buf) > 0 {
		n, err := syscall.Write(int(fd), s.buf)
		if n > 0 {
			s.n += n
			s.buf = s.buf[n:]
		}
		switch {
		case err == nil && n > 0:
			continue
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil && !errors.Is(err, syscall.EAGAIN):
			s.err = err
		}
		return true
	}
	return true
}

// try writes as much of b as the socket takes now; n < len(b) with a nil
// error means the socket buffer is full.
func (s *rawWriteState) try(rc syscall.RawConn, b []byte) (int, error) {
	s.buf, s.n, s.err = b, 0, nil
	err := rc.Write(s.fn)
	s.buf = nil
	if err != nil {
		return s.n, err
	}
	return s.n, s.err
}

func isTooManyFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// rawPeerClosed peeks at the socket without consuming or waiting: a
// zero-byte read is the client's end of stream; an error other than "no
// data yet" is a dead connection.
func rawPeerClosed(rc syscall.RawConn) bool {
	closed := false
	var b [1]byte
	err := rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == nil && n == 0:
			closed = true
		case err != nil && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EINTR):
			closed = true
		}
		return true
	})
	return closed || err != nil
}

// rawReadState performs one read that does not wait, for an event loop
// that knows the socket is readable (fn is bound once per connection).
type rawReadState struct {
	fn  func(fd uintptr) bool
	buf []byte
	n   int
	err error
}

func (s *rawReadState) read(fd uintptr) bool {
	for {
		n, err := syscall.Read(int(fd), s.buf)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			// nothing to read yet: n, err stay 0, nil
		case err != nil:
			s.err = err
		case n == 0:
			s.err = io.EOF
		default:
			s.n = n
		}
		return true
	}
}

// try reads what the socket holds now, up to len(b); 0 and a nil error
// mean nothing was there.
func (s *rawReadState) try(rc syscall.RawConn, b []byte) (int, error) {
	s.buf, s.n, s.err = b, 0, nil
	err := rc.Read(s.fn)
	s.buf = nil
	if err != nil {
		return 0, err
	}
	return s.n, s.err
}

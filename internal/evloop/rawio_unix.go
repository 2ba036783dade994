//go:build unix

package evloop

import (
	"errors"
	"io"
	"syscall"
)

// RawIO says whether RawReader and RawWriter work here.
const RawIO = true

// RawWriter performs one write that does not wait, through a
// syscall.RawConn: it writes what the socket buffer takes and returns
// instead of parking the goroutine, so the caller learns at once whether
// the client keeps up. Its callback is bound once (no closure allocation
// per write).
type RawWriter struct {
	fn  func(fd uintptr) bool
	buf []byte
	n   int
	err error
}

func (s *RawWriter) write(fd uintptr) bool {
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

// Try writes as much of b as the socket takes now; n < len(b) with a nil
// error means the socket buffer is full.
func (s *RawWriter) Try(rc syscall.RawConn, b []byte) (int, error) {
	if s.fn == nil {
		s.fn = s.write
	}
	s.buf, s.n, s.err = b, 0, nil
	err := rc.Write(s.fn)
	s.buf = nil
	if err != nil {
		return s.n, err
	}
	return s.n, s.err
}

// RawReader performs one read that does not wait, for an event loop that
// knows the socket is readable.
type RawReader struct {
	fn  func(fd uintptr) bool
	buf []byte
	n   int
	err error
}

func (s *RawReader) read(fd uintptr) bool {
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

// Try reads what the socket holds now, up to len(b); 0 and a nil error
// mean nothing was there.
func (s *RawReader) Try(rc syscall.RawConn, b []byte) (int, error) {
	if s.fn == nil {
		s.fn = s.read
	}
	s.buf, s.n, s.err = b, 0, nil
	err := rc.Read(s.fn)
	s.buf = nil
	if err != nil {
		return 0, err
	}
	return s.n, s.err
}

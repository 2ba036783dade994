//go:build unix

package resp

import (
	"errors"
	"syscall"
)

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

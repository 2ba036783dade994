//go:build !unix

package resp

import (
	"syscall"
)

func isTooManyFiles(err error) bool { return false }

func rawPeerClosed(syscall.RawConn) bool { return false }

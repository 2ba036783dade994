//go:build !unix

package evloop

import (
	"errors"
	"syscall"
)

// RawIO says whether RawReader and RawWriter work here.
const RawIO = false

var errNoRawIO = errors.New("evloop: direct socket reads and writes unavailable")

// RawWriter performs one write that does not wait (unix only).
type RawWriter struct{}

func (s *RawWriter) Try(syscall.RawConn, []byte) (int, error) { return 0, errNoRawIO }

// RawReader performs one read that does not wait (unix only).
type RawReader struct{}

func (s *RawReader) Try(syscall.RawConn, []byte) (int, error) { return 0, errNoRawIO }

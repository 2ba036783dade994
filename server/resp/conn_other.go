//go:build !unix

package resp

import (
	"errors"
	"syscall"
)

// rawWritable: without direct socket writes every reply goes through the
// background writer.
const rawWritable = false

type rawWriteState struct{ fn func(fd uintptr) bool }

func (s *rawWriteState) write(uintptr) bool { return true }

func (s *rawWriteState) try(syscall.RawConn, []byte) (int, error) {
	return 0, errors.New("resp: direct writes unavailable")
}

func isTooManyFiles(err error) bool { return false }

func rawPeerClosed(syscall.RawConn) bool { return false }

type rawReadState struct{ fn func(fd uintptr) bool }

func (s *rawReadState) read(uintptr) bool { return true }

func (s *rawReadState) try(syscall.RawConn, []byte) (int, error) {
	return 0, errors.New("resp: direct reads unavailable")
}

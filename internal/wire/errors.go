package wire

import (
	"errors"
	"fmt"
)

// Sentinel errors. Truncated input is reported with errors that wrap
// io.ErrUnexpectedEOF instead of a sentinel of this package, so that callers
// handle "the peer hung up mid-frame" the way they handle it elsewhere.
var (
	// ErrMalformedFrame: a frame's length field is smaller than the fixed
	// header. The stream cannot be resynchronized; close the connection.
	ErrMalformedFrame = errors.New("wire: malformed frame")

	// ErrFrameTooLarge: a frame's length field exceeds the reader's maximum.
	// Returned as a *FrameTooLargeError, for which errors.Is(err,
	// ErrFrameTooLarge) holds.
	ErrFrameTooLarge = errors.New("wire: frame too large")

	// ErrMalformedBody: a body is not the MessagePack value its opcode
	// expects. The frame itself was sound, so the connection can stay open
	// and the request be answered with an error response.
	ErrMalformedBody = errors.New("wire: malformed body")
)

// FrameTooLargeError reports a frame whose length field exceeds the reader's
// maximum. It carries the header so that a server can answer that request id
// (with FlagError) before deciding whether to keep the connection: the
// FrameReader skips the oversized body on the next call to Next, so the
// stream stays in sync without the body ever being held in memory.
type FrameTooLargeError struct {
	ID    uint32
	Op    Opcode
	Flags Flags
	Size  uint32 // the frame's length field: bytes after the length prefix
	Max   int    // the limit it exceeded
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("wire: frame of %d bytes exceeds the maximum of %d (request %d, op %v)",
		e.Size, e.Max, e.ID, e.Op)
}

// Is makes errors.Is(err, ErrFrameTooLarge) hold.
func (e *FrameTooLargeError) Is(target error) bool { return target == ErrFrameTooLarge }

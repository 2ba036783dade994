package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

const (
	// LengthSize is the size of the big-endian uint32 length prefix that
	// starts every frame. The length counts the bytes after it.
	LengthSize = 4

	// HeaderSize is the size of the fixed frame header:
	// length(4) + request id(4) + opcode(1) + flags(1).
	HeaderSize = LengthSize + 4 + 1 + 1

	// MinFrameLength is the smallest valid length field: a header with an
	// empty body.
	MinFrameLength = HeaderSize - LengthSize

	// DefaultMaxFrameSize is the limit on the length field used when a reader
	// is given 0: room for a batch of several maximum-size items (4 MiB by
	// default, SPEC R-MEM-3) plus their framing.
	DefaultMaxFrameSize = 32 << 20

	// DefaultReadBufferSize is the buffer NewFrameReader puts in front of a
	// reader that is not already a *bufio.Reader. Frames that fit in it are
	// returned without a copy; larger ones are copied into a body buffer.
	DefaultReadBufferSize = 64 << 10
)

const (
	// maxRetainedBody caps the body buffer a FrameReader keeps between
	// frames: one 30 MiB batch must not pin 30 MiB per connection forever.
	maxRetainedBody = 1 << 20

	// bodyChunk is the first allocation when a body must be read into the
	// body buffer. The buffer then grows as bytes actually arrive, so a peer
	// that announces a huge frame and sends nothing costs us nothing.
	bodyChunk = 64 << 10
)

// Frame is one decoded frame. Body is the raw MessagePack body; see
// FrameReader.Next and DecodeFrame for how long it stays valid.
type Frame struct {
	ID    uint32
	Op    Opcode
	Flags Flags
	Body  []byte
}

// AppendFrame appends a complete frame carrying body to dst.
func AppendFrame(dst []byte, id uint32, op Opcode, flags Flags, body []byte) []byte {
	dst, start := BeginFrame(dst, id, op, flags)
	dst = append(dst, body...)
	return EndFrame(dst, start)
}

// BeginFrame appends a frame header with a placeholder length to dst and
// returns the extended slice and the offset of the frame. The caller appends
// the body straight after it (AppendResult, AppendPutRequest, ...) and then
// calls EndFrame with that offset. Encoding the body in place is what keeps
// the hot path free of intermediate buffers:
//
//	buf, start := wire.BeginFrame(buf, id, wire.OpGet, 0)
//	buf = wire.AppendKeyRequest(buf, key)
//	buf = wire.EndFrame(buf, start)
//
// Several frames may be built back to back in one buffer and written with a
// single Write.
func BeginFrame(dst []byte, id uint32, op Opcode, flags Flags) ([]byte, int) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0,
		byte(id>>24), byte(id>>16), byte(id>>8), byte(id),
		byte(op), byte(flags))
	return dst, start
}

// EndFrame patches the length field of the frame BeginFrame started at
// offset start, once its body has been appended, and returns dst.
//
// A sender should compare FrameLength(dst, start) with the peer's maximum
// frame size before writing: a peer rejects a larger frame. EndFrame panics
// if start does not point at a frame header or if the frame cannot be
// represented at all (length above 4 GiB); both are programming errors.
func EndFrame(dst []byte, start int) []byte {
	n := FrameLength(dst, start)
	if n < MinFrameLength {
		panic("wire: EndFrame: start does not point at a frame header")
	}
	if uint64(n) > math.MaxUint32 {
		panic("wire: EndFrame: frame longer than the length field can express")
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(n))
	return dst
}

// FrameLength returns the length field the frame starting at offset start of
// dst has (or will have, while it is being built): the bytes after the length
// prefix. It is the quantity compared with a maximum frame size.
func FrameLength(dst []byte, start int) int { return len(dst) - start - LengthSize }

// DecodeFrame parses the frame at the start of b, for callers that manage
// their own buffer. It returns the frame, whose Body aliases b, and the
// number of bytes the frame occupies. A maxFrameSize ≤ 0 means
// DefaultMaxFrameSize.
//
// Errors:
//   - b holds only part of a frame: an error wrapping io.ErrUnexpectedEOF
//     (read more and retry; at end of stream it means a truncated frame);
//   - length field below MinFrameLength: ErrMalformedFrame;
//   - length field above maxFrameSize: *FrameTooLargeError; the frame spans
//     LengthSize+Size bytes, which the caller may skip.
//
// It applies exactly the checks of FrameReader.Next, in the same order.
func DecodeFrame(b []byte, maxFrameSize int) (Frame, int, error) {
	if maxFrameSize <= 0 {
		maxFrameSize = DefaultMaxFrameSize
	}
	if len(b) < HeaderSize {
		return Frame{}, 0, shortHeader(b)
	}
	f, n, err := parseHeader(b, maxFrameSize)
	if err != nil {
		return Frame{}, 0, err
	}
	total := LengthSize + int(n)
	if len(b) < total {
		return Frame{}, 0, shortBody(n, len(b)-HeaderSize)
	}
	f.Body = b[HeaderSize:total:total]
	return f, total, nil
}

// parseHeader validates a complete header and returns the frame it announces
// (without body) and its length field.
func parseHeader(hdr []byte, maxFrameSize int) (Frame, uint32, error) {
	n := binary.BigEndian.Uint32(hdr)
	if n < MinFrameLength {
		return Frame{}, 0, malformedLength(n)
	}
	f := Frame{
		ID:    binary.BigEndian.Uint32(hdr[LengthSize:]),
		Op:    Opcode(hdr[LengthSize+4]),
		Flags: Flags(hdr[LengthSize+5]),
	}
	if uint64(n) > uint64(maxFrameSize) {
		return Frame{}, 0, &FrameTooLargeError{ID: f.ID, Op: f.Op, Flags: f.Flags, Size: n, Max: maxFrameSize}
	}
	return f, n, nil
}

// shortHeader reports an incomplete header. A length prefix that is already
// invalid wins over truncation: the stream is garbage either way, and saying
// so is more useful.
func shortHeader(b []byte) error {
	if len(b) >= LengthSize {
		if n := binary.BigEndian.Uint32(b); n < MinFrameLength {
			return malformedLength(n)
		}
	}
	return fmt.Errorf("wire: truncated frame header (%d of %d bytes): %w", len(b), HeaderSize, io.ErrUnexpectedEOF)
}

func shortBody(n uint32, have int) error {
	return fmt.Errorf("wire: truncated frame body (%d of %d bytes): %w", have, n-MinFrameLength, io.ErrUnexpectedEOF)
}

func malformedLength(n uint32) error {
	return fmt.Errorf("%w: length field %d is below the %d-byte header", ErrMalformedFrame, n, MinFrameLength)
}

// FrameReader reads frames from a byte stream. It is not safe for concurrent
// use: it belongs to the one goroutine that reads the connection.
//
// In steady state Next does not allocate: a frame that fits in the buffered
// reader is returned in place, a larger one is read into a body buffer that
// is reused across frames (up to 1 MiB; larger buffers are released after
// use).
type FrameReader struct {
	r   *bufio.Reader
	max int

	// buf holds bodies too large for r's buffer.
	buf []byte
	// skip is the number of bytes of a rejected oversized frame still to be
	// discarded before the next header (int64: it may exceed a 32-bit int).
	skip int64
	// err is sticky: after a malformed, truncated or failed read the
	// stream position is unknown, so every later call reports the same error.
	err error
}

// NewFrameReader returns a reader of frames from r whose length field may not
// exceed maxFrameSize (≤ 0 means DefaultMaxFrameSize). A *bufio.Reader is
// used as is, and its size decides which frames are returned in place
// rather than copied; any other reader is wrapped in a *bufio.Reader of
// DefaultReadBufferSize bytes.
func NewFrameReader(r io.Reader, maxFrameSize int) *FrameReader {
	if maxFrameSize <= 0 {
		maxFrameSize = DefaultMaxFrameSize
	}
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, DefaultReadBufferSize)
	}
	return &FrameReader{r: br, max: maxFrameSize}
}

// Next reads the next frame.
//
// The returned Body aliases memory owned by the reader and is valid only
// until the next call to Next: a caller that keeps any part of it (a value to
// store, a key to index by) must copy that part.
//
// Errors:
//   - io.EOF: the stream ended cleanly between two frames;
//   - an error wrapping io.ErrUnexpectedEOF: the stream ended mid-frame;
//   - ErrMalformedFrame: a length field below MinFrameLength;
//   - *FrameTooLargeError: the frame exceeds the maximum. The reader skips
//     its body on the next call, so the caller may answer the request and
//     continue, or close the connection;
//   - any error of the underlying reader.
//
// Apart from *FrameTooLargeError, errors are sticky.
func (fr *FrameReader) Next() (Frame, error) {
	if fr.err != nil {
		return Frame{}, fr.err
	}
	for fr.skip > 0 {
		n, err := fr.r.Discard(int(min(fr.skip, math.MaxInt32)))
		fr.skip -= int64(n)
		if err != nil {
			return Frame{}, fr.fail(truncatedOr(err, "skipping an oversized frame"))
		}
	}
	if cap(fr.buf) > maxRetainedBody {
		fr.buf = nil
	}

	hdr, err := fr.r.Peek(HeaderSize)
	if err != nil {
		if errors.Is(err, io.EOF) {
			if len(hdr) == 0 {
				return Frame{}, fr.fail(io.EOF)
			}
			return Frame{}, fr.fail(shortHeader(hdr))
		}
		return Frame{}, fr.fail(err)
	}
	f, n, err := parseHeader(hdr, fr.max)
	if err != nil {
		if tooLarge, ok := err.(*FrameTooLargeError); ok {
			// Not sticky: drop the header now and the body lazily, so a
			// caller that closes instead never reads it.
			_, _ = fr.r.Discard(HeaderSize) // buffered: cannot fail
			fr.skip = int64(tooLarge.Size) - MinFrameLength
			return Frame{}, err
		}
		return Frame{}, fr.fail(err)
	}

	total := LengthSize + int(n)
	if total <= fr.r.Size() {
		// The whole frame fits in the bufio buffer: hand out a view of it.
		p, err := fr.r.Peek(total)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return Frame{}, fr.fail(shortBody(n, len(p)-HeaderSize))
			}
			return Frame{}, fr.fail(err)
		}
		_, _ = fr.r.Discard(total) // buffered: cannot fail
		f.Body = p[HeaderSize:total:total]
		return f, nil
	}

	_, _ = fr.r.Discard(HeaderSize) // buffered: cannot fail
	body, err := fr.readBody(int(n) - MinFrameLength)
	if err != nil {
		return Frame{}, fr.fail(err)
	}
	f.Body = body
	return f, nil
}

// readBody reads a body of n bytes into fr.buf. The buffer grows only as
// bytes arrive, so memory tracks what the peer actually sent rather than what
// its length field claims.
func (fr *FrameReader) readBody(n int) ([]byte, error) {
	b := fr.buf[:0]
	for len(b) < n {
		if len(b) == cap(b) {
			c := min(max(2*cap(b), bodyChunk), n)
			nb := make([]byte, len(b), c)
			copy(nb, b)
			b = nb
		}
		// Never past n: a buffer kept from a larger frame has room for
		// bytes that belong to the next frame.
		m, err := io.ReadFull(fr.r, b[len(b):min(cap(b), n)])
		b = b[:len(b)+m]
		if err != nil {
			fr.buf = b
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, shortBody(uint32(n+MinFrameLength), len(b))
			}
			return nil, err
		}
	}
	fr.buf = b
	return b[:n:n], nil
}

func (fr *FrameReader) fail(err error) error {
	fr.err = err
	return err
}

// truncatedOr turns an end of stream met in the middle of a frame into an
// error wrapping io.ErrUnexpectedEOF; other errors pass through.
func truncatedOr(err error, doing string) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("wire: stream ended while %s: %w", doing, io.ErrUnexpectedEOF)
	}
	return err
}

// Buffered returns the number of bytes already read from the underlying
// reader and not yet returned as frames.
func (fr *FrameReader) Buffered() int {
	return int(max(int64(fr.r.Buffered())-fr.skip, 0))
}

// HasFrame reports whether Next would return without reading from the
// underlying reader: a complete frame is buffered, or Next would fail at
// once (a rejected header, a sticky error). A server coalescing responses
// flushes when HasFrame is false, just before Next would block. Neither
// HasFrame nor Buffered reads, so the last frame's Body stays valid.
func (fr *FrameReader) HasFrame() bool {
	if fr.err != nil {
		return true
	}
	if fr.skip > 0 || fr.r.Buffered() < HeaderSize {
		return false
	}
	hdr, _ := fr.r.Peek(HeaderSize) // buffered: no read
	n := binary.BigEndian.Uint32(hdr)
	if n < MinFrameLength || uint64(n) > uint64(fr.max) {
		return true
	}
	return uint64(fr.r.Buffered()) >= LengthSize+uint64(n)
}

// PeekHeader returns the next frame's header fields (ID, Op, Flags; no
// body) without consuming anything: a server can refuse a frame by its
// opcode before waiting for its body (a connection whose first frame is
// not a handshake is refused at once). A header Next would refuse (a
// malformed or too large length) is an error here: Next reports it.
func (fr *FrameReader) PeekHeader() (Frame, error) {
	if fr.err != nil || fr.skip > 0 {
		return Frame{}, errors.New("wire: no header to peek")
	}
	hdr, err := fr.r.Peek(HeaderSize)
	if err != nil {
		return Frame{}, err
	}
	f, _, err := parseHeader(hdr, fr.max)
	return f, err
}

// Fill reads once from the underlying reader into the buffer, for a caller
// that polls the socket and knows it is readable (an event loop): the
// error of that read is returned and not kept — a reader that has nothing
// yet may say so with an error, and Next's reads are unaffected. Nothing
// is read when the buffer is full or a sticky error is set (returned).
func (fr *FrameReader) Fill() error {
	if fr.err != nil {
		return fr.err
	}
	if fr.r.Buffered() >= fr.r.Size() {
		return nil
	}
	_, err := fr.r.Peek(fr.r.Buffered() + 1)
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil
	}
	return err
}

// Streams reports whether Next would have to read from the underlying
// reader mid-frame even with a whole frame sent: it is skipping the body
// of a refused oversized frame, or the next frame (its header buffered) is
// larger than the buffer, so its body is read as it arrives. An event loop
// hands such a connection to a goroutine that may wait.
func (fr *FrameReader) Streams() bool {
	if fr.err != nil {
		return false
	}
	if fr.skip > 0 {
		return true
	}
	if fr.r.Buffered() < HeaderSize {
		return false
	}
	hdr, _ := fr.r.Peek(HeaderSize) // buffered: no read
	n := binary.BigEndian.Uint32(hdr)
	return uint64(n) <= uint64(fr.max) && LengthSize+uint64(n) > uint64(fr.r.Size())
}

// BufferedKeys appends to dst the leading key (LeadingKey) of each complete
// frame already buffered after the one Next returned last, at most max
// frames, and reports how many frames it looked at: a server's read-ahead
// of a pipeline's keys (issue #17). It reads nothing from the stream and
// changes nothing; the keys alias the reader's buffer, valid until the next
// Next. It stops at the first frame not wholly buffered or that Next would
// refuse.
func (fr *FrameReader) BufferedKeys(dst [][]byte, max int) (keys [][]byte, frames int) {
	if fr.err != nil || fr.skip > 0 || fr.r.Buffered() < HeaderSize {
		return dst, 0
	}
	buf, _ := fr.r.Peek(fr.r.Buffered()) // buffered: no read
	for off := 0; frames < max && len(buf)-off >= HeaderSize; frames++ {
		n := binary.BigEndian.Uint32(buf[off:])
		if n < MinFrameLength || uint64(n) > uint64(fr.max) || uint64(len(buf)-off) < LengthSize+uint64(n) {
			break
		}
		end := off + LengthSize + int(n)
		if key := LeadingKey(buf[off+HeaderSize : end]); key != nil {
			dst = append(dst, key)
		}
		off = end
	}
	return dst, frames
}

// LeadingKey is the first element of a request body when that body is an
// array whose first element is a string — the key of every keyed request —
// and nil otherwise. It aliases body. A hint for read-ahead only: it does
// not check the rest of the body.
func LeadingKey(body []byte) []byte {
	if len(body) < 2 {
		return nil
	}
	at := 1
	switch c := body[0]; {
	case c > mpFixArray && c <= mpFixArray|0x0f:
	case c == mpArray16 && len(body) > 3 && (body[1] != 0 || body[2] != 0):
		at = 3
	default:
		return nil
	}
	c := body[at]
	size, hdr := 0, 1
	switch {
	case c >= mpFixStr && c <= mpFixStr|0x1f:
		size = int(c & 0x1f)
	case c == mpStr8 && len(body) > at+1:
		size, hdr = int(body[at+1]), 2
	case c == mpStr16 && len(body) > at+2:
		size, hdr = int(binary.BigEndian.Uint16(body[at+1:])), 3
	default:
		return nil
	}
	lo := at + hdr
	if len(body)-lo < size {
		return nil
	}
	return body[lo : lo+size : lo+size]
}

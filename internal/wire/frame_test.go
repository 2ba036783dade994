package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// loopReader replays data forever: a stream of identical frames for
// steady-state allocation checks and benchmarks.
type loopReader struct {
	data []byte
	off  int
}

func (r *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.data[r.off:])
		n += c
		r.off = (r.off + c) % len(r.data)
	}
	return n, nil
}

func sampleFrames() []Frame {
	return []Frame{
		{ID: 1, Op: OpGet, Body: AppendKeyRequest(nil, "user:1")},
		{ID: 0xfffffffe, Op: OpPing, Flags: FlagResponse},
		{ID: 7, Op: OpPut, Flags: FlagResponse | FlagError, Body: bytes.Repeat([]byte{0xa5}, 300)},
		{ID: 8, Op: Opcode(200), Flags: 0x80, Body: []byte{mpFixArray}},
		{ID: 9, Op: OpBatch, Body: bytes.Repeat([]byte("0123456789"), 10_000)}, // 100 kB: beyond the bufio buffer
		{ID: 10, Op: OpInfo},
	}
}

func encodeFrames(frames []Frame) []byte {
	var b []byte
	for _, f := range frames {
		b = AppendFrame(b, f.ID, f.Op, f.Flags, f.Body)
	}
	return b
}

func sameFrame(a, b Frame) bool {
	return a.ID == b.ID && a.Op == b.Op && a.Flags == b.Flags && bytes.Equal(a.Body, b.Body)
}

func TestFrameLayout(t *testing.T) {
	got := AppendFrame([]byte("prefix"), 0x01020304, OpPut, FlagResponse, []byte{0xaa, 0xbb})
	want := []byte("prefix\x00\x00\x00\x08\x01\x02\x03\x04\x04\x01\xaa\xbb")
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendFrame = %x, want %x", got, want)
	}

	// Building the body in place gives the same bytes.
	b, start := BeginFrame([]byte("prefix"), 0x01020304, OpPut, FlagResponse)
	if start != len("prefix") {
		t.Fatalf("start = %d", start)
	}
	b = append(b, 0xaa, 0xbb)
	if FrameLength(b, start) != 8 {
		t.Fatalf("FrameLength = %d, want 8", FrameLength(b, start))
	}
	if b = EndFrame(b, start); !bytes.Equal(b, want) {
		t.Fatalf("BeginFrame/EndFrame = %x, want %x", b, want)
	}
}

func TestEndFramePanicsOnMisuse(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("EndFrame with a start past the header did not panic")
		}
	}()
	EndFrame(make([]byte, 5), 0)
}

// readers returns FrameReaders over the same bytes through different buffer
// sizes and read patterns, so both the in-place and the copying path run.
func readers(data []byte, maxFrameSize int) map[string]*FrameReader {
	return map[string]*FrameReader{
		"default":        NewFrameReader(bytes.NewReader(data), maxFrameSize),
		"small buffer":   NewFrameReader(bufio.NewReaderSize(bytes.NewReader(data), 16), maxFrameSize),
		"one byte reads": NewFrameReader(bufio.NewReaderSize(iotest.OneByteReader(bytes.NewReader(data)), 64), maxFrameSize),
		"data err":       NewFrameReader(iotest.DataErrReader(bytes.NewReader(data)), maxFrameSize),
	}
}

func TestFrameRoundTrip(t *testing.T) {
	frames := sampleFrames()
	data := encodeFrames(frames)

	for name, fr := range readers(data, 0) {
		t.Run(name, func(t *testing.T) {
			for i, want := range frames {
				got, err := fr.Next()
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if !sameFrame(got, want) {
					t.Fatalf("frame %d = %+v, want %+v", i, got, want)
				}
			}
			if _, err := fr.Next(); err != io.EOF {
				t.Fatalf("after the last frame: %v, want io.EOF", err)
			}
			if _, err := fr.Next(); err != io.EOF {
				t.Fatalf("io.EOF is not sticky: %v", err)
			}
		})
	}

	t.Run("DecodeFrame", func(t *testing.T) {
		rest := data
		for i, want := range frames {
			got, n, err := DecodeFrame(rest, 0)
			if err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			if !sameFrame(got, want) {
				t.Fatalf("frame %d = %+v, want %+v", i, got, want)
			}
			rest = rest[n:]
		}
		if len(rest) != 0 {
			t.Fatalf("%d bytes left", len(rest))
		}
	})
}

func TestFrameBodyIsCapacityLimited(t *testing.T) {
	// A caller appending to a body must not overwrite the next frame.
	data := encodeFrames([]Frame{{ID: 1, Op: OpGet, Body: []byte{1}}, {ID: 2, Op: OpGet, Body: []byte{2}}})
	f, _, err := DecodeFrame(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cap(f.Body) != len(f.Body) {
		t.Fatalf("DecodeFrame body cap %d > len %d", cap(f.Body), len(f.Body))
	}
	fr := NewFrameReader(bytes.NewReader(data), 0)
	if f, err = fr.Next(); err != nil {
		t.Fatal(err)
	}
	if cap(f.Body) != len(f.Body) {
		t.Fatalf("FrameReader body cap %d > len %d", cap(f.Body), len(f.Body))
	}
}

func TestFrameSizeLimit(t *testing.T) {
	const max = 100
	exact := Frame{ID: 1, Op: OpPut, Body: make([]byte, max-MinFrameLength)}
	over := Frame{ID: 2, Op: OpBatch, Flags: FlagError, Body: make([]byte, max-MinFrameLength+1)}
	after := Frame{ID: 3, Op: OpGet, Body: []byte{0x91, 0xa1, 'k'}}
	data := encodeFrames([]Frame{exact, over, after})

	for name, fr := range readers(data, max) {
		t.Run(name, func(t *testing.T) {
			f, err := fr.Next()
			if err != nil || !sameFrame(f, exact) {
				t.Fatalf("frame of exactly the maximum: %+v, %v", f, err)
			}
			_, err = fr.Next()
			var tl *FrameTooLargeError
			if !errors.As(err, &tl) || !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("maximum+1: %v, want *FrameTooLargeError", err)
			}
			want := FrameTooLargeError{ID: 2, Op: OpBatch, Flags: FlagError, Size: max + 1, Max: max}
			if *tl != want {
				t.Fatalf("error = %+v, want %+v", *tl, want)
			}
			// The oversized body is skipped; the stream is still in sync.
			if f, err = fr.Next(); err != nil || !sameFrame(f, after) {
				t.Fatalf("frame after an oversized one: %+v, %v", f, err)
			}
			if _, err = fr.Next(); err != io.EOF {
				t.Fatalf("end: %v", err)
			}
		})
	}

	if _, _, err := DecodeFrame(data, max); err != nil {
		t.Fatalf("DecodeFrame exact: %v", err)
	}
	_, _, err := DecodeFrame(data[LengthSize+max:], max)
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("DecodeFrame max+1: %v", err)
	}
}

func TestFrameTooLargeThenEOF(t *testing.T) {
	// The oversized frame's body never arrives: skipping it meets the end.
	data := AppendFrame(nil, 1, OpPut, 0, make([]byte, 50))[:30]
	fr := NewFrameReader(bytes.NewReader(data), 20)
	if _, err := fr.Next(); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("first: %v", err)
	}
	if _, err := fr.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("second: %v, want unexpected EOF", err)
	}
}

func TestFrameErrors(t *testing.T) {
	valid := AppendFrame(nil, 5, OpGet, 0, []byte{0x91, 0xa3, 'a', 'b', 'c'})
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"empty stream", nil, io.EOF},
		{"one byte", valid[:1], io.ErrUnexpectedEOF},
		{"length only", valid[:4], io.ErrUnexpectedEOF},
		{"header minus one", valid[:HeaderSize-1], io.ErrUnexpectedEOF},
		{"header only", valid[:HeaderSize], io.ErrUnexpectedEOF},
		{"body minus one", valid[:len(valid)-1], io.ErrUnexpectedEOF},
		{"length zero", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, ErrMalformedFrame},
		{"length five", []byte{0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0}, ErrMalformedFrame},
		{"short length in a partial header", []byte{0, 0, 0, 1, 9}, ErrMalformedFrame},
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), ErrFrameTooLarge},
		{"length 0xffffffff", []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 3, 0}, ErrFrameTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for name, fr := range readers(tt.data, 0) {
				_, err := fr.Next()
				if !errors.Is(err, tt.want) {
					t.Fatalf("%s: Next = %v, want %v", name, err, tt.want)
				}
				if tt.want != ErrFrameTooLarge {
					if _, again := fr.Next(); again != err {
						t.Fatalf("%s: error not sticky: %v then %v", name, err, again)
					}
				}
			}
			if len(tt.data) == 0 {
				return
			}
			if _, _, err := DecodeFrame(tt.data, 0); !errors.Is(err, tt.want) {
				t.Fatalf("DecodeFrame = %v, want %v", err, tt.want)
			}
		})
	}
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestFrameReaderPassesReadErrors(t *testing.T) {
	boom := errors.New("connection reset")
	fr := NewFrameReader(io.MultiReader(bytes.NewReader([]byte{0, 0}), failingReader{boom}), 0)
	if _, err := fr.Next(); err != boom {
		t.Fatalf("Next = %v, want the reader's error", err)
	}
	if _, err := fr.Next(); err != boom {
		t.Fatalf("not sticky: %v", err)
	}

	// Mid-body, on the copying path.
	frame := AppendFrame(nil, 1, OpPut, 0, make([]byte, 200))
	fr = NewFrameReader(bufio.NewReaderSize(io.MultiReader(bytes.NewReader(frame[:100]), failingReader{boom}), 16), 0)
	if _, err := fr.Next(); err != boom {
		t.Fatalf("Next mid-body = %v, want the reader's error", err)
	}
}

func TestFrameReaderReusesBufferedReader(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader(""), 128)
	if fr := NewFrameReader(br, 0); fr.r != br {
		t.Fatal("a *bufio.Reader was wrapped again")
	}
}

func TestHasFrameAndBuffered(t *testing.T) {
	f1 := AppendFrame(nil, 1, OpGet, 0, []byte{0x91, 0xa1, 'a'})
	f2 := AppendFrame(nil, 2, OpGet, 0, []byte{0x91, 0xa1, 'b'})
	pr, pw := io.Pipe()
	fr := NewFrameReader(pr, 0)
	if fr.HasFrame() || fr.Buffered() != 0 {
		t.Fatal("empty reader claims a buffered frame")
	}

	// Two frames and half of a third arrive in one read.
	go func() {
		pw.Write(append(append(append([]byte{}, f1...), f2...), f1[:5]...))
	}()
	if _, err := fr.Next(); err != nil {
		t.Fatal(err)
	}
	if !fr.HasFrame() {
		t.Fatal("second frame is buffered but HasFrame is false")
	}
	if got, want := fr.Buffered(), len(f2)+5; got != want {
		t.Fatalf("Buffered = %d, want %d", got, want)
	}
	if _, err := fr.Next(); err != nil {
		t.Fatal(err)
	}
	if fr.HasFrame() {
		t.Fatal("only half a frame is buffered but HasFrame is true")
	}
	go func() { pw.Write(f1[5:]); pw.Close() }()
	if f, err := fr.Next(); err != nil || f.ID != 1 {
		t.Fatalf("third frame: %+v, %v", f, err)
	}
}

func TestHasFrameOnRejectedHeaders(t *testing.T) {
	fr := NewFrameReader(bytes.NewReader([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0}), 0)
	fr.r.Peek(1) // fill the buffer
	if !fr.HasFrame() {
		t.Fatal("a malformed header is buffered: Next would not block")
	}
	fr = NewFrameReader(bytes.NewReader(AppendFrame(nil, 1, OpPut, 0, make([]byte, 100))), 20)
	fr.r.Peek(1)
	if !fr.HasFrame() {
		t.Fatal("an oversized header is buffered: Next would not block")
	}
	fr.Next()
	if fr.HasFrame() {
		t.Fatal("a skip is pending: HasFrame must be conservative")
	}
}

func TestFrameReaderGrowsBodyAsBytesArrive(t *testing.T) {
	// A header announcing 30 MB followed by 10 bytes must not allocate 30 MB.
	hdr, _ := BeginFrame(nil, 1, OpPut, 0)
	binary.BigEndian.PutUint32(hdr, 30<<20)
	fr := NewFrameReader(bytes.NewReader(append(hdr, make([]byte, 10)...)), 0)
	if _, err := fr.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Next = %v", err)
	}
	if cap(fr.buf) > bodyChunk {
		t.Fatalf("body buffer grew to %d bytes for 10 received", cap(fr.buf))
	}
}

func TestFrameReaderReleasesLargeBuffers(t *testing.T) {
	big := AppendFrame(nil, 1, OpPut, 0, make([]byte, 2*maxRetainedBody))
	small := AppendFrame(nil, 2, OpPut, 0, make([]byte, 2*DefaultReadBufferSize))
	fr := NewFrameReader(bytes.NewReader(append(append(big, small...), small...)), 0)
	if _, err := fr.Next(); err != nil {
		t.Fatal(err)
	}
	if cap(fr.buf) < 2*maxRetainedBody {
		t.Fatalf("cap %d", cap(fr.buf))
	}
	if _, err := fr.Next(); err != nil {
		t.Fatal(err)
	}
	if cap(fr.buf) > maxRetainedBody {
		t.Fatalf("a %d-byte body buffer was kept", cap(fr.buf))
	}
	keep := cap(fr.buf)
	if _, err := fr.Next(); err != nil {
		t.Fatal(err)
	}
	if cap(fr.buf) != keep {
		t.Fatal("a small body buffer was not reused")
	}
}

func TestFrameReaderDoesNotAllocate(t *testing.T) {
	for _, size := range []int{16, 1000, 200_000} { // in place, in place, copied
		stream := encodeFrames([]Frame{{ID: 1, Op: OpPut, Body: make([]byte, size)}})
		fr := NewFrameReader(&loopReader{data: stream}, 0)
		fr.Next() // size the body buffer
		allocs := testing.AllocsPerRun(1000, func() {
			if _, err := fr.Next(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("body %d: %.1f allocs per Next", size, allocs)
		}
	}
}

func TestOpcodeAndFlagsStrings(t *testing.T) {
	for op := Opcode(1); op < opEnd; op++ {
		if !op.Valid() || op.String() == "" || strings.HasPrefix(op.String(), "Opcode(") {
			t.Errorf("opcode %d has no name", op)
		}
	}
	if Opcode(0).Valid() || Opcode(0).String() != "Opcode(0)" || opEnd.Valid() {
		t.Error("invalid opcodes reported valid")
	}
	if OpGet.String() != "Get" || OpTTL.String() != "TTL" {
		t.Error("opcode names")
	}
	for f, want := range map[Flags]string{0: "0", FlagResponse: "Response", FlagResponse | FlagError: "Response|Error", 0x81: "Response|0x80"} {
		if f.String() != want {
			t.Errorf("Flags(%#x) = %q, want %q", uint8(f), f.String(), want)
		}
	}
	if !(FlagResponse | FlagError).Has(FlagError) || FlagResponse.Has(FlagError) {
		t.Error("Flags.Has")
	}
}

// TestOpcodeValuesAreFixed pins the numeric values: they are the protocol.
func TestOpcodeValuesAreFixed(t *testing.T) {
	want := map[Opcode]uint8{OpHandshake: 1, OpPing: 2, OpGet: 3, OpPut: 4, OpDelete: 5,
		OpExpire: 6, OpPersist: 7, OpTTL: 8, OpBatch: 9, OpInfo: 10}
	for op, v := range want {
		if uint8(op) != v {
			t.Errorf("%v = %d, want %d", op, uint8(op), v)
		}
	}
	if FlagResponse != 1 || FlagError != 2 || BatchGet != 0 || BatchPut != 1 || BatchDelete != 2 {
		t.Error("flag or batch op values changed")
	}
}

// TestFrameReaderCopiedBodyShorterThanBuffer: once the body buffer has grown
// for a large frame, a smaller copied body must read exactly its own bytes,
// not fill the buffer's capacity from the frames after it.
func TestFrameReaderCopiedBodyShorterThanBuffer(t *testing.T) {
	frames := []Frame{
		{ID: 1, Op: OpPut, Body: bytes.Repeat([]byte{1}, 40)},
		{ID: 2, Op: OpPut, Body: bytes.Repeat([]byte{2}, 20)},
		{ID: 3, Op: OpGet, Body: []byte{3}},
	}
	fr := NewFrameReader(bufio.NewReaderSize(bytes.NewReader(encodeFrames(frames)), 16), 0)
	for i, want := range frames {
		got, err := fr.Next()
		if err != nil || !sameFrame(got, want) {
			t.Fatalf("frame %d = %+v, %v; want %+v", i, got, err, want)
		}
	}
	if _, err := fr.Next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

// drip hands out its chunks one Read at a time and then says "nothing yet"
// (errNothing) without ending, as a non-blocking socket does.
type drip struct{ chunks [][]byte }

var errNothing = errors.New("nothing yet")

func (d *drip) Read(p []byte) (int, error) {
	if len(d.chunks) == 0 {
		return 0, errNothing
	}
	n := copy(p, d.chunks[0])
	d.chunks[0] = d.chunks[0][n:]
	if len(d.chunks[0]) == 0 {
		d.chunks = d.chunks[1:]
	}
	return n, nil
}

// An event loop fills once per readiness and takes only whole frames: a
// "nothing yet" from the socket is not an error of the stream, and a frame
// split across readinesses is whole after the second fill.
func TestFillReadsOnceAndKeepsNoError(t *testing.T) {
	f1 := AppendFrame(nil, 1, OpGet, 0, []byte{0x91, 0xa1, 'a'})
	f2 := AppendFrame(nil, 2, OpGet, 0, []byte{0x91, 0xa1, 'b'})
	d := &drip{chunks: [][]byte{append(append([]byte{}, f1...), f2[:4]...)}}
	fr := NewFrameReader(d, 0)
	if err := fr.Fill(); err != nil {
		t.Fatal(err)
	}
	if !fr.HasFrame() {
		t.Fatal("the first frame is buffered")
	}
	if f, err := fr.Next(); err != nil || f.ID != 1 {
		t.Fatalf("first frame: %+v, %v", f, err)
	}
	if fr.HasFrame() {
		t.Fatal("only part of the second frame is buffered")
	}
	if err := fr.Fill(); !errors.Is(err, errNothing) {
		t.Fatalf("Fill with nothing to read = %v, want the reader's error", err)
	}
	d.chunks = append(d.chunks, f2[4:])
	if err := fr.Fill(); err != nil {
		t.Fatalf("Fill after a \"nothing yet\" = %v: the error must not stick", err)
	}
	if f, err := fr.Next(); err != nil || f.ID != 2 {
		t.Fatalf("second frame: %+v, %v", f, err)
	}
}

// Streams: a frame larger than the buffer, or the body of a refused one
// being skipped, needs reads mid-frame.
func TestStreamsOnFramesPastTheBuffer(t *testing.T) {
	small := AppendFrame(nil, 1, OpGet, 0, []byte{0x91, 0xa1, 'a'})
	big := AppendFrame(nil, 2, OpPut, 0, make([]byte, 200))
	fr := NewFrameReader(bufio.NewReaderSize(&drip{chunks: [][]byte{small, big[:HeaderSize]}}, 64), 1<<20)
	_ = fr.Fill()
	if fr.Streams() {
		t.Fatal("a small frame fits the buffer")
	}
	if _, err := fr.Next(); err != nil {
		t.Fatal(err)
	}
	_ = fr.Fill()
	if !fr.Streams() {
		t.Fatal("a 200-byte frame does not fit a 64-byte buffer")
	}
	fr = NewFrameReader(&drip{chunks: [][]byte{big}}, 100)
	_ = fr.Fill()
	if _, err := fr.Next(); err == nil {
		t.Fatal("a frame over the maximum is refused")
	}
	if !fr.Streams() {
		t.Fatal("the refused frame's body is skipped as it arrives")
	}
}

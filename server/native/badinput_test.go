package native_test

// Bad input on an established connection (issue 3, "Bad input"): what can be
// answered is answered by request id and the connection carries on; what
// leaves the stream out of sync closes that connection. Either way the
// server logs once and the healthy client beside it never notices.

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/native"
)

func closeWrite(t testing.TB, c *rawClient) {
	t.Helper()
	if err := c.nc.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
}

// A frame cut short and then the end of the stream: the complete requests
// before it are executed and answered, the cut one is not, the connection
// is closed and logged once.
func TestTruncatedFrames(t *testing.T) {
	put := func(id uint32, key string) []byte {
		return frame(id, wire.OpPut, wire.AppendPutRequest(nil, key, []byte("value-of-"+key), nil))
	}
	cases := []struct {
		name string
		cut  func(f []byte) []byte
	}{
		{"header cut after the length", func(f []byte) []byte { return f[:wire.LengthSize] }},
		{"header cut before the flags", func(f []byte) []byte { return f[:wire.HeaderSize-1] }},
		{"body cut after the header", func(f []byte) []byte { return f[:wire.HeaderSize] }},
		{"body cut one byte short", func(f []byte) []byte { return f[:len(f)-1] }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			hc := h.startHealthy()
			bad := h.dialReady()

			var pipeline []byte
			pipeline = append(pipeline, put(10, "trunc-a")...)
			pipeline = append(pipeline, put(11, "trunc-b")...)
			pipeline = append(pipeline, tc.cut(put(12, "trunc-cut"))...)
			bad.write(pipeline)
			closeWrite(t, bad)

			frames := bad.expectClosed(ioWait)
			if len(frames) != 2 || frames[0].ID != 10 || frames[1].ID != 11 {
				t.Fatalf("want answers to requests 10 and 11, got %v", ids(frames))
			}
			for _, f := range frames {
				if r := resultOf(t, f); !r.OK() {
					t.Fatalf("put %d: %v", f.ID, r.Status)
				}
			}
			h.waitConns(1)
			h.expectLoggedOnce(bad.addr(), "mid-frame")
			for _, k := range []string{"trunc-a", "trunc-b"} {
				if r := h.store.Get(k); string(r.Value) != "value-of-"+k {
					t.Fatalf("acknowledged %s lost: %v %q", k, r.Status, r.Value)
				}
			}
			if r := h.store.Get("trunc-cut"); r.Status != kv.StatusNotFound {
				t.Fatalf("the truncated put was executed: %v", r.Status)
			}
			hc.progress(10)
			hc.finish()
		})
	}
}

// A frame over MaxFrameSize is answered by its id with FlagError and its
// body skipped; the requests pipelined after it are answered normally.
func TestOversizedFrameIsAnsweredAndSkipped(t *testing.T) {
	const max = 1 << 10
	h := newHarness(t, func(c *native.Config) { c.MaxFrameSize = max })
	hc := h.startHealthy()
	c := h.dialReady()

	big := bytes.Repeat([]byte("x"), 4*max)
	var pipeline []byte
	pipeline = append(pipeline, frame(1, wire.OpPut, wire.AppendPutRequest(nil, "too-big", big, nil))...)
	pipeline = append(pipeline, frame(2, wire.OpPut, wire.AppendPutRequest(nil, "small", []byte("ok"), nil))...)
	// An oversized frame whose "body" looks like frames: it must be skipped
	// as a whole, not parsed.
	inner := bytes.Repeat(frame(99, wire.OpPut, wire.AppendPutRequest(nil, "smuggled", []byte("no"), nil)), 2*max/20)
	pipeline = append(pipeline, frame(3, wire.OpPing, inner)...)
	pipeline = append(pipeline, frame(4, wire.OpGet, wire.AppendKeyRequest(nil, "small"))...)
	c.write(pipeline)

	f := c.read()
	if f.ID != 1 || f.Op != wire.OpPut {
		t.Fatalf("first answer %d %v", f.ID, f.Op)
	}
	if e := errorOf(t, f); e.Status != kv.StatusBadRequest || !strings.Contains(e.Message, "exceeds the maximum") {
		t.Fatalf("oversized put answered %+v", e)
	}
	if r := resultOf(t, c.read()); !r.OK() {
		t.Fatalf("put after the oversized frame: %v", r.Status)
	}
	if f := c.read(); f.ID != 3 || errorOf(t, f).Status != kv.StatusBadRequest {
		t.Fatalf("oversized ping answered by %d", f.ID)
	}
	if r := resultOf(t, c.read()); string(r.Value) != "ok" {
		t.Fatalf("get after two oversized frames: %v %q", r.Status, r.Value)
	}
	c.ping()
	for _, k := range []string{"too-big", "smuggled"} {
		if r := h.store.Get(k); r.Status != kv.StatusNotFound {
			t.Fatalf("%s was stored", k)
		}
	}
	hc.progress(10)

	// The connection stays usable and the error is logged once, however
	// many oversized frames follow.
	for i := range 5 {
		c.write(frame(uint32(100+i), wire.OpPut, wire.AppendPutRequest(nil, "too-big", big, nil)))
		if f := c.read(); f.ID != uint32(100+i) || errorOf(t, f).Status != kv.StatusBadRequest {
			t.Fatalf("oversized put %d answered by %d", 100+i, f.ID)
		}
	}
	c.ping()
	closeWrite(t, c)
	c.expectClosed(ioWait)
	h.waitConns(1)
	h.expectLoggedOnce(c.addr(), "exceeds the maximum")
	hc.finish()
}

// Unknown opcodes have an intact header, so the stream is still in sync:
// each is answered by id with BadRequest and the connection continues.
func TestUnknownOpcodes(t *testing.T) {
	h := newHarness(t)
	hc := h.startHealthy()
	c := h.dialReady()

	unknown := []wire.Opcode{0, firstUnknownOpcode(), 200, 255}
	var pipeline []byte
	for i, op := range unknown {
		pipeline = append(pipeline, frame(uint32(i+1), op, wire.AppendKeyRequest(nil, "k"))...)
	}
	c.write(pipeline)
	for i, op := range unknown {
		f := c.read()
		if f.ID != uint32(i+1) || f.Op != op {
			t.Fatalf("request %d (%v) answered by %d %v", i+1, op, f.ID, f.Op)
		}
		if e := errorOf(t, f); e.Status != kv.StatusBadRequest || !strings.Contains(e.Message, "unknown opcode") {
			t.Fatalf("%v answered %+v", op, e)
		}
	}
	c.ping()
	if r := c.put("after-unknown", []byte("v")); !r.OK() {
		t.Fatal(r.Status)
	}
	hc.progress(10)
	closeWrite(t, c)
	c.expectClosed(ioWait)
	h.waitConns(1)
	h.expectLoggedOnce(c.addr(), "unknown opcode")
	hc.finish()
}

// A length field below the header size cannot be resynchronised: the
// requests before it are answered, then the connection is closed.
func TestMalformedLengthClosesConnection(t *testing.T) {
	cases := map[string][]byte{
		"zero length":         {0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8},
		"length 5":            {0, 0, 0, 5, 0, 0, 0, 1, byte(wire.OpPing), 0},
		"length 0 at the end": {0, 0, 0, 0},
		"random garbage":      {0x00, 0x00, 0x00, 0x03, 0xde, 0xad, 0xbe, 0xef, 0xff, 0x00, 0x13, 0x37},
	}
	for name, garbage := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			hc := h.startHealthy()
			c := h.dialReady()
			pipeline := frame(7, wire.OpPut, wire.AppendPutRequest(nil, "before-garbage", []byte("kept"), nil))
			pipeline = append(pipeline, garbage...)
			pipeline = append(pipeline, frame(8, wire.OpPut, wire.AppendPutRequest(nil, "after-garbage", []byte("never"), nil))...)
			c.write(pipeline)
			frames := c.expectClosed(ioWait) // no half-close: the server closes by itself
			if len(frames) != 1 || frames[0].ID != 7 || !resultOf(t, frames[0]).OK() {
				t.Fatalf("want only the put before the garbage answered, got %v", ids(frames))
			}
			h.waitConns(1)
			h.expectLoggedOnce(c.addr(), "malformed frame")
			if r := h.store.Get("before-garbage"); string(r.Value) != "kept" {
				t.Fatalf("acknowledged write lost: %v", r.Status)
			}
			if r := h.store.Get("after-garbage"); r.Status != kv.StatusNotFound {
				t.Fatal("a request after the garbage was executed")
			}
			hc.progress(10)
			hc.finish()
		})
	}
}

// Something that is not our protocol at all — here an HTTP request sent to
// the native port — reads as a frame of about a gigabyte. It is answered
// as too large, and since its "body" never comes, FrameTimeout closes it.
func TestHTTPRequestOnNativePort(t *testing.T) {
	const frameTimeout = 300 * time.Millisecond
	h := newHarness(t, func(c *native.Config) { c.FrameTimeout = frameTimeout })
	hc := h.startHealthy()
	c := h.dialReady()
	start := time.Now()
	c.write([]byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"))
	frames := c.expectClosed(ioWait)
	if len(frames) != 1 || errorOf(t, frames[0]).Status != kv.StatusBadRequest {
		t.Fatalf("want one error response, got %v", ids(frames))
	}
	if d := time.Since(start); d < frameTimeout {
		t.Fatalf("closed after %v, before FrameTimeout %v", d, frameTimeout)
	}
	hc.progress(10)
	h.waitConns(1)
	recs := h.logsAbout(c.addr())
	if len(recs) != 2 || !strings.Contains(recs[0].Line, "exceeds the maximum") || !strings.Contains(recs[1].Line, "did not arrive in time") {
		t.Fatalf("want the oversized frame and the timeout logged once each, got %v", recs)
	}
	hc.finish()
}

// validBodies returns a well-formed body for every opcode whose body the
// server decodes. Every strict prefix of each is malformed, and so is each
// with a byte appended.
func validBodies() map[wire.Opcode][]byte {
	batch := wire.AppendBatchRequestHeader(nil, 2)
	batch = wire.AppendBatchItem(batch, wire.BatchPut, "mb-batch", []byte("v"), &kv.PutOptions{TTL: time.Minute})
	batch = wire.AppendBatchItem(batch, wire.BatchGet, "mb-batch", nil, nil)
	return map[wire.Opcode][]byte{
		wire.OpGet:     wire.AppendKeyRequest(nil, "mb-get"),
		wire.OpDelete:  wire.AppendKeyRequest(nil, "mb-delete"),
		wire.OpPersist: wire.AppendKeyRequest(nil, "mb-persist"),
		wire.OpTTL:     wire.AppendKeyRequest(nil, "mb-ttl"),
		wire.OpPut: wire.AppendPutRequest(nil, "mb-put", []byte("value"), &kv.PutOptions{
			IfAbsent: true, TTL: time.Minute, ContentType: "text/plain", Labels: map[string]string{"a": "b"},
		}),
		wire.OpExpire:  wire.AppendExpireRequest(nil, "mb-expire", time.Minute),
		wire.OpBatch:   batch,
		wire.OpCommand: wire.AppendCommandRequest(nil, &kv.Cmd{Op: kv.CmdHSet, Key: "mb-command", Args: [][]byte{[]byte("f"), []byte("v")}}),
	}
}

// Every opcode with a body, sent every malformed body we can think of: each
// is answered by id with BadRequest and FlagError, nothing is executed, and
// the connection goes on. (Ping echoes any body and Info ignores it, so
// they have no malformed body.)
func TestMalformedBodiesForEveryOpcode(t *testing.T) {
	h := newHarness(t)
	hc := h.startHealthy()
	c := h.dialReady()

	generic := map[string][]byte{
		"empty":                 {},
		"nil":                   {0xc0},
		"never-used byte 0xc1":  {0xc1},
		"an integer":            {0x01},
		"empty array":           {0x90},
		"array of integers":     {0x93, 0x01, 0x02, 0x03},
		"str32 claiming 4 GiB":  {0x91, 0xdb, 0xff, 0xff, 0xff, 0xff, 'a'},
		"array32 claiming 4 Gi": {0xdd, 0xff, 0xff, 0xff, 0xff},
		"map instead of array":  {0x81, 0xa1, 'k', 0xa1, 'v'},
		"deep nesting":          bytes.Repeat([]byte{0x91}, 10000),
	}
	type sent struct {
		op   wire.Opcode
		what string
	}
	var pipeline []byte
	requests := map[uint32]sent{}
	id := uint32(100)
	add := func(op wire.Opcode, what string, body []byte) {
		id++
		requests[id] = sent{op, what}
		pipeline = append(pipeline, frame(id, op, body)...)
	}
	for op, valid := range validBodies() {
		for what, body := range generic {
			add(op, what, body)
		}
		for n := range len(valid) {
			add(op, fmt.Sprintf("prefix of %d bytes", n), valid[:n])
		}
		add(op, "trailing byte", append(bytes.Clone(valid), 0xc0))
	}
	// A batch whose second item is malformed: the first must not run.
	half := wire.AppendBatchRequestHeader(nil, 2)
	half = wire.AppendBatchItem(half, wire.BatchPut, "mb-batch-half", []byte("v"), nil)
	half = append(half, 0x92, 0x01, 0x01) // [Put, 1]: the key is not a string
	add(wire.OpBatch, "second item malformed", half)
	// A second handshake is not malformed, but it is refused the same way.
	add(wire.OpHandshake, "second handshake", wire.AppendHandshakeRequest(nil, wire.HandshakeRequest{ProtocolVersion: 1, Store: storeName}))

	c.write(pipeline)
	for range len(requests) {
		f := c.read()
		s, ok := requests[f.ID]
		if !ok {
			t.Fatalf("answer to unknown request %d", f.ID)
		}
		delete(requests, f.ID)
		if f.Op != s.op {
			t.Fatalf("request %d (%v, %s) answered as %v", f.ID, s.op, s.what, f.Op)
		}
		if !f.Flags.Has(wire.FlagError) {
			t.Fatalf("%v with %s was not refused", s.op, s.what)
		}
		if e := errorOf(t, f); e.Status != kv.StatusBadRequest {
			t.Fatalf("%v with %s: %+v", s.op, s.what, e)
		}
	}
	c.ping()
	hc.progress(10)

	for _, k := range []string{"mb-put", "mb-batch", "mb-batch-half", "mb-command"} {
		if r := h.store.Get(k); r.Status != kv.StatusNotFound {
			t.Fatalf("%s was written by a malformed request", k)
		}
	}
	// The same connection still does real work.
	if r := c.put("mb-after", []byte("fine")); !r.OK() {
		t.Fatal(r.Status)
	}
	if r := c.get("mb-after"); string(r.Value) != "fine" {
		t.Fatalf("%v %q", r.Status, r.Value)
	}
	closeWrite(t, c)
	c.expectClosed(ioWait)
	h.waitConns(1)
	h.expectLoggedOnce(c.addr(), "BadRequest")
	hc.finish()
}

// An unknown operation inside a well-formed batch is a per-item outcome,
// not a protocol error: that item is BadRequest and the others run.
func TestBatchWithUnknownItemOp(t *testing.T) {
	h := newHarness(t)
	c := h.dialReady()
	body := wire.AppendBatchRequestHeader(nil, 3)
	body = wire.AppendBatchItem(body, wire.BatchPut, "bi-1", []byte("one"), nil)
	body = wire.AppendBatchItem(body, wire.BatchOp(77), "bi-2", []byte("two"), nil)
	body = wire.AppendBatchItem(body, wire.BatchGet, "bi-1", nil, nil)
	f := c.call(wire.OpBatch, body)
	if f.Flags.Has(wire.FlagError) {
		t.Fatalf("whole batch refused: %v", errorOf(t, f))
	}
	res, err := wire.DecodeBatchResult(f.Body, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || !res[0].OK() || res[1].Status != kv.StatusBadRequest || string(res[2].Value) != "one" {
		t.Fatalf("results %+v", res)
	}
	if r := h.store.Get("bi-2"); r.Status != kv.StatusNotFound {
		t.Fatal("the unknown item op was executed")
	}
}

// firstUnknownOpcode is one past the highest opcode this build knows.
func firstUnknownOpcode() wire.Opcode {
	op := wire.Opcode(1)
	for op.Valid() {
		op++
	}
	return op
}

func ids(frames []wire.Frame) []string {
	var out []string
	for _, f := range frames {
		out = append(out, fmt.Sprintf("%d:%v:%v", f.ID, f.Op, f.Flags))
	}
	return out
}

package native_test

// Bad handshakes: every refusal is answered (a handshake response with a
// status, or an error frame when the first frame is not a handshake), the
// connection is closed, the refusal is logged once and nothing of the store
// leaks to a client that did not authenticate.

import (
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/native"
)

func TestHandshakeRefusals(t *testing.T) {
	cases := []struct {
		name    string
		token   string // server token
		req     wire.HandshakeRequest
		status  kv.Status
		message string // in the response
		hidden  string // must not appear in the response
		logged  string
	}{
		{name: "wrong store", req: wire.HandshakeRequest{ProtocolVersion: 1, Store: "orders"},
			status: kv.StatusBadRequest, message: `"orders" is not served here`, logged: "handshake refused"},
		{name: "empty store", req: wire.HandshakeRequest{ProtocolVersion: 1},
			status: kv.StatusBadRequest, message: "is not served here", logged: "handshake refused"},
		{name: "protocol version 0", req: wire.HandshakeRequest{ProtocolVersion: 0, Store: storeName},
			status: kv.StatusBadRequest, message: "unsupported protocol version 0", logged: "handshake refused"},
		{name: "wrong token", token: "s3cret", req: wire.HandshakeRequest{ProtocolVersion: 1, Store: storeName, Token: "guess"},
			status: kv.StatusUnauthorized, message: "authentication failed", hidden: storeName, logged: "handshake refused"},
		{name: "missing token", token: "s3cret", req: wire.HandshakeRequest{ProtocolVersion: 1, Store: storeName},
			status: kv.StatusUnauthorized, message: "authentication failed", hidden: storeName, logged: "handshake refused"},
		{name: "wrong token and wrong store", token: "s3cret", req: wire.HandshakeRequest{ProtocolVersion: 1, Store: "orders", Token: "guess"},
			status: kv.StatusUnauthorized, message: "authentication failed", hidden: storeName, logged: "handshake refused"},
		{name: "wrong token and bad version", token: "s3cret", req: wire.HandshakeRequest{ProtocolVersion: 0, Store: storeName, Token: "guess"},
			status: kv.StatusUnauthorized, message: "authentication failed", hidden: "version", logged: "handshake refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *native.Config) { c.Token = tc.token })
			hc := h.startHealthyWithToken(tc.token)
			c := h.dial()
			resp := c.handshake(tc.req)
			if resp.Status != tc.status || !strings.Contains(resp.Message, tc.message) {
				t.Fatalf("handshake answered %+v, want %v %q", resp, tc.status, tc.message)
			}
			if tc.hidden != "" && strings.Contains(resp.Message, tc.hidden) {
				t.Fatalf("refusal %q reveals %q", resp.Message, tc.hidden)
			}
			if frames := c.expectClosed(ioWait); len(frames) != 0 {
				t.Fatalf("frames after a refused handshake: %v", ids(frames))
			}
			h.waitConns(1)
			h.expectLoggedOnce(c.addr(), tc.logged)
			hc.progress(10)
			hc.finish()
		})
	}
}

// A client newer than the server is offered the server's version.
func TestHandshakeNegotiatesDownNewerClient(t *testing.T) {
	h := newHarness(t)
	c := h.dial()
	resp := c.handshake(wire.HandshakeRequest{ProtocolVersion: 999, Store: storeName})
	if resp.Status != kv.StatusSuccess || resp.ProtocolVersion != wire.ProtocolVersion || resp.MaxFrameSize == 0 {
		t.Fatalf("%+v", resp)
	}
	c.ping()
}

// The first frame must be a handshake. Whatever else comes first is
// answered by its id — BadRequest, or Unauthorized when a token is
// configured, revealing nothing — and the connection is closed.
func TestFirstFrameMustBeHandshake(t *testing.T) {
	for _, token := range []string{"", "s3cret"} {
		want := kv.StatusBadRequest
		if token != "" {
			want = kv.StatusUnauthorized
		}
		for _, op := range []wire.Opcode{wire.OpGet, wire.OpPut, wire.OpPing, wire.OpInfo, 0, 200} {
			t.Run(want.String()+"/"+op.String(), func(t *testing.T) {
				h := newHarness(t, func(c *native.Config) { c.Token = token })
				h.store.Put("secret-key", []byte("secret-value"), nil)
				hc := h.startHealthyWithToken(token)
				c := h.dial()
				var pipeline []byte
				pipeline = append(pipeline, frame(5, op, wire.AppendKeyRequest(nil, "secret-key"))...)
				pipeline = append(pipeline, frame(6, wire.OpGet, wire.AppendKeyRequest(nil, "secret-key"))...)
				c.write(pipeline)
				frames := c.expectClosed(ioWait)
				if len(frames) != 1 || frames[0].ID != 5 || frames[0].Op != op {
					t.Fatalf("want exactly one answer, to request 5, got %v", ids(frames))
				}
				e := errorOf(t, frames[0])
				if e.Status != want || strings.Contains(e.Message, "secret") {
					t.Fatalf("answered %+v", e)
				}
				h.waitConns(1)
				h.expectLoggedOnce(c.addr(), "did not start with a handshake")
				hc.progress(10)
				hc.finish()
			})
		}
	}
}

// A handshake after the handshake is refused by id; the connection goes on.
func TestSecondHandshakeIsRefused(t *testing.T) {
	h := newHarness(t)
	hc := h.startHealthy()
	c := h.dialReady()
	for range 3 {
		f := c.call(wire.OpHandshake, wire.AppendHandshakeRequest(nil, wire.HandshakeRequest{ProtocolVersion: 1, Store: "other"}))
		if e := errorOf(t, f); e.Status != kv.StatusBadRequest || !strings.Contains(e.Message, "already") {
			t.Fatalf("%+v", e)
		}
	}
	if r := c.put("after-second-handshake", []byte("v")); !r.OK() {
		t.Fatal(r.Status)
	}
	closeWrite(t, c)
	c.expectClosed(ioWait)
	h.waitConns(1)
	h.expectLoggedOnce(c.addr(), "already")
	hc.finish()
}

// Handshake frames that cannot be read: each closes the connection, the
// ones that can be answered are.
func TestUnreadableHandshakes(t *testing.T) {
	const handshakeTimeout = 300 * time.Millisecond
	hs := frame(1, wire.OpHandshake, wire.AppendHandshakeRequest(nil, wire.HandshakeRequest{ProtocolVersion: 1, Store: storeName}))
	cases := []struct {
		name      string
		send      []byte
		halfClose bool
		answered  bool // an error or handshake response comes back
		timedOut  bool // closed by HandshakeTimeout
		logged    string
	}{
		{name: "silence", timedOut: true, logged: "did not arrive in time"},
		{name: "half a header", send: hs[:3], timedOut: true, logged: "did not arrive in time"},
		{name: "half a body", send: hs[:len(hs)-2], timedOut: true, logged: "did not arrive in time"},
		{name: "cut then closed", send: hs[:len(hs)-2], halfClose: true, logged: "mid-frame"},
		{name: "malformed length", send: []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0}, logged: "malformed frame"},
		{name: "malformed body", send: frame(1, wire.OpHandshake, []byte{0x91, 0xc1}), answered: true, logged: "malformed handshake"},
		{name: "too large", send: frame(1, wire.OpHandshake, make([]byte, 2048)), answered: true, logged: "exceeds the maximum"},
		{name: "TLS client hello on a plain port", send: []byte{0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03}, answered: true, logged: "exceeds the maximum"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *native.Config) {
				c.HandshakeTimeout = handshakeTimeout
				c.MaxFrameSize = 1024
			})
			hc := h.startHealthy()
			start := time.Now() // HandshakeTimeout runs from accept
			c := h.dial()
			if len(tc.send) > 0 {
				c.write(tc.send)
			}
			if tc.halfClose {
				closeWrite(t, c)
			}
			frames := c.expectClosed(ioWait)
			if tc.answered != (len(frames) == 1) || len(frames) > 1 {
				t.Fatalf("answered %v, want answered=%v", ids(frames), tc.answered)
			}
			if d := time.Since(start); tc.timedOut && d < handshakeTimeout {
				t.Fatalf("closed after %v, before the handshake timeout", d)
			}
			h.waitConns(1)
			h.expectLoggedOnce(c.addr(), tc.logged)
			hc.progress(10)
			hc.finish()
		})
	}
}

func (h *harness) startHealthyWithToken(token string) *healthy {
	h.t.Helper()
	if token == "" {
		return h.startHealthy()
	}
	return h.startHealthyAs(wire.HandshakeRequest{ProtocolVersion: wire.ProtocolVersion, Store: storeName, Token: token})
}

// Issue #15 item 4: the native port refuses anything that is not its
// handshake at once — by the first frame's header, without waiting for a
// body that may never come (the handshake timeout here is a minute), and
// an HTTP request line is refused as soon as its first bytes arrive.
func TestNotAHandshakeRefusedAtOnce(t *testing.T) {
	for name, send := range map[string][]byte{
		"a Put header, no body": frame(7, wire.OpPut, make([]byte, 500))[:wire.HeaderSize],
		"an HTTP request":       []byte("POST / HTTP/1.1\r\nHost: x\r\n\r\nSET pwned yes\r\n"),
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, func(c *native.Config) { c.HandshakeTimeout = time.Minute })
			hc := h.startHealthy()
			c := h.dial()
			c.write(send)
			start := time.Now()
			frames := c.expectClosed(ioWait)
			if len(frames) != 1 {
				t.Fatalf("answered %v, want one refusal", ids(frames))
			}
			if e := errorOf(t, frames[0]); e.Status != kv.StatusBadRequest {
				t.Fatalf("answered %+v", e)
			}
			if d := time.Since(start); d >= time.Minute {
				t.Fatalf("closed after %v: waited for the handshake timeout", d)
			}
			h.waitConns(1)
			hc.progress(10)
			hc.finish()
		})
	}
}

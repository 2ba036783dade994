package main

import (
	"errors"
	"fmt"
	"math"
	"net"
	"time"
	"unsafe"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
)

// nativeConn speaks the Zaris native protocol on one connection: a
// handshake, then batches of pipelined Get/Put frames whose responses are
// matched to their requests by id (they may arrive in any order).
type nativeConn struct {
	conn    net.Conn
	fr      *wire.FrameReader
	timeout time.Duration
	value   []byte

	buf     []byte // the batch being written; reused
	nextID  uint32 // the id of the next request; ids start at 1 (handshake)
	pending []bool // pending[i]: request base+i of the current batch has no response yet
}

// handshakeID is the request id of the handshake frame.
const handshakeID = 1

func newNativeConn(conn net.Conn, cfg *Config, value []byte, deadline time.Time) (*nativeConn, error) {
	c := &nativeConn{
		conn:    conn,
		timeout: cfg.Timeout,
		value:   value,
		nextID:  handshakeID + 1,
		// Responses carry at most one value: the default limit fits unless
		// values are huge.
		fr: wire.NewFrameReader(conn, max(wire.DefaultMaxFrameSize, 2*cfg.DataSize)),
	}
	if err := c.handshake(cfg, deadline); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *nativeConn) handshake(cfg *Config, deadline time.Time) error {
	addr := c.conn.RemoteAddr()
	_ = c.conn.SetDeadline(deadline)
	body := wire.AppendHandshakeRequest(nil, wire.HandshakeRequest{
		ProtocolVersion: wire.ProtocolVersion,
		Store:           cfg.Store,
		Token:           cfg.Token,
		ClientName:      "zaris-bench",
	})
	if _, err := c.conn.Write(wire.AppendFrame(nil, handshakeID, wire.OpHandshake, 0, body)); err != nil {
		return fmt.Errorf("sending handshake to %s: %w", addr, err)
	}
	f, err := c.fr.Next()
	if err != nil {
		return fmt.Errorf("reading handshake response from %s (is it a Zaris native port? try --protocol resp for RESP): %w", addr, err)
	}
	if f.ID != handshakeID || f.Op != wire.OpHandshake || !f.Flags.Has(wire.FlagResponse) {
		return fmt.Errorf("unexpected first frame from %s: id %d op %v flags %v", addr, f.ID, f.Op, f.Flags)
	}
	if f.Flags.Has(wire.FlagError) {
		var e wire.ErrorResponse
		if err := wire.DecodeErrorResponse(f.Body, &e); err != nil {
			return fmt.Errorf("handshake with %s: undecodable error response: %w", addr, err)
		}
		return fmt.Errorf("%w by %s: %w", ErrHandshakeRejected, addr, &e)
	}
	var h wire.HandshakeResponse
	if err := wire.DecodeHandshakeResponse(f.Body, &h); err != nil {
		return fmt.Errorf("handshake with %s: %w", addr, err)
	}
	switch h.Status {
	case kv.StatusSuccess:
	case kv.StatusUnauthorized:
		return fmt.Errorf("%w by %s: unauthorized (missing or wrong --token): %s", ErrHandshakeRejected, addr, h.Message)
	case kv.StatusBadRequest:
		return fmt.Errorf("%w by %s: bad request (check --store %q): %s", ErrHandshakeRejected, addr, cfg.Store, h.Message)
	default:
		return fmt.Errorf("%w by %s: %v: %s", ErrHandshakeRejected, addr, h.Status, h.Message)
	}
	if !wire.SupportedVersion(h.ProtocolVersion) {
		return fmt.Errorf("%w by %s: server chose protocol version %d; this build speaks %d..%d",
			ErrHandshakeRejected, addr, h.ProtocolVersion, wire.MinProtocolVersion, wire.ProtocolVersion)
	}
	maxFrame := int(h.MaxFrameSize)
	if maxFrame == 0 {
		maxFrame = wire.DefaultMaxFrameSize
	}
	// The largest frame sent: a Put of the longest key and the value.
	longestKey := string(make([]byte, len(cfg.KeyPrefix)+maxKeyDigits))
	if need := wire.MinFrameLength + len(wire.AppendPutRequest(nil, longestKey, c.value, nil)); need > maxFrame {
		return fmt.Errorf("--data-size %d: a SET frame of %d bytes exceeds the server's maximum frame size %d",
			cfg.DataSize, need, maxFrame)
	}
	return nil
}

// keyString views a key as a string without copying, for the wire append
// functions, which only copy it into the frame buffer.
func keyString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func (c *nativeConn) roundTrip(reqs []request, res []response) error {
	n := len(reqs)
	base := c.nextID
	if uint64(base)+uint64(n) > math.MaxUint32 {
		base = handshakeID + 1 // wrap; nothing is in flight between batches
	}
	c.nextID = base + uint32(n)

	buf := c.buf[:0]
	for i, r := range reqs {
		var start int
		if r.kind == opGet {
			buf, start = wire.BeginFrame(buf, base+uint32(i), wire.OpGet, 0)
			buf = wire.AppendKeyRequest(buf, keyString(r.key))
		} else {
			buf, start = wire.BeginFrame(buf, base+uint32(i), wire.OpPut, 0)
			buf = wire.AppendPutRequest(buf, keyString(r.key), c.value, nil)
		}
		buf = wire.EndFrame(buf, start)
	}
	c.buf = buf
	if cap(c.pending) < n {
		c.pending = make([]bool, n)
	}
	pending := c.pending[:n]
	for i := range pending {
		pending[i] = true
	}

	_ = c.conn.SetDeadline(time.Now().Add(c.timeout))
	start := time.Now()
	if _, err := c.conn.Write(buf); err != nil {
		return fmt.Errorf("writing requests: %w", err)
	}
	for left := n; left > 0; {
		f, err := c.fr.Next()
		if err != nil {
			return fmt.Errorf("reading responses (%d of %d outstanding): %w", left, n, err)
		}
		now := time.Now()
		if f.ID == 0 {
			continue // reserved for unsolicited server frames; not ours
		}
		i := int(f.ID - base)
		if f.ID < base || i >= n || !pending[i] {
			return fmt.Errorf("protocol violation: response id %d matches no outstanding request (batch %d..%d)", f.ID, base, base+uint32(n)-1)
		}
		want := wire.OpGet
		if reqs[i].kind == opSet {
			want = wire.OpPut
		}
		if f.Op != want || !f.Flags.Has(wire.FlagResponse) {
			return fmt.Errorf("protocol violation: response id %d has op %v flags %v, want %v response", f.ID, f.Op, f.Flags, want)
		}
		pending[i] = false
		left--
		res[i] = response{latency: now.Sub(start)}
		res[i].outcome, res[i].errMsg = classifyNative(reqs[i].kind, f)
	}
	return nil
}

// classifyNative turns one response frame into an outcome. Only a success
// (and, for a GET, a miss) is a good outcome; any other status or a protocol
// error response counts as an error.
func classifyNative(kind opKind, f wire.Frame) (outcome, string) {
	if f.Flags.Has(wire.FlagError) {
		var e wire.ErrorResponse
		if err := wire.DecodeErrorResponse(f.Body, &e); err != nil {
			return outError, err.Error()
		}
		return outError, e.Error()
	}
	var r kv.Result
	if err := wire.DecodeResult(f.Body, &r); err != nil {
		return outError, err.Error()
	}
	switch {
	case r.Status == kv.StatusSuccess && kind == opGet:
		return outHit, ""
	case r.Status == kv.StatusSuccess:
		return outOK, ""
	case r.Status == kv.StatusNotFound && kind == opGet:
		return outMiss, ""
	}
	return outError, fmt.Sprintf("%v: %v", kind, r.Status)
}

func (c *nativeConn) Close() error {
	err := c.conn.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

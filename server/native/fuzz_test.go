package native_test

import (
	"bytes"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/native"
)

// FuzzServerConn feeds arbitrary bytes to a real server over loopback after
// a valid handshake, then ends the stream. The server must not panic (a
// panic is contained to the connection and counted: the count must stay
// 0), must send only
// well-formed response frames, must close the connection once the input is
// used up, and must still serve a fresh client.
func FuzzServerConn(f *testing.F) {
	h := newHarness(f, func(c *native.Config) {
		c.MaxFrameSize = 64 << 10
		c.FrameTimeout = 2 * time.Second
		c.WriteTimeout = 2 * time.Second
		c.PoolBatchThreshold = 4
		c.MinWorkers, c.MaxWorkers = 1, 8
	})
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	var round atomic.Int64
	f.Fuzz(func(t *testing.T, data []byte) {
		c := dialFuzz(t, h.addr)
		defer c.Close()

		wrote := make(chan error, 1)
		go func() {
			_ = c.SetWriteDeadline(time.Now().Add(ioWait))
			_, err := c.Write(data)
			if err == nil {
				err = c.(*net.TCPConn).CloseWrite()
			}
			wrote <- err
		}()
		// Read everything the server sends until it closes. It must close:
		// the input ended, so any frame it waits for is truncated.
		fr := wire.NewFrameReader(c, 0)
		_ = c.SetReadDeadline(time.Now().Add(ioWait))
		for {
			fm, err := fr.Next()
			if err != nil {
				if !closedByPeer(err) {
					t.Fatalf("server neither answered nor closed: %v", err)
				}
				break
			}
			if !fm.Flags.Has(wire.FlagResponse) {
				t.Fatalf("frame %d %v from the server without FlagResponse", fm.ID, fm.Op)
			}
			if fm.Flags.Has(wire.FlagError) {
				var e wire.ErrorResponse
				if err := wire.DecodeErrorResponse(fm.Body, &e); err != nil {
					t.Fatalf("malformed error response: %v", err)
				}
			}
		}
		if err := <-wrote; err != nil && !closedByPeer(err) {
			t.Fatalf("client write: %v", err)
		}

		// The server contains a panic to its connection (it would go
		// unnoticed otherwise): none may have happened.
		if n := h.obs.panics.Load(); n != 0 {
			t.Fatalf("%d contained panic(s) while serving the input", n)
		}

		// A fresh client is served.
		fresh := dialFuzz(t, h.addr)
		defer fresh.Close()
		key := fmt.Sprintf("fuzz-fresh-%d", round.Add(1))
		var req []byte
		req = append(req, frame(1, wire.OpPut, wire.AppendPutRequest(nil, key, []byte("ok"), nil))...)
		req = append(req, frame(2, wire.OpGet, wire.AppendKeyRequest(nil, key))...)
		_ = fresh.SetDeadline(time.Now().Add(ioWait))
		if _, err := fresh.Write(req); err != nil {
			t.Fatal(err)
		}
		ffr := wire.NewFrameReader(fresh, 0)
		for i := 1; i <= 2; i++ {
			fm, err := ffr.Next()
			if err != nil {
				t.Fatalf("fresh client: %v", err)
			}
			var r kv.Result
			if fm.ID != uint32(i) || fm.Flags.Has(wire.FlagError) || wire.DecodeResult(fm.Body, &r) != nil || !r.OK() || (i == 2 && string(r.Value) != "ok") {
				t.Fatalf("fresh client: answer %d is %d %v %+v", i, fm.ID, fm.Flags, r)
			}
		}
		// Half-close and wait for the server to close first, so TIME_WAIT
		// lands on the listening side and a long fuzz run does not use up
		// the ephemeral ports.
		if err := fresh.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if _, err := ffr.Next(); !closedByPeer(err) {
			t.Fatalf("fresh client: want the server to close after a clean end of stream, got %v", err)
		}
	})
}

// dialFuzz connects and completes a handshake, reporting with t.
func dialFuzz(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, ioWait)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(ioWait))
	hs := frame(0, wire.OpHandshake, wire.AppendHandshakeRequest(nil, wire.HandshakeRequest{ProtocolVersion: wire.ProtocolVersion, Store: storeName}))
	if _, err := c.Write(hs); err != nil {
		t.Fatal(err)
	}
	// Read exactly the handshake answer straight from the connection: a
	// buffered reader here would swallow bytes of later answers.
	var hdr [wire.HeaderSize]byte
	if _, err := readFull(c, hdr[:]); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, int(uint32(hdr[0])<<24|uint32(hdr[1])<<16|uint32(hdr[2])<<8|uint32(hdr[3]))-wire.MinFrameLength)
	if _, err := readFull(c, body); err != nil {
		t.Fatal(err)
	}
	var resp wire.HandshakeResponse
	if err := wire.DecodeHandshakeResponse(body, &resp); err != nil || resp.Status != kv.StatusSuccess {
		t.Fatalf("handshake: %+v %v", resp, err)
	}
	_ = c.SetDeadline(time.Time{})
	return c
}

func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// fuzzSeeds are well-formed and malformed streams of every kind the server
// distinguishes.
func fuzzSeeds() [][]byte {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	put := frame(1, wire.OpPut, wire.AppendPutRequest(nil, "k", []byte("v"), &kv.PutOptions{TTL: time.Minute, Labels: map[string]string{"a": "b"}}))
	get := frame(2, wire.OpGet, wire.AppendKeyRequest(nil, "k"))
	batch := wire.AppendBatchRequestHeader(nil, 6)
	for i := range 6 {
		batch = wire.AppendBatchItem(batch, wire.BatchOp(i%4), fmt.Sprintf("b%d", i%2), []byte("x"), nil)
	}
	seeds := [][]byte{
		{},
		put,
		cat(put, get, frame(3, wire.OpDelete, wire.AppendKeyRequest(nil, "k")), frame(4, wire.OpTTL, wire.AppendKeyRequest(nil, "k"))),
		cat(put, frame(5, wire.OpExpire, wire.AppendExpireRequest(nil, "k", time.Second)), frame(6, wire.OpPersist, wire.AppendKeyRequest(nil, "k"))),
		frame(7, wire.OpBatch, batch),
		frame(8, wire.OpCommand, wire.AppendCommandRequest(nil, &kv.Cmd{Op: kv.CmdHSet, Key: "h", Args: [][]byte{[]byte("f"), []byte("v")}})),
		frame(9, wire.OpCommand, wire.AppendCommandRequest(nil, &kv.Cmd{Op: kv.CmdIncrBy, Key: "n", Args: [][]byte{[]byte("5")}})),
		cat(frame(10, wire.OpPing, []byte("p")), frame(11, wire.OpInfo, nil)),
		frame(12, wire.OpHandshake, wire.AppendHandshakeRequest(nil, wire.HandshakeRequest{ProtocolVersion: 1, Store: storeName})),
		cat(put, put[:len(put)-2]), // truncated body
		get[:5],                    // truncated header
		{0, 0, 0, 0, 1, 2, 3},      // malformed length
		wire.AppendFrame(nil, 13, wire.OpPut, 0, make([]byte, 70<<10)),             // over MaxFrameSize
		cat([]byte{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 14, byte(wire.OpGet), 0}, get), // oversized header, body never comes
		frame(15, 0, nil),
		frame(16, 250, []byte{0xc1}),
		frame(17, wire.OpGet, []byte{0x91, 0xdb, 0xff, 0xff, 0xff, 0xff}),
		[]byte("GET / HTTP/1.1\r\n\r\n"),
	}
	return seeds
}

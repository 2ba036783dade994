package native_test

// Slow clients: a frame that starts must finish within FrameTimeout (the
// slow-loris guard), an idle connection between frames is left alone, and a
// client that does not read its responses is closed by WriteTimeout —
// without costing the server memory in proportion to what it asked for.

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

const shortTimeout = 300 * time.Millisecond

// Half a frame, then nothing: closed once FrameTimeout has passed since its
// first byte, not before, and the half request is never executed.
func TestSlowLorisHalfFrame(t *testing.T) {
	put := frame(1, wire.OpPut, wire.AppendPutRequest(nil, "loris", []byte("half"), nil))
	for name, half := range map[string][]byte{
		"half a header": put[:wire.HeaderSize/2],
		"half a body":   put[:len(put)-3],
		// The rest of a frame over the limit counts as part of that frame.
		"oversized header only": wire.AppendFrame(nil, 2, wire.OpPut, 0, make([]byte, 4096))[:wire.HeaderSize+10],
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, func(c *native.Config) {
				c.FrameTimeout = shortTimeout
				c.MaxFrameSize = 1024
			})
			hc := h.startHealthy()
			c := h.dialReady()
			start := time.Now()
			c.write(half)
			hc.progress(10) // the healthy client is served while the loris waits
			frames := c.expectClosed(ioWait)
			if d := time.Since(start); d < shortTimeout {
				t.Fatalf("closed after %v, before FrameTimeout %v", d, shortTimeout)
			}
			for _, f := range frames { // the oversized frame is answered first
				if f.ID != 2 || errorOf(t, f).Status != kv.StatusBadRequest {
					t.Fatalf("unexpected answer %v", ids(frames))
				}
			}
			h.waitConns(1)
			if r := h.store.Get("loris"); r.Status != kv.StatusNotFound {
				t.Fatal("the half put was executed")
			}
			recs := h.logsAbout(c.addr())
			if len(recs) == 0 || !bytes.Contains([]byte(recs[len(recs)-1].Line), []byte("did not arrive in time")) || len(recs) > 1+len(frames) {
				t.Fatalf("want the timeout logged once (after the oversized frame, if any), got %v", recs)
			}
			hc.progress(10)
			hc.finish()
		})
	}
}

// A client that dribbles a frame one byte at a time, each byte well within
// FrameTimeout of the previous one but the frame as a whole slower: closed
// after FrameTimeout, the frame never executed.
func TestSlowLorisDribble(t *testing.T) {
	h := newHarness(t, func(c *native.Config) { c.FrameTimeout = shortTimeout })
	hc := h.startHealthy()
	c := h.dialReady()
	put := frame(1, wire.OpPut, wire.AppendPutRequest(nil, "dribble", bytes.Repeat([]byte("d"), 64), nil))

	stop := make(chan struct{})
	dribbled := make(chan int, 1)
	go func() {
		tick := time.NewTicker(shortTimeout / 6) // the pace under test
		defer tick.Stop()
		n := 0
		defer func() { dribbled <- n }()
		for ; n < len(put); n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			_ = c.nc.SetWriteDeadline(time.Now().Add(ioWait))
			if _, err := c.nc.Write(put[n : n+1]); err != nil {
				return
			}
		}
	}()
	start := time.Now()
	frames := c.expectClosed(ioWait)
	elapsed := time.Since(start)
	close(stop)
	n := <-dribbled
	if len(frames) != 0 || elapsed < shortTimeout || n >= len(put) {
		t.Fatalf("closed after %v with %d of %d bytes sent and %d answers", elapsed, n, len(put), len(frames))
	}
	h.waitConns(1)
	h.expectLoggedOnce(c.addr(), "did not arrive in time")
	if r := h.store.Get("dribble"); r.Status != kv.StatusNotFound {
		t.Fatal("the dribbled put was executed")
	}
	hc.progress(10)
	hc.finish()
}

// FrameTimeout guards one frame, not the connection: idle time between
// frames — right after the handshake or after a response — is not limited.
func TestIdleConnectionIsNotClosed(t *testing.T) {
	h := newHarness(t, func(c *native.Config) {
		c.FrameTimeout = shortTimeout / 2
		c.HandshakeTimeout = shortTimeout / 2
	})
	c := h.dialReady()
	c.expectOpen(3 * shortTimeout) // idle right after the handshake
	if r := c.put("idle", []byte("v")); !r.OK() {
		t.Fatal(r.Status)
	}
	c.expectOpen(3 * shortTimeout) // idle after a response
	if r := c.get("idle"); string(r.Value) != "v" {
		t.Fatal(r.Status)
	}
	// Pipelined frames that straddle writes: a partial frame is buffered
	// the whole time, but each frame completes quickly, so each gets a
	// fresh deadline and the connection lives far longer than one timeout.
	var pipeline []byte
	const n = 12
	for i := range n {
		pipeline = append(pipeline, frame(uint32(1000+i), wire.OpPing, []byte("straddle"))...)
	}
	step := len(pipeline) / n // every frame has the same size
	// 12 writes, each 1/12 of shortTimeout apart: the whole pipeline spans
	// twice the frame timeout while each frame completes with a 6× margin
	// (room for a loaded test machine).
	tick := time.NewTicker(shortTimeout / 12)
	defer tick.Stop()
	for from := 0; from < len(pipeline); {
		<-tick.C // the pace under test: each write ends halfway into a frame
		to := min(from+step, len(pipeline))
		if from == 0 {
			to = step / 2
		}
		c.write(pipeline[from:to])
		from = to
	}
	for i := range n {
		if f := c.read(); f.ID != uint32(1000+i) || f.Flags.Has(wire.FlagError) {
			t.Fatalf("straddled ping %d answered by %d %v", i, f.ID, f.Flags)
		}
	}
	if h.srv.Connections() != 1 {
		t.Fatal("the idle connection was closed")
	}
	h.expectNoLogsAbout(c.addr())
}

// A client that pipelines reads of a large value and never reads the
// answers: the server's write times out after WriteTimeout, the connection
// is closed and logged once, and the healthy client is served throughout.
func TestClientThatNeverReads(t *testing.T) {
	h := newHarness(t, func(c *native.Config) { c.WriteTimeout = shortTimeout })
	value := bytes.Repeat([]byte("L"), 512<<10)
	if r := h.store.Put("large", value, nil); !r.OK() {
		t.Fatal(r.Status)
	}
	hc := h.startHealthy()
	c := h.dialReady()
	// Make the client's receive window small so the server blocks early.
	_ = c.nc.(*net.TCPConn).SetReadBuffer(4 << 10)

	var pipeline []byte
	for i := range 256 { // 128 MiB of answers
		pipeline = append(pipeline, frame(uint32(10+i), wire.OpGet, wire.AppendKeyRequest(nil, "large"))...)
	}
	wrote := make(chan error, 1)
	go func() {
		_ = c.nc.SetWriteDeadline(time.Now().Add(ioWait))
		_, err := c.nc.Write(pipeline)
		wrote <- err
	}()
	hc.progress(20) // served while the server is stuck writing to c
	h.waitConns(1)  // c is closed by WriteTimeout, though it never closes itself
	if err := <-wrote; err != nil && !closedByPeer(err) {
		t.Fatalf("client write: %v", err)
	}
	h.expectLoggedOnce(c.addr(), "does not read")
	hc.progress(20)
	hc.finish()
}

// The responses of one read batch are coalesced, but not without bound:
// a 64 KiB read of small Gets for a large value must not make the server
// buffer gigabytes before its first write. Held inside the 4th Get of one
// read batch, the server has already written the answers to earlier ones.
func TestResponseBufferIsBounded(t *testing.T) {
	h := newHarness(t)
	value := bytes.Repeat([]byte("B"), 1<<20)
	h.store.Put("big", value, nil)
	c := h.dialReady()

	const n = 16
	var received atomic.Int64
	readErr := make(chan error, 1)
	go func() {
		_ = c.nc.SetReadDeadline(time.Now().Add(2 * ioWait))
		for i := range n {
			f, err := c.fr.Next()
			if err != nil {
				readErr <- err
				return
			}
			var r kv.Result
			if err := wire.DecodeResult(f.Body, &r); err != nil || f.ID != uint32(100+i) || !bytes.Equal(r.Value, value) {
				readErr <- fmt.Errorf("answer %d: id %d, %v", i, f.ID, err)
				return
			}
			received.Add(1)
		}
		readErr <- nil
	}()

	hold := h.obs.holdAt(wire.OpGet, 4)
	var pipeline []byte
	for i := range n {
		pipeline = append(pipeline, frame(uint32(100+i), wire.OpGet, wire.AppendKeyRequest(nil, "big"))...)
	}
	c.write(pipeline) // one small write: one read batch on the server
	select {
	case <-hold.reached:
	case <-time.After(ioWait):
		t.Fatal("the 4th Get never ran")
	}
	// The reader is held: only answers written before the hold can arrive.
	waitFor(t, ioWait, "an answer written while the read batch is still running", func() bool { return received.Load() > 0 })
	hold.free()
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
}

func (h *harness) expectNoLogsAbout(remote string) {
	h.t.Helper()
	if recs := h.logsAbout(remote); len(recs) != 0 {
		h.t.Fatalf("unexpected log lines about %s: %v", remote, recs)
	}
}

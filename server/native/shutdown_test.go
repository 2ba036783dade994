package native_test

// Graceful shutdown: stop accepting, answer every request already read,
// close. An expired context closes whatever is left at once.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/native"
)

// The reader is held in the middle of a pipeline when Shutdown starts. Once
// released it answers every request it had read — inline ones and a large
// batch on the worker pool — and then closes: the client gets an answer for
// exactly the requests the server executed, all in the store.
func TestShutdownAnswersRequestsAlreadyRead(t *testing.T) {
	h := newHarness(t, func(c *native.Config) { c.PoolBatchThreshold = 8 })
	c := h.dialReady()

	const inline = 200
	var pipeline []byte
	for i := range inline {
		pipeline = append(pipeline, frame(uint32(i+1), wire.OpPut, wire.AppendPutRequest(nil, fmt.Sprintf("sd-%03d", i), []byte("v"), nil))...)
		if i == inline/2 {
			body := wire.AppendBatchRequestHeader(nil, 32)
			for j := range 32 {
				body = wire.AppendBatchItem(body, wire.BatchPut, fmt.Sprintf("sd-batch-%02d", j), []byte("b"), nil)
			}
			pipeline = append(pipeline, frame(10000, wire.OpBatch, body)...)
		}
	}
	hold := h.obs.holdAt(wire.OpPut, 1)
	c.write(pipeline)
	<-hold.reached

	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), ioWait)
		defer cancel()
		shut <- h.srv.Shutdown(ctx)
	}()
	// Shutdown closes the listener and stops the readers under one lock:
	// once a dial is refused, Connections (which takes that lock) returns
	// only after every reader was told to stop.
	waitFor(t, ioWait, "the listener to close", func() bool {
		nc, err := net.DialTimeout("tcp", h.addr, ioWait)
		if err == nil {
			_ = nc.Close()
		}
		return err != nil
	})
	_ = h.srv.Connections()
	hold.free()

	frames := c.expectClosed(ioWait)
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	answered := 0
	for _, f := range frames {
		if f.ID == 10000 {
			res, err := wire.DecodeBatchResult(f.Body, nil)
			if err != nil || len(res) != 32 {
				t.Fatalf("batch answer: %d results, %v", len(res), err)
			}
			answered += len(res)
			continue
		}
		if r := resultOf(t, f); !r.OK() {
			t.Fatalf("put %d: %v", f.ID, r.Status)
		}
		answered++
	}
	if executed := int(h.store.Stats().Puts); executed != answered || answered == 0 {
		t.Fatalf("executed %d puts, answered %d", executed, answered)
	}
	t.Logf("answered %d of %d puts read before Shutdown", answered, inline+32)
}

// Idle connections, one mid-handshake and one silent since connect, do not
// hold a graceful Shutdown up: it returns at once and nil.
func TestShutdownClosesIdleConnectionsPromptly(t *testing.T) {
	h := newHarness(t, func(c *native.Config) {
		c.HandshakeTimeout = time.Minute
		c.FrameTimeout = time.Minute
	})
	var clients []*rawClient
	for range 20 {
		clients = append(clients, h.dialReady())
	}
	silent := h.dial()
	half := h.dial()
	half.write(frame(1, wire.OpHandshake, wire.AppendHandshakeRequest(nil, wire.HandshakeRequest{ProtocolVersion: 1, Store: storeName}))[:7])
	h.waitConns(22)

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown after %v: %v", time.Since(start), err)
	}
	for _, c := range append(clients, silent, half) {
		c.expectClosed(ioWait)
	}
	if n := h.srv.Connections(); n != 0 {
		t.Fatalf("%d connections left", n)
	}
}

// A connection stuck writing to a client that does not read (WriteTimeout
// is long) would hold a graceful Shutdown up; an expired context closes it
// at once instead.
func TestShutdownWithExpiredContextClosesAtOnce(t *testing.T) {
	for _, name := range []string{"already cancelled", "expires while draining"} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, func(c *native.Config) { c.WriteTimeout = time.Minute })
			h.store.Put("large", bytes.Repeat([]byte("x"), 1<<20), nil)
			idle := h.dialReady()
			stuck := h.dialReady()
			_ = stuck.nc.(*net.TCPConn).SetReadBuffer(4 << 10)
			var pipeline []byte
			for i := range 64 {
				pipeline = append(pipeline, frame(uint32(i+10), wire.OpGet, wire.AppendKeyRequest(nil, "large"))...)
			}
			stuck.write(pipeline)
			// 64 MiB of answers cannot fit in the socket buffers: once the
			// first Get ran, the reader is on its way to a blocked write.
			waitFor(t, ioWait, "the stuck client's gets to run", func() bool {
				return h.obs.count(wire.OpGet, kv.StatusSuccess) >= 1
			})

			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			if name == "already cancelled" {
				cancel()
			}
			defer cancel()
			start := time.Now()
			err := h.srv.Shutdown(ctx)
			elapsed := time.Since(start)
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Shutdown: %v", err)
			}
			if elapsed > 2*time.Second {
				t.Fatalf("Shutdown took %v", elapsed)
			}
			if n := h.srv.Connections(); n != 0 {
				t.Fatalf("%d connections left after Shutdown", n)
			}
			idle.expectClosed(ioWait)
			// A second Shutdown is harmless.
			if err := h.srv.Shutdown(context.Background()); err != nil {
				t.Fatalf("second Shutdown: %v", err)
			}
		})
	}
}

// Shutdown while clients are busy pipelining must not race with the
// readers re-arming their frame deadline: each round it returns nil well
// before FrameTimeout.
func TestShutdownRacesWithBusyReaders(t *testing.T) {
	rounds := 10
	if testing.Short() {
		rounds = 5
	}
	for round := range rounds {
		h := newHarness(t, func(c *native.Config) {
			c.FrameTimeout = time.Minute
			c.HandshakeTimeout = time.Minute
		})
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for range 4 {
			c := h.dialReady()
			wg.Add(1)
			go func() {
				defer wg.Done()
				pump(c.nc, stop)
			}()
		}
		waitFor(t, ioWait, "traffic", func() bool { return h.obs.count(wire.OpPut, kv.StatusSuccess) > 100 })
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		start := time.Now()
		err := h.srv.Shutdown(ctx)
		cancel()
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatalf("round %d: Shutdown after %v: %v", round, time.Since(start), err)
		}
	}
}

// pump pipelines puts in odd-sized writes (so frames straddle reads) and
// drains the answers, until stop or the connection ends.
func pump(nc net.Conn, stop chan struct{}) {
	go func() {
		buf := make([]byte, 64<<10)
		for {
			_ = nc.SetReadDeadline(time.Now().Add(ioWait))
			if _, err := nc.Read(buf); err != nil {
				return
			}
		}
	}()
	var stream []byte
	for i := range 64 {
		stream = append(stream, frame(uint32(i), wire.OpPut, wire.AppendPutRequest(nil, fmt.Sprintf("pump-%d", i), []byte("v"), nil))...)
	}
	for off := 0; ; off = min(off+777, len(stream)) % len(stream) {
		select {
		case <-stop:
			_ = nc.Close()
			return
		default:
		}
		_ = nc.SetWriteDeadline(time.Now().Add(ioWait))
		if _, err := nc.Write(stream[off:min(off+777, len(stream))]); err != nil {
			return
		}
	}
}

package native_test

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/native"
)

// Event loops (D66): on Linux a plain-TCP connection moves to a loop once
// its handshake is done. The tests check that what a loop must never do —
// wait — moves the connection off it while the loop keeps serving the
// others, and that the loop's own guards (the frame timeout) still hold.

func oneLoop(c *native.Config) { c.EventLoops = 1 }

func requireLoops(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("event loops are Linux-only; elsewhere every connection has its own goroutine")
	}
}

func TestEventLoopServesHandshakenConnections(t *testing.T) {
	requireLoops(t)
	h := newHarness(t, oneLoop)
	a, b := h.dialReady(), h.dialReady()
	waitFor(t, ioWait, "both connections on the loop", func() bool { return h.srv.LoopStats().Connections == 2 })
	for i := range 50 {
		v := []byte(strconv.Itoa(i))
		if r := a.put("k", v); r.Status != kv.StatusSuccess {
			t.Fatalf("put: %+v", r)
		}
		if r := b.get("k"); r.Status != kv.StatusSuccess || !bytes.Equal(r.Value, v) {
			t.Fatalf("get after put %d: %+v", i, r)
		}
	}
	if st := h.srv.LoopStats(); st.Loops != 1 || st.Connections != 2 || st.Leaves != 0 {
		t.Fatalf("loop stats %+v: want 1 loop serving both, none left", st)
	}
}

func TestEventLoopsOff(t *testing.T) {
	h := newHarness(t, func(c *native.Config) { c.EventLoops = -1 })
	c := h.dialReady()
	c.ping()
	if st := h.srv.LoopStats(); st.Loops != 0 || st.Connections != 0 {
		t.Fatalf("loop stats %+v with loops off", st)
	}
}

// A subscription leaves the loop (its pushes come from another
// goroutine); the loop keeps answering the others meanwhile.
func TestEventLoopSubscriberLeaves(t *testing.T) {
	requireLoops(t)
	h := newHarness(t, oneLoop)
	sub, other := h.dialReady(), h.dialReady()
	waitFor(t, ioWait, "both on the loop", func() bool { return h.srv.LoopStats().Connections == 2 })
	f := sub.call(wire.OpSubscribe, wire.AppendSubscribeRequest(nil, wire.SubscribeRequest{Channels: []string{"ch"}}))
	if f.Flags.Has(wire.FlagError) {
		t.Fatalf("subscribe: %v", errorOf(t, f))
	}
	if st := h.srv.LoopStats(); st.Connections != 1 || st.Leaves != 1 {
		t.Fatalf("loop stats %+v: the subscriber left, the other stayed", st)
	}
	for range 20 {
		other.ping()
	}
	sub.ping() // on its own goroutine now, still in sync
}

// A frame larger than the read buffer is read as it arrives: the
// connection leaves the loop for it, and the value is stored whole.
func TestEventLoopLargeFrameLeaves(t *testing.T) {
	requireLoops(t)
	h := newHarness(t, oneLoop)
	c := h.dialReady()
	waitFor(t, ioWait, "on the loop", func() bool { return h.srv.LoopStats().Connections == 1 })
	big := bytes.Repeat([]byte("x"), 1<<20)
	if r := c.put("big", big); r.Status != kv.StatusSuccess {
		t.Fatalf("put: %+v", r)
	}
	if r := c.get("big"); !bytes.Equal(r.Value, big) {
		t.Fatalf("get: %d bytes back", len(r.Value))
	}
	if st := h.srv.LoopStats(); st.Leaves != 1 {
		t.Fatalf("loop stats %+v: the connection left for the large frame", st)
	}
}

// A client that sends half a frame and stops is closed after the frame
// timeout by the loop's sweep, as its goroutine's read deadline would.
func TestEventLoopFrameTimeout(t *testing.T) {
	requireLoops(t)
	h := newHarness(t, oneLoop, func(c *native.Config) { c.FrameTimeout = 300 * time.Millisecond })
	c := h.dialReady()
	waitFor(t, ioWait, "on the loop", func() bool { return h.srv.LoopStats().Connections == 1 })
	frame := wire.AppendFrame(nil, 7, wire.OpGet, 0, wire.AppendKeyRequest(nil, "k"))
	c.write(frame[:len(frame)-2])
	c.expectClosed(ioWait)
	h.expectLoggedOnce(c.addr(), "closing connection: a frame did not arrive in time")
}

// A client that pipelines far more responses than the socket holds before
// reading gets them all, in order (the connection leaves the loop when
// the socket stops taking its responses).
func TestEventLoopSlowReaderGetsEveryResponse(t *testing.T) {
	requireLoops(t)
	h := newHarness(t, oneLoop)
	c := h.dialReady()
	val := bytes.Repeat([]byte("v"), 32<<10)
	if r := c.put("v", val); r.Status != kv.StatusSuccess {
		t.Fatalf("put: %+v", r)
	}
	const gets = 400 // ~13 MiB of responses
	var req []byte
	for i := range gets {
		req = wire.AppendFrame(req, uint32(1000+i), wire.OpGet, 0, wire.AppendKeyRequest(nil, "v"))
	}
	go func() { _, _ = c.nc.Write(req) }()
	other := h.dialReady()
	for range 10 {
		other.ping()
	}
	for i := range gets {
		f := c.read()
		if f.ID != uint32(1000+i) {
			t.Fatalf("response %d has id %d", i, f.ID)
		}
		if r := resultOf(t, f); !bytes.Equal(r.Value, val) {
			t.Fatalf("response %d: %d bytes", i, len(r.Value))
		}
	}
}

// Many clients on one loop, each writing its own keys and reading them
// back: every answer is the client's own.
func TestEventLoopConcurrentClients(t *testing.T) {
	requireLoops(t)
	h := newHarness(t, oneLoop)
	const clients, per = 32, 100
	cs := make([]*rawClient, clients)
	for i := range cs {
		cs[i] = h.dialReady()
	}
	var wg sync.WaitGroup
	errs := make(chan string, clients)
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range per {
				key, val := fmt.Sprintf("c%d:%d", i, j), []byte(fmt.Sprintf("v%d:%d", i, j))
				id := c.nextID()
				_, _ = c.nc.Write(wire.AppendFrame(nil, id, wire.OpPut, 0, wire.AppendPutRequest(nil, key, val, nil)))
				_, _ = c.nc.Write(wire.AppendFrame(nil, id+1000000, wire.OpGet, 0, wire.AppendKeyRequest(nil, key)))
				_ = c.nc.SetReadDeadline(time.Now().Add(ioWait))
				f1, err := c.fr.Next()
				if err != nil || f1.ID != id {
					errs <- fmt.Sprintf("client %d put %d: %v %d", i, j, err, f1.ID)
					return
				}
				f2, err := c.fr.Next()
				if err != nil || f2.ID != id+1000000 {
					errs <- fmt.Sprintf("client %d get %d: %v", i, j, err)
					return
				}
				var r kv.Result
				if err := wire.DecodeResult(f2.Body, &r); err != nil || !bytes.Equal(r.Value, val) {
					errs <- fmt.Sprintf("client %d get %d: %q, %v", i, j, r.Value, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

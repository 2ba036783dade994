package native_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/follow"
	"github.com/zaris-io/zaris/server/native"
)

// TestPanicIsContainedToItsConnection injects a bug into the store (a write
// of key "boom" panics under its segment's write lock) and shows that the
// request's connection alone pays for it — inline requests, data-structure
// commands and a batch on the worker pool alike: the request is answered
// StatusInternal by its id, the connection closes, the segment lock is
// released, nothing of the write applied, the other connection and the
// key space are untouched, the panic is counted and logged by request name
// without the key or value.
func TestPanicIsContainedToItsConnection(t *testing.T) {
	h := newHarness(t, func(c *native.Config) { c.PoolBatchThreshold = 2 })
	h.store.InjectFault(func(key string) {
		if key == "boom" {
			panic("injected bug holding secret-value")
		}
	})
	other := h.dialReady()
	if r := other.put("{boom}neighbour", []byte("kept")); r.Status != kv.StatusSuccess {
		t.Fatalf("put: %v", r.Status)
	}

	expectInternal := func(f wire.Frame, id uint32, op wire.Opcode) {
		t.Helper()
		if f.ID != id || f.Op != op {
			t.Fatalf("want the answer of %d %v, got %d %v", id, op, f.ID, f.Op)
		}
		if e := errorOf(t, f); e.Status != kv.StatusInternal {
			t.Fatalf("want StatusInternal, got %v %q", e.Status, e.Message)
		}
	}

	// Inline Put, pipelined between two others.
	c := h.dialReady()
	c.write(append(append(
		frame(1, wire.OpPut, wire.AppendPutRequest(nil, "{boom}before", []byte("1"), nil)),
		frame(2, wire.OpPut, wire.AppendPutRequest(nil, "boom", []byte("secret-value"), nil))...),
		frame(3, wire.OpPut, wire.AppendPutRequest(nil, "{boom}after", []byte("1"), nil))...))
	if r := resultOf(t, c.read()); r.Status != kv.StatusSuccess {
		t.Fatalf("the request before the panic: %v", r.Status)
	}
	expectInternal(c.read(), 2, wire.OpPut)
	if fs := c.expectClosed(5 * time.Second); len(fs) != 0 {
		t.Fatalf("a request after the panic was answered: %+v", fs)
	}

	// A data-structure command.
	c = h.dialReady()
	cmd := kv.Cmd{Op: kv.CmdLPush, Key: "boom", Args: [][]byte{[]byte("secret-value")}}
	c.write(frame(7, wire.OpCommand, wire.AppendCommandRequest(nil, &cmd)))
	expectInternal(c.read(), 7, wire.OpCommand)
	c.expectClosed(5 * time.Second)

	// A batch large enough for the worker pool.
	c = h.dialReady()
	b := wire.AppendBatchRequestHeader(nil, 3)
	b = wire.AppendBatchItem(b, wire.BatchPut, "{boom}x", []byte("1"), nil)
	b = wire.AppendBatchItem(b, wire.BatchPut, "boom", []byte("secret-value"), nil)
	b = wire.AppendBatchItem(b, wire.BatchGet, "{boom}neighbour", nil, nil)
	c.write(frame(9, wire.OpBatch, b))
	expectInternal(c.read(), 9, wire.OpBatch)
	c.expectClosed(5 * time.Second)

	// The node serves on; boom's segment lock is free; nothing half-applied.
	other.ping()
	if r := other.put("{boom}after-panic", []byte("ok")); r.Status != kv.StatusSuccess {
		t.Fatalf("put after the panics: %v", r.Status)
	}
	if r := other.get("{boom}neighbour"); string(r.Value) != "kept" {
		t.Fatalf("neighbour = %v %q", r.Status, r.Value)
	}
	if r := other.get("boom"); r.Status != kv.StatusNotFound {
		t.Fatalf("the panicking write applied something: %v %q", r.Status, r.Value)
	}
	if r := other.get("{boom}after"); r.Status != kv.StatusNotFound {
		t.Fatalf("a request pipelined after the panic ran: %v", r.Status)
	}
	fresh := h.dialReady()
	fresh.ping()

	if got := h.obs.panics.Load(); got != 3 {
		t.Fatalf("panics observed = %d, want 3", got)
	}
	var logged []string
	for _, r := range h.logs.records() {
		if strings.Contains(r.Msg, "panic") {
			logged = append(logged, r.Line)
		}
	}
	all := strings.Join(logged, "\n")
	if len(logged) != 3 || !strings.Contains(all, `"request":"Put"`) || !strings.Contains(all, `"request":"Command LPUSH"`) ||
		!strings.Contains(all, "Batch (worker pool)") || !strings.Contains(all, `"stack":`) {
		t.Fatalf("panic log lines:\n%s", all)
	}
	if strings.Contains(all, "secret-value") {
		t.Fatalf("a logged panic leaked a value:\n%s", all)
	}
}

// fenceGate is the node's write gate over a fixed follow state: a follower
// cluster whose applier holds claim st.Claim (server/follow_wiring.go).
type fenceGate struct {
	fence *follow.Fence
	st    *cluster.FollowState
}

func (g fenceGate) Enter(name string) (bool, kv.Status, string) { return g.fence.Enter(g.st, name) }
func (g fenceGate) Exit()                                       { g.fence.Exit() }

// TestPanicReleasesTheWriteGate: a contained panic of an applier's write
// (inline, a command, a batch on the worker pool) leaves the follower's
// write fence free. Held, the next applier's first write on this node —
// which waits for the writes in flight — would wait for good (D135).
func TestPanicReleasesTheWriteGate(t *testing.T) {
	fence := &follow.Fence{}
	st := &cluster.FollowState{Source: "zaris://primary:7000/s", Key: "k", Generation: 1, Claim: 5}
	h := newHarness(t, func(c *native.Config) {
		c.PoolBatchThreshold = 2
		c.WriteGate = fenceGate{fence: fence, st: st}
	})
	h.store.InjectFault(func(key string) {
		if key == "boom" {
			panic("injected bug")
		}
	})
	applier := func() *rawClient {
		c := h.dial()
		if resp := c.handshake(wire.HandshakeRequest{ProtocolVersion: wire.ProtocolVersion, Store: storeName,
			ClientName: follow.ClientName("k", 5)}); resp.Status != kv.StatusSuccess {
			t.Fatalf("handshake: %+v", resp)
		}
		return c
	}
	c := applier()
	if r := c.put("fine", []byte("1")); r.Status != kv.StatusSuccess {
		t.Fatalf("the applier's put: %v", r.Status)
	}
	c.write(frame(2, wire.OpPut, wire.AppendPutRequest(nil, "boom", []byte("v"), nil)))
	c.read()
	c.expectClosed(5 * time.Second)

	c = applier()
	cmd := kv.Cmd{Op: kv.CmdLPush, Key: "boom", Args: [][]byte{[]byte("v")}}
	c.write(frame(3, wire.OpCommand, wire.AppendCommandRequest(nil, &cmd)))
	c.read()
	c.expectClosed(5 * time.Second)

	c = applier()
	b := wire.AppendBatchRequestHeader(nil, 3)
	b = wire.AppendBatchItem(b, wire.BatchPut, "{boom}x", []byte("1"), nil)
	b = wire.AppendBatchItem(b, wire.BatchPut, "boom", []byte("v"), nil)
	b = wire.AppendBatchItem(b, wire.BatchPut, "{boom}y", []byte("1"), nil)
	c.write(frame(4, wire.OpBatch, b))
	c.read()
	c.expectClosed(5 * time.Second)

	// The next claim's first write takes the fence exclusively: it must
	// not find it held.
	next := *st
	next.Claim = 6
	done := make(chan kv.Status, 1)
	go func() {
		held, s, _ := fence.Enter(&next, follow.ClientName("k", 6))
		if held {
			fence.Exit()
		}
		done <- s
	}()
	select {
	case s := <-done:
		if s != kv.StatusSuccess {
			t.Fatalf("the next claim's write: %v", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a contained panic left the write fence held: the next applier's writes wait for good")
	}
}

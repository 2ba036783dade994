package native_test

// The write barrier (sync replication, R-REP-2): a successful write is
// answered only after the barrier returns, with the barrier's status; a
// read, a failed write and a read command never wait; a batch waits once
// per segment it wrote, at the highest revision it wrote there.

import (
	"context"
	"sync"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/native"
)

type wait struct {
	seg uint16
	rev uint64
}

type fakeBarrier struct {
	mu      sync.Mutex // guards waits, verdict
	waits   []wait
	verdict kv.Status
}

func (b *fakeBarrier) Wait(_ context.Context, seg uint16, rev uint64) kv.Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waits = append(b.waits, wait{seg, rev})
	return b.verdict
}

// WaitAll records one wait per entry, as Wait does.
func (b *fakeBarrier) WaitAll(ctx context.Context, writes []kv.SegmentWrite, status []kv.Status) {
	for i, w := range writes {
		status[i] = b.Wait(ctx, w.Segment, w.Revision)
	}
}

func (b *fakeBarrier) take() []wait {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.waits
	b.waits = nil
	return w
}

func (b *fakeBarrier) set(st kv.Status) {
	b.mu.Lock()
	b.verdict = st
	b.mu.Unlock()
}

func TestWriteBarrier(t *testing.T) {
	b := &fakeBarrier{verdict: kv.StatusSuccess}
	h := newHarness(t, func(c *native.Config) { c.WriteBarrier = b })
	c := h.dialReady()
	seg := func(k string) uint16 { return placement.SegmentOf(k, h.store.Segments()) }

	res := c.put("a", []byte("1"))
	if res.Status != kv.StatusSuccess {
		t.Fatal(res.Status)
	}
	if w := b.take(); len(w) != 1 || w[0] != (wait{seg("a"), res.Revision}) {
		t.Fatalf("put waited %+v", w)
	}
	if c.get("a").Status != kv.StatusSuccess || len(b.take()) != 0 {
		t.Fatal("a read waited for the barrier")
	}
	del := resultOf(t, c.call(wire.OpDelete, wire.AppendKeyRequest(nil, "absent")))
	if del.Status != kv.StatusNotFound || len(b.take()) != 0 {
		t.Fatal("a failed write waited for the barrier")
	}
	exp := resultOf(t, c.call(wire.OpExpire, wire.AppendExpireRequest(nil, "a", 1e12)))
	if w := b.take(); exp.Status != kv.StatusSuccess || len(w) != 1 || w[0].rev != exp.Revision {
		t.Fatalf("expire %v waited %+v", exp.Status, w)
	}

	// Commands: a write waits on its key's segment, a read does not.
	cmd := kv.NewCmd(kv.CmdIncrBy, "n", "2")
	var reply kv.Reply
	if err := wire.DecodeReply(c.call(wire.OpCommand, wire.AppendCommandRequest(nil, &cmd)).Body, &reply); err != nil || !reply.OK() {
		t.Fatal(err, reply)
	}
	if w := b.take(); len(w) != 1 || w[0].seg != seg("n") || w[0].rev < reply.Revision {
		t.Fatalf("command waited %+v", w)
	}
	get := kv.NewCmd(kv.CmdStrLen, "n")
	c.call(wire.OpCommand, wire.AppendCommandRequest(nil, &get))
	if len(b.take()) != 0 {
		t.Fatal("a read command waited")
	}

	// A batch: one wait per written segment, at its highest revision.
	body := wire.AppendBatchRequestHeader(nil, 4)
	body = wire.AppendBatchItem(body, wire.BatchPut, "x", []byte("1"), nil)
	body = wire.AppendBatchItem(body, wire.BatchPut, "x", []byte("2"), nil)
	body = wire.AppendBatchItem(body, wire.BatchGet, "a", nil, nil)
	body = wire.AppendBatchItem(body, wire.BatchDelete, "nothing", nil, nil)
	results, err := wire.DecodeBatchResult(c.call(wire.OpBatch, body).Body, nil)
	if err != nil || len(results) != 4 {
		t.Fatal(err, results)
	}
	if w := b.take(); len(w) != 1 || w[0] != (wait{seg("x"), results[1].Revision}) {
		t.Fatalf("batch waited %+v (results %+v)", w, results)
	}

	// A barrier that times out answers Timeout; the write stays applied.
	b.set(kv.StatusTimeout)
	if st := c.put("late", []byte("v")).Status; st != kv.StatusTimeout {
		t.Fatalf("put under a timed-out barrier: %v", st)
	}
	b.set(kv.StatusSuccess)
	if got := c.get("late"); got.Status != kv.StatusSuccess || string(got.Value) != "v" {
		t.Fatalf("the unacknowledged write is applied: %+v", got)
	}
	b.set(kv.StatusTimeout)
	results, err = wire.DecodeBatchResult(c.call(wire.OpBatch, body).Body, nil)
	if err != nil || results[0].Status != kv.StatusTimeout || results[1].Status != kv.StatusTimeout ||
		results[2].Status != kv.StatusSuccess || results[3].Status != kv.StatusNotFound {
		t.Fatalf("batch under a timed-out barrier: %v %+v", err, results)
	}

	// A pipelined read batch waits once per segment it wrote, at the
	// highest revision, before any of its answers is written.
	b.set(kv.StatusSuccess)
	b.take()
	var keys []string
	for i := 0; len(keys) < 6; i++ {
		k := "p" + string(rune('a'+i))
		if s := seg(k); s == seg("pa") || len(keys) >= 3 {
			keys = append(keys, k)
		}
	}
	var frames []byte
	for _, k := range keys {
		frames = wire.AppendFrame(frames, c.nextID(), wire.OpPut, 0, wire.AppendPutRequest(nil, k, []byte("v"), nil))
	}
	c.write(frames)
	high := map[uint16]uint64{}
	for range keys {
		f := c.read()
		r := resultOf(t, f)
		if r.Status != kv.StatusSuccess {
			t.Fatal(r.Status)
		}
		k := keys[int(f.ID)-int(c.id)+len(keys)-1]
		high[seg(k)] = max(high[seg(k)], r.Revision)
	}
	w := b.take()
	if len(w) != len(high) {
		t.Fatalf("%d waits for %d segments: %+v", len(w), len(high), w)
	}
	for _, x := range w {
		if high[x.seg] != x.rev {
			t.Fatalf("waited %+v, the batch's highest revision there is %d", x, high[x.seg])
		}
	}
}

package native_test

// The observer's request durations (zaris_op_duration_seconds): each
// request of a pipelined read batch is timed from where the one before it
// ended, so a slow request's time is its own and not the next one's.

import (
	"context"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/native"
)

// slowBarrier acknowledges every write after delay: a replica that takes
// its time.
type slowBarrier struct{ delay time.Duration }

func (b slowBarrier) Wait(context.Context, uint16, uint64) kv.Status {
	time.Sleep(b.delay)
	return kv.StatusSuccess
}

func (b slowBarrier) WaitAll(ctx context.Context, writes []kv.SegmentWrite, status []kv.Status) {
	for i, w := range writes {
		status[i] = b.Wait(ctx, w.Segment, w.Revision)
	}
}

func TestPipelinedRequestsAreTimedSeparately(t *testing.T) {
	const delay = 400 * time.Millisecond
	h := newHarness(t, func(c *native.Config) { c.WriteBarrier = slowBarrier{delay} })
	c := h.dialReady()

	incr := kv.Cmd{Op: kv.CmdIncrBy, Key: "counter", Args: [][]byte{[]byte("1")}}
	var batch []byte
	batch = append(batch, frame(c.nextID(), wire.OpPing, []byte("p"))...) // untimed
	batch = append(batch, frame(c.nextID(), wire.OpCommand, wire.AppendCommandRequest(nil, &incr))...)
	batch = append(batch, frame(c.nextID(), wire.OpGet, wire.AppendKeyRequest(nil, "counter"))...)
	batch = append(batch, frame(c.nextID(), wire.OpGet, wire.AppendKeyRequest(nil, "counter"))...)
	c.write(batch) // one write: the server reads the four in one batch
	for range 4 {
		if f := c.read(); f.Flags.Has(wire.FlagError) {
			t.Fatalf("%v answered with an error: %q", f.Op, f.Body)
		}
	}

	var cmd, gets []time.Duration
	for _, o := range h.obs.timed() {
		switch o.op {
		case wire.OpCommand:
			cmd = append(cmd, o.d)
		case wire.OpGet:
			gets = append(gets, o.d)
		}
	}
	if len(cmd) != 1 || len(gets) != 2 {
		t.Fatalf("observed %d commands and %d gets, want 1 and 2", len(cmd), len(gets))
	}
	if cmd[0] < delay {
		t.Errorf("the write that waited %v for its barrier was timed %v", delay, cmd[0])
	}
	for i, d := range gets {
		// A read behind the slow write in the same batch: its time must
		// not include the write's wait.
		if d >= delay/2 {
			t.Errorf("get %d, behind the slow write, was timed %v", i, d)
		}
	}
}

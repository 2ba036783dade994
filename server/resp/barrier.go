package resp

import (
	"context"
	"slices"

	"github.com/zaris-io/zaris/internal/kv"
)

// WriteBarrier decides when a write applied locally may be acknowledged
// (sync replication, R-REP-2; the native protocol's native.WriteBarrier).
// Wait is called after a successful write of revision on segment seg and
// returns StatusSuccess once the write is durable enough, or another status
// (StatusTimeout) when it could not be made so in time — the write stays
// applied on this node either way.
type WriteBarrier interface {
	Wait(ctx context.Context, seg uint16, revision uint64) kv.Status
	// WaitAll is Wait for the writes of one batch, one entry per segment:
	// it sets status[i] for writes[i], asking every partition's replicas
	// at once (one round trip for the batch, not one per partition).
	WaitAll(ctx context.Context, writes []kv.SegmentWrite, status []kv.Status)
}

// msgBarrierTimeout answers a write the barrier did not confirm in time.
// It is not one of the errors Redis clients retry on (MOVED, ASK,
// TRYAGAIN, CLUSTERDOWN, LOADING, NOREPLICAS — go-redis retries that one):
// the write is applied on the owner, so
// blindly repeating it (INCR, LPUSH) would apply it twice.
const msgBarrierTimeout = "TIMEOUT write not acknowledged by the replicas in time; it stays applied on the owner"

// heldReply is a successful write's reply waiting in out for the barrier:
// out.B[start:end], on segment seg (allSegments: every owned segment — a
// keyless write such as FLUSHALL) at revision rev (0: the segment's current
// revision when the barrier runs — a write inside EXEC, where the segment's
// lock is held).
type heldReply struct {
	start, end int
	rev        uint64
	seg        uint16
}

const allSegments = 0xffff

// hold records the reply just written by a successful write command (it
// began at mark, unless a flush happened since: flushes counts them) so
// that flush holds it for the barrier. Called only with a barrier.
func (c *conn) hold(mark int, flushes uint64) {
	start := mark
	if c.flushes != flushes {
		start = 0 // the command flushed the earlier replies (blocking): its reply starts the buffer
	}
	end := len(c.out.B)
	if end <= start {
		return // no reply (CLIENT REPLY OFF/SKIP): nobody to hold it from
	}
	h := heldReply{start: start, end: end, seg: allSegments}
	if c.curKey != nil && !c.multiSeg { // keys of several segments: wait on every owned segment
		h.seg = c.curSegment()
		if c.tx == nil {
			h.rev = c.srv.store.Segment(h.seg).Revision()
		}
	}
	c.held = append(c.held, h)
}

// settle runs the write barrier for the held replies of out: one wait per
// segment, at the highest revision written there (a revision's apply
// implies every earlier one of its segment); a reply whose wait failed is
// replaced by the TIMEOUT error. Called by flush, before writing.
func (c *conn) settle() {
	if c.high == nil {
		c.high = map[uint16]uint64{}
		c.verdict = map[uint16]kv.Status{}
	}
	clear(c.high)
	clear(c.verdict)
	st := c.srv.store
	all := false
	for _, h := range c.held {
		if h.seg == allSegments {
			all = true
			continue
		}
		rev := h.rev
		if rev == 0 {
			rev = st.Segment(h.seg).Revision()
		}
		c.high[h.seg] = max(c.high[h.seg], rev)
	}
	if all {
		for i := range c.srv.segs {
			if g := st.Segment(uint16(i)); g.Owned() {
				c.high[uint16(i)] = max(c.high[uint16(i)], g.Revision())
			}
		}
	}
	c.leaveLoop() // the barrier waits for the replicas
	c.wait()
	allOK := true
	for _, s := range c.verdict {
		if s != kv.StatusSuccess {
			allOK = false
		}
	}
	if allOK {
		c.held = c.held[:0]
		return
	}
	// Rebuild the replies with the failed writes' answers replaced.
	b := c.out.B
	nb := make([]byte, 0, len(b)+len(c.held)*(len(msgBarrierTimeout)+3))
	at := 0
	for _, h := range c.held {
		if c.heldOK(h) {
			continue
		}
		nb = append(nb, b[at:h.start]...)
		nb = append(nb, '-')
		nb = append(nb, msgBarrierTimeout...)
		nb = append(nb, '\r', '\n')
		at = h.end
	}
	nb = append(nb, b[at:]...)
	c.out.B = nb
	c.held = c.held[:0]
}

// wait fills verdict from high: one wait per segment, every partition's
// replicas asked at once, one timeout for them all (WaitAll).
func (c *conn) wait() {
	writes := c.barrierWrites[:0]
	for seg, rev := range c.high {
		writes = append(writes, kv.SegmentWrite{Segment: seg, Revision: rev})
	}
	status := slices.Grow(c.barrierStatus[:0], len(writes))[:len(writes)]
	c.srv.cfg.WriteBarrier.WaitAll(context.Background(), writes, status)
	for i, w := range writes {
		c.verdict[w.Segment] = status[i]
	}
	c.barrierWrites, c.barrierStatus = writes[:0], status[:0]
}

func (c *conn) heldOK(h heldReply) bool {
	if h.seg != allSegments {
		return c.verdict[h.seg] == kv.StatusSuccess
	}
	for _, s := range c.verdict {
		if s != kv.StatusSuccess {
			return false
		}
	}
	return true
}

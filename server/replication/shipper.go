package replication

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/cluster/recovery"
	"github.com/zaris-io/zaris/server/store"
)

// Session states of a shipper.
const (
	stateConnecting int32 = iota
	stateStreaming
	stateDisconnected
)

var stateNames = [...]string{stateConnecting: "connecting", stateStreaming: "streaming", stateDisconnected: "disconnected"}

// errRetry: the replica's map is behind; the session is retried shortly.
var errRetry = errors.New("replication: replica not ready for this session yet")

// shipper ships one owned partition's segments to one replica. Its run
// goroutine owns the sessions; the store's commit hook (markDirty) and the
// ack reader only touch its atomics; the write barrier (hurry) makes a
// shipping pass itself under the session's stream lock when it can, else
// touches the atomics too.
type shipper struct {
	m           *Manager
	key         shipKey
	pid         int
	epoch       uint64
	first, last int
	// recovering: this node is the sync source of the partition's
	// Recovering owner (it ships its copy to the owner, R-REP-5/6).
	recovering bool

	// opsBuf is the run goroutine's batch of operations to ship, reused.
	opsBuf []store.Op

	ps      atomic.Pointer[partState] // the barrier state to wake on acks
	applied []atomic.Uint64           // per segment: the revision the replica applied (acked)
	dirty   []atomic.Bool             // per segment: something to ship
	held    []atomic.Bool             // per segment: nothing shipped (PlanCatchUp said hold)
	wake    chan struct{}             // capacity 1
	// waited: a sync write waits for what is dirty (Wait called hurry):
	// ship now. Under Sync a shipper woken by a write gathers until then,
	// so that a pipelined batch of writes leaves in one frame set, not one
	// write at a time.
	waited atomic.Bool
	// gathering: the run goroutine is in its gathering pause and makes a
	// full pass when it ends, so a write that marks a segment dirty does
	// not wake it. A pause woken by every write to a clean segment — most
	// of them: a partition's writes spread over its segments — cost a
	// goroutine wake-up per write (issue #17: 2.6 % of an RF 2 async
	// node's CPU in the commit hook's channel send).
	gathering atomic.Bool
	// Under Sync the commit hook does not wake the run goroutine: the
	// write's barrier will (hurry), a moment later, and the wake of the
	// first write of each batch cost a goroutine wake-up per batch for a
	// gathering pause the barrier's own wake-up ended anyway. syncTimer
	// ships a write no barrier asks for (an expiry, a front end without a
	// barrier) syncGather after it marked its segment (D99); syncArmed
	// says it is set.
	syncTimer *time.Timer
	syncArmed atomic.Bool
	state     atomic.Int32
	// live is the streaming session's shipping state, nil between
	// sessions: a sync write's barrier ships through it on its own
	// goroutine (shipDirect, D100).
	live atomic.Pointer[stream]

	snapshots, opsShipped, sessions atomic.Uint64

	stop     chan struct{}
	done     chan struct{}
	haltOnce sync.Once
}

func newShipper(m *Manager, k shipKey, p *cluster.Partition) *shipper {
	n := p.LastSegment - p.FirstSegment + 1
	s := &shipper{m: m, key: k, pid: p.ID, epoch: p.Epoch, first: p.FirstSegment, last: p.LastSegment,
		recovering: recoversFrom(p, m.cfg.Self),
		applied:    make([]atomic.Uint64, n), dirty: make([]atomic.Bool, n), held: make([]atomic.Bool, n),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	s.syncTimer = time.AfterFunc(time.Hour, s.shipNow)
	s.syncTimer.Stop()
	return s
}

// halt stops the shipper and waits for its goroutine; safe twice.
func (s *shipper) halt() {
	s.haltOnce.Do(func() {
		close(s.stop)
		s.syncTimer.Stop()
	})
	<-s.done
}

func (s *shipper) markDirty(seg int) {
	i := seg - s.first
	if i < 0 || i >= len(s.dirty) {
		return
	}
	if s.dirty[i].Load() {
		return // marked already: the pass that ships it is due
	}
	if s.dirty[i].CompareAndSwap(false, true) && !s.gathering.Load() {
		if s.m.cfg.Mode == Sync {
			if !s.syncArmed.Swap(true) {
				s.syncTimer.Reset(syncGather)
			}
			return
		}
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// hurry asks for seg to be shipped at once: a sync write of it waits.
func (s *shipper) hurry(seg int) {
	s.want(seg)
	s.ship1()
}

// ship1 ships what is dirty for a waiting sync write: on the caller's
// goroutine when it can (shipDirect), else by waking the run goroutine.
func (s *shipper) ship1() {
	if !s.shipDirect() {
		s.shipNow()
	}
}

// shipDirect makes the shipping pass on the calling goroutine — a sync
// write's, about to wait for the ack anyway — instead of waking the run
// goroutine for it: a goroutine hand-off less per batch (D100). It reports
// false, and ships nothing, when it cannot: no session streams, the run
// goroutine is in a pass (its pass may have read the write's mark before
// the write set it, so it is woken instead), or a segment still needs a
// snapshot from the session's catch-up (large: the run goroutine ships
// those; one the op-log's trimming forces mid-session is shipped by the
// pass that finds it, whichever goroutine makes it).
func (s *shipper) shipDirect() bool {
	st := s.live.Load()
	if st == nil || !st.mu.TryLock() {
		return false
	}
	defer st.mu.Unlock()
	if st.ended || st.snaps > 0 {
		return false
	}
	if s.syncArmed.Swap(false) {
		s.syncTimer.Stop() // a timer that fired anyway makes a pass with nothing new: harmless
	}
	if err := st.pass(s); err != nil {
		// The session is broken: closing its connection ends the ack
		// reader, and with it the session, which the run goroutine restarts.
		st.ended = true
		_ = st.conn.Close()
	}
	return true
}

// want marks seg to be shipped by the next pass: the commit hook marked it
// already; a restarted session may not have.
func (s *shipper) want(seg int) {
	if i := seg - s.first; i >= 0 && i < len(s.dirty) {
		s.dirty[i].Store(true)
	}
}

// shipNow ends the gathering pause: a sync write waits for what is dirty.
func (s *shipper) shipNow() {
	if s.syncArmed.Swap(false) {
		s.syncTimer.Stop() // a timer that fired anyway makes a pass with nothing new: harmless
	}
	s.waited.Store(true)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *shipper) markAll() {
	for i := range s.dirty {
		s.dirty[i].Store(true)
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *shipper) notify() {
	if ps := s.ps.Load(); ps != nil {
		ps.notify()
	}
}

func (s *shipper) run() {
	defer s.m.wg.Done()
	defer close(s.done)
	log := s.m.log.With("partition", s.pid, "replica", s.key.replica)
	backoff := s.m.cfg.RetryMin
	failing := false
	for {
		began := time.Now()
		err := s.session(log)
		if s.state.Swap(stateDisconnected) == stateStreaming {
			s.notify() // best-effort waiters stop waiting for this replica
		}
		select {
		case <-s.stop:
			return
		default:
		}
		switch {
		case errors.Is(err, errRetry):
			backoff = s.m.cfg.RetryMin
		case time.Since(began) > s.m.cfg.PeerTimeout:
			backoff = s.m.cfg.RetryMin // a long session: reconnect at once
			log.Warn("replication session ended; reconnecting", "err", err)
			failing = false
		default:
			if !failing {
				log.Warn("replication session failed; retrying", "err", err)
				failing = true
			}
		}
		select {
		case <-s.stop:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, s.m.cfg.RetryMax)
	}
}

// session runs one connection to the replica until it breaks or the
// shipper stops (nil).
func (s *shipper) session(log interface {
	Info(string, ...any)
	Warn(string, ...any)
	Error(string, ...any)
}) (err error) {
	addr, ok := s.m.peerAddr(s.key.replica)
	if !ok {
		return fmt.Errorf("replication: no peer address for %s", s.key.replica)
	}
	if s.m.cfg.Dial == nil {
		return errors.New("replication: no dialer")
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.m.cfg.PeerTimeout)
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := s.m.cfg.Dial(ctx, addr)
	cancel()
	if err != nil {
		return err
	}
	var readers sync.WaitGroup
	defer readers.Wait()
	defer conn.Close()
	ended := make(chan struct{})
	defer close(ended)
	go func() {
		select {
		case <-s.stop:
			_ = conn.Close()
		case <-ended:
		}
	}()
	cfg := &s.m.cfg
	r := bufio.NewReaderSize(conn, 64<<10)
	w := bufio.NewWriterSize(conn, 64<<10)
	enc := newEncoder()
	out := &stream{conn: conn, w: w, enc: enc}
	own := lineage{Identity: s.key.identity, Owner: cfg.Self, Generation: s.key.gen, Incarnation: s.m.incarnation}
	h := hello{Version: protoVersion, Store: cfg.StoreName, Cluster: cfg.ClusterID, From: cfg.Self, Partition: s.pid,
		Identity: s.key.identity, Generation: s.key.gen, Epoch: s.epoch, MapVersion: s.m.mapVersion(),
		First: s.first, Last: s.last, Incarnation: s.m.incarnation}
	_ = conn.SetWriteDeadline(time.Now().Add(cfg.PeerTimeout))
	if err := writeFrame(w, fHello, enc.hello(h)); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_ = conn.SetReadDeadline(time.Now().Add(cfg.PeerTimeout))
	t, body, err := readFrame(r)
	if err != nil {
		return err
	}
	if t != fHelloReply {
		return protoErr("frame %d instead of the hello reply", t)
	}
	rep, err := decodeHelloReply(body)
	if err != nil {
		return err
	}
	switch rep.Status {
	case replyOK:
	case replyRetry:
		return fmt.Errorf("%w: %s", errRetry, rep.Message)
	default:
		if rep.Generation > s.key.gen {
			// The replica's committed map has a newer owner: this node was
			// deposed and has not heard yet. Stop serving now (R-REP-4).
			s.m.fenceDeposed(s.key.identity, rep.Generation)
		}
		return fmt.Errorf("replication: %s refused the session: %s", s.key.replica, rep.Message)
	}

	// Catch-up plan per segment.
	n := len(s.applied)
	reported := make(map[uint16]segState, len(rep.States))
	for _, st := range rep.States {
		reported[st.Segment] = st
	}
	out.cursor, out.snap, out.announce, out.pins = make([]uint64, n), make([]bool, n), make([]bool, n), make([]func(), n)
	cursor, snap, announce := out.cursor, out.snap, out.announce
	defer func() {
		for _, release := range out.pins {
			if release != nil {
				release()
			}
		}
	}()
	// Before the pins are released and the connection closed: no direct
	// pass runs on, or starts on, an ended session.
	defer func() {
		s.live.CompareAndSwap(out, nil)
		out.mu.Lock()
		out.ended = true
		out.mu.Unlock()
	}()
	var (
		heldSegs  int
		firstHeld uint16
		heldRevs  uint64 // summed over the held segments
	)
	for i := range n {
		seg := uint16(s.first + i)
		st, ok := reported[seg]
		plan := CatchUpSnapshot
		if ok {
			plan = PlanCatchUp(st.Revision, st.Lineage, s.m.st.Segment(seg).Revision(), own)
		}
		if s.recovering {
			// The target is the partition's owner pulling this copy
			// (restart recovery or a Recovering promotion): never a
			// passive subordinate of this source, so its own revisions
			// are another history — skip when it already holds exactly
			// this copy, else wipe (nothing to drop when it is empty).
			level := ok && st.Lineage == own && st.Revision == s.m.st.Segment(seg).Revision()
			switch recovery.ResyncApplyMode(level, false, false) {
			case recovery.Skip:
				plan = CatchUpOps
			case recovery.Wipe:
				plan = CatchUpSnapshot
				if ok && st.Revision == 0 {
					plan = CatchUpOps // replay from the start (a snapshot below the trim floor)
				}
			}
		}
		if plan == CatchUpSnapshot && ok && st.Revision > 0 && !s.recovering && s.m.refuse(s.key.identity, int(seg)) {
			// An uncertified, unsynced, empty owner never replaces the
			// copy that kept its writes by its hole (ShouldRefuse).
			plan = CatchUpHold
		}
		if plan != CatchUpHold {
			// The replica holds nothing this owner lacks: the segment is
			// level for restart recovery. A copy of this owner's own lease
			// (same incarnation) gives its head; any other history gives none.
			var head uint64
			if ok && st.Lineage == own {
				head = st.Revision
			}
			s.m.noteLevelWith(int(seg), s.key.replica, head)
		} else {
			s.m.forgetLevelWith(int(seg), s.key.replica)
		}
		s.held[i].Store(plan == CatchUpHold)
		switch plan {
		case CatchUpOps:
			cursor[i] = st.Revision
			announce[i] = true
			s.applied[i].Store(st.Revision)
		case CatchUpSnapshot:
			snap[i] = true
			out.snaps++
			s.applied[i].Store(0)
		case CatchUpHold:
			s.applied[i].Store(0)
			if heldSegs == 0 {
				firstHeld = seg
			}
			heldSegs++
			heldRevs += st.Revision
		}
	}
	if heldSegs > 0 {
		// One line per session, not one per segment (a restart held
		// hundreds).
		log.Warn("replication held: the replica holds later revisions of this owner's lease than the owner itself "+
			"(the owner restarted and lost writes the replica kept); nothing is shipped over them until restart recovery",
			"segments_held", heldSegs, "first_segment", firstHeld, "replica_revisions", heldRevs)
	}
	s.sessions.Add(1)
	s.state.Store(stateStreaming)
	s.notify()
	log.Info("replication session streaming", "segments", n)

	errc := make(chan error, 1)
	readers.Add(1)
	go func() {
		defer readers.Done()
		errc <- s.readAcks(conn, r)
	}()
	s.markAll()
	tick := time.NewTicker(cfg.Heartbeat)
	defer tick.Stop()
	gather := time.NewTimer(time.Hour) // reused by every gathering pause
	gather.Stop()
	defer gather.Stop()
	if cfg.Mode == Sync {
		s.live.Store(out)
	}
	for {
		out.mu.Lock()
		err := out.pass(s)
		lastFlush := out.lastFlush
		out.mu.Unlock()
		if err != nil {
			return err
		}
		select {
		case <-s.stop:
			return nil
		case err := <-errc:
			return err
		case <-s.wake:
			if err := s.gather(gather, lastFlush, errc); errors.Is(err, errStopped) {
				return nil
			} else if err != nil {
				return err
			}
		case <-tick.C:
			out.mu.Lock()
			err := writeFrame(w, fPing, nil)
			out.mu.Unlock()
			if err != nil {
				return err
			}
			s.markAll() // the safety net under the commit hook: a full pass per heartbeat
		}
	}
}

// stream is a streaming session's shipping state. A pass over the dirty
// segments runs under mu, on the run goroutine or on a sync writer's
// (shipDirect).
type stream struct {
	mu        sync.Mutex
	conn      net.Conn
	w         *bufio.Writer
	enc       *encoder
	cursor    []uint64 // per segment: the last revision shipped
	snap      []bool   // per segment: a snapshot is due
	snaps     int      // how many snap entries are true
	announce  []bool   // per segment: an empty Ops frame is due — the copy is level, and the frame tells the replica it follows this owner (the leader counts such segments before a failover)
	pins      []func() // per segment: releases the trim-floor pin of the snapshot last shipped
	lastFlush time.Time
	ended     bool // the session is over: no pass may write
}

// pass ships every dirty segment and flushes; under mu.
func (st *stream) pass(s *shipper) error {
	if st.ended {
		return nil
	}
	_ = st.conn.SetWriteDeadline(time.Now().Add(s.m.cfg.PeerTimeout))
	for i := range st.cursor {
		if s.dirty[i].Swap(false) {
			if err := s.ship(st, i); err != nil {
				return err
			}
		}
	}
	if st.w.Buffered() > 0 {
		if err := st.w.Flush(); err != nil {
			return err
		}
		st.lastFlush = time.Now()
	}
	return nil
}

// syncGather bounds how long a sync shipper woken by a write waits for the
// writer's barrier before shipping anyway (a write no barrier waits for:
// an expiry, a write of a front end without one).
const syncGather = time.Millisecond

// gather pauses a woken shipper so that more writes join its next pass:
// under Async until AsyncLinger has passed since the last flush (nobody
// waits for the shipment); under Sync until a barrier waits for what is
// dirty (hurry) or syncGather has passed. t is the session's stopped
// timer. It returns the session's end (errStopped when the shipper stops).
func (s *shipper) gather(t *time.Timer, lastFlush time.Time, errc <-chan error) error {
	sync := s.m.cfg.Mode == Sync
	var wait time.Duration
	if sync {
		if s.waited.Swap(false) {
			return nil
		}
		wait = syncGather
	} else if wait = s.m.cfg.linger() - time.Since(lastFlush); wait <= 0 {
		return nil
	}
	t.Reset(wait)
	defer t.Stop()
	// Marked before the wait, cleared before the pass that follows it: a
	// write that saw it set marked its segment before the pass reads the
	// mark (the flags are sequentially consistent), so nothing is missed.
	s.gathering.Store(true)
	defer s.gathering.Store(false)
	for {
		select {
		case <-s.stop:
			return errStopped
		case err := <-errc:
			return err
		case <-t.C:
			return nil
		case <-s.wake:
			if sync && s.waited.Swap(false) {
				return nil
			}
		}
	}
}

// errStopped ends a session because the shipper stops.
var errStopped = errors.New("replication: shipper stopped")

// keptOps bounds the batch buffer a shipper keeps between batches.
const keptOps = 1024

// ship sends what segment first+i needs: the operations after its cursor,
// or a snapshot when they are below the trim floor (R-REP-1).
func (s *shipper) ship(st *stream, i int) error {
	w, enc, cursor, snap, announce, pins := st.w, st.enc, st.cursor, st.snap, st.announce, st.pins
	if s.held[i].Load() {
		return nil
	}
	seg := uint16(s.first + i)
	g := s.m.st.Segment(seg)
	release := func() {
		if pins[i] != nil {
			pins[i]()
			pins[i] = nil
		}
	}
	if !snap[i] {
		if g.Revision() == cursor[i] {
			release()
			if announce[i] {
				announce[i] = false
				return writeFrame(w, fOps, enc.ops(seg, nil))
			}
			return nil
		}
		ops, err := g.AppendOperationsAfter(s.opsBuf[:0], cursor[i])
		if err == nil {
			release()
			announce[i] = false
			err = s.sendOps(w, enc, seg, ops, &cursor[i])
			clear(ops) // drop the records: the buffer outlives them
			if cap(ops) <= keptOps {
				s.opsBuf = ops[:0]
			}
			return err
		}
		if !errors.Is(err, store.ErrBelowTrimFloor) {
			s.m.log.Warn("replication: op-log unusable; shipping a snapshot", "segment", seg, "err", err)
		}
	}
	var (
		sn    store.Snapshot
		unpin func()
	)
	for range 3 {
		sn = g.Snapshot()
		if rel, err := g.PinTrimFloor(sn.Revision); err == nil {
			unpin = rel
			break
		}
	}
	if err := writeFrame(w, fSnapBegin, enc.snapBegin(seg, sn.Revision, len(sn.Records))); err != nil {
		return err
	}
	for recs := sn.Records; len(recs) > 0; {
		k, size := 0, 0
		for k < len(recs) && k < chunkOps && size < chunkBytes {
			size += len(recs[k].Key()) + recs[k].ValueLen()
			k++
		}
		if err := writeFrame(w, fSnapChunk, enc.snapChunk(seg, recs[:k])); err != nil {
			return err
		}
		recs = recs[k:]
	}
	if err := writeFrame(w, fSnapEnd, enc.snapEnd(seg, sn.Revision, sn.Prepared)); err != nil {
		return err
	}
	release()
	pins[i] = unpin
	cursor[i], snap[i] = sn.Revision, false
	st.snaps--
	s.snapshots.Add(1)
	return nil
}

func (s *shipper) sendOps(w *bufio.Writer, enc *encoder, seg uint16, ops []store.Op, cursor *uint64) error {
	total := len(ops)
	for len(ops) > 0 {
		k, size := 0, 0
		for k < len(ops) && k < chunkOps && size < chunkBytes {
			size += len(ops[k].Record.Key()) + ops[k].Record.ValueLen()
			k++
		}
		if err := writeFrame(w, fOps, enc.ops(seg, ops[:k])); err != nil {
			return err
		}
		*cursor = ops[k-1].Revision()
		ops = ops[k:]
	}
	s.opsShipped.Add(uint64(total))
	return nil
}

// readAcks reads the replica's acks until the connection breaks. The
// replica answers every ping, so silence for PeerTimeout is a broken
// session.
func (s *shipper) readAcks(conn net.Conn, r *bufio.Reader) error {
	var acks []ack
	fr := frameReader{r: r}
	for {
		_ = conn.SetReadDeadline(time.Now().Add(s.m.cfg.PeerTimeout))
		t, body, err := fr.next()
		if err != nil {
			return err
		}
		if t != fAck {
			return protoErr("frame %d from a replica", t)
		}
		if acks, err = decodeAcks(body, acks[:0]); err != nil {
			return err
		}
		for _, a := range acks {
			i := int(a.Segment) - s.first
			if i < 0 || i >= len(s.applied) {
				return protoErr("ack for segment %d outside %d..%d", a.Segment, s.first, s.last)
			}
			if s.held[i].Load() {
				continue
			}
			for {
				cur := s.applied[i].Load()
				if a.Revision <= cur || s.applied[i].CompareAndSwap(cur, a.Revision) {
					break
				}
			}
		}
		if len(acks) > 0 {
			s.notify()
		}
	}
}

// lag is how many revisions the replica is behind on the partition.
func (s *shipper) lag() uint64 {
	var lag uint64
	for i := range s.applied {
		rev := s.m.st.Segment(uint16(s.first + i)).Revision()
		if a := s.applied[i].Load(); rev > a {
			lag += rev - a
		}
	}
	return lag
}

func (s *shipper) stateName() string {
	for i := range s.held {
		if s.held[i].Load() {
			return "held"
		}
	}
	return stateNames[s.state.Load()]
}

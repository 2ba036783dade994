package replication

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/cluster/failover"
	"github.com/zaris-io/zaris/server/cluster/recovery"
	"github.com/zaris-io/zaris/server/store"
)

// replicaSession is one incoming session: this node replicates a partition
// from its active owner.
type replicaSession struct {
	conn net.Conn
	h    hello

	// mu guards fenced and is held while a frame is applied: fence waits
	// for the frame in flight, and no frame is applied after it.
	mu     sync.Mutex
	fenced string
}

// fence ends the session: its source is no longer the owner the map names
// (R-REP-4), or the node stops. It returns once no frame of the session
// is being applied, and none will be.
func (rs *replicaSession) fence(why string) {
	rs.mu.Lock()
	if rs.fenced == "" {
		rs.fenced = why
	}
	_ = rs.conn.Close()
	rs.mu.Unlock()
}

// admit decides whether a session of h may run against map pm on node
// self: the map must name h's sender the active owner of h's partition
// under h's generation, self one of its replicas, with the same segment
// range. A map older than the sender's answers retry (it is on its way).
func admit(pm *cluster.PartitionMap, self cluster.NodeID, h hello) (int, string) {
	if pm == nil || pm.Version < h.MapVersion {
		return replyRetry, "this replica has not applied the sender's map yet"
	}
	for i := range pm.Partitions {
		p := &pm.Partitions[i]
		if p.Identity != h.Identity {
			continue
		}
		switch {
		case p.OwnershipGeneration != h.Generation:
			return replyRefused, fmt.Sprintf("fenced: the map (version %d) is at ownership generation %d of partition %d",
				pm.Version, p.OwnershipGeneration, p.ID)
		case recoversFrom(p, h.From):
			// The sender is the more complete copy this Recovering owner
			// syncs from before it serves.
			if p.ActiveOwner != self {
				return replyRefused, fmt.Sprintf("%s is not the recovering owner of partition %d", self, p.ID)
			}
		case p.ActiveOwner != h.From:
			return replyRefused, fmt.Sprintf("fenced: the map (version %d) names %s the owner at generation %d",
				pm.Version, p.ActiveOwner, p.OwnershipGeneration)
		case p.HealthState() == failover.Recovering || !slices.Contains(p.Copies(), self):
			return replyRefused, fmt.Sprintf("%s is not a replica of partition %d in map version %d", self, p.ID, pm.Version)
		}
		switch {
		case p.FirstSegment != h.First || p.LastSegment != h.Last:
			return replyRefused, fmt.Sprintf("partition %d covers segments %d..%d in map version %d", p.ID,
				p.FirstSegment, p.LastSegment, pm.Version)
		}
		return replyOK, ""
	}
	return replyRefused, fmt.Sprintf("no partition %s in map version %d", h.Identity, pm.Version)
}

// applySnapshot applies a received snapshot the way ResyncApplyMode says
// (R-REP-6 step 3): skip when this copy already holds exactly its content;
// reconcile (a revision-bounded merge, keeping what the live channel brought
// after it) when this copy is a passive replica that followed the same
// owner's lease — its revisions compare with the snapshot's; wipe
// otherwise. A reconcile that falls short escalates to a wipe at once
// (priorReconcileShortfall): a copy left behind the snapshot must not wait
// for another session to be level.
func (m *Manager) applySnapshot(snap *store.Snapshot, fromSource bool, src lineage, log *slog.Logger) {
	g := m.st.Segment(snap.Segment)
	passive := !fromSource && m.lineage(snap.Segment) == src
	mode := recovery.ResyncApplyMode(g.Digest() == m.st.SnapshotDigest(snap), passive, false)
	switch mode {
	case recovery.Skip:
		g.AdoptRevision(snap.Revision)
	case recovery.Reconcile:
		if short := g.MergeSnapshot(*snap); short > 0 {
			mode = recovery.ResyncApplyMode(false, passive, true)
			log.Warn("replication: a reconcile fell short of the snapshot; wiping instead",
				"segment", snap.Segment, "missing", short, "mode", mode.String())
			g.InstallSnapshot(*snap)
		}
	default:
		g.InstallSnapshot(*snap)
	}
	// The transactions prepared on the source at the snapshot's revision
	// (R-DS-4): whichever way the records were applied, this copy now holds
	// exactly those.
	if err := g.InstallPreparedTx(snap.Prepared); err != nil {
		log.Warn("replication: dropping the prepared transactions of a snapshot", "segment", snap.Segment, "err", err)
	}
	if int(mode) < len(m.snapModes) {
		m.snapModes[mode].Add(1)
	}
}

// SnapshotApplies counts the snapshots this node applied as a replica, by
// mode: skipped (already level), reconciled (merged), wiped (replaced).
func (m *Manager) SnapshotApplies() (skip, reconcile, wipe uint64) {
	return m.snapModes[recovery.Skip].Load(), m.snapModes[recovery.Reconcile].Load(), m.snapModes[recovery.Wipe].Load()
}

// recoverySession reports whether h is the sync source of a Recovering
// partition shipping its copy to this node, the partition's owner.
func recoverySession(pm *cluster.PartitionMap, h hello) bool {
	if pm == nil {
		return false
	}
	for i := range pm.Partitions {
		if p := &pm.Partitions[i]; p.Identity == h.Identity {
			return recoversFrom(p, h.From)
		}
	}
	return false
}

// generationOf is the ownership generation of the partition with identity
// id in pm (0 when pm has none).
func generationOf(pm *cluster.PartitionMap, id string) uint64 {
	if pm == nil {
		return 0
	}
	for i := range pm.Partitions {
		if pm.Partitions[i].Identity == id {
			return pm.Partitions[i].OwnershipGeneration
		}
	}
	return 0
}

// errFenced ends a session the map no longer allows.
var errFenced = errors.New("replication: session fenced")

// ServePeer serves one incoming replication session (the peer mux's
// handler for cluster.PeerReplication); it returns when the session ends.
func (m *Manager) ServePeer(conn net.Conn) {
	cfg := &m.cfg
	r := bufio.NewReaderSize(conn, 64<<10)
	w := bufio.NewWriterSize(conn, 64<<10)
	enc := newEncoder()
	_ = conn.SetReadDeadline(time.Now().Add(cfg.PeerTimeout))
	t, body, err := readFrame(r)
	if err != nil || t != fHello {
		return
	}
	h, err := decodeHello(body)
	if err != nil {
		m.log.Info("replication: malformed hello", "remote", conn.RemoteAddr().String(), "err", err)
		return
	}
	reply := func(status int, msg string, states []segState, gen uint64) bool {
		_ = conn.SetWriteDeadline(time.Now().Add(cfg.PeerTimeout))
		if writeFrame(w, fHelloReply, enc.helloReply(helloReply{Status: status, Message: msg, States: states, Generation: gen})) != nil {
			return false
		}
		return w.Flush() == nil
	}
	if peer, ok := cluster.AuthenticatedPeer(conn); ok && peer != h.From {
		// The dialer proved the cluster secret as another node than the
		// sender it names (issue #15).
		m.log.Warn("replication: refused a session whose sender is not the node that authenticated",
			"authenticated", peer, "claimed_sender", h.From, "remote", conn.RemoteAddr().String())
		reply(replyRefused, fmt.Sprintf("authenticated as node %q, not %q", peer, h.From), nil, 0)
		return
	}
	if h.Version != protoVersion || h.Store != cfg.StoreName || h.Cluster != cfg.ClusterID ||
		h.First < 0 || h.Last < h.First || h.Last >= m.st.Segments() {
		reply(replyRefused, fmt.Sprintf("this node serves store %q of cluster %q with %d segments, protocol %d",
			cfg.StoreName, cfg.ClusterID, m.st.Segments(), protoVersion), nil, 0)
		return
	}
	rs := &replicaSession{conn: conn, h: h}
	m.mu.Lock()
	status, why := admit(m.cur, cfg.Self, h)
	gen := generationOf(m.cur, h.Identity)
	fromSource := recoverySession(m.cur, h)
	if m.closed {
		status, why = replyRefused, "node stopping"
	}
	if status == replyOK {
		// One session per partition: a newer one (the owner reconnected)
		// replaces the old.
		for old := range m.sessions {
			if old.h.Identity == h.Identity {
				old.fence("replaced by a newer session")
			}
		}
		m.sessions[rs] = struct{}{}
	}
	m.mu.Unlock()
	if status != replyOK {
		reply(status, why, nil, gen)
		return
	}
	log := m.log.With("partition", h.Partition, "owner", h.From)
	defer func() {
		m.mu.Lock()
		delete(m.sessions, rs)
		m.mu.Unlock()
		rs.mu.Lock()
		fenced := rs.fenced
		rs.mu.Unlock()
		if fenced != "" {
			log.Info("replication session fenced", "reason", fenced)
		}
	}()

	states := make([]segState, 0, h.Last-h.First+1)
	for seg := h.First; seg <= h.Last; seg++ {
		g := m.st.Segment(uint16(seg))
		states = append(states, segState{Segment: uint16(seg), Revision: g.Revision(), Lineage: m.lineage(uint16(seg))})
	}
	if !reply(replyOK, "", states, gen) {
		return
	}
	src := lineage{Identity: h.Identity, Owner: h.From, Generation: h.Generation, Incarnation: h.Incarnation}
	inRange := func(seg uint16) bool { return int(seg) >= h.First && int(seg) <= h.Last }
	var (
		snap *store.Snapshot // being received
		want int             // records announced by SnapBegin
	)
	ak := &replicaAcker{st: m.st, conn: conn, w: w, enc: enc, linger: cfg.linger(), timeout: cfg.PeerTimeout}
	defer ak.close()
	touch := ak.touch
	fr := frameReader{r: r}
	var ahead opsAhead
	for {
		_ = conn.SetReadDeadline(time.Now().Add(cfg.PeerTimeout))
		t, body, err := fr.next()
		if err != nil {
			return
		}
		if t == fOps {
			// This frame's ops and those of the Ops frames already read
			// behind it, decoded first so that their keys are read ahead
			// together, then applied in order.
			ahead.decode(body)
			for ahead.wantsMore() && nextFrameBuffered(r) == fOps {
				if _, body, err = fr.next(); err != nil {
					return // only buffered bytes were read: not expected to fail
				}
				ahead.decode(body)
			}
			ahead.warm(m.st)
		}
		for i := 0; i < max(1, len(ahead.frames)); i++ {
			if err := func() error {
				rs.mu.Lock()
				defer rs.mu.Unlock()
				if rs.fenced != "" {
					return errFenced
				}
				switch t {
				case fOps:
					f := &ahead.frames[i]
					seg, ops := f.seg, f.ops
					if f.err != nil {
						return f.err
					}
					if !inRange(seg) || snap != nil {
						return protoErr("ops for segment %d", seg)
					}
					g := m.st.Segment(seg)
					for j, op := range ops {
						if j > 0 && j%store.WarmBatch == 0 {
							m.st.WarmAheadOps(ops[j:]) // a long frame: its next keys
						}
						if _, err := g.ApplyOp(op); err != nil {
							// This copy cannot follow the stream: forget its
							// history, so that the next session snapshots it.
							m.setLineage(seg, lineage{})
							return fmt.Errorf("replication: segment %d: applying revision %d: %w", seg, op.Revision(), err)
						}
					}
					m.setLineage(seg, src)
					if fromSource && len(ops) > 0 {
						m.notePulled(int(seg), ops[len(ops)-1].Revision())
					}
					touch(seg)
				case fSnapBegin:
					seg, rev, count, err := decodeSnapBegin(body)
					if err != nil {
						return err
					}
					if !inRange(seg) || snap != nil {
						return protoErr("snapshot of segment %d", seg)
					}
					snap, want = &store.Snapshot{Segment: seg, Revision: rev, Records: make([]store.Record, 0, min(count, 1<<16))}, count
				case fSnapChunk:
					seg, recs, err := decodeSnapChunk(body)
					if err != nil {
						return err
					}
					if snap == nil || seg != snap.Segment || len(snap.Records)+len(recs) > want {
						return protoErr("snapshot chunk of segment %d", seg)
					}
					snap.Records = append(snap.Records, recs...)
				case fSnapEnd:
					seg, rev, prepared, err := decodeSnapEnd(body)
					if err != nil {
						return err
					}
					if snap != nil {
						snap.Prepared = prepared
					}
					if snap == nil || seg != snap.Segment || rev != snap.Revision || len(snap.Records) != want {
						return protoErr("snapshot end of segment %d", seg)
					}
					m.applySnapshot(snap, fromSource, src, log)
					m.setLineage(seg, src)
					if fromSource {
						m.notePulled(int(seg), rev)
					}
					touch(seg)
					snap = nil
				case fPing:
					ak.pinged()
				default:
					return protoErr("frame %d from an owner", t)
				}
				return nil
			}(); err != nil {
				if !errors.Is(err, errFenced) {
					log.Warn("replication session broken", "err", err)
				}
				return
			}
		}
		ahead.reset()
		if r.Buffered() == 0 {
			ak.flush() // the read batch is applied: one ack for all of it
		}
	}
}

// opsAhead is a replica's Ops frames read ahead of their apply: decoded in
// order, their first WarmBatch ops' keys read ahead together. A shipping
// pass sends one frame per dirty segment, and a partition's writes of one
// pass spread over its segments — mostly one or two ops a frame — so
// reading ahead within a frame left nearly every lookup to miss alone
// (issue #17).
type opsAhead struct {
	frames []decodedOps
	count  int          // ops in frames
	keep   [][]store.Op // decoding buffers, reused
	batch  []store.Op   // the ops whose keys are read ahead
}

type decodedOps struct {
	seg uint16
	ops []store.Op
	err error // the frame did not decode: the session breaks when its turn comes
}

// decode appends the Ops frame body.
func (a *opsAhead) decode(body []byte) {
	var buf []store.Op
	if n := len(a.frames); n < len(a.keep) {
		buf = a.keep[n]
	}
	seg, ops, err := decodeOpsInto(body, buf)
	a.frames = append(a.frames, decodedOps{seg: seg, ops: ops, err: err})
	a.count += len(ops)
}

// wantsMore: fewer ops are decoded than one read-ahead covers.
func (a *opsAhead) wantsMore() bool {
	return a.count < store.WarmBatch && len(a.frames) < store.WarmBatch
}

func (a *opsAhead) warm(st *store.Store) {
	if len(a.frames) == 1 {
		st.WarmAheadOps(a.frames[0].ops)
		return
	}
	a.batch = a.batch[:0]
	for _, f := range a.frames {
		for _, op := range f.ops {
			if len(a.batch) == store.WarmBatch {
				break
			}
			a.batch = append(a.batch, op)
		}
	}
	st.WarmAheadOps(a.batch)
	clear(a.batch)
}

// reset forgets the frames (the store copied what it keeps) and keeps
// their buffers for the next ones.
func (a *opsAhead) reset() {
	for i, f := range a.frames {
		clear(f.ops)
		if cap(f.ops) <= keptOps {
			for len(a.keep) <= i {
				a.keep = append(a.keep, nil)
			}
			a.keep[i] = f.ops[:0]
		}
	}
	clear(a.frames)
	a.frames, a.count = a.frames[:0], 0
}

// nextFrameBuffered is the type of the frame whose every byte r has
// buffered already (reading it cannot wait), or 0 when there is none.
func nextFrameBuffered(r *bufio.Reader) frameType {
	if r.Buffered() < 5 {
		return 0
	}
	hdr, err := r.Peek(5)
	if err != nil {
		return 0
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n < 1 || n > maxFrame || uint64(r.Buffered()) < 4+uint64(n) {
		return 0
	}
	return frameType(hdr[4])
}

// replicaAcker sends a replica session's acks. Under Sync the apply loop
// sends one itself as soon as it has drained what it read (a sync write
// waits for it: a hand-off to another goroutine would cost a wake-up per
// round trip). Under Async (linger > 0) nobody waits: at most one ack per
// linger, the last of a burst sent by a timer.
type replicaAcker struct {
	st      *store.Store
	conn    net.Conn
	w       *bufio.Writer
	enc     *encoder
	linger  time.Duration
	timeout time.Duration

	mu      sync.Mutex // guards everything below, and w
	touched []uint16   // segments applied since the last ack
	ping    bool       // a ping to answer
	last    time.Time  // when the last ack was sent
	timer   *time.Timer
	armed   bool // timer will send the pending ack
	closed  bool
	acks    []ack
}

func (a *replicaAcker) touch(seg uint16) {
	a.mu.Lock()
	if !slices.Contains(a.touched, seg) {
		a.touched = append(a.touched, seg)
	}
	a.mu.Unlock()
}

func (a *replicaAcker) pinged() {
	a.mu.Lock()
	a.ping = true
	a.mu.Unlock()
}

// flush acks what was applied (the apply loop drained its reads), now or,
// under Async, once linger has passed since the last ack.
func (a *replicaAcker) flush() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.armed || (len(a.touched) == 0 && !a.ping) {
		return
	}
	if wait := a.linger - time.Since(a.last); a.linger > 0 && wait > 0 {
		if a.timer == nil {
			a.timer = time.AfterFunc(wait, a.fire)
		} else {
			a.timer.Reset(wait)
		}
		a.armed = true
		return
	}
	a.sendLocked()
}

func (a *replicaAcker) fire() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.armed = false
	if !a.closed && (len(a.touched) > 0 || a.ping) {
		a.sendLocked()
	}
}

// sendLocked writes one ack of every touched segment at its current
// revision (everything up to it is applied). A failed write closes the
// connection: the apply loop's next read fails too.
func (a *replicaAcker) sendLocked() {
	a.acks = a.acks[:0]
	for _, seg := range a.touched {
		a.acks = append(a.acks, ack{Segment: seg, Revision: a.st.Segment(seg).Revision()})
	}
	a.touched, a.ping = a.touched[:0], false
	a.last = time.Now()
	_ = a.conn.SetWriteDeadline(a.last.Add(a.timeout))
	if writeFrame(a.w, fAck, a.enc.acks(a.acks)) != nil || a.w.Flush() != nil {
		a.closed = true
		_ = a.conn.Close()
	}
}

// close stops the timer; no ack is written after it returns.
func (a *replicaAcker) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	if a.timer != nil {
		a.timer.Stop()
	}
}

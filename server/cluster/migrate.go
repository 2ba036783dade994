package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zaris-io/zaris/server/cluster/failover"
	"github.com/zaris-io/zaris/server/cluster/migration"
)

// PeerMigrate carries the migration control requests (R-MIG): the
// leader's fence request to a moving partition's source (and its undo),
// and a draining node's request to the leader.
const PeerMigrate byte = 5

// Migrate request operations.
const (
	// MigrateFence: raise the write fence over the partition, wait for the
	// incoming owner to apply the last revision (the final delta), and
	// answer the cut-over proof.
	MigrateFence = "fence"
	// MigrateUnfence: the leader will not flip: lower the fence.
	MigrateUnfence = "unfence"
	// MigrateDrain: (to the leader) drain node Node.
	MigrateDrain = "drain"
)

// MigrateRequest is one PeerMigrate request.
type MigrateRequest struct {
	Op         string `msgpack:"op"`
	Identity   string `msgpack:"i,omitempty"`
	Generation uint64 `msgpack:"g,omitempty"`
	First      int    `msgpack:"f"`
	Last       int    `msgpack:"l"`
	Target     NodeID `msgpack:"t,omitempty"` // the partition's MoveTo ("" when only copies move)
	// Targets are every copy the cut-over proves level: the incoming
	// copies and MoveTo.
	Targets []NodeID `msgpack:"ts,omitempty"`
	// WaitMillis bounds how long the fenced source waits for the final
	// delta to be applied.
	WaitMillis int64  `msgpack:"w,omitempty"`
	Node       NodeID `msgpack:"n,omitempty"`
	// ACL is an encoded EntryACL a follower forwards (MigrateACL).
	ACL []byte `msgpack:"acl,omitempty"`
	// Follow is an encoded EntryFollow a follower forwards (MigrateFollow).
	Follow []byte `msgpack:"fw,omitempty"`
}

// MigrateReply answers a MigrateRequest.
type MigrateReply struct {
	OK bool `msgpack:"ok"`
	// Reason is a migration.Reason on a failed fence; Message says more.
	Reason  string `msgpack:"r,omitempty"`
	Message string `msgpack:"m,omitempty"`
	// At is the instant (source's Unix ns) the proof's digests were taken.
	At    int64                    `msgpack:"at,omitempty"`
	Proof []migration.SegmentProof `msgpack:"p,omitempty"`
	// Leader names the leader when a drain reached a follower.
	Leader NodeID `msgpack:"ld,omitempty"`
	// Index is the log index of a forwarded ACL change.
	Index uint64 `msgpack:"ix,omitempty"`
}

func serveMigrate(c net.Conn, answer func(MigrateRequest) MigrateReply) {
	_ = c.SetDeadline(time.Now().Add(peerHeaderTimeout))
	var q MigrateRequest
	if err := readLenPrefixed(c, &q, 1<<16); err != nil {
		return
	}
	wait := time.Duration(q.WaitMillis) * time.Millisecond
	_ = c.SetDeadline(time.Now().Add(wait + peerHeaderTimeout))
	rep := MigrateReply{Reason: "unsupported", Message: "this node serves no migration requests"}
	if answer != nil {
		rep = answer(q)
	}
	_ = writeLenPrefixed(c, &rep)
}

func (m *PeerMux) migrateRequest(ctx context.Context, addr string, q MigrateRequest) (MigrateReply, error) {
	var rep MigrateReply
	err := m.roundTrip(ctx, addr, PeerMigrate, &q, &rep)
	return rep, err
}

// answerMigrate serves PeerMigrate on this node: drains are the leader's,
// fences the replication manager's (Config.Migrate).
func (c *Cluster) answerMigrate(q MigrateRequest) MigrateReply {
	if q.Op == MigrateACL {
		return c.answerACL(q)
	}
	if q.Op == MigrateFollow {
		return c.answerFollow(q)
	}
	if q.Op == MigrateDrain {
		ctx, cancel := context.WithTimeout(context.Background(), 5*c.t.RaftHeartbeat)
		defer cancel()
		if err := c.Drain(ctx, q.Node); err != nil {
			return MigrateReply{Reason: "refused", Message: err.Error(), Leader: c.Leader()}
		}
		return MigrateReply{OK: true}
	}
	if c.cfg.Migrate == nil {
		return MigrateReply{Reason: "unsupported", Message: "no replication on this node"}
	}
	return c.cfg.Migrate(q)
}

// ErrCannotDrain: the node to drain holds partitions no other member can
// take.
var ErrCannotDrain = errors.New("cluster: nothing can take the drained node's partitions")

// Drain records an operator's decommission of node id (R-MIG-1): every
// leader from now on moves the partitions it owns or copies to the other
// members, live and without loss; the node then leaves (Node.Decommission
// waits for it). On a follower the request is forwarded to the leader.
func (c *Cluster) Drain(ctx context.Context, id NodeID) error {
	if !c.IsLeader() {
		leader := c.Leader()
		m := c.Map()
		if leader == "" || m == nil {
			return fmt.Errorf("%w (no leader known yet)", ErrNotLeader)
		}
		info, ok := m.Node(leader)
		if !ok {
			c.mu.RLock()
			for _, mv := range c.members {
				if mv.Info.ID == leader {
					info, ok = mv.Info, true
				}
			}
			c.mu.RUnlock()
		}
		if !ok {
			return fmt.Errorf("%w (leader %q has no known address)", ErrNotLeader, leader)
		}
		rep, err := c.mux.migrateRequest(ctx, c.peerAddr(info), MigrateRequest{Op: MigrateDrain, Node: id})
		if err != nil {
			return err
		}
		if !rep.OK {
			return fmt.Errorf("cluster: drain refused by the leader %s: %s", leader, rep.Message)
		}
		return nil
	}
	return c.do(ctx, func() error {
		if !c.IsLeader() {
			return fmt.Errorf("%w (leader: %q)", ErrNotLeader, c.Leader())
		}
		if slices.Contains(c.fsm.Draining(), id) {
			return nil
		}
		others := 0
		for _, mv := range c.tracker.Members() {
			if mv.State == MemberAlive && mv.Info.ID != id && !slices.Contains(c.fsm.Draining(), mv.Info.ID) {
				others++
			}
		}
		if others == 0 {
			return fmt.Errorf("%w: %q is the only live member that is not draining", ErrCannotDrain, id)
		}
		data, err := EncodeDrain(id)
		if err != nil {
			return err
		}
		if err := c.apply(data); err != nil {
			return err
		}
		c.log.Warn("draining a member: its partitions move away live, then it leaves", "member", id)
		return nil
	})
}

// Draining reports whether node id is being drained.
func (c *Cluster) Draining(id NodeID) bool { return slices.Contains(c.fsm.Draining(), id) }

// Holds reports whether map m still gives node id any role: owner,
// planned primary, replica or incoming copy of some partition.
func Holds(m *PartitionMap, id NodeID) bool {
	if m == nil {
		return false
	}
	for i := range m.Partitions {
		p := &m.Partitions[i]
		if p.ActiveOwner == id || p.PrimaryNodeID == id || p.MoveTo == id ||
			slices.Contains(p.ReplicaNodeIDs, id) || slices.Contains(p.Incoming, id) {
			return true
		}
	}
	return false
}

// MigrationStatus is one partition's move as GET /v1/cluster shows it.
type MigrationStatus struct {
	Partition int       `json:"partition"`
	First     int       `json:"first_segment"`
	Last      int       `json:"last_segment"`
	Source    NodeID    `json:"source"`
	Target    NodeID    `json:"target,omitempty"`
	Incoming  []NodeID  `json:"incoming,omitempty"`
	Phase     string    `json:"phase"` // copying, fencing, flipping
	Lag       uint64    `json:"lag"`   // revisions the slowest incoming copy is behind
	KeysHeld  int64     `json:"keys_held"`
	StartedAt time.Time `json:"started_at"`
	Attempts  int       `json:"attempts"`
	LastAbort string    `json:"last_abort,omitempty"`
}

// RebalanceStatus is the leader's view of the rebalance in progress.
type RebalanceStatus struct {
	Active bool `json:"active"`
	// Pending: an operator's request the leader has not planned yet (it
	// plans once membership is stable and every member is alive).
	Pending    bool              `json:"pending"`
	Reason     string            `json:"reason,omitempty"`
	Migrations []MigrationStatus `json:"migrations"`
	Completed  uint64            `json:"completed_moves"`
	Aborted    uint64            `json:"aborted_moves"`
	// SegmentsTotal and SegmentsLeft: the segments the rebalance in
	// progress changes the group of, and those not there yet (progress).
	SegmentsTotal int `json:"segments_total"`
	SegmentsLeft  int `json:"segments_left"`
	// KeysMoved and BytesMoved: what the completed moves carried (the
	// source's live keys and accounted bytes at the cut-over).
	KeysMoved  int64 `json:"keys_moved"`
	BytesMoved int64 `json:"bytes_moved"`
	// FencePause is the last cut-over's write pause (fence raised to flip
	// committed), MaxFencePause the longest this leader saw.
	FencePause    time.Duration `json:"last_fence_pause_ns"`
	MaxFencePause time.Duration `json:"max_fence_pause_ns"`
	// PlannedOver: the live members the last rebalance (in progress or
	// ended) was planned over. A node that holds nothing after a rebalance
	// planned over it is a spare; one the plan did not count was not
	// alive to the leader then, and needs another rebalance.
	PlannedOver []NodeID `json:"planned_over,omitempty"`
	// Held: why a rebalance with work to do takes no new step now (before
	// planning: a member not alive or membership not yet stable; once
	// planned: a member down); empty while it steps (rebalanceHold).
	Held string `json:"held,omitempty"`
}

// migrationState is the leader's migration driver state; a new leader
// starts its own (everything it needs is in the map).
type migrationState struct {
	want    []SegmentGroup // nil: no rebalance in progress
	wantKey string         // the members want was planned over
	// lastPlanKey: the members the last plan (in progress or ended) was
	// made over; kept after the rebalance ends.
	lastPlanKey string
	// settled: the members and topology an automatic trigger last found
	// nothing to move for (a spare the plan gives no role, e.g. the third
	// node at RF 2): no re-plan until either changes.
	settled   string
	reason    string
	requested bool
	moves     map[string]*moveState // by partition identity
	// planned: the segments the plan changes (progress), for plannedFor.
	planned    []int
	plannedFor string
	held       string // rebalanceHold's answer at the last sweep
}

type moveState struct {
	started   time.Time
	attempts  int
	phase     string
	lag       uint64
	keys      int64
	bytes     int64
	lastAbort string
	notBefore time.Time
	downSince time.Time // an incoming copy not alive since
}

// migrations is the published status (read by Status on any goroutine).
type migrations struct {
	mu         sync.Mutex
	status     RebalanceStatus
	requested  bool
	completed  uint64
	aborted    uint64
	fencePause time.Duration
	maxPause   time.Duration
	keysMoved  int64
	bytesMoved int64
	// pauses counts the cut-overs' fence pauses by FencePauseBuckets
	// (cumulative, Prometheus style: pauses[i] counts pauses <= bound i).
	pauses     [len(FencePauseBuckets)]uint64
	pauseCount uint64
	pauseSum   time.Duration
}

// FencePauseBuckets are the upper bounds (seconds) of the fence pause
// histogram (zaris_migration_fence_pause_seconds): the target is p99 <= 50 ms
// and the fence budget is 2 s.
var FencePauseBuckets = [...]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

// FencePauses is the histogram of the write-fence pauses of the cut-overs
// this node committed as leader.
type FencePauses struct {
	// Cumulative counts by FencePauseBuckets.
	Buckets [len(FencePauseBuckets)]uint64
	Count   uint64
	Sum     time.Duration
}

// FencePauses returns the fence pause histogram (metrics).
func (c *Cluster) FencePauses() FencePauses {
	c.mig.mu.Lock()
	defer c.mig.mu.Unlock()
	return FencePauses{Buckets: c.mig.pauses, Count: c.mig.pauseCount, Sum: c.mig.pauseSum}
}

// Migration timings.
const (
	// fenceBudget bounds the write fence of one cut-over: the final delta
	// must be applied within it, else the fence is lowered and the move
	// retried (it only fences when the copy is nearly level).
	fenceBudget = 2 * time.Second
	// maxAttempts: a move whose cut-over failed this often is aborted and
	// restarts later from a new snapshot.
	maxAttempts = 3
	// retryAfter spaces a failed cut-over's next attempt.
	retryAfter = 500 * time.Millisecond
	// defaultMaxMoves: partitions moving at once.
	defaultMaxMoves = 2
	// migrationTick paces the driver: a move takes a few steps (start,
	// copy checks, fence, flip), so it must not wait a control-loop tick
	// (250 ms) between them.
	migrationTick = 20 * time.Millisecond
)

// RequestRebalance asks the leader to re-plan over every live member that
// is not draining and migrate live towards that plan (R-MIG-1). It
// returns the plan's layout; on a follower ErrNotLeader.
func (c *Cluster) RequestRebalance(ctx context.Context) (*PartitionMap, error) {
	var plan *PartitionMap
	err := c.do(ctx, func() error {
		if !c.IsLeader() {
			return fmt.Errorf("%w (leader: %q)", ErrNotLeader, c.Leader())
		}
		cur := c.fsm.Map()
		if cur == nil {
			return errors.New("cluster: no map committed yet")
		}
		if err := HeldPartitions(cur, c.tracker.Members()); err != nil {
			return err // a partition's only copy is on an owner that is away: it cannot be a move's source now
		}
		plan = c.targetLayout(cur, c.tracker.Members())
		if plan == nil {
			return ErrCannotDrain
		}
		c.mig.mu.Lock()
		c.mig.requested = true
		c.mig.mu.Unlock()
		return nil
	})
	return plan, err
}

// RebalanceStatus is the leader's migration status (inactive on a
// follower).
func (c *Cluster) RebalanceStatus() RebalanceStatus {
	c.mig.mu.Lock()
	defer c.mig.mu.Unlock()
	st := c.mig.status
	st.Completed, st.Aborted, st.FencePause, st.MaxFencePause = c.mig.completed, c.mig.aborted, c.mig.fencePause, c.mig.maxPause
	st.KeysMoved, st.BytesMoved = c.mig.keysMoved, c.mig.bytesMoved
	st.Pending = st.Pending || c.mig.requested
	st.Migrations = slices.Clone(st.Migrations)
	if st.Migrations == nil {
		st.Migrations = []MigrationStatus{}
	}
	return st
}

// targetLayout plans the layout over the live members that are not
// draining (sticky: live owners keep what they can), nil when none is left.
func (c *Cluster) targetLayout(cur *PartitionMap, members []MemberView) *PartitionMap {
	draining := c.fsm.Draining()
	var live []NodeInfo
	for _, m := range members {
		if m.State == MemberAlive && !slices.Contains(draining, m.Info.ID) {
			live = append(live, m.Info)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return Plan(PlanInput{Members: live, TotalSegments: cur.TotalSegments, Partitions: c.cfg.Partitions,
		RF: c.cfg.ReplicationFactor, Previous: cur, Store: cur.Store, Cluster: cur.ClusterID})
}

// membersOfKey lists the node ids of a liveKey.
func membersOfKey(key string) []NodeID {
	var ids []NodeID
	for _, f := range strings.Fields(strings.Trim(key, "[]")) {
		ids = append(ids, NodeID(f))
	}
	return ids
}

func liveKey(members []MemberView, draining []NodeID) string {
	var ids []string
	for _, m := range members {
		if m.State == MemberAlive && !slices.Contains(draining, m.Info.ID) {
			ids = append(ids, string(m.Info.ID))
		}
	}
	slices.Sort(ids)
	return fmt.Sprint(ids)
}

// rebalanceTrigger says why the leader should move partitions without an
// operator's request (pure): a draining node still holds some, or
// auto-rebalance is on, membership has been stable for stableFor, every
// member of the map is alive, and some live member holds nothing (a node
// that joined) or a partition has fewer than rf copies the members could
// hold (a lost node's copies: copies are spread, so there is no spare to
// refill them — the plan re-places them, built live).
func rebalanceTrigger(m *PartitionMap, members []MemberView, draining []NodeID, auto bool, lastChange, now time.Time,
	stableFor time.Duration, rf int) string {
	for _, id := range draining {
		if Holds(m, id) {
			return "drain " + string(id)
		}
	}
	if !auto || now.Sub(lastChange) < stableFor {
		return ""
	}
	live := 0
	for _, mv := range members {
		_, in := m.Node(mv.Info.ID)
		if mv.State != MemberAlive && (in || !mv.State.MapAffecting()) {
			return "" // a member in trouble: failover's business first
		}
		if mv.State == MemberAlive && in && !slices.Contains(draining, mv.Info.ID) {
			live++
		}
	}
	for _, mv := range members {
		if _, in := m.Node(mv.Info.ID); in && !Holds(m, mv.Info.ID) && !slices.Contains(draining, mv.Info.ID) {
			return "auto: " + string(mv.Info.ID) + " holds nothing"
		}
	}
	for _, p := range m.Partitions {
		if p.ActiveOwner != "" && 1+len(p.ReplicaNodeIDs) < min(rf, live) {
			return fmt.Sprintf("auto: partition %d has %d of %d copies", p.ID, 1+len(p.ReplicaNodeIDs), rf)
		}
	}
	return ""
}

// rebalanceHold says why a rebalance with work to do (pending: a trigger
// fired or a plan is in progress) takes no new step now, "" when it can or
// has nothing to do (pure). Planning waits until every member of the map is
// alive and membership has been stable for stable: a plan made while a
// node may be dying unnoticed places data on it. A plan in progress goes
// on while a member is only suspected — a rumour: on a starved machine
// members flap between alive and suspected for minutes, and holding every
// step for it stalled a drain for good (TestLiveMigrationJoinAndDrainLoseNothing
// under a CPU hog); a move towards a node that then dies aborts and nothing
// is lost. It stops for a member declared down or gone (failover's business
// first). The answer, in the rebalance status, tells an operator why.
func rebalanceHold(pending, planned bool, troubled []MemberView, sinceChange, stable time.Duration) string {
	if !pending {
		return ""
	}
	var parts []string
	for _, mv := range troubled {
		if planned && mv.State == MemberSuspected {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s is %s", mv.Info.ID, mv.State))
	}
	switch {
	case len(parts) > 0 && planned:
		return "new steps wait until no member of the map is down: " + strings.Join(parts, ", ")
	case len(parts) > 0:
		return "planning waits until every member of the map is alive: " + strings.Join(parts, ", ")
	case !planned && sinceChange < stable:
		return fmt.Sprintf("planning waits for membership unchanged for %v (changed %v ago)", stable,
			sinceChange.Round(time.Millisecond))
	}
	return ""
}

func (c *Cluster) migrationLoop() {
	defer close(c.migrationDone)
	t := time.NewTicker(migrationTick)
	defer t.Stop()
	st := &migrationState{moves: map[string]*moveState{}}
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		if !c.IsLeader() || c.leaderReady.Load() == false {
			if st.want != nil || len(st.moves) > 0 {
				st = &migrationState{moves: map[string]*moveState{}}
				c.publishMigrations(st, nil)
			}
			continue
		}
		c.migrationSweep(st)
	}
}

func (c *Cluster) migrationSweep(st *migrationState) {
	m := c.fsm.Map()
	if m == nil {
		return
	}
	c.mu.RLock()
	members := slices.Clone(c.members)
	c.mu.RUnlock()
	draining := c.fsm.Draining()
	state := map[NodeID]MemberState{}
	for _, mv := range members {
		state[mv.Info.ID] = mv.State
	}
	alive := func(id NodeID) bool { return id == c.cfg.Self.ID || state[id] == MemberAlive }
	now := c.now()

	// Moves in flight are driven whatever started them (a former leader's
	// are in the map).
	inFlight := false
	for i := range m.Partitions {
		p := &m.Partitions[i]
		if p.Migrating() {
			inFlight = true
			c.driveMove(st, m, p, alive, now)
		}
	}
	for id := range st.moves {
		if !slices.ContainsFunc(m.Partitions, func(p Partition) bool { return p.Identity == id && p.Migrating() }) {
			delete(st.moves, id)
		}
	}

	// A rebalance a former leader started is in the log: finish it.
	if t := c.fsm.Target(); st.want == nil && t != nil {
		st.want, st.wantKey, st.lastPlanKey, st.reason = t.Groups, t.Members, t.Members, t.Reason
		c.log.Info("rebalance resumed from the control-plane log", "reason", t.Reason, "members", t.Members)
	}
	c.mig.mu.Lock()
	if c.mig.requested {
		st.requested, c.mig.requested = true, false
		st.want = nil // re-plan now
	}
	c.mig.mu.Unlock()
	// Planning only while every member of the map is alive, new steps
	// only while none is down (rebalanceHold); moves in flight go on.
	allAlive := true
	var troubled []MemberView
	for _, n := range m.Nodes {
		if !alive(n.ID) {
			allAlive = false
			troubled = append(troubled, MemberView{Info: n, State: state[n.ID]})
		}
	}
	lastChange := c.lastMemberChange()
	// Membership must have been stable at least as long as it takes to
	// confirm an owner dead: a node that joins just as another dies is not
	// a reason to move data while the dead one still looks alive.
	stable := max(c.t.FormationStable, c.t.SuspectEscalation)
	reason := rebalanceTrigger(m, members, draining, c.cfg.AutoRebalance, lastChange, now, stable, c.cfg.ReplicationFactor)
	if st.requested && reason == "" {
		reason = "operator request"
	}
	key := liveKey(members, draining)
	if reason != "" && !st.requested && st.want == nil && st.settled == fmt.Sprint(key, "@", m.TopologyVersion) {
		reason = ""
	}
	if st.want != nil && st.wantKey != key && reason == "" {
		reason = st.reason + " (re-planned: the members changed)"
	}
	if reason != "" && (st.want == nil || st.wantKey != key) && allAlive && now.Sub(lastChange) >= stable {
		if target := c.targetLayout(m, members); target != nil {
			t := RebalanceTarget{Members: key, Reason: reason, Groups: WantedGroups(target)}
			if err := c.recordTarget(t); err != nil {
				c.log.Warn("rebalance not recorded", "err", err)
			} else {
				st.want, st.wantKey, st.lastPlanKey, st.reason = t.Groups, key, key, reason
				c.log.Info("rebalance planned", "reason", reason, "partitions", len(target.Partitions), "members", key)
				for _, w := range PlacementWarnings(target, c.cfg.ReplicationFactor) {
					c.log.Warn("placement (R-CLU-7): " + w)
				}
			}
		}
	}
	st.held = rebalanceHold(reason != "" || st.want != nil, st.want != nil, troubled, now.Sub(lastChange), stable)
	if st.want == nil || st.held != "" {
		c.publishMigrations(st, m)
		return
	}
	var step MigrationStep
	err := c.do(context.Background(), func() error {
		if !c.IsLeader() {
			return ErrNotLeader
		}
		cur := c.fsm.Map()
		step = NextMigrationStep(cur, st.want, c.maxMoves(), nil)
		if step.Kind == StepCommit {
			return c.commit(step.Map)
		}
		return nil
	})
	switch {
	case err != nil:
		c.log.Warn("rebalance step not committed", "why", step.Why, "err", err)
	case step.Kind == StepDone && !inFlight:
		if err := c.recordTarget(RebalanceTarget{Members: key}); err != nil {
			c.log.Warn("rebalance end not recorded", "err", err)
			break
		}
		c.log.Info("rebalance complete", "reason", st.reason, "map_version", m.Version)
		st.want, st.requested, st.reason = nil, false, ""
		st.settled = fmt.Sprint(key, "@", c.fsm.Map().TopologyVersion)
	case step.Kind == StepCommit:
		c.log.Info("rebalance step", "step", step.Why, "map_version", step.Map.Version)
	}
	c.publishMigrations(st, c.fsm.Map())
}

// segmentsToChange lists the segments whose group in m is not the wanted
// one, or that are moving.
func segmentsToChange(m *PartitionMap, want []SegmentGroup) []int {
	var out []int
	for seg := range m.TotalSegments {
		p := &m.Partitions[m.SegmentToPartition[seg]]
		if p.Migrating() || !groupOf(p).equal(want[seg]) {
			out = append(out, seg)
		}
	}
	return out
}

// recordTarget commits t (no groups: the rebalance ended) to the log.
func (c *Cluster) recordTarget(t RebalanceTarget) error {
	return c.do(context.Background(), func() error {
		if !c.IsLeader() {
			return ErrNotLeader
		}
		data, err := EncodeRebalance(t)
		if err != nil {
			return err
		}
		return c.apply(data)
	})
}

func (c *Cluster) maxMoves() int {
	if c.cfg.MaxMoves > 0 {
		return c.cfg.MaxMoves
	}
	return defaultMaxMoves
}

func (c *Cluster) lastMemberChange() time.Time {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.membersChanged
}

// driveMove takes one partition in flight one phase further: wait for its
// incoming copies to be nearly level, then (owner change) fence the source,
// check the proof and flip; copies only: finish. Failures retry, then abort.
// The phases of a move a test can stop in (Config.PhaseHook).
const (
	MigrationPhaseCopying  = "copying"   // the move just started: the snapshot streams to the incoming copies
	MigrationPhaseCaughtUp = "caught-up" // every incoming copy streams live: the fence comes next
	MigrationPhaseFenced   = "fenced"    // the source is fenced and the proof holds: the flip comes next
	MigrationPhaseFlipped  = "flipped"   // the flip is committed: the source drops its copy next
)

// phase reports a move reaching a phase to the test hook; false: stop here.
func (c *Cluster) phase(name string, p *Partition) bool {
	return c.cfg.PhaseHook == nil || c.cfg.PhaseHook(name, *p)
}

func (c *Cluster) driveMove(st *migrationState, m *PartitionMap, p *Partition, alive func(NodeID) bool, now time.Time) {
	ms := st.moves[p.Identity]
	if ms == nil {
		if !c.phase(MigrationPhaseCopying, p) {
			return
		}
		ms = &moveState{started: now, phase: "copying"}
		st.moves[p.Identity] = ms
	}
	if now.Before(ms.notBefore) {
		return
	}
	abort := func(why string) {
		c.log.Warn("migration aborted; it restarts from a new snapshot", "partition", p.ID, "source", p.ActiveOwner,
			"target", p.MoveTo, "incoming", p.Incoming, "reason", why)
		ms.lastAbort = why
		idx := p.ID
		if err := c.do(context.Background(), func() error {
			cur := c.fsm.Map()
			if idx >= len(cur.Partitions) || cur.Partitions[idx].Identity != p.Identity {
				return nil
			}
			next := AbortMove(cur, idx)
			if next == nil {
				return nil
			}
			return c.commit(next)
		}); err == nil {
			c.mig.mu.Lock()
			c.mig.aborted++
			c.mig.mu.Unlock()
			delete(st.moves, p.Identity)
		}
	}
	// An incoming copy that stops answering ends the move — not at the
	// first missed probe (a busy node is suspected and cleared again), but
	// once it has been silent as long as failover waits for an owner.
	down := false
	for _, id := range p.Incoming {
		if !alive(id) {
			down = true
			if ms.downSince.IsZero() {
				ms.downSince = now
			}
			if now.Sub(ms.downSince) >= c.t.SuspectEscalation {
				abort("incoming copy " + string(id) + " is not alive")
				return
			}
		}
	}
	if !down {
		ms.downSince = time.Time{}
	} else {
		ms.phase = "waiting for an incoming copy"
		return
	}
	source := p.ActiveOwner
	if source == "" || !alive(source) || p.HealthState() == failover.Recovering || p.HealthState() == failover.Unavailable {
		ms.phase = "waiting for the source"
		return // failover's business first; the move continues from whoever owns it next
	}
	rep, err := c.query(m, source, p)
	if err != nil {
		ms.phase = "waiting for the source"
		return
	}
	ms.keys, ms.bytes = rep.HeldKeys, rep.HeldBytes
	ready := true
	ms.lag = 0
	for _, id := range append(slices.Clone(p.Incoming), p.MoveTo) {
		if id == "" || id == source {
			continue
		}
		i := slices.IndexFunc(rep.Replicas, func(r ReplicaProgress) bool { return r.Node == id })
		if i < 0 {
			ready = false
			continue
		}
		ms.lag = max(ms.lag, rep.Replicas[i].Lag)
		if !migration.ShouldFence(rep.Replicas[i].Streaming, rep.Replicas[i].Lag) {
			ready = false
		}
	}
	if !ready {
		ms.phase = "copying"
		return
	}
	var replicas []NodeID
	if st.want != nil && p.FirstSegment < len(st.want) {
		replicas = st.want[p.FirstSegment].Replicas
	} else {
		// A move a former leader started: keep every copy it built.
		replicas = slices.Concat(p.ReplicaNodeIDs, p.Incoming)
	}
	targets := CutoverTargets(p)
	if len(targets) == 0 {
		// The target became the owner meanwhile (a failover promoted it):
		// nothing left to prove.
		c.finishMove(st, p, replicas, ms, time.Time{})
		return
	}

	if !c.phase(MigrationPhaseCaughtUp, p) {
		return
	}
	// The cut-over: fence, final delta, proof — for an owner change and for
	// new copies alike: a copy joins the group (and counts for quorums)
	// only once it provably holds every write the owner acknowledged.
	ms.phase = "fencing"
	ms.attempts++
	fenceStart := time.Now()
	q := MigrateRequest{Op: MigrateFence, Identity: p.Identity, Generation: p.OwnershipGeneration, First: p.FirstSegment,
		Last: p.LastSegment, Target: p.MoveTo, Targets: targets, WaitMillis: fenceBudget.Milliseconds()}
	reply, err := c.migrateCall(m, source, q, fenceBudget+2*time.Second)
	if err != nil || !reply.OK {
		why := "fence failed"
		if err != nil {
			why += ": " + err.Error()
		} else {
			why = reply.Reason + ": " + reply.Message
		}
		ms.lastAbort, ms.notBefore = why, now.Add(retryAfter)
		c.log.Warn("cut-over not ready; retrying", "partition", p.ID, "source", source, "targets", targets, "why", why,
			"attempt", ms.attempts)
		if (err == nil && reply.Reason == string(migration.FinalDeltaBelowTrimFloor)) || ms.attempts >= maxAttempts {
			abort(why)
		}
		return
	}
	// Every target must hold exactly the fenced source's content, and
	// dominate every live replica (R-MIG-2 step 4).
	lease := func(r PossessionReport) []migration.Holding {
		out := make([]migration.Holding, 0, len(r.Segments))
		for _, h := range r.Segments {
			out = append(out, migration.Holding{Segment: h.Segment, Revision: h.Revision, Digest: h.Digest, Count: h.Count,
				FollowsSource: h.Owner == source && h.Generation == p.OwnershipGeneration})
		}
		return out
	}
	var reps [][]migration.Holding
	for _, id := range p.Established() {
		if id == source || slices.Contains(targets, id) || !alive(id) {
			continue
		}
		if rrep, err := c.queryAt(m, id, p, 0); err == nil {
			reps = append(reps, lease(rrep))
		}
	}
	verdict, at, failed := migration.Ready, -1, NodeID("")
	for _, id := range targets {
		trep, err := c.queryAt(m, id, p, reply.At)
		if err != nil {
			verdict, failed = migration.MissingSegment, id
			break
		}
		if verdict, at = migration.CutoverVerdict(reply.Proof, lease(trep), reps); verdict != migration.Ready {
			failed = id
			break
		}
	}
	if verdict != migration.Ready {
		c.log.Warn("cut-over proof does not hold; lowering the fence", "partition", p.ID, "source", source,
			"target", failed, "reason", string(verdict), "segment", at, "attempt", ms.attempts)
		ms.lastAbort, ms.notBefore = string(verdict), now.Add(retryAfter)
		_, _ = c.migrateCall(m, source, MigrateRequest{Op: MigrateUnfence, Identity: p.Identity, First: p.FirstSegment,
			Last: p.LastSegment, Target: p.MoveTo, Targets: targets}, 5*time.Second)
		if ms.attempts >= maxAttempts {
			abort(string(verdict))
		}
		return
	}
	if !c.phase(MigrationPhaseFenced, p) {
		return
	}
	ms.phase = "flipping"
	c.finishMove(st, p, replicas, ms, fenceStart)
}

func (c *Cluster) finishMove(st *migrationState, p *Partition, replicas []NodeID, ms *moveState, fenced time.Time) {
	idx, ident := p.ID, p.Identity
	err := c.do(context.Background(), func() error {
		if !c.IsLeader() {
			return ErrNotLeader
		}
		cur := c.fsm.Map()
		if idx >= len(cur.Partitions) || !ProofStillHolds(p, &cur.Partitions[idx]) {
			return errors.New("the partition changed since its cut-over proof (owner, lease or copies)")
		}
		next := FinishMove(cur, idx, replicas)
		if next == nil {
			return errors.New("the flip would not validate")
		}
		return c.commit(next)
	})
	if err != nil {
		// The source stays fenced until a map says otherwise: the next
		// sweep fences again (idempotent) and retries the flip.
		c.log.Warn("migration flip not committed; retrying", "partition", idx, "err", err)
		ms.notBefore = c.now().Add(retryAfter)
		return
	}
	c.phase(MigrationPhaseFlipped, p)
	var pause time.Duration
	if !fenced.IsZero() {
		pause = time.Since(fenced)
	}
	c.log.Info("migration complete", "partition", idx, "from", p.ActiveOwner, "to", p.MoveTo, "incoming", p.Incoming,
		"keys", ms.keys, "fence_pause", pause, "took", c.now().Sub(ms.started).Round(time.Millisecond))
	c.mig.mu.Lock()
	c.mig.completed++
	c.mig.keysMoved += ms.keys
	c.mig.bytesMoved += ms.bytes
	if pause > 0 {
		c.mig.fencePause = pause
		c.mig.maxPause = max(c.mig.maxPause, pause)
		c.mig.pauseCount++
		c.mig.pauseSum += pause
		for i, bound := range FencePauseBuckets {
			if pause.Seconds() <= bound {
				c.mig.pauses[i]++
			}
		}
	}
	c.mig.mu.Unlock()
	delete(st.moves, ident)
}

// migrateCall sends q to node id (or answers it locally).
func (c *Cluster) migrateCall(m *PartitionMap, id NodeID, q MigrateRequest, timeout time.Duration) (MigrateReply, error) {
	if id == c.cfg.Self.ID {
		if c.cfg.Migrate == nil {
			return MigrateReply{}, errors.New("no replication on this node")
		}
		return c.cfg.Migrate(q), nil
	}
	info, ok := m.Node(id)
	if !ok {
		return MigrateReply{}, fmt.Errorf("%q is not in the map", id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return c.mux.migrateRequest(ctx, c.peerAddr(info), q)
}

// queryAt is a possession query with content digests taken at instant at
// (0: no digests).
func (c *Cluster) queryAt(m *PartitionMap, id NodeID, p *Partition, at int64) (PossessionReport, error) {
	q := PossessionQuery{Identity: p.Identity, First: p.FirstSegment, Last: p.LastSegment, DigestAt: at}
	if id == c.cfg.Self.ID && c.cfg.Possession != nil {
		return c.cfg.Possession(q), nil
	}
	info, ok := m.Node(id)
	if !ok {
		return PossessionReport{}, ErrNotLeader
	}
	ctx, cancel := context.WithTimeout(context.Background(), possessionTimeout+5*time.Second)
	defer cancel()
	return c.mux.queryPossessionQ(ctx, c.peerAddr(info), q)
}

func (c *Cluster) publishMigrations(st *migrationState, m *PartitionMap) {
	rs := RebalanceStatus{Active: st.want != nil, Pending: st.want == nil && st.requested, Reason: st.reason,
		PlannedOver: membersOfKey(st.lastPlanKey), Held: st.held}
	if m != nil && st.want != nil && len(st.want) == m.TotalSegments {
		if st.planned == nil || st.plannedFor != st.wantKey {
			// What the plan changes, measured once against the map it
			// started from.
			st.planned, st.plannedFor = segmentsToChange(m, st.want), st.wantKey
		}
		rs.SegmentsTotal = len(st.planned)
		rs.SegmentsLeft = len(segmentsToChange(m, st.want))
	}
	if m != nil {
		for i := range m.Partitions {
			p := &m.Partitions[i]
			if !p.Migrating() {
				continue
			}
			ms := st.moves[p.Identity]
			s := MigrationStatus{Partition: p.ID, First: p.FirstSegment, Last: p.LastSegment, Source: p.ActiveOwner,
				Target: p.MoveTo, Incoming: slices.Clone(p.Incoming), Phase: "copying"}
			if ms != nil {
				s.Phase, s.Lag, s.KeysHeld, s.StartedAt, s.Attempts, s.LastAbort = ms.phase, ms.lag, ms.keys, ms.started,
					ms.attempts, ms.lastAbort
			}
			rs.Migrations = append(rs.Migrations, s)
		}
	}
	c.mig.mu.Lock()
	c.mig.status = rs
	c.mig.mu.Unlock()
}

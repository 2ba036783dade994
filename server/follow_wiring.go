package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/follow"
	"github.com/zaris-io/zaris/server/httpapi"
)

// The WAN follower on a node (R-OPS-4, server/follow): every node folds the
// follow state from raft and refuses client writes while the cluster
// follows; the control-plane leader runs the applier (one per cluster: it
// moves with leadership); --follow starts following on a cluster that
// never followed; POST /v1/cluster/follow and /v1/cluster/promote
// (zarisctl follow, zarisctl promote) start and stop it at runtime.

// followCheck is how often a node reconciles the applier with leadership
// and the follow state.
const followCheck = 100 * time.Millisecond

// followRuntime is the node's part of the follower.
type followRuntime struct {
	stats *follow.Stats

	mu      sync.Mutex // guards the fields below
	cancel  context.CancelFunc
	gen     uint64        // the generation the applier runs
	done    chan struct{} // closed when the applier returned
	stop    chan struct{} // closed by stopFollower
	stopped bool
	booted  bool // --follow was acted on (or declined)
	wg      sync.WaitGroup

	msg atomic.Pointer[refusal] // readOnlyMessage's cache

	// fence orders the applier's writes on this node by claim.
	fence follow.Fence
}

// followState is the folded follow state (nil before the cluster runs).
func (n *Node) followState() *cluster.FollowState {
	if cl := n.routing.c.Load(); cl != nil {
		return cl.Follow()
	}
	return nil
}

// readOnlyMessage is the refusal of a client write while following,
// built once per folded state (the gates ask on every request).
func (n *Node) readOnlyMessage(st *cluster.FollowState) string {
	if c := n.follow.msg.Load(); c != nil && c.st == st {
		return c.msg
	}
	msg := "this cluster follows " + follow.Redact(st.Source) +
		" (a WAN follower): it serves reads; writes open after zarisctl promote"
	n.follow.msg.Store(&refusal{st: st, msg: msg})
	return msg
}

// refusal caches readOnlyMessage for one folded state.
type refusal struct {
	st  *cluster.FollowState
	msg string
}

// nativeWriteGate is the native front end's write gate: while the
// cluster follows, only the applier's connections (their client name
// carries the follow's key) may write, fenced by the applier's claim
// (follow.Fence: a deposed applier's writes are refused, and never land
// after the new applier's).
type nativeWriteGate struct{ n *Node }

func (g nativeWriteGate) Enter(clientName string) (bool, kv.Status, string) {
	st := g.n.followState()
	if !st.Following() {
		return false, kv.StatusSuccess, ""
	}
	held, status, msg := g.n.follow.fence.Enter(st, clientName)
	if status == kv.StatusReadOnly && msg == "" {
		msg = g.n.readOnlyMessage(st)
	}
	return held, status, msg
}

func (g nativeWriteGate) Exit() { g.n.follow.fence.Exit() }

// readOnly is the RESP and HTTP gate: every write is refused while following.
func (n *Node) readOnly() string {
	st := n.followState()
	if !st.Following() {
		return ""
	}
	return n.readOnlyMessage(st)
}

// startFollower starts the reconciler (Start, once the cluster runs).
func (n *Node) startFollower() {
	f := &n.follow
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stop == nil {
		f.stop = make(chan struct{})
	}
	if f.stopped {
		return
	}
	f.wg.Add(1)
	go n.followLoop()
}

// stopFollower stops the applier (its cursor is committed on the way out)
// and the reconciler. Safe to call more than once, and before Start.
func (n *Node) stopFollower() {
	f := &n.follow
	f.mu.Lock()
	if f.stop == nil {
		f.stop = make(chan struct{})
	}
	if !f.stopped {
		f.stopped = true
		close(f.stop)
	}
	f.mu.Unlock()
	f.wg.Wait()
	n.stopApplier()
}

func (n *Node) followLoop() {
	f := &n.follow
	defer f.wg.Done()
	t := time.NewTicker(followCheck)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
		}
		n.reconcileFollower()
	}
}

// reconcileFollower runs the applier on the leader of a following cluster
// and nowhere else, and acts on --follow once.
func (n *Node) reconcileFollower() {
	cl := n.routing.c.Load()
	if cl == nil {
		return
	}
	st := cl.Follow()
	leader := cl.IsLeader()
	if leader && !n.follow.booted {
		n.bootFollow(cl, st)
		st = cl.Follow()
	}
	f := &n.follow
	want := leader && st.Following()
	f.mu.Lock()
	running, ended := f.cancel != nil, false
	if running {
		select {
		case <-f.done:
			ended = true // it returned on its own (a stale follow)
		default:
		}
	}
	gen := f.gen
	f.mu.Unlock()
	if running && (ended || !want || st.Generation != gen) {
		n.stopApplier()
		running = false
	}
	if want && !running {
		n.startApplier(cl, *st)
	}
}

// bootFollow acts on --follow on the leader, once.
func (n *Node) bootFollow(cl *cluster.Cluster, st *cluster.FollowState) {
	src := n.cfg.Follow
	switch {
	case src == "":
	case st.Source == src:
	case st.Source != "":
		n.log.Warn("--follow names another primary than the one this cluster follows; ignored (zarisctl promote, then zarisctl follow)",
			"follow_flag", follow.Redact(src), "following", follow.Redact(st.Source))
	case st.PromotedFrom != "":
		n.log.Warn("this cluster was promoted: --follow is ignored (zarisctl follow starts a new follow)",
			"follow_flag", follow.Redact(src), "promoted_from", follow.Redact(st.PromotedFrom))
	default:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := n.startFollow(ctx, cl, src); err != nil {
			n.log.Warn("--follow: starting to follow failed; retrying", "err", err)
			return // retried on the next check
		}
	}
	n.follow.booted = true
}

func (n *Node) startApplier(cl *cluster.Cluster, st cluster.FollowState) {
	f := &n.follow
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	f.cancel, f.gen, f.done = cancel, st.Generation, done
	n.log.Info("running the follower's applier on this node (control-plane leader)",
		"source", follow.Redact(st.Source), "generation", st.Generation, "resume", st.Cursor != "")
	go func() {
		defer close(done)
		err := follow.Run(ctx, follow.Options{State: st, Plane: cl, DialLocal: n.dialSelf,
			Stats: f.stats, Logger: n.log})
		if err != nil {
			n.log.Info("the follower's applier stopped", "reason", err)
		}
	}()
}

// stopApplier cancels the applier and waits for it.
func (n *Node) stopApplier() {
	f := &n.follow
	f.mu.Lock()
	cancel, done := f.cancel, f.done
	f.cancel, f.done, f.gen = nil, nil, 0
	f.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// dialSelf connects an SDK cluster client to this cluster through this
// node's client port, with the given client name.
func (n *Node) dialSelf(ctx context.Context, clientName string) (*sdk.Client, error) {
	u, err := n.selfConnString()
	if err != nil {
		return nil, err
	}
	return sdk.Connect(ctx, u, sdk.WithLogger(n.log.With("component", "follow-local")), sdk.WithClientName(clientName))
}

// startFollow commits a FollowStart of source with a fresh key.
func (n *Node) startFollow(ctx context.Context, cl *cluster.Cluster, source string) (*cluster.FollowStatus, error) {
	if err := follow.ValidSource(source); err != nil {
		return nil, fmt.Errorf("%w: %w", httpapi.ErrBadSource, err)
	}
	if st := cl.Follow(); st.Following() && st.Source != source {
		return nil, fmt.Errorf("%w: %s (run zarisctl promote first)", httpapi.ErrFollowConflict, follow.Redact(st.Source))
	}
	key := make([]byte, 16)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	err := cl.CommitFollow(ctx, cluster.FollowOp{Kind: cluster.FollowStart, Source: source, Key: hex.EncodeToString(key),
		At: time.Now().UnixNano()})
	if errors.Is(err, cluster.ErrFollowConflict) {
		return nil, fmt.Errorf("%w: %w", httpapi.ErrFollowConflict, err)
	}
	if err != nil {
		return nil, err
	}
	n.log.Warn("this cluster now follows another cluster: client writes are refused until zarisctl promote",
		"source", follow.Redact(source))
	return n.followStatus(), nil
}

// followStatus is the follow document of /v1/cluster.
func (n *Node) followStatus() *cluster.FollowStatus {
	st := n.followState()
	doc := st.StatusOf(follow.Redact)
	if doc != nil && st.Following() {
		doc.Applier = n.follow.stats.Status(cluster.NodeID(n.cfg.NodeID))
	}
	return doc
}

// followControl serves POST /v1/cluster/follow and /v1/cluster/promote.
type followControl struct{ n *Node }

func (c followControl) Follow(ctx context.Context, source string) (any, error) {
	cl := c.n.Cluster()
	if cl == nil {
		return nil, ErrStopped
	}
	doc, err := c.n.startFollow(ctx, cl, source)
	if err != nil {
		return nil, err
	}
	return doc, nil
}

func (c followControl) Promote(ctx context.Context) (any, error) {
	cl := c.n.Cluster()
	if cl == nil {
		return nil, ErrStopped
	}
	st := cl.Follow()
	if st.Following() {
		if err := cl.CommitFollow(ctx, cluster.FollowOp{Kind: cluster.FollowStop, At: time.Now().UnixNano()}); err != nil {
			return nil, err
		}
		c.n.log.Warn("promoted: this cluster no longer follows another; client writes are open",
			"promoted_from", follow.Redact(st.Source))
	}
	doc := c.n.followStatus()
	if doc == nil {
		doc = &cluster.FollowStatus{State: "none"}
	}
	return doc, nil
}

// validFollowSource checks --follow.
func validFollowSource(source string) error { return follow.ValidSource(source) }

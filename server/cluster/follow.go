package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zaris-io/zaris/internal/mpsafe"
)

// The WAN follower's state in the control-plane log (R-OPS-4): whether
// this cluster follows another cluster's change feed, from where, and the
// feed cursor up to which the changes are applied. Every node folds the
// same EntryFollow entries, so every node refuses client writes while the
// cluster follows, the applier (which runs on the leader) resumes from the
// same cursor wherever leadership moves, and a restart of any node or of
// the whole cluster keeps both.

// EntryFollow records one change of the follow state (a FollowOp).
const EntryFollow EntryType = 7

// MigrateFollow: (to the leader) commit a follow change (MigrateRequest.Follow).
const MigrateFollow = "follow"

// FollowOpKind is what a FollowOp does.
type FollowOpKind uint8

const (
	// FollowStart starts following Source (no-op when it already does;
	// refused while it follows another source).
	FollowStart FollowOpKind = iota + 1
	// FollowCursor records the cursor up to which changes are applied;
	// refused unless the cluster still follows with the same Generation
	// (an applier of a stopped or restarted follow cannot move it).
	FollowCursor
	// FollowStop stops following (zarisctl promote): writes open.
	FollowStop
	// FollowClaim makes the proposing leader's applier the follow's only
	// writer: the claim's log index becomes the follow's Claim, every node
	// then refuses the writes of an applier of an older claim, and the fold
	// refuses its cursor commits (a deposed applier, still running until
	// its node notices, cannot write or move the cursor back).
	FollowClaim
)

// FollowOp is one change of the follow state.
type FollowOp struct {
	Kind FollowOpKind `msgpack:"k"`
	// Source is the followed cluster's connection string (FollowStart).
	Source string `msgpack:"s,omitempty"`
	// Key is the applier's credential (FollowStart): the native connection
	// whose client name carries it may write while the cluster follows.
	Key string `msgpack:"key,omitempty"`
	// Generation names the follow a FollowCursor or FollowClaim belongs to.
	Generation uint64 `msgpack:"g,omitempty"`
	// Claim is the applier claim a FollowCursor was made under (0: an
	// entry written before claims existed, accepted while none is folded).
	Claim uint64 `msgpack:"cl,omitempty"`
	// Node is the node that claims the follow (FollowClaim).
	Node NodeID `msgpack:"nd,omitempty"`
	// Cursor is the feed cursor (sdk.Cursor.String) the applied changes reach.
	Cursor string `msgpack:"c,omitempty"`
	// Applied is the number of changes applied by this follow so far.
	Applied uint64 `msgpack:"n,omitempty"`
	// Local is this cluster's own head (sdk.Cursor.String) when the cursor
	// was committed: a head found below it later means this cluster lost
	// data the cursor says is applied (a restart of every node).
	Local string `msgpack:"l,omitempty"`
	// At is the proposer's clock (Unix ns) when the op was made.
	At int64 `msgpack:"at,omitempty"`
}

// FollowState is the folded follow state.
type FollowState struct {
	// Source is the followed cluster ("" = not following: writes open).
	Source string `msgpack:"s,omitempty"`
	Key    string `msgpack:"key,omitempty"`
	// Generation is the log index of the FollowStart of the current follow.
	Generation uint64 `msgpack:"g,omitempty"`
	StartedAt  int64  `msgpack:"sa,omitempty"`
	Cursor     string `msgpack:"c,omitempty"`
	CursorAt   int64  `msgpack:"ca,omitempty"`
	Applied    uint64 `msgpack:"n,omitempty"`
	Local      string `msgpack:"l,omitempty"`
	// Claim is the log index of the follow's last FollowClaim (0: none
	// yet): only the applier that made it may write or commit a cursor.
	Claim     uint64 `msgpack:"cl,omitempty"`
	ClaimedBy NodeID `msgpack:"cb,omitempty"`
	ClaimedAt int64  `msgpack:"cat,omitempty"`
	// PromotedFrom and PromotedAt record the last promotion: the source
	// the cluster stopped following and when.
	PromotedFrom string `msgpack:"pf,omitempty"`
	PromotedAt   int64  `msgpack:"pa,omitempty"`
}

// Following reports whether the cluster follows another cluster.
func (s *FollowState) Following() bool { return s != nil && s.Source != "" }

// ErrFollowConflict refuses a FollowStart while another source is followed.
var ErrFollowConflict = errors.New("cluster: this cluster already follows another cluster; run zarisctl promote first")

// ErrFollowStale refuses a FollowCursor of a follow that is no longer the current one.
var ErrFollowStale = errors.New("cluster: the follow this cursor belongs to was stopped or replaced")

// ErrFollowClaimed refuses a FollowCursor made under an applier claim that
// a later one replaced: another applier now runs the follow.
var ErrFollowClaimed = errors.New("cluster: another applier claimed this follow")

// EncodeFollow encodes an EntryFollow entry.
func EncodeFollow(op FollowOp) ([]byte, error) {
	b, err := msgpack.Marshal(&op)
	if err != nil {
		return nil, fmt.Errorf("cluster: encoding a follow change: %w", err)
	}
	return append([]byte{byte(EntryFollow)}, b...), nil
}

// DecodeFollow decodes an EntryFollow entry (data includes the type byte).
func DecodeFollow(data []byte) (FollowOp, error) {
	var op FollowOp
	if len(data) == 0 || EntryType(data[0]) != EntryFollow {
		return op, fmt.Errorf("%w: not a follow change", ErrBadEntry)
	}
	if err := mpsafe.Unmarshal(data[1:], &op); err != nil {
		return op, fmt.Errorf("%w: follow change: %v", ErrBadEntry, err)
	}
	switch op.Kind {
	case FollowStart:
		if op.Source == "" || op.Key == "" {
			return op, fmt.Errorf("%w: follow start without a source or a key", ErrBadEntry)
		}
	case FollowCursor, FollowStop, FollowClaim:
	default:
		return op, fmt.Errorf("%w: follow change of kind %d", ErrBadEntry, op.Kind)
	}
	return op, nil
}

// FoldFollow applies op (committed at log index) to cur; a refused op
// returns cur unchanged and the error. Pure: every node folds alike.
func FoldFollow(cur FollowState, op FollowOp, index uint64) (FollowState, error) {
	switch op.Kind {
	case FollowStart:
		if cur.Source == op.Source {
			return cur, nil
		}
		if cur.Source != "" {
			return cur, fmt.Errorf("%w (following %s)", ErrFollowConflict, cur.Source)
		}
		return FollowState{Source: op.Source, Key: op.Key, Generation: index, StartedAt: op.At, Cursor: op.Cursor,
			PromotedFrom: cur.PromotedFrom, PromotedAt: cur.PromotedAt}, nil
	case FollowCursor:
		if cur.Source == "" || op.Generation != cur.Generation {
			return cur, ErrFollowStale
		}
		if op.Claim != cur.Claim {
			return cur, fmt.Errorf("%w (the cursor's claim %d, the follow's %d)", ErrFollowClaimed, op.Claim, cur.Claim)
		}
		cur.Cursor, cur.CursorAt, cur.Applied, cur.Local = op.Cursor, op.At, op.Applied, op.Local
		return cur, nil
	case FollowClaim:
		if cur.Source == "" || op.Generation != cur.Generation {
			return cur, ErrFollowStale
		}
		cur.Claim, cur.ClaimedBy, cur.ClaimedAt = index, op.Node, op.At
		return cur, nil
	case FollowStop:
		if cur.Source == "" {
			return cur, nil
		}
		return FollowState{Generation: cur.Generation, PromotedFrom: cur.Source, PromotedAt: op.At}, nil
	}
	return cur, fmt.Errorf("%w: follow change of kind %d", ErrBadEntry, op.Kind)
}

// applyFollow folds an EntryFollow.
func (f *fsm) applyFollow(data []byte, index uint64) any {
	op, err := DecodeFollow(data)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var cur FollowState
	if p := f.follow.Load(); p != nil {
		cur = *p
	}
	next, err := FoldFollow(cur, op, index)
	if err != nil {
		return err
	}
	f.follow.Store(&next)
	return nil
}

// Follow is the folded follow state (never nil; callers must not modify it).
// Lock-free: the front ends read it on every write.
func (c *Cluster) Follow() *FollowState {
	if p := c.fsm.follow.Load(); p != nil {
		return p
	}
	return &notFollowing // shared: a fresh one cost every write an allocation
}

// notFollowing is Follow's answer before any follow change.
var notFollowing FollowState

// CommitFollow records a follow change in the log and returns once this
// node's fold applied it. On a follower the change is forwarded to the
// leader. A refused change returns the fold's error (ErrFollowConflict,
// ErrFollowStale).
func (c *Cluster) CommitFollow(ctx context.Context, op FollowOp) error {
	data, err := EncodeFollow(op)
	if err != nil {
		return err
	}
	return c.commitOrForward(ctx, data, MigrateRequest{Op: MigrateFollow, Follow: data}, "follow")
}

// ClaimFollow makes this node's applier the only writer of the follow of
// generation gen and returns the claim (the entry's log index). Only the
// leader claims, and never by forwarding: an applier runs on the leader,
// and a node that lost leadership must not depose the new leader's.
func (c *Cluster) ClaimFollow(ctx context.Context, gen uint64) (uint64, error) {
	data, err := EncodeFollow(FollowOp{Kind: FollowClaim, Generation: gen, Node: c.cfg.Self.ID, At: time.Now().UnixNano()})
	if err != nil {
		return 0, err
	}
	return c.applyIndexed(ctx, data)
}

// answerFollow serves a forwarded follow change on the leader.
func (c *Cluster) answerFollow(q MigrateRequest) MigrateReply {
	ctx, cancel := context.WithTimeout(context.Background(), 5*c.t.RaftHeartbeat)
	defer cancel()
	if _, err := DecodeFollow(q.Follow); err != nil {
		return MigrateReply{Reason: "refused", Message: err.Error()}
	}
	idx, err := c.applyIndexed(ctx, q.Follow)
	if err != nil {
		return MigrateReply{Reason: "refused", Message: err.Error(), Leader: c.Leader()}
	}
	return MigrateReply{OK: true, Index: idx}
}

// FollowStatus is the follow state in GET /v1/cluster ("follow"; absent
// on a cluster that never followed another).
type FollowStatus struct {
	// State is "following" or "promoted".
	State string `json:"state"`
	// Source is the followed cluster, its secrets redacted.
	Source            string     `json:"source,omitempty"`
	Generation        uint64     `json:"generation,omitempty"`
	StartedAt         *time.Time `json:"startedAt,omitempty"`
	CursorCommittedAt *time.Time `json:"cursorCommittedAt,omitempty"`
	// AppliedChanges is the count the last committed cursor covers.
	AppliedChanges uint64     `json:"appliedChanges"`
	PromotedFrom   string     `json:"promotedFrom,omitempty"`
	PromotedAt     *time.Time `json:"promotedAt,omitempty"`
	// Applier is the live view of the node that runs the applier (the
	// control-plane leader): only that node's document has it.
	Applier *FollowApplierStatus `json:"applier,omitempty"`
}

// FollowApplierStatus is the applier's live state.
type FollowApplierStatus struct {
	Node      NodeID `json:"node"`
	Connected bool   `json:"connected"`
	// LagRevisions is how many changes of the primary are not applied yet
	// (its head sampled every SampleEvery, minus the applied cursor, summed
	// over segments); LagSeconds how old the oldest of them may be.
	LagRevisions   uint64  `json:"lagRevisions"`
	LagSeconds     float64 `json:"lagSeconds"`
	AppliedChanges uint64  `json:"appliedChanges"` // by this node's runs
	Resyncs        uint64  `json:"resyncs"`        // segments resynchronised (cursor below the trim floor)
	FullCopies     uint64  `json:"fullCopies"`     // snapshots copied in full (no cursor)
	Skipped        uint64  `json:"skippedDuplicates"`
	LastError      string  `json:"lastError,omitempty"`
}

// StatusOf is the document of state s (without the applier's view).
func (s *FollowState) StatusOf(redact func(string) string) *FollowStatus {
	if s == nil || (s.Source == "" && s.PromotedFrom == "") {
		return nil
	}
	at := func(ns int64) *time.Time {
		if ns == 0 {
			return nil
		}
		t := time.Unix(0, ns).UTC()
		return &t
	}
	st := &FollowStatus{State: "promoted", Generation: s.Generation, PromotedAt: at(s.PromotedAt)}
	if s.PromotedFrom != "" {
		st.PromotedFrom = redact(s.PromotedFrom)
	}
	if s.Source != "" {
		st.State, st.Source = "following", redact(s.Source)
		st.StartedAt, st.CursorCommittedAt, st.AppliedChanges = at(s.StartedAt), at(s.CursorAt), s.Applied
	}
	return st
}

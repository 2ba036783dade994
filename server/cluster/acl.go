package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zaris-io/zaris/internal/mpsafe"

	"github.com/zaris-io/zaris/internal/acl"
)

// Users and permissions in the control-plane log: every ACL SETUSER and
// DELUSER is an EntryACL, folded by every node's FSM into the same user
// set (a node that joins later gets it from the log or a snapshot).
// Passwords arrive hashed (acl.Normalize): the log holds no secret in
// clear.

// EntryACL records one change to the users (an acl.Op).
const EntryACL EntryType = 6

// MigrateACL: (to the leader) commit an ACL change (MigrateRequest.ACL).
const MigrateACL = "acl"

// EncodeACL encodes an EntryACL entry.
func EncodeACL(op acl.Op) ([]byte, error) {
	b, err := msgpack.Marshal(&op)
	if err != nil {
		return nil, fmt.Errorf("cluster: encoding an ACL change: %w", err)
	}
	return append([]byte{byte(EntryACL)}, b...), nil
}

// DecodeACL decodes an EntryACL entry (data includes the type byte).
func DecodeACL(data []byte) (acl.Op, error) {
	var op acl.Op
	if len(data) == 0 || EntryType(data[0]) != EntryACL {
		return op, fmt.Errorf("%w: not an ACL change", ErrBadEntry)
	}
	if err := mpsafe.Unmarshal(data[1:], &op); err != nil {
		return op, fmt.Errorf("%w: ACL change: %v", ErrBadEntry, err)
	}
	return op, nil
}

// applyACL folds an EntryACL: a refused op (a rule that no longer applies)
// leaves the users unchanged on every node alike.
func (f *fsm) applyACL(data []byte) any {
	op, err := DecodeACL(data)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.users == nil {
		return nil // this node enforces no users (no registry)
	}
	next, _, err := f.users.Apply(op)
	if err != nil {
		return err
	}
	f.users, f.aclTouched = next, true
	f.aclReg.Publish(next)
	return nil
}

// CommitACL records an ACL change in the log and returns once this node's
// fold applied it (so the change is visible here when it returns). On a
// follower the change is forwarded to the leader.
func (c *Cluster) CommitACL(ctx context.Context, op acl.Op) error {
	data, err := EncodeACL(op)
	if err != nil {
		return err
	}
	return c.commitOrForward(ctx, data, MigrateRequest{Op: MigrateACL, ACL: data}, "ACL")
}

// commitOrForward commits a control-plane entry on the leader, or forwards
// it there (fwd names it) and waits until this node's fold applied it.
// While there is no leader, or the node asked is no longer the leader, it
// asks again until ctx ends (commitRetryable): an ACL change or a follow
// cursor sent during an election failed at once before.
func (c *Cluster) commitOrForward(ctx context.Context, data []byte, fwd MigrateRequest, what string) error {
	for {
		err := c.commitOrForwardOnce(ctx, data, fwd, what)
		if !commitRetryable(err) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(c.t.RaftHeartbeat / 2): // an election's pace
		}
	}
}

// commitRetryable reports whether a control-plane commit that failed with
// err may be sent again: only when it was refused before it reached the
// log — no leader known, or a node that was no longer the leader checked
// before appending (ErrNotLeader, also as a forwarded refusal's message).
// Anything else may have been appended (raft's ErrLeadershipLost: the
// entry can still commit) or is the change's own refusal: sending it
// again could apply it twice or never succeed.
func commitRetryable(err error) bool {
	return err != nil && errors.Is(err, ErrNotLeader)
}

func (c *Cluster) commitOrForwardOnce(ctx context.Context, data []byte, fwd MigrateRequest, what string) error {
	if !c.IsLeader() {
		leader := c.Leader()
		info, ok := c.leaderInfo(leader)
		if !ok {
			return fmt.Errorf("%w (no leader known yet)", ErrNotLeader)
		}
		rep, err := c.mux.migrateRequest(ctx, c.peerAddr(info), fwd)
		if err != nil {
			return err
		}
		if !rep.OK {
			if strings.Contains(rep.Message, ErrNotLeader.Error()) {
				// Checked on the node before its log took the entry.
				return fmt.Errorf("%w: %s asked %s, which is no longer the leader: %s", ErrNotLeader, what, leader, rep.Message)
			}
			return fmt.Errorf("cluster: %s change refused by the leader %s: %s", what, leader, rep.Message)
		}
		return c.waitFolded(ctx, rep.Index)
	}
	_, err := c.applyIndexed(ctx, data)
	return err
}

// leaderInfo finds the leader's address in the map or the members.
func (c *Cluster) leaderInfo(leader NodeID) (NodeInfo, bool) {
	if leader == "" {
		return NodeInfo{}, false
	}
	if m := c.Map(); m != nil {
		if info, ok := m.Node(leader); ok {
			return info, true
		}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, mv := range c.members {
		if mv.Info.ID == leader {
			return mv.Info, true
		}
	}
	return NodeInfo{}, false
}

// applyIndexed commits data on the leader and returns its log index.
func (c *Cluster) applyIndexed(ctx context.Context, data []byte) (uint64, error) {
	// Atomic: when ctx ends first, do returns while the control loop may
	// still run fn and store the index.
	var idx atomic.Uint64
	err := c.do(ctx, func() error {
		if !c.IsLeader() {
			return fmt.Errorf("%w (leader: %q)", ErrNotLeader, c.Leader())
		}
		f := c.raft.Apply(data, c.t.RaftHeartbeat*5)
		if err := f.Error(); err != nil {
			return err
		}
		if err, ok := f.Response().(error); ok && err != nil {
			return err
		}
		idx.Store(f.Index())
		return nil
	})
	return idx.Load(), err
}

// waitFolded waits until this node's fold consumed log index idx.
func (c *Cluster) waitFolded(ctx context.Context, idx uint64) error {
	for c.fsm.index.Load() < idx {
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: the ACL change is committed but not applied here yet: %w", ctx.Err())
		case <-c.stop:
			return fmt.Errorf("cluster: stopped")
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// answerACL serves a follower's forwarded ACL change on the leader.
func (c *Cluster) answerACL(q MigrateRequest) MigrateReply {
	ctx, cancel := context.WithTimeout(context.Background(), 5*c.t.RaftHeartbeat)
	defer cancel()
	if _, err := DecodeACL(q.ACL); err != nil {
		return MigrateReply{Reason: "refused", Message: err.Error()}
	}
	idx, err := c.applyIndexed(ctx, q.ACL)
	if err != nil {
		return MigrateReply{Reason: "refused", Message: err.Error(), Leader: c.Leader()}
	}
	return MigrateReply{OK: true, Index: idx}
}

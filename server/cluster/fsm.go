package cluster

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/zaris-io/zaris/internal/acl"
	"github.com/zaris-io/zaris/internal/mpsafe"
)

// fsm is the raft state machine: the fold of the control-plane log. Raft
// calls Apply, Snapshot and Restore from its FSM goroutine; readers take
// the map under mu. Every change is signalled on changed (capacity 1: a
// reader that missed several signals reads the latest map once).
type fsm struct {
	store, clusterID string

	mu      sync.RWMutex  // guards cur, evicted and draining
	cur     *PartitionMap // never mutated once published
	evicted []NodeID      // evicted node ids, sorted; replaced, never mutated
	// draining: nodes an operator decommissions (R-MIG-1) — every leader
	// moves their partitions away live, then they leave. Sorted; replaced,
	// never mutated.
	draining []NodeID
	// target: the rebalance in progress (nil: none).
	target  *RebalanceTarget
	changed chan struct{}
	// index is the last log index Apply consumed (raft hands it command
	// entries only): with the last snapshot's index it says how far the
	// fold got (Reconfirm).
	index atomic.Uint64
	// users is the folded user set (EntryACL), published to aclReg; nil
	// when the node enforces no users. aclTouched: the log changed them
	// (only then do snapshots carry them). Guarded by mu.
	users      *acl.Set
	aclReg     *acl.Registry
	aclTouched bool
	// follow is the folded follow state (EntryFollow, follow.go); written
	// under mu, read lock-free.
	follow atomic.Pointer[FollowState]
}

func newFSM(store, clusterID string) *fsm {
	return &fsm{store: store, clusterID: clusterID, changed: make(chan struct{}, 1)}
}

// Map is the folded map (nil before the first commit). Callers must not
// modify it.
func (f *fsm) Map() *PartitionMap {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.cur
}

// Evicted is the set of evicted node ids (callers must not modify it).
func (f *fsm) Evicted() []NodeID {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.evicted
}

// Target is the rebalance in progress (nil: none; callers must not modify it).
func (f *fsm) Target() *RebalanceTarget {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.target
}

// Draining is the set of nodes being drained (callers must not modify it).
func (f *fsm) Draining() []NodeID {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.draining
}

func (f *fsm) drain(id NodeID) {
	f.mu.Lock()
	if !slices.Contains(f.draining, id) {
		next := append(slices.Clone(f.draining), id)
		slices.Sort(next)
		f.draining = next
	}
	f.mu.Unlock()
	f.signal()
}

func (f *fsm) evict(id NodeID) {
	f.mu.Lock()
	if !slices.Contains(f.evicted, id) {
		next := append(slices.Clone(f.evicted), id)
		slices.Sort(next)
		f.evicted = next
	}
	f.mu.Unlock()
	f.signal()
}

func (f *fsm) signal() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func (f *fsm) set(m *PartitionMap) {
	f.mu.Lock()
	f.cur = m
	f.mu.Unlock()
	f.signal()
}

// Apply folds one committed entry. The response is nil or the error that
// refused the entry (the leader's Apply future returns it); a refused
// entry leaves the state unchanged on every node alike.
func (f *fsm) Apply(l *raft.Log) any {
	defer f.index.Store(l.Index) // after the fold: an index read implies its map
	if l.Type != raft.LogCommand {
		return nil
	}
	if len(l.Data) > 0 && EntryType(l.Data[0]) == EntryEvict {
		id, err := DecodeEvict(l.Data)
		if err != nil {
			return err
		}
		f.evict(id)
		return nil
	}
	if len(l.Data) > 0 && EntryType(l.Data[0]) == EntryRebalance {
		t, err := DecodeRebalance(l.Data)
		if err != nil {
			return err
		}
		f.mu.Lock()
		f.target = nil
		if len(t.Groups) > 0 {
			f.target = &t
		}
		f.mu.Unlock()
		return nil
	}
	if len(l.Data) > 0 && EntryType(l.Data[0]) == EntryACL {
		return f.applyACL(l.Data)
	}
	if len(l.Data) > 0 && EntryType(l.Data[0]) == EntryFollow {
		return f.applyFollow(l.Data, l.Index)
	}
	if len(l.Data) > 0 && EntryType(l.Data[0]) == EntryDrain {
		id, err := DecodeDrain(l.Data)
		if err != nil {
			return err
		}
		f.drain(id)
		return nil
	}
	next, err := FoldEntry(f.Map(), l.Data, l.Term, f.store, f.clusterID)
	if err != nil {
		return err
	}
	f.set(next)
	return nil
}

func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var users []acl.Op
	if f.aclTouched && f.users != nil {
		users = f.users.Lines()
	}
	return mapSnapshot{m: f.cur, evicted: f.evicted, draining: f.draining, target: f.target, users: users, follow: f.follow.Load()}, nil
}

// snapshotV2 marks a snapshot holding fsmState; an older snapshot is the
// bare msgpack map (which never starts with a positive fixint).
const snapshotV2 = 0x02

type fsmState struct {
	Map      *PartitionMap    `msgpack:"m"`
	Evicted  []NodeID         `msgpack:"ev,omitempty"`
	Draining []NodeID         `msgpack:"dr,omitempty"`
	Target   *RebalanceTarget `msgpack:"rt,omitempty"`
	ACL      []acl.Op         `msgpack:"acl,omitempty"`
	Follow   *FollowState     `msgpack:"fw,omitempty"`
}

// maxFSMSnapshot bounds the cluster metadata snapshot Restore reads (the
// map, the ACL, the follow state: kilobytes in practice).
const maxFSMSnapshot = 256 << 20

// Restore replaces the state with a snapshot: this node's own, or one the
// raft leader sent. It is read whole (up to maxFSMSnapshot) and checked by
// mpsafe before it is decoded: a stream decoder allocates towards whatever
// length the bytes announce (D76).
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	raw, err := io.ReadAll(io.LimitReader(rc, maxFSMSnapshot+1))
	if err != nil {
		return err
	}
	if len(raw) > maxFSMSnapshot {
		return fmt.Errorf("cluster: metadata snapshot larger than %d bytes", maxFSMSnapshot)
	}
	var st fsmState
	if len(raw) > 0 && raw[0] == snapshotV2 {
		if err := mpsafe.Unmarshal(raw[1:], &st); err != nil {
			return err
		}
	} else if err := mpsafe.Unmarshal(raw, &st.Map); err != nil {
		return err
	}
	ev := slices.Clone(st.Evicted)
	slices.Sort(ev)
	dr := slices.Clone(st.Draining)
	slices.Sort(dr)
	var users *acl.Set
	if len(st.ACL) > 0 {
		u, err := acl.FromLines(st.ACL)
		if err != nil {
			return err
		}
		users = u
	}
	f.mu.Lock()
	f.cur, f.evicted, f.draining, f.target = st.Map, slices.Compact(ev), slices.Compact(dr), st.Target
	if users != nil && f.aclReg != nil {
		f.users, f.aclTouched = users, true
		f.aclReg.Publish(users)
	}
	f.follow.Store(st.Follow)
	f.mu.Unlock()
	f.signal()
	return nil
}

type mapSnapshot struct {
	m        *PartitionMap
	evicted  []NodeID
	draining []NodeID
	target   *RebalanceTarget
	users    []acl.Op
	follow   *FollowState
}

func (s mapSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write([]byte{snapshotV2}); err != nil {
		_ = sink.Cancel()
		return err
	}
	if err := msgpack.NewEncoder(sink).Encode(&fsmState{Map: s.m, Evicted: s.evicted, Draining: s.draining, Target: s.target, ACL: s.users, Follow: s.follow}); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (mapSnapshot) Release() {}

package cluster

import (
	"io"
	"sync"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"
)

// fsm is the raft state machine: the fold of the control-plane log. Raft
// calls Apply, Snapshot and Restore from its FSM goroutine; readers take
// the map under mu. Every change is signalled on changed (capacity 1: a
// reader that missed several signals reads the latest map once).
type fsm struct {
	store, clusterID string

	mu      sync.RWMutex  // guards cur
	cur     *PartitionMap // never mutated once published
	changed chan struct{}
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

func (f *fsm) set(m *PartitionMap) {
	f.mu.Lock()
	f.cur = m
	f.mu.Unlock()
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// Apply folds one committed entry. The response is nil or the error that
// refused the entry (the leader's Apply future returns it); a refused
// entry leaves the state unchanged on every node alike.
func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
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
	return mapSnapshot{m: f.Map()}, nil
}

func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var m *PartitionMap
	if err := msgpack.NewDecoder(rc).Decode(&m); err != nil {
		return err
	}
	f.set(m)
	return nil
}

type mapSnapshot struct{ m *PartitionMap }

func (s mapSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := msgpack.NewEncoder(sink).Encode(s.m); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (mapSnapshot) Release() {}

package cluster

import (
	"errors"
	"fmt"
	"slices"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zaris-io/zaris/internal/mpsafe"

	"github.com/zaris-io/zaris/server/cluster/failover"
)

// The control-plane log (R-CLU-3, DESIGN "Cluster"): the partition map and
// runtime ownership are entries of one raft log; the map a node serves is
// the fold of that log. Two entry kinds exist:
//
//	MapCommit        a whole new map, applied only through AcceptMap
//	                 (strictly newer, same store and cluster, valid)
//	OwnershipChange  one partition's active owner moves (failover); the
//	                 generation grows, the epoch never regresses
//
// The fold functions are pure: the same log gives the same map on every
// node. LeaderTerm is stamped from the raft term of the entry, so it is
// exactly the term of the leader that wrote it.

// EntryType is the first byte of an encoded entry.
type EntryType uint8

const (
	EntryMapCommit       EntryType = 1
	EntryOwnershipChange EntryType = 2
	// EntryEvict records an operator's eviction of one node (R-CLU-2): the
	// map does not change, the FSM adds the id to its evicted set, which
	// every node's tracker turns into SignalEvict (so every future leader
	// honours it).
	EntryEvict EntryType = 3
	// EntryDrain records an operator's decommission of one node (R-MIG-1):
	// the map does not change; every leader moves the node's partitions
	// away live, and the node leaves once it holds nothing.
	EntryDrain EntryType = 4
	// EntryRebalance records the layout a rebalance walks towards (or its
	// end: no groups), so that a new leader finishes a rebalance its
	// predecessor started instead of stopping half-way.
	EntryRebalance EntryType = 5
)

// RebalanceTarget is the payload of an EntryRebalance entry.
type RebalanceTarget struct {
	// Members is the key of the member set the target was planned over.
	Members string `msgpack:"m"`
	Reason  string `msgpack:"r,omitempty"`
	// Groups is the wanted group of every segment; nil ends the rebalance.
	Groups []SegmentGroup `msgpack:"g,omitempty"`
}

// EncodeRebalance encodes an EntryRebalance entry.
func EncodeRebalance(t RebalanceTarget) ([]byte, error) {
	b, err := msgpack.Marshal(&t)
	if err != nil {
		return nil, fmt.Errorf("cluster: encoding rebalance target: %w", err)
	}
	return append([]byte{byte(EntryRebalance)}, b...), nil
}

// DecodeRebalance decodes an EntryRebalance entry (data includes the type byte).
func DecodeRebalance(data []byte) (RebalanceTarget, error) {
	var t RebalanceTarget
	if len(data) == 0 || EntryType(data[0]) != EntryRebalance {
		return t, fmt.Errorf("%w: not a rebalance target", ErrBadEntry)
	}
	if err := mpsafe.Unmarshal(data[1:], &t); err != nil {
		return t, fmt.Errorf("%w: rebalance target: %v", ErrBadEntry, err)
	}
	return t, nil
}

// EncodeDrain encodes an EntryDrain entry.
func EncodeDrain(id NodeID) ([]byte, error) {
	b, err := msgpack.Marshal(&Eviction{Node: id})
	if err != nil {
		return nil, fmt.Errorf("cluster: encoding drain: %w", err)
	}
	return append([]byte{byte(EntryDrain)}, b...), nil
}

// DecodeDrain decodes an EntryDrain entry (data includes the type byte).
func DecodeDrain(data []byte) (NodeID, error) {
	if len(data) == 0 || EntryType(data[0]) != EntryDrain {
		return "", fmt.Errorf("%w: not a drain", ErrBadEntry)
	}
	var ev Eviction
	if err := mpsafe.Unmarshal(data[1:], &ev); err != nil {
		return "", fmt.Errorf("%w: drain: %v", ErrBadEntry, err)
	}
	if ev.Node == "" {
		return "", fmt.Errorf("%w: drain of an empty node id", ErrBadEntry)
	}
	return ev.Node, nil
}

// Eviction is the payload of an EntryEvict entry.
type Eviction struct {
	Node NodeID `msgpack:"n"`
}

// EncodeEvict encodes an EntryEvict entry.
func EncodeEvict(id NodeID) ([]byte, error) {
	b, err := msgpack.Marshal(&Eviction{Node: id})
	if err != nil {
		return nil, fmt.Errorf("cluster: encoding eviction: %w", err)
	}
	return append([]byte{byte(EntryEvict)}, b...), nil
}

// DecodeEvict decodes an EntryEvict entry (data includes the type byte).
func DecodeEvict(data []byte) (NodeID, error) {
	if len(data) == 0 || EntryType(data[0]) != EntryEvict {
		return "", fmt.Errorf("%w: not an eviction", ErrBadEntry)
	}
	var ev Eviction
	if err := mpsafe.Unmarshal(data[1:], &ev); err != nil {
		return "", fmt.Errorf("%w: eviction: %v", ErrBadEntry, err)
	}
	if ev.Node == "" {
		return "", fmt.Errorf("%w: eviction of an empty node id", ErrBadEntry)
	}
	return ev.Node, nil
}

// OwnershipChange moves the active owner of one partition (R-REP-3/4), or
// changes its runtime health with the owner in place (R-REP-7).
type OwnershipChange struct {
	Partition int `msgpack:"p"`
	// Identity is the identity of the partition the change was decided
	// for ("" from an older leader: not checked). The failover loop decides
	// on the map of its sweep; a split or a merge committed meanwhile
	// renumbers the partitions, and the index alone would land the change
	// on another one.
	Identity string `msgpack:"id,omitempty"`
	Owner    NodeID `msgpack:"o"`
	// Generation must exceed the partition's current generation when the
	// owner moves; a health change keeps the owner's generation (its lease
	// and its replicas' history stay).
	Generation uint64 `msgpack:"g"`
	// Epoch must not be below the partition's current epoch, and must be
	// above it for a health change with the owner in place.
	Epoch uint64 `msgpack:"e"`
	Term  uint64 `msgpack:"t"` // the raft term of the leader that decided it
	// Health and Demoted replace the partition's (0 = Healthy).
	Health  failover.Health `msgpack:"h,omitempty"`
	Demoted []NodeID        `msgpack:"d,omitempty"`
	// Source: the copy a Recovering owner syncs from ("" otherwise).
	Source NodeID `msgpack:"s,omitempty"`
}

// ErrBadEntry: an entry that does not decode.
var ErrBadEntry = errors.New("cluster: malformed control-plane entry")

// ErrRejectedChange: an ownership change the fold refuses.
var ErrRejectedChange = errors.New("cluster: ownership change rejected")

// EncodeMapCommit encodes a MapCommit entry.
func EncodeMapCommit(m *PartitionMap) ([]byte, error) {
	b, err := msgpack.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("cluster: encoding map: %w", err)
	}
	return append([]byte{byte(EntryMapCommit)}, b...), nil
}

// EncodeOwnershipChange encodes an OwnershipChange entry.
func EncodeOwnershipChange(oc OwnershipChange) ([]byte, error) {
	b, err := msgpack.Marshal(&oc)
	if err != nil {
		return nil, fmt.Errorf("cluster: encoding ownership change: %w", err)
	}
	return append([]byte{byte(EntryOwnershipChange)}, b...), nil
}

// FoldEntry applies one encoded entry, written at raft term term, to the
// current map and returns the next map. On error the current map stands.
func FoldEntry(cur *PartitionMap, data []byte, term uint64, store, clusterID string) (*PartitionMap, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrBadEntry)
	}
	switch EntryType(data[0]) {
	case EntryMapCommit:
		var m PartitionMap
		if err := mpsafe.Unmarshal(data[1:], &m); err != nil {
			return nil, fmt.Errorf("%w: map commit: %v", ErrBadEntry, err)
		}
		return FoldMapCommit(cur, &m, term, store, clusterID)
	case EntryOwnershipChange:
		var oc OwnershipChange
		if err := mpsafe.Unmarshal(data[1:], &oc); err != nil {
			return nil, fmt.Errorf("%w: ownership change: %v", ErrBadEntry, err)
		}
		return FoldOwnership(cur, oc, term)
	case EntryEvict:
		if _, err := DecodeEvict(data); err != nil {
			return nil, err
		}
		return cur, nil // the map stands; the FSM keeps the evicted set
	case EntryDrain:
		if _, err := DecodeDrain(data); err != nil {
			return nil, err
		}
		return cur, nil // the map stands; the FSM keeps the draining set
	case EntryRebalance:
		if _, err := DecodeRebalance(data); err != nil {
			return nil, err
		}
		return cur, nil // the map stands; the FSM keeps the target
	}
	return nil, fmt.Errorf("%w: unknown entry type %d", ErrBadEntry, data[0])
}

// FoldMapCommit applies a committed map: only through AcceptMap. A
// partition keeps its ownership lease (generation, term) when its active
// owner did not change; a new or moved owner gets the next generation and
// the entry's term. Epochs never regress.
func FoldMapCommit(cur, in *PartitionMap, term uint64, store, clusterID string) (*PartitionMap, error) {
	if err := AcceptMap(cur, in, store, clusterID); err != nil {
		return nil, err
	}
	next := in.Clone()
	for i := range next.Partitions {
		p := &next.Partitions[i]
		var prev *Partition
		if cur != nil {
			for j := range cur.Partitions {
				if cur.Partitions[j].Identity == p.Identity {
					prev = &cur.Partitions[j]
					break
				}
			}
		}
		switch {
		case prev == nil:
			p.OwnershipGeneration, p.LeaderTerm = max(p.OwnershipGeneration, 1), term
		case prev.ActiveOwner == p.ActiveOwner:
			if p.OwnershipGeneration <= prev.OwnershipGeneration {
				p.OwnershipGeneration, p.LeaderTerm = prev.OwnershipGeneration, prev.LeaderTerm
			} else {
				p.LeaderTerm = term
			}
			p.Epoch = max(p.Epoch, prev.Epoch)
		default:
			p.OwnershipGeneration = max(p.OwnershipGeneration, prev.OwnershipGeneration+1)
			p.LeaderTerm = term
			p.Epoch = max(p.Epoch, prev.Epoch)
		}
	}
	return next, nil
}

// FoldOwnership applies a runtime ownership move: the map's layout stays,
// its Version grows (clients must re-route), TopologyVersion does not.
func FoldOwnership(cur *PartitionMap, oc OwnershipChange, term uint64) (*PartitionMap, error) {
	reject := func(format string, args ...any) (*PartitionMap, error) {
		return nil, fmt.Errorf("%w: partition %d: %s", ErrRejectedChange, oc.Partition, fmt.Sprintf(format, args...))
	}
	switch {
	case cur == nil:
		return reject("no map committed yet")
	case oc.Partition < 0 || oc.Partition >= len(cur.Partitions):
		return reject("no such partition (map has %d)", len(cur.Partitions))
	case oc.Term != term:
		return reject("decided at term %d, written at term %d (a deposed leader's decision)", oc.Term, term)
	}
	if _, ok := cur.Node(oc.Owner); !ok {
		return reject("owner %q is not a member of map version %d", oc.Owner, cur.Version)
	}
	p := cur.Partitions[oc.Partition]
	inPlace := oc.Owner == p.ActiveOwner && oc.Generation == p.OwnershipGeneration
	switch {
	case oc.Identity != "" && oc.Identity != p.Identity:
		// Pieces of one split share owner, generation and epoch: the
		// other checks would let a health change, a demotion or a sync
		// source decided for one piece land on its neighbour.
		return reject("decided for partition %s, the map (version %d) has %s at that index (a split or merge renumbered them)",
			oc.Identity, cur.Version, p.Identity)
	case oc.Epoch < p.Epoch:
		return reject("epoch %d below %d (epochs never regress)", oc.Epoch, p.Epoch)
	case inPlace && oc.Epoch == p.Epoch:
		return reject("a change in place at epoch %d, not above the current (a replayed change)", oc.Epoch)
	case !inPlace && oc.Generation <= p.OwnershipGeneration:
		return reject("generation %d not above %d", oc.Generation, p.OwnershipGeneration)
	case oc.Owner != p.ActiveOwner && !slices.Contains(p.Established(), oc.Owner):
		// A promotion is decided on the map of its sweep; a move's flip
		// committed meanwhile may have taken the candidate out of the
		// group (it drops its copy on that map): promoted now, it would
		// serve the partition empty.
		return reject("%q holds no established copy in map version %d (a promotion decided on an older map)", oc.Owner, cur.Version)
	}
	next := cur.Clone()
	np := &next.Partitions[oc.Partition]
	np.ActiveOwner, np.OwnershipGeneration, np.Epoch, np.LeaderTerm = oc.Owner, oc.Generation, oc.Epoch, term
	np.Health, np.Source = oc.Health, ""
	if oc.Health == failover.Recovering {
		np.Source = oc.Source
	}
	np.Demoted = nil
	for _, id := range oc.Demoted {
		if id != oc.Owner && !slices.Contains(np.Demoted, id) {
			np.Demoted = append(np.Demoted, id)
		}
	}
	next.Version++
	return next, nil
}

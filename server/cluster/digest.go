package cluster

import (
	"slices"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zaris-io/zaris/internal/mpsafe"
)

// Digest is what every node gossips on the memberlist heartbeat (R-CLU-6):
// its view of the control plane, small enough to ride along with the
// failure detector's own traffic.
type Digest struct {
	Node        NodeID   `msgpack:"n"`
	Epoch       uint64   `msgpack:"e"` // the highest partition epoch of its map
	Leader      NodeID   `msgpack:"l"`
	Term        uint64   `msgpack:"t"`
	MapVersion  uint64   `msgpack:"v"`
	NodeCount   int      `msgpack:"c"`
	Generations []uint64 `msgpack:"g"` // per partition, in partition order
}

// DigestOf describes a node's view: its map (nil = none) and its leader.
func DigestOf(self NodeID, m *PartitionMap, leader NodeID, term uint64) Digest {
	d := Digest{Node: self, Leader: leader, Term: term}
	if m != nil {
		d.MapVersion, d.NodeCount = m.Version, len(m.Nodes)
		d.Generations = make([]uint64, len(m.Partitions))
		for i, p := range m.Partitions {
			d.Generations[i] = p.OwnershipGeneration
			d.Epoch = max(d.Epoch, p.Epoch)
		}
	}
	return d
}

// sameView compares what must agree across the cluster (not the sender).
func sameView(a, b Digest) bool {
	return a.Epoch == b.Epoch && a.Leader == b.Leader && a.Term == b.Term && a.MapVersion == b.MapVersion &&
		a.NodeCount == b.NodeCount && slices.Equal(a.Generations, b.Generations)
}

// DriftCycles is how many evaluation cycles in a row a node must differ
// from the majority before it repairs (R-CLU-6): one cycle is the normal
// lag of a commit reaching every node.
const DriftCycles = 2

// DetectDrift is the drift detector, pure. self is this node's digest,
// peers the latest digest of every other member (fresh ones only), streak
// the number of consecutive cycles this node already differed. It returns
// the new streak and whether to repair now (refetch the map). With no
// strict majority view there is nothing to converge to, and no drift.
func DetectDrift(self Digest, peers []Digest, streak int) (int, bool) {
	all := append([]Digest{self}, peers...)
	var (
		best  Digest
		count int
	)
	for i, d := range all {
		n := 0
		for _, e := range all {
			if sameView(d, e) {
				n++
			}
		}
		if n > count || i == 0 && n == count {
			best, count = d, n
		}
	}
	if 2*count <= len(all) || sameView(self, best) {
		return 0, false
	}
	streak++
	if streak >= DriftCycles {
		return 0, true
	}
	return streak, false
}

// digest messages on the gossip channel start with this byte.
const msgDigest byte = 'D'

func encodeDigest(d Digest) []byte {
	b, err := msgpack.Marshal(&d)
	if err != nil {
		return nil
	}
	return append([]byte{msgDigest}, b...)
}

func decodeDigest(b []byte) (Digest, bool) {
	var d Digest
	if len(b) < 2 || b[0] != msgDigest {
		return d, false
	}
	if err := mpsafe.Unmarshal(b[1:], &d); err != nil || d.Node == "" {
		return d, false
	}
	return d, true
}

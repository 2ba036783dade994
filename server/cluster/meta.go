package cluster

import (
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zaris-io/zaris/internal/mpsafe"
)

// Meta is what a node gossips about itself in its memberlist metadata: how
// to reach it, and which store and cluster it belongs to. A node of another
// store or cluster is refused before it becomes a peer.
type Meta struct {
	Info    NodeInfo `msgpack:"i"` // GossipPort is taken from memberlist's own address
	Store   string   `msgpack:"s"`
	Cluster string   `msgpack:"c"`
	Proto   uint8    `msgpack:"p"` // control-plane protocol version
	// Leaving: the node is decommissioning (its leave follows): peers mark
	// it Decommissioned instead of waiting out a failure's grace window.
	Leaving bool `msgpack:"l,omitempty"`
}

// MetaProto is this build's control-plane protocol version.
const MetaProto = 1

// ErrForeignNode: a node of another store or cluster, or with unreadable
// metadata, tried to join.
var ErrForeignNode = errors.New("cluster: refused a node of another store or cluster")

// EncodeMeta encodes m for memberlist (limit bytes at most).
func EncodeMeta(m Meta, limit int) ([]byte, error) {
	b, err := msgpack.Marshal(&m)
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("cluster: node metadata of %d bytes exceeds memberlist's %d", len(b), limit)
	}
	return b, nil
}

// DecodeMeta decodes a peer's metadata.
func DecodeMeta(b []byte) (Meta, error) {
	var m Meta
	if len(b) == 0 {
		return m, errors.New("no metadata")
	}
	err := mpsafe.Unmarshal(b, &m)
	return m, err
}

// CheckPeer decides whether a peer with metadata raw (named name by
// memberlist) may be a member of self's cluster. Pure: the memberlist
// delegates refuse the merge or the alive message when it errs.
func CheckPeer(self Meta, name string, raw []byte) (Meta, error) {
	m, err := DecodeMeta(raw)
	switch {
	case err != nil:
		return m, fmt.Errorf("%w: node %q: unreadable metadata (%v)", ErrForeignNode, name, err)
	case m.Store != self.Store:
		return m, fmt.Errorf("%w: node %q serves store %q, this cluster serves %q", ErrForeignNode, name, m.Store, self.Store)
	case m.Cluster != self.Cluster:
		return m, fmt.Errorf("%w: node %q is in cluster %q, this is cluster %q", ErrForeignNode, name, m.Cluster, self.Cluster)
	case string(m.Info.ID) != name:
		return m, fmt.Errorf("%w: node %q announces id %q", ErrForeignNode, name, m.Info.ID)
	case m.Proto != self.Proto:
		return m, fmt.Errorf("%w: node %q speaks control-plane protocol %d, this node %d", ErrForeignNode, name, m.Proto, self.Proto)
	}
	return m, nil
}

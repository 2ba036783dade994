package sdk

// The routing table (R-CLIENT-2) and the retry rule (R-CLIENT-3) of the
// cluster client. Both are pure: a table is built from a wire.RoutingMap and
// never changes afterwards, and retryDecision maps the outcome of one attempt
// to what happens next. The cluster backend (cluster.go) does the I/O: it
// swaps tables atomically and acts on the decisions.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/wire"
)

// node is one cluster member as the client reaches it: one multiplexed
// connection (remoteBackend: dialled on first use, re-dialled with backoff).
// A node outlives the tables that share it: a new table reuses the node of
// the same id at the same address, so a map change never re-dials a node
// that stays.
type node struct {
	id   string
	addr string // host:port of its native listener
	be   *remoteBackend
}

// routingTable is one immutable view of the cluster. Routing a key is one
// placement call and one index into seg; no lock, no map lookup.
type routingTable struct {
	version uint64
	total   int              // segments of the placement function
	nodes   []*node          // every node of the map, in map order
	seg     []*node          // seg[s] is the owner of segment s; nil = unowned
	owners  []*node          // the nodes that own at least one segment, in map order
	byID    map[string]*node // nodes by id
}

// route returns the owner of key's segment (nil while it has none).
func (t *routingTable) route(key string) *node {
	return t.seg[placement.SegmentOf(key, t.total)]
}

// segmentsOf counts the segments n owns.
func (t *routingTable) segmentsOf(n *node) int {
	c := 0
	for _, o := range t.seg {
		if o == n {
			c++
		}
	}
	return c
}

// sameOwners reports whether every segment has the same owner (the same
// node, at the same address) in both tables.
func sameOwners(a, b *routingTable) bool {
	if a.total != b.total {
		return false
	}
	for s := range a.seg {
		if a.seg[s] != b.seg[s] {
			return false
		}
	}
	return true
}

// buildTable builds the table of m. prev (nil at bootstrap) lends the nodes
// that stay (same id, same address); newNode makes the others. retired are
// prev's nodes the new table no longer uses. from is the endpoint the map
// came from: a node whose host is unspecified ("", 0.0.0.0, ::) is taken to
// share that endpoint's host (a node bound to every interface).
func buildTable(m *wire.RoutingMap, from string, prev *routingTable, newNode func(id, addr string) *node) (t *routingTable, retired []*node, err error) {
	if m.TotalSegments < 1 || m.TotalSegments > wire.MaxRoutingSegments {
		return nil, nil, fmt.Errorf("zaris: routing map %d has %d segments (want 1..%d)", m.Version, m.TotalSegments, wire.MaxRoutingSegments)
	}
	if len(m.Nodes) == 0 {
		return nil, nil, fmt.Errorf("zaris: routing map %d has no node", m.Version)
	}
	if len(m.SegmentOwner) != m.TotalSegments {
		return nil, nil, fmt.Errorf("zaris: routing map %d has %d segment owners for %d segments", m.Version, len(m.SegmentOwner), m.TotalSegments)
	}
	t = &routingTable{version: m.Version, total: m.TotalSegments,
		nodes: make([]*node, len(m.Nodes)), seg: make([]*node, m.TotalSegments), byID: make(map[string]*node, len(m.Nodes))}
	fromHost, _, _ := net.SplitHostPort(from)
	kept := map[*node]bool{}
	for i, rn := range m.Nodes {
		if rn.ID == "" {
			return nil, nil, fmt.Errorf("zaris: routing map %d: node %d has no id", m.Version, i)
		}
		if _, dup := t.byID[rn.ID]; dup {
			return nil, nil, fmt.Errorf("zaris: routing map %d: node id %q twice", m.Version, rn.ID)
		}
		if rn.ClientPort < 1 || rn.ClientPort > 65535 {
			return nil, nil, fmt.Errorf("zaris: routing map %d: node %q has client port %d", m.Version, rn.ID, rn.ClientPort)
		}
		host := rn.Host
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = fromHost
		}
		addr := net.JoinHostPort(host, fmt.Sprint(rn.ClientPort))
		var n *node
		if prev != nil {
			if p := prev.byID[rn.ID]; p != nil && p.addr == addr {
				n = p
				kept[p] = true
			}
		}
		if n == nil {
			n = newNode(rn.ID, addr)
		}
		t.nodes[i], t.byID[rn.ID] = n, n
	}
	owns := make([]bool, len(t.nodes))
	for s, o := range m.SegmentOwner {
		if o < -1 || int(o) >= len(t.nodes) {
			return nil, nil, fmt.Errorf("zaris: routing map %d: segment %d owner %d out of range", m.Version, s, o)
		}
		if o >= 0 {
			t.seg[s] = t.nodes[o]
			owns[o] = true
		}
	}
	for i, n := range t.nodes {
		if owns[i] {
			t.owners = append(t.owners, n)
		}
	}
	if prev != nil {
		for _, p := range prev.nodes {
			if !kept[p] {
				retired = append(retired, p)
			}
		}
	}
	return t, retired, nil
}

// --- retries ---

// retryAction is what follows one attempt of an operation.
type retryAction uint8

const (
	retryNo        retryAction = iota // the answer is final
	retryRedirect                     // the map is wrong: refresh it and retry at once
	retryTransient                    // transport trouble: back off, then retry
	// retryRefused: every address of the owner refused the connection — it
	// is down, not slow. Worth a retry only where something can take its
	// partitions over (clusterBackend.again decides).
	retryRefused
)

// retryDecision is the one function that decides what is retryable (STYLE 7,
// 11). A redirect status (Moved, OwnershipChanging, Migrating,
// ReplicaSyncPending, ReplicaWriteRejected, Unavailable: kv.Status.Redirect)
// means the owner refused the operation because the client's map is wrong:
// nothing was applied, so any operation retries after a refresh. A transport
// failure before the request left this process retries after a backoff
// (unless every address of the owner refused the connection: retryRefused); one
// after it may have reached the server retries only an idempotent operation
// (a read), never a write that could apply twice. Context ends, a closed
// client and a refused handshake are final.
func retryDecision(status kv.Status, err error, idempotent bool) retryAction {
	if err == nil {
		if status.Redirect() {
			return retryRedirect
		}
		return retryNo
	}
	var he *HandshakeError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, ErrClosed), errors.As(err, &he):
		return retryNo
	case errors.Is(err, errNoOwner):
		return retryRedirect
	case errors.Is(err, errRefused):
		return retryRefused // never sent: a connection was never made
	case wasNotSent(err):
		return retryTransient
	case idempotent && errors.Is(err, ErrUnreachable):
		return retryTransient
	}
	return retryNo
}

// Retry pacing: the backoff of transient failures (and of redirects whose
// refresh found no newer map), doubling from retryMinDelay.
const (
	retryMinDelay = 5 * time.Millisecond
	retryMaxDelay = 500 * time.Millisecond
)

// retryState counts the attempts of one operation and paces its backoff.
type retryState struct {
	attempts int
	delay    time.Duration
}

// nextDelay is the next backoff: doubling, capped, with jitter in the upper
// half so that clients failing together do not retry in step.
func (rs *retryState) nextDelay(jitter func(time.Duration) time.Duration) time.Duration {
	rs.delay = min(max(2*rs.delay, retryMinDelay), retryMaxDelay)
	return rs.delay/2 + jitter(rs.delay/2)
}

// sleep waits d or until ctx ends; false if ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

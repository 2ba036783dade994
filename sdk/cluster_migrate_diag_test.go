package sdk_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/server/clustertest"
)

// logRing keeps the last lines every node of a test cluster logged, so
// that a failure explains itself without re-running under ZARIS_TEST_LOG.
type logRing struct {
	mu    sync.Mutex
	lines []string
	part  []byte
	max   int
}

func newLogRing(max int) *logRing { return &logRing{max: max} }

// Write takes what a text handler writes: whole lines (a partial one is
// kept until its end arrives).
func (r *logRing) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.part = append(r.part, p...)
	for {
		i := bytes.IndexByte(r.part, '\n')
		if i < 0 {
			break
		}
		r.lines = append(r.lines, string(r.part[:i]))
		r.part = r.part[i+1:]
	}
	if over := len(r.lines) - r.max; over > 0 {
		r.lines = append(r.lines[:0], r.lines[over:]...)
	}
	return len(p), nil
}

func (r *logRing) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// lossEvents are the log lines that say where a partition's data went:
// map commits and changes, moves, failovers and health edges, copies
// dropped, restart recoveries, fences, leadership and membership.
var lossEvents = []string{
	`msg="map committed"`, `msg="rebalance`, `msg="migration complete"`, `msg="migration aborted`,
	`msg="migration flip not committed`, `msg="cut-over`, `msg="failover:`, `msg="partition health"`,
	`msg="ownership change not committed"`, `msg="replication: dropping the copy`, `msg="restart recovery: the owner`,
	`msg="replication held`, `msg="fenced:`, `msg="frozen for`, `msg="map re-confirmed`, `msg="control-plane leader"`,
	`msg="no longer the control-plane leader"`, `msg="member state"`, `msg="migration: the source's copy changed`,
	`level=ERROR`,
}

// explainLoss reports, for the keys a verification found lost, where each
// one's segment is in the current map and what every running node holds
// of it (owned, revision, records, the key itself), then the cluster's
// events from the captured logs.
func explainLoss(t *testing.T, cl *clustertest.Cluster, logs *logRing, lost []string) {
	t.Helper()
	var b strings.Builder
	m := cl.Map()
	if m == nil {
		t.Log("loss diagnosis: no map")
		return
	}
	fmt.Fprintf(&b, "loss diagnosis: map version %d\n", m.Version)
	for _, p := range m.Partitions {
		fmt.Fprintf(&b, "  p%d %d..%d %s owner=%s primary=%s replicas=%v incoming=%v moveTo=%q gen=%d epoch=%d health=%v demoted=%v source=%q\n",
			p.ID, p.FirstSegment, p.LastSegment, p.Identity, p.ActiveOwner, p.PrimaryNodeID, p.ReplicaNodeIDs, p.Incoming, p.MoveTo,
			p.OwnershipGeneration, p.Epoch, p.HealthState(), p.Demoted, p.Source)
	}
	for i, k := range lost {
		if i == 10 {
			fmt.Fprintf(&b, "  … and %d more lost keys\n", len(lost)-i)
			break
		}
		seg := int(placement.SegmentOf(k, m.TotalSegments))
		fmt.Fprintf(&b, "  %s: segment %d, partition p%d\n", k, seg, m.SegmentToPartition[seg])
		for _, nd := range cl.Running() {
			g := nd.Store().Segment(uint16(seg))
			has := false
			for _, r := range g.Snapshot().Records {
				has = has || (r.Key() == k && !r.Deleted())
			}
			fmt.Fprintf(&b, "    %s: owned=%v revision=%d records=%d holds the key=%v\n", nd.Config().NodeID, g.Owned(),
				g.Revision(), g.Len(), has)
		}
	}
	b.WriteString("  cluster events:\n")
	for _, line := range logs.snapshot() {
		for _, ev := range lossEvents {
			if strings.Contains(line, ev) {
				b.WriteString("    " + line + "\n")
				break
			}
		}
	}
	t.Log(b.String())
}

// stallEvents are the log lines that say why a rebalance does not move:
// plans, moves and their aborts, membership and leadership.
var stallEvents = append([]string{`msg="rebalance`, `msg="migration`, `msg="move`, `level=WARN`}, lossEvents...)

// explainStall reports, for a rebalance that did not move what it should,
// the leader's view (members, map, rebalance status) and the cluster's
// events from the captured logs.
func explainStall(t *testing.T, cl *clustertest.Cluster, logs *logRing) {
	t.Helper()
	var b strings.Builder
	if l := cl.Leader(); l != nil {
		st, _ := json.MarshalIndent(l.ClusterStatus(), "", " ")
		fmt.Fprintf(&b, "stall diagnosis: the leader %s's status:\n%s\n", l.Config().NodeID, st)
	} else {
		b.WriteString("stall diagnosis: no leader\n")
	}
	b.WriteString("  cluster events:\n")
	for _, line := range logs.snapshot() {
		for _, ev := range stallEvents {
			if strings.Contains(line, ev) {
				b.WriteString("    " + line + "\n")
				break
			}
		}
	}
	t.Log(b.String())
}

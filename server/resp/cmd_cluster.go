package resp

import (
	"crypto/sha1"
	"encoding/hex"
	"net"
	"strconv"
	"strings"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/wire"
)

// Cluster commands (R-RESP-2). Zaris places keys exactly like Redis
// Cluster (R-PLACE-1), so a stock cluster client routes by slot:
// CLUSTER SLOTS/SHARDS/NODES describe the committed partition map (each
// node's segments as slot ranges, at its RESP address), and a command on a
// key whose segment this node does not own — the store answers Moved —
// gets "-MOVED <slot> <owner>", which go-redis's ClusterClient and
// `redis-cli -c` follow.

func init() {
	register(&command{name: "cluster", arity: -2, group: "cluster", since: "3.0.0",
		summary: "A container for Redis Cluster commands.", subs: append([]*command{
			{name: "keyslot", arity: 3, flags: flagStale, summary: "Returns the hash slot for a key.", run: cmdClusterKeySlot},
			{name: "slots", arity: 2, flags: flagStale, summary: "Returns the mapping of cluster slots to nodes.",
				tips: []string{"nondeterministic_output"}, run: cmdClusterSlots},
			{name: "shards", arity: 2, flags: flagStale, summary: "Returns the mapping of cluster slots to shards.",
				tips: []string{"nondeterministic_output"}, run: cmdClusterShards},
			{name: "nodes", arity: 2, flags: flagStale, summary: "Returns the cluster configuration for a node.",
				tips: []string{"nondeterministic_output"}, run: cmdClusterNodes},
			{name: "info", arity: 2, flags: flagStale, summary: "Returns information about the state of a node.",
				tips: []string{"nondeterministic_output"}, run: cmdClusterInfo},
			{name: "myid", arity: 2, flags: flagStale, summary: "Returns the ID of a node.", run: cmdClusterMyID},
			{name: "countkeysinslot", arity: 3, flags: flagStale, summary: "Returns the number of keys in a hash slot.", run: cmdClusterCountKeys},
			{name: "getkeysinslot", arity: 4, flags: flagStale, summary: "Returns the key names in a hash slot.",
				tips: []string{"nondeterministic_output"}, run: cmdClusterGetKeys},
			{name: "help", arity: 2, flags: flagLoading | flagStale, summary: "Returns helpful text about the CLUSTER subcommands.", run: cmdClusterHelp},
		}, clusterRefused()...)},
		&command{name: "readonly", arity: 1, flags: flagFast | flagLoading | flagStale, group: "cluster", since: "3.0.0",
			summary: "Enables read-only queries for a connection to a Redis Cluster replica node (every node serves reads).", run: cmdOK},
		&command{name: "readwrite", arity: 1, flags: flagFast | flagLoading | flagStale, group: "cluster", since: "3.0.0",
			summary: "Enables read-write queries for a connection to a Redis Cluster replica node.", run: cmdOK},
		&command{name: "asking", arity: 1, flags: flagFast, group: "cluster", since: "3.0.0",
			summary: "Signals that a cluster client is following an -ASK redirect.", run: cmdOK},
	)
}

// clusterRefused are the CLUSTER subcommands that change a Redis Cluster's
// layout or its replication by hand: a Zaris cluster's control plane owns
// both, so each answers why it is not served (its reason in the coverage
// table, docs_coverage.go, which still counts it left out).
func clusterRefused() []*command {
	const admin = flagAdmin | flagStale
	var out []*command
	for _, r := range []struct {
		name, since string
		arity       int
		flags       cmdFlags
	}{
		{"addslots", "3.0.0", -3, admin | flagNoAsyncLoading}, {"addslotsrange", "7.0.0", -4, admin | flagNoAsyncLoading},
		{"delslots", "3.0.0", -3, admin | flagNoAsyncLoading}, {"delslotsrange", "7.0.0", -4, admin | flagNoAsyncLoading},
		{"flushslots", "3.0.0", 2, admin | flagNoAsyncLoading}, {"setslot", "3.0.0", -4, admin | flagNoAsyncLoading},
		{"meet", "4.0.0", -4, admin | flagNoAsyncLoading}, {"forget", "3.0.0", 3, admin | flagNoAsyncLoading},
		{"reset", "3.0.0", -2, admin | flagNoScript}, {"saveconfig", "3.0.0", 2, admin | flagNoAsyncLoading},
		{"set-config-epoch", "3.0.0", 3, admin | flagNoAsyncLoading}, {"bumpepoch", "3.0.0", 2, admin | flagNoAsyncLoading},
		{"failover", "3.0.0", -2, admin | flagNoAsyncLoading}, {"replicate", "3.0.0", 3, admin | flagNoAsyncLoading},
		{"replicas", "5.0.0", 3, admin}, {"slaves", "3.0.0", 3, admin},
		{"links", "7.0.0", 2, flagStale}, {"count-failure-reports", "3.0.0", 3, admin},
	} {
		reason := strings.ReplaceAll(leftOut["cluster|"+r.name], "`", "")
		out = append(out, &command{name: r.name, arity: r.arity, flags: r.flags, since: r.since,
			summary: "Refused: " + reason + ".", refused: true,
			run: refuse("ERR CLUSTER " + strings.ToUpper(r.name) + " is not served: " + reason)})
	}
	return out
}

func cmdOK(c *conn, _ [][]byte) { c.out.OK() }

func cmdClusterKeySlot(c *conn, args [][]byte) {
	c.out.Int(int64(placement.Slot(view(args[2]))))
}

// endpoint is the address to advertise to this client when there is no
// cluster map: the local address of its connection, which it can reach by
// construction (a node bound to 0.0.0.0 has no single address of its own).
func (c *conn) endpoint() (ip string, port int) {
	if a, ok := c.nc.LocalAddr().(*net.TCPAddr); ok {
		return a.IP.String(), a.Port
	}
	host, p, _ := net.SplitHostPort(c.nc.LocalAddr().String())
	n, _ := strconv.Atoi(p)
	return host, n
}

// clusterNode is a node as the cluster commands describe it.
type clusterNode struct {
	id   string // Redis-style: 40 hex characters
	host string
	port int
	self bool
	// slots are the node's slot ranges, ascending: first, last, first, ….
	slots []uint16
}

func (n *clusterNode) addr() string { return net.JoinHostPort(n.host, strconv.Itoa(n.port)) }

// slotRange is a contiguous run of slots served by one node.
type slotRange struct {
	first, last uint16
	node        *clusterNode
}

// topology is the cluster as the committed map describes it — the slot
// ranges of each node's segments (R-PLACE-3: a segment is a contiguous slot
// range) — or, without a map, this node serving every slot at the address
// the client reached it on.
func (c *conn) topology() ([]*clusterNode, []slotRange) {
	var m *wire.RoutingMap
	if src := c.srv.cfg.Routing; src != nil {
		m = src.RoutingMap()
	}
	if m == nil || m.TotalSegments <= 0 || len(m.SegmentOwner) != m.TotalSegments {
		ip, port := c.endpoint()
		self := &clusterNode{id: c.srv.clusterID, host: ip, port: port, self: true, slots: []uint16{0, placement.SlotCount - 1}}
		return []*clusterNode{self}, []slotRange{{0, placement.SlotCount - 1, self}}
	}
	nodes := make([]*clusterNode, len(m.Nodes))
	for i, rn := range m.Nodes {
		nodes[i] = &clusterNode{id: redisNodeID(rn.ID), host: rn.Host, port: rn.RESPPort, self: rn.ID == c.srv.cfg.NodeID}
	}
	var ranges []slotRange
	for seg, owner := range m.SegmentOwner {
		if owner < 0 || int(owner) >= len(nodes) {
			continue
		}
		first, last := placement.SlotRange(uint16(seg), m.TotalSegments)
		if n := len(ranges); n > 0 && ranges[n-1].node == nodes[owner] && ranges[n-1].last+1 == first {
			ranges[n-1].last = last
			continue
		}
		ranges = append(ranges, slotRange{first, last, nodes[owner]})
	}
	for _, r := range ranges {
		r.node.slots = append(r.node.slots, r.first, r.last)
	}
	return nodes, ranges
}

// redisNodeID is the Redis-style id of a Zaris node: the SHA-1 of its id.
func redisNodeID(id string) string {
	sum := sha1.Sum([]byte(id))
	return hex.EncodeToString(sum[:])
}

// movedError is the redirect for a key whose segment this node does not
// own: "MOVED <slot> <host:port>" of the owner in the committed map (what a
// Redis Cluster client follows), or CLUSTERDOWN when no node serves it.
func (c *conn) movedError(key []byte) string {
	slot := placement.Slot(view(key))
	if a := c.srv.cfg.Arriving; a != nil && a(int(placement.SegmentOf(view(key), c.srv.segs))) {
		return "TRYAGAIN slot " + strconv.Itoa(int(slot)) + " is moving to this node"
	}
	_, ranges := c.topology()
	for _, r := range ranges {
		if slot >= r.first && slot <= r.last {
			if r.node.self {
				break // the map says here, the store says no: it is changing
			}
			return "MOVED " + strconv.Itoa(int(slot)) + " " + r.node.addr()
		}
	}
	return "TRYAGAIN slot " + strconv.Itoa(int(slot)) + " is moving between nodes"
}

func cmdClusterSlots(c *conn, _ [][]byte) {
	_, ranges := c.topology()
	c.out.Array(len(ranges))
	for _, r := range ranges {
		c.out.Array(3)
		c.out.Int(int64(r.first))
		c.out.Int(int64(r.last))
		c.out.Array(4)
		c.out.BulkString(r.node.host)
		c.out.Int(int64(r.node.port))
		c.out.BulkString(r.node.id)
		c.out.Map(0)
	}
}

func cmdClusterShards(c *conn, _ [][]byte) {
	nodes, _ := c.topology()
	var serving []*clusterNode
	for _, n := range nodes {
		if len(n.slots) > 0 {
			serving = append(serving, n)
		}
	}
	c.out.Array(len(serving))
	for _, n := range serving {
		c.out.Map(2)
		c.out.BulkString("slots")
		c.out.Array(len(n.slots))
		for _, s := range n.slots {
			c.out.Int(int64(s))
		}
		c.out.BulkString("nodes")
		c.out.Array(1)
		c.out.Map(7)
		c.out.BulkString("id")
		c.out.BulkString(n.id)
		c.out.BulkString("port")
		c.out.Int(int64(n.port))
		c.out.BulkString("ip")
		c.out.BulkString(n.host)
		c.out.BulkString("endpoint")
		c.out.BulkString(n.host)
		c.out.BulkString("role")
		c.out.BulkString("master")
		c.out.BulkString("replication-offset")
		c.out.Int(0)
		c.out.BulkString("health")
		c.out.BulkString("online")
	}
}

func cmdClusterNodes(c *conn, _ [][]byte) {
	nodes, _ := c.topology()
	var b strings.Builder
	for _, n := range nodes {
		flags := "master"
		if n.self {
			flags = "myself,master"
		}
		b.WriteString(n.id + " " + n.addr() + "@0 " + flags + " - 0 0 1 connected")
		for i := 0; i+1 < len(n.slots); i += 2 {
			b.WriteByte(' ')
			b.WriteString(strconv.Itoa(int(n.slots[i])))
			if n.slots[i+1] != n.slots[i] {
				b.WriteString("-" + strconv.Itoa(int(n.slots[i+1])))
			}
		}
		b.WriteByte('\n')
	}
	c.out.Verbatim(b.String())
}

func cmdClusterInfo(c *conn, _ [][]byte) {
	nodes, ranges := c.topology()
	assigned, size := 0, 0
	for _, r := range ranges {
		assigned += int(r.last-r.first) + 1
	}
	for _, n := range nodes {
		if len(n.slots) > 0 {
			size++
		}
	}
	info := ClusterInfo{CurrentEpoch: 1, MyEpoch: 1}
	if f := c.srv.cfg.Cluster; f != nil {
		info = f()
	}
	state := "ok"
	if assigned < placement.SlotCount || info.FailSlots > 0 {
		state = "fail"
	}
	var b strings.Builder
	for _, kv := range [][2]string{
		{"cluster_state", state},
		{"cluster_slots_assigned", strconv.Itoa(assigned)},
		{"cluster_slots_ok", strconv.Itoa(max(0, assigned-info.FailSlots))},
		{"cluster_slots_pfail", "0"},
		{"cluster_slots_fail", strconv.Itoa(info.FailSlots)},
		{"cluster_known_nodes", strconv.Itoa(len(nodes))},
		{"cluster_size", strconv.Itoa(size)},
		{"cluster_current_epoch", strconv.FormatUint(info.CurrentEpoch, 10)},
		{"cluster_my_epoch", strconv.FormatUint(info.MyEpoch, 10)},
		{"cluster_stats_messages_sent", "0"},
		{"cluster_stats_messages_received", "0"},
		{"total_cluster_links_buffer_limit_exceeded", "0"},
	} {
		b.WriteString(kv[0] + ":" + kv[1] + "\r\n")
	}
	c.out.Verbatim(b.String())
}

func cmdClusterMyID(c *conn, _ [][]byte) { c.out.BulkString(c.srv.clusterID) }

func parseSlot(c *conn, b []byte) (uint16, bool) {
	n, ok := parseInt(b)
	if !ok || n < 0 || n >= placement.SlotCount {
		c.err("ERR Invalid slot")
		return 0, false
	}
	return uint16(n), true
}

func cmdClusterCountKeys(c *conn, args [][]byte) {
	slot, ok := parseSlot(c, args[2])
	if !ok {
		return
	}
	c.out.Int(int64(len(c.srv.keysInSlot(slot, -1))))
}

func cmdClusterGetKeys(c *conn, args [][]byte) {
	slot, ok1 := parseInt(args[2])
	n, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		c.err(msgNotInteger)
		return
	}
	if slot < 0 || slot >= placement.SlotCount || n < 0 {
		c.err("ERR Invalid slot or number of keys")
		return
	}
	keys := c.srv.keysInSlot(uint16(slot), int(min(n, 1<<30)))
	c.out.Array(len(keys))
	for _, k := range keys {
		c.out.BulkString(k)
	}
}

func cmdClusterHelp(c *conn, _ [][]byte) {
	writeHelp(c, "CLUSTER", []string{
		"COUNTKEYSINSLOT <slot>", "    Return the number of keys in <slot>.",
		"GETKEYSINSLOT <slot> <count>", "    Return key names stored by current node in a slot.",
		"INFO", "    Return information about the cluster.",
		"KEYSLOT <key>", "    Return the hash slot for <key>.",
		"MYID", "    Return the node id.",
		"NODES", "    Return cluster configuration seen by node.",
		"SHARDS", "    Return information about slot range mappings and the nodes associated with them.",
		"SLOTS", "    Return information about slots range mappings.",
	})
}

package resp

import (
	"net"
	"strconv"
	"strings"

	"github.com/zaris-io/zaris/internal/placement"
)

// Cluster commands (R-RESP-2). Zaris places keys exactly like Redis
// Cluster (R-PLACE-1), so a stock cluster client can route by slot. Today a
// node owns every slot: CLUSTER SLOTS/SHARDS/NODES describe this node
// serving 0-16383 at the address the client reached it on, which is what
// makes go-redis's ClusterClient and `redis-cli -c` work against it.

func init() {
	register(&command{name: "cluster", arity: -2, group: "cluster", since: "3.0.0",
		summary: "A container for Redis Cluster commands.", subs: []*command{
			{name: "keyslot", arity: 3, flags: flagStale, summary: "Returns the hash slot for a key.", run: cmdClusterKeySlot},
			{name: "slots", arity: 2, flags: flagLoading | flagStale, summary: "Returns the mapping of cluster slots to nodes.",
				tips: []string{"nondeterministic_output"}, run: cmdClusterSlots},
			{name: "shards", arity: 2, flags: flagLoading | flagStale, summary: "Returns the mapping of cluster slots to shards.",
				tips: []string{"nondeterministic_output"}, run: cmdClusterShards},
			{name: "nodes", arity: 2, flags: flagLoading | flagStale, summary: "Returns the cluster configuration for a node.",
				tips: []string{"nondeterministic_output"}, run: cmdClusterNodes},
			{name: "info", arity: 2, flags: flagLoading | flagStale, summary: "Returns information about the state of a node.",
				tips: []string{"nondeterministic_output"}, run: cmdClusterInfo},
			{name: "myid", arity: 2, flags: flagLoading | flagStale, summary: "Returns the ID of a node.", run: cmdClusterMyID},
			{name: "countkeysinslot", arity: 3, flags: flagStale, summary: "Returns the number of keys in a hash slot.", run: cmdClusterCountKeys},
			{name: "getkeysinslot", arity: 4, flags: flagStale, summary: "Returns the key names in a hash slot.",
				tips: []string{"nondeterministic_output"}, run: cmdClusterGetKeys},
			{name: "help", arity: 2, flags: flagLoading | flagStale, summary: "Returns helpful text about the CLUSTER subcommands.", run: cmdClusterHelp},
		}},
		&command{name: "readonly", arity: 1, flags: connFlags, group: "cluster", since: "3.0.0",
			summary: "Enables read-only queries for a connection to a Redis Cluster replica node (every node serves reads).", run: cmdOK},
		&command{name: "readwrite", arity: 1, flags: connFlags, group: "cluster", since: "3.0.0",
			summary: "Enables read-write queries for a connection to a Redis Cluster replica node.", run: cmdOK},
		&command{name: "asking", arity: 1, flags: flagFast, group: "cluster", since: "3.0.0",
			summary: "Signals that a cluster client is following an -ASK redirect.", run: cmdOK},
	)
}

func cmdOK(c *conn, _ [][]byte) { c.out.OK() }

func cmdClusterKeySlot(c *conn, args [][]byte) {
	c.out.Int(int64(placement.Slot(view(args[2]))))
}

// endpoint is the address to advertise to this client: the local address of
// its connection, which it can reach by construction (a node bound to
// 0.0.0.0 has no single address of its own).
func (c *conn) endpoint() (ip string, port int) {
	if a, ok := c.nc.LocalAddr().(*net.TCPAddr); ok {
		return a.IP.String(), a.Port
	}
	host, p, _ := net.SplitHostPort(c.nc.LocalAddr().String())
	n, _ := strconv.Atoi(p)
	return host, n
}

func cmdClusterSlots(c *conn, _ [][]byte) {
	ip, port := c.endpoint()
	c.out.Array(1)
	c.out.Array(3)
	c.out.Int(0)
	c.out.Int(placement.SlotCount - 1)
	c.out.Array(4)
	c.out.BulkString(ip)
	c.out.Int(int64(port))
	c.out.BulkString(c.srv.clusterID)
	c.out.Map(0)
}

func cmdClusterShards(c *conn, _ [][]byte) {
	ip, port := c.endpoint()
	c.out.Array(1)
	c.out.Map(2)
	c.out.BulkString("slots")
	c.out.Array(2)
	c.out.Int(0)
	c.out.Int(placement.SlotCount - 1)
	c.out.BulkString("nodes")
	c.out.Array(1)
	c.out.Map(7)
	c.out.BulkString("id")
	c.out.BulkString(c.srv.clusterID)
	c.out.BulkString("port")
	c.out.Int(int64(port))
	c.out.BulkString("ip")
	c.out.BulkString(ip)
	c.out.BulkString("endpoint")
	c.out.BulkString(ip)
	c.out.BulkString("role")
	c.out.BulkString("master")
	c.out.BulkString("replication-offset")
	c.out.Int(0)
	c.out.BulkString("health")
	c.out.BulkString("online")
}

func cmdClusterNodes(c *conn, _ [][]byte) {
	ip, port := c.endpoint()
	c.out.Verbatim(c.srv.clusterID + " " + net.JoinHostPort(ip, strconv.Itoa(port)) + "@0 myself,master - 0 0 1 connected 0-" +
		strconv.Itoa(placement.SlotCount-1) + "\n")
}

func cmdClusterInfo(c *conn, _ [][]byte) {
	var b strings.Builder
	for _, kv := range [][2]string{
		{"cluster_state", "ok"},
		{"cluster_slots_assigned", "16384"},
		{"cluster_slots_ok", "16384"},
		{"cluster_slots_pfail", "0"},
		{"cluster_slots_fail", "0"},
		{"cluster_known_nodes", "1"},
		{"cluster_size", "1"},
		{"cluster_current_epoch", "1"},
		{"cluster_my_epoch", "1"},
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

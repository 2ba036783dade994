package resp

import "strconv"

// Commands of a standalone or replicated redis-server that a Zaris node,
// which presents itself as a Redis Cluster and keeps no files, answers:
// ROLE and LASTSAVE as Redis does, the rest refused as Redis Cluster
// refuses them or with the reason (refused: the coverage table still counts
// them left out) — never as an unknown command, which tools take for a
// server too old to know it.

func init() {
	adminFlags := flagAdmin | flagNoScript
	register(
		&command{name: "swapdb", arity: 3, flags: flagWrite | flagFast, group: "server", since: "4.0.0",
			summary: "Swaps two Redis databases (a cluster has one: refused as in Redis Cluster).",
			run:     refuse("ERR SWAPDB is not allowed in cluster mode"), refused: true},
		&command{name: "move", arity: 3, flags: flagWrite | flagFast, first: 1, last: 1, step: 1, group: "generic", since: "1.0.0",
			summary: "Moves a key to another database (a cluster has one: refused as in Redis Cluster).",
			run:     refuse("ERR MOVE is not allowed in cluster mode"), refused: true},
		&command{name: "replicaof", arity: 3, flags: adminFlags | flagStale | flagNoAsyncLoading, group: "server", since: "5.0.0",
			summary: "Makes the server a replica of another instance (refused as in Redis Cluster: partitions have their replicas).",
			run:     refuse("ERR REPLICAOF not allowed in cluster mode."), refused: true},
		&command{name: "slaveof", arity: 3, flags: adminFlags | flagStale | flagNoAsyncLoading, group: "server", since: "1.0.0",
			summary: "The same as REPLICAOF (refused as in Redis Cluster).",
			run:     refuse("ERR REPLICAOF not allowed in cluster mode."), refused: true},
		&command{name: "failover", arity: -1, flags: adminFlags | flagStale, group: "server", since: "6.2.0",
			summary: "Starts a coordinated failover to a replica (refused as in Redis Cluster; the cluster fails partitions over itself).",
			run:     refuse("ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead."), refused: true},
		&command{name: "debug", arity: -2, flags: adminFlags | flagLoading | flagStale, group: "server", since: "1.0.0",
			summary: "A container for debugging commands (none served).",
			run:     refuse("ERR DEBUG command not allowed: a Zaris node serves no DEBUG subcommand"), refused: true},
		&command{name: "save", arity: 1, flags: adminFlags | flagNoAsyncLoading | flagNoMulti, group: "server", since: "1.0.0",
			summary: "Saves the dataset to disk (refused: a Zaris node keeps no files).", run: refuse(msgNoFiles), refused: true},
		&command{name: "bgsave", arity: -1, flags: adminFlags | flagNoAsyncLoading, group: "server", since: "1.0.0",
			summary: "Saves the dataset to disk in the background (refused: a Zaris node keeps no files).", run: refuse(msgNoFiles), refused: true},
		&command{name: "bgrewriteaof", arity: 1, flags: adminFlags | flagNoAsyncLoading, group: "server", since: "1.0.0",
			summary: "Rewrites the append-only file (refused: a Zaris node keeps no files).", run: refuse(msgNoFiles), refused: true},
		&command{name: "shutdown", arity: -1, flags: adminFlags | flagLoading | flagStale | flagNoMulti | flagAllowBusy, group: "server", since: "1.0.0",
			summary: "Shuts the server down (refused: a node stops on SIGTERM, or hands its partitions over first with zarisctl drain).",
			run:     refuse("ERR SHUTDOWN is not served: stop the node with SIGTERM, or with zarisctl drain to hand its partitions over first"), refused: true},
		&command{name: "lastsave", arity: 1, flags: flagLoading | flagStale | flagFast, group: "server", since: "1.0.0",
			summary: "The Unix time of the last save: a Zaris node never saves, so the time it started, as a Redis that never saved answers.",
			run:     cmdLastSave},
		&command{name: "role", arity: 1, flags: flagNoScript | flagLoading | flagStale | flagFast, group: "server", since: "2.8.12",
			summary: "The node's part in replication: master while it owns a partition, with the nodes that keep copies of them.",
			run:     cmdRole},
	)
}

// msgNoFiles refuses what would write an RDB or AOF file.
const msgNoFiles = "ERR Zaris keeps no RDB or AOF files (an in-memory cache; replicas hold the copies)"

func refuse(msg string) func(c *conn, args [][]byte) {
	return func(c *conn, _ [][]byte) { c.err(msg) }
}

func cmdLastSave(c *conn, _ [][]byte) { c.out.Int(c.srv.started.Unix()) }

// cmdRole answers as INFO replication tells (replicationView): a master
// with its offset and one [node, port, offset] per node that keeps copies
// of its partitions (the node id where Redis gives an address, port 0, as
// INFO's slave<i> lines); a node holding only copies as a replica of the
// owner of the first, connected.
func cmdRole(c *conn, _ [][]byte) {
	rv := c.srv.replicationView()
	if rv.role == "slave" {
		c.out.Array(5)
		c.out.BulkString("slave")
		c.out.BulkString(rv.master)
		c.out.Int(0)
		c.out.BulkString("connected")
		c.out.Int(int64(rv.offset))
		return
	}
	c.out.Array(3)
	c.out.BulkString("master")
	c.out.Int(int64(rv.offset))
	c.out.Array(len(rv.replicas))
	for _, r := range rv.replicas {
		c.out.Array(3)
		c.out.BulkString(r.node)
		c.out.BulkString("0")
		c.out.BulkString(strconv.FormatUint(r.offset, 10))
	}
}

package resp

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zaris-io/zaris/internal/procmem"
)

// infoSections are the INFO sections in the order Redis prints them, and
// whether INFO without arguments ("default") includes them.
var infoSections = []struct {
	name    string
	deflt   bool
	render  func(s *Server, b *strings.Builder, now time.Time)
	summary string
}{
	{"server", true, infoServer, "version, mode, process, uptime"},
	{"clients", true, infoClients, "connections"},
	{"memory", true, infoMemory, "owned data bytes against the cap, policy, process memory"},
	{"persistence", true, infoPersistence, "no RDB/AOF: loading 0, aof_enabled 0"},
	{"stats", true, infoStats, "commands, connections, network, hits/misses, expirations, evictions, errors"},
	{"replication", true, infoReplication, "role and the node's partitions"},
	{"cpu", true, infoCPU, "process CPU time"},
	{"modules", true, infoModules, "none"},
	{"commandstats", false, infoCommandStats, "calls, time, rejected and failed calls per command"},
	{"errorstats", true, infoErrorStats, "error replies per error code"},
	{"latencystats", false, infoLatencyStats, "p50/p99/p99.9 latency per command"},
	{"cluster", true, infoCluster, "cluster mode"},
	{"keyspace", true, infoKeyspace, "keys and keys with a TTL"},
}

// info renders the INFO reply for the requested sections ("default",
// "all", "everything" or names; none = default).
func (s *Server) info(sections []string, now time.Time) string {
	want := map[string]bool{}
	all := false
	if len(sections) == 0 {
		sections = []string{"default"}
	}
	for _, sec := range sections {
		switch sec {
		case "all", "everything":
			all = true
		case "default":
			for _, is := range infoSections {
				if is.deflt {
					want[is.name] = true
				}
			}
		default:
			want[sec] = true
		}
	}
	var b strings.Builder
	first := true
	for _, is := range infoSections {
		if !all && !want[is.name] {
			continue
		}
		if !first {
			b.WriteString("\r\n")
		}
		first = false
		title := strings.ToUpper(is.name[:1]) + is.name[1:]
		if is.name == "cpu" {
			title = "CPU"
		}
		b.WriteString("# " + title + "\r\n")
		is.render(s, &b, now)
	}
	return b.String()
}

func field(b *strings.Builder, k string, v any) {
	b.WriteString(k)
	b.WriteByte(':')
	fmt.Fprint(b, v)
	b.WriteString("\r\n")
}

func infoServer(s *Server, b *strings.Builder, now time.Time) {
	up := now.Sub(s.started)
	field(b, "redis_version", RedisVersion)
	field(b, "redis_git_sha1", "00000000")
	field(b, "redis_git_dirty", 0)
	field(b, "redis_build_id", "0")
	field(b, "redis_mode", "cluster")
	field(b, "zaris_version", s.cfg.Version)
	field(b, "zaris_node_id", s.cfg.NodeID)
	field(b, "os", runtime.GOOS+" "+runtime.GOARCH)
	field(b, "arch_bits", strconv.Itoa(strconv.IntSize))
	field(b, "monotonic_clock", "POSIX clock_gettime")
	field(b, "multiplexing_api", "go netpoll")
	field(b, "atomicvar_api", "sync-atomic")
	field(b, "gcc_version", "0.0.0")
	field(b, "go_version", runtime.Version())
	field(b, "process_id", os.Getpid())
	field(b, "process_supervised", "no")
	field(b, "run_id", s.runID)
	field(b, "tcp_port", s.port())
	field(b, "server_time_usec", now.UnixMicro())
	field(b, "uptime_in_seconds", int64(up/time.Second))
	field(b, "uptime_in_days", int64(up/(24*time.Hour)))
	hz := s.configValue(configByName["hz"])
	field(b, "hz", hz)
	field(b, "configured_hz", hz)
	field(b, "lru_clock", now.Unix()&(1<<24-1))
	if exe, err := os.Executable(); err == nil {
		field(b, "executable", exe)
	}
	field(b, "config_file", "")
	field(b, "io_threads_active", 0)
}

func infoClients(s *Server, b *strings.Builder, _ time.Time) {
	var maxIn, maxOut, blocked, pubsub, looped int
	clients := s.snapshotClients()
	for _, c := range clients {
		if c.onLoop() {
			looped++
		}
		maxIn = max(maxIn, int(c.inBuf.Load()))
		c.wmu.Lock()
		maxOut = max(maxOut, len(c.wq))
		c.wmu.Unlock()
		if c.blocked.Load() {
			blocked++
		}
		if c.outputClass() == classPubSub {
			pubsub++
		}
	}
	field(b, "connected_clients", len(clients))
	field(b, "cluster_connections", 0)
	field(b, "maxclients", s.live.maxClients.Load())
	field(b, "client_recent_max_input_buffer", maxIn)
	field(b, "client_recent_max_output_buffer", maxOut)
	field(b, "blocked_clients", blocked)
	tracking, _, _, _ := s.trackingStats()
	field(b, "tracking_clients", tracking)
	field(b, "clients_in_timeout_table", blocked)
	field(b, "zaris_pubsub_clients", pubsub)
	field(b, "zaris_paused", s.pause.describe())
	s.mu.Lock()
	loops := len(s.loops)
	s.mu.Unlock()
	field(b, "zaris_event_loops", loops)
	field(b, "zaris_event_loop_clients", looped)
	field(b, "zaris_event_loop_leaves", s.stats.loopLeaves.Load())
}

func infoMemory(s *Server, b *strings.Builder, _ time.Time) {
	st := s.store.Stats()
	field(b, "used_memory", st.OwnedBytes)
	field(b, "used_memory_human", humanBytes(st.OwnedBytes))
	field(b, "used_memory_dataset", st.OwnedBytes)
	field(b, "zaris_replica_memory", st.ReplicaBytes)
	field(b, "zaris_replica_memory_human", humanBytes(st.ReplicaBytes))
	mem := s.store.Memory()
	field(b, "zaris_oplog_memory", mem.OpLogBytes)
	field(b, "zaris_oplog_entries", mem.OpLogEntries)
	field(b, "zaris_index_memory", mem.IndexBytes)
	rt := procmem.ReadRuntime()
	field(b, "zaris_go_heap", rt.HeapObjects)
	field(b, "zaris_go_heap_live", rt.HeapLive)
	field(b, "zaris_go_runtime_memory", rt.Total-rt.Released)
	field(b, "zaris_go_memory_limit", rt.Limit)
	rss, source := procmem.RSS()
	field(b, "used_memory_rss", rss)
	field(b, "used_memory_rss_human", humanBytes(rss))
	field(b, "zaris_rss_source", string(source))
	field(b, "zaris_maxmemory_rss", s.cfg.MaxRSSBytes)
	field(b, "zaris_maxmemory_rss_human", humanBytes(s.cfg.MaxRSSBytes))
	field(b, "zaris_eviction_ceiling", mem.EvictionCeiling)
	field(b, "maxmemory", st.MaxMemoryBytes)
	field(b, "maxmemory_human", humanBytes(st.MaxMemoryBytes))
	field(b, "maxmemory_policy", evictionPolicyName(s.store.Config().Eviction))
	field(b, "mem_allocator", "go")
	sc := s.scripts.cacheStats()
	field(b, "number_of_cached_scripts", sc.scripts)
	field(b, "number_of_functions", sc.functions)
	field(b, "number_of_libraries", sc.libraries)
	// The scripts' and libraries' source text; the Lua states' own memory
	// (Redis's used_memory_vm_*) is not measured: gopher-lua's heap is Go's.
	field(b, "used_memory_scripts_eval", sc.scriptBytes)
	field(b, "used_memory_functions", sc.libraryBytes)
	field(b, "used_memory_scripts", sc.scriptBytes+sc.libraryBytes)
	field(b, "used_memory_scripts_human", humanBytes(sc.scriptBytes+sc.libraryBytes))
}

func humanBytes(n int64) string {
	const unit = 1024
	f := float64(n)
	for _, suffix := range []string{"B", "K", "M", "G", "T"} {
		if f < unit || suffix == "T" {
			if suffix == "B" {
				return strconv.FormatInt(n, 10) + "B"
			}
			return strconv.FormatFloat(f, 'f', 2, 64) + suffix
		}
		f /= unit
	}
	return strconv.FormatInt(n, 10) + "B"
}

func infoStats(s *Server, b *strings.Builder, _ time.Time) {
	t := s.reported()
	st := s.store.Stats()
	field(b, "total_connections_received", t.connsReceived)
	field(b, "total_commands_processed", t.cmds)
	field(b, "instantaneous_ops_per_sec", s.stats.opsPerSec())
	field(b, "total_net_input_bytes", t.netIn)
	field(b, "total_net_output_bytes", t.netOut)
	field(b, "rejected_connections", t.rejected)
	field(b, "expired_keys", st.Expired)
	field(b, "evicted_keys", st.Evicted)
	field(b, "keyspace_hits", t.hits)
	field(b, "keyspace_misses", t.misses)
	ps := s.store.PubSub()
	field(b, "pubsub_channels", len(ps.ActiveChannels("")))
	field(b, "pubsub_patterns", ps.NumPat())
	field(b, "pubsubshard_channels", 0)
	field(b, "latest_fork_usec", 0)
	field(b, "total_forks", 0)
	_, tkeys, titems, tprefixes := s.trackingStats()
	field(b, "tracking_total_keys", tkeys)
	field(b, "tracking_total_items", titems)
	field(b, "tracking_total_prefixes", tprefixes)
	field(b, "unexpected_error_replies", 0)
	field(b, "total_error_replies", s.cmdStats.errTot.Load())
	field(b, "total_reads_processed", t.cmds)
	field(b, "client_output_buffer_limit_disconnections", s.stats.outputDisconnects.Load())
	field(b, "zaris_puts", st.Puts)
	field(b, "zaris_deletes", st.Deletes)
	field(b, "zaris_ttl_changes", st.TTLChanges)
}

// infoReplication: Redis's fields with the node's role — master while it
// owns any partition (segment), replica when it holds only copies — and its
// replicas as Redis lists them (slave<i>: one per node that keeps a copy
// of a partition this node owns, its offset the sum of its applied
// revisions), then Zaris's own fields: its partitions, how many it owns and
// copies, and per partition (zaris_partition_<n>) the owner, the replicas,
// the revision, the failover epoch, the health, this node's role and, on
// the owner, each replica's applied revision.
func infoReplication(s *Server, b *strings.Builder, _ time.Time) {
	rv := s.replicationView()
	field(b, "role", rv.role)
	field(b, "connected_slaves", len(rv.replicas))
	for i, r := range rv.replicas {
		field(b, "slave"+strconv.Itoa(i), "ip="+r.node+",port=0,state="+r.state+",offset="+
			strconv.FormatUint(r.offset, 10)+",lag=0")
	}
	offset, owned, copies, parts := rv.offset, rv.owned, rv.copies, rv.parts
	field(b, "master_failover_state", "no-failover")
	field(b, "master_replid", s.runID)
	field(b, "master_replid2", "0000000000000000000000000000000000000000")
	field(b, "master_repl_offset", offset)
	field(b, "second_repl_offset", -1)
	field(b, "repl_backlog_active", 0)
	field(b, "repl_backlog_size", 0)
	field(b, "repl_backlog_first_byte_offset", 0)
	field(b, "repl_backlog_histlen", 0)
	field(b, "zaris_partitions", s.segs)
	field(b, "zaris_owned_partitions", len(owned))
	field(b, "zaris_replica_partitions", len(copies))
	for _, p := range parts {
		mine := "none"
		switch {
		case p.Owner == s.cfg.NodeID:
			mine = "master"
		case slices.Contains(p.Replicas, s.cfg.NodeID):
			mine = "replica"
		}
		line := "owner=" + p.Owner + ",replicas=" + strings.Join(p.Replicas, "|") +
			",revision=" + strconv.FormatUint(p.Revision, 10) + ",epoch=" + strconv.FormatUint(p.Epoch, 10) +
			",health=" + p.Health + ",role=" + mine
		if len(p.ReplicaOffsets) > 0 {
			offs := make([]string, len(p.ReplicaOffsets))
			for i, r := range p.ReplicaOffsets {
				offs[i] = r.Node + ":" + strconv.FormatUint(r.Offset, 10)
			}
			line += ",replica_offsets=" + strings.Join(offs, "|")
		}
		field(b, "zaris_partition_"+strconv.Itoa(p.Partition), line)
	}
}

func infoCluster(_ *Server, b *strings.Builder, _ time.Time) {
	field(b, "cluster_enabled", 1)
}

func infoKeyspace(s *Server, b *strings.Builder, _ time.Time) {
	keys := s.store.Stats().Items
	if keys == 0 {
		return
	}
	expiring, avgTTL := s.expiringKeys()
	field(b, "db0", "keys="+strconv.FormatInt(keys, 10)+",expires="+strconv.Itoa(expiring)+",avg_ttl="+strconv.FormatInt(avgTTL, 10))
}

// port is the TCP port of the first listener served, 0 before Serve.
func (s *Server) port() int {
	if a, ok := s.listenAddr.Load().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// replicationView is what INFO replication and ROLE tell of the node's
// part in replication.
type replicationView struct {
	role     string // "master" while the node owns any partition, "slave" when it holds only copies
	offset   uint64 // the revisions of the partitions it owns (or copies, as a replica) summed
	owned    []int
	copies   []int
	replicas []replicaView // one per node keeping a copy of a partition this node owns
	parts    []PartitionInfo
	master   string // as a replica: the owner of the first partition it copies
}

type replicaView struct {
	node   string
	state  string // "online", or Redis's "wait_bgsave" while a session is not streaming
	offset uint64 // the revisions it applied of this node's partitions
}

func (s *Server) replicationView() replicationView {
	var rv replicationView
	var copied uint64
	for i := 0; i < s.segs; i++ {
		g := s.store.Segment(uint16(i))
		rev := g.Revision()
		switch {
		case g.Owned():
			rv.owned = append(rv.owned, i)
			rv.offset += rev
		case rev > 0:
			rv.copies = append(rv.copies, i)
			copied += rev
		}
	}
	if s.cfg.Partitions != nil {
		rv.parts = s.cfg.Partitions()
	}
	rv.role = "master"
	if len(rv.owned) == 0 && len(rv.copies) > 0 {
		rv.role = "slave"
		rv.offset = copied
		for _, p := range rv.parts {
			if p.Owner != s.cfg.NodeID && slices.Contains(p.Replicas, s.cfg.NodeID) {
				rv.master = p.Owner
				break
			}
		}
	}
	at := map[string]int{}
	for _, p := range rv.parts {
		if p.Owner != s.cfg.NodeID {
			continue
		}
		for _, r := range p.ReplicaOffsets {
			i, ok := at[r.Node]
			if !ok {
				i = len(rv.replicas)
				at[r.Node] = i
				rv.replicas = append(rv.replicas, replicaView{node: r.Node, state: "online"})
			}
			rv.replicas[i].offset += r.Offset
			if r.State != "streaming" {
				rv.replicas[i].state = "wait_bgsave"
			}
		}
	}
	return rv
}

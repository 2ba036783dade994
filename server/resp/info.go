package resp

import (
	"fmt"
	"net"
	"os"
	"runtime"
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
	{"stats", true, infoStats, "commands, connections, network, hits/misses, expirations, evictions"},
	{"replication", true, infoReplication, "role"},
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
		b.WriteString("# " + strings.ToUpper(is.name[:1]) + is.name[1:] + "\r\n")
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
	field(b, "redis_mode", "cluster")
	field(b, "zaris_version", s.cfg.Version)
	field(b, "zaris_node_id", s.cfg.NodeID)
	field(b, "os", runtime.GOOS+" "+runtime.GOARCH)
	field(b, "arch_bits", strconv.Itoa(strconv.IntSize))
	field(b, "go_version", runtime.Version())
	field(b, "process_id", os.Getpid())
	field(b, "process_supervised", "no")
	field(b, "run_id", s.runID)
	field(b, "tcp_port", s.port())
	field(b, "server_time_usec", now.UnixMicro())
	field(b, "uptime_in_seconds", int64(up/time.Second))
	field(b, "uptime_in_days", int64(up/(24*time.Hour)))
	if exe, err := os.Executable(); err == nil {
		field(b, "executable", exe)
	}
}

func infoClients(s *Server, b *strings.Builder, _ time.Time) {
	field(b, "connected_clients", s.Connections())
	field(b, "cluster_connections", 0)
	field(b, "maxclients", s.cfg.MaxClients)
	field(b, "blocked_clients", 0)
	field(b, "tracking_clients", 0)
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
	field(b, "zaris_puts", st.Puts)
	field(b, "zaris_deletes", st.Deletes)
	field(b, "zaris_ttl_changes", st.TTLChanges)
}

func infoReplication(s *Server, b *strings.Builder, _ time.Time) {
	field(b, "role", "master")
	field(b, "connected_slaves", 0)
	field(b, "master_failover_state", "no-failover")
	field(b, "master_replid", s.runID)
	field(b, "master_repl_offset", 0)
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

package server

import (
	"net"
	"strings"
	"time"

	"github.com/zaris-io/zaris/internal/procmem"
)

// Info is a point-in-time description of the node (STYLE 12), served as
// JSON by GET /v1/info. It never contains secrets: the token and the TLS
// material appear only as "enabled" flags.
type Info struct {
	NodeID        string    `json:"node_id"`
	Store         string    `json:"store"`
	Version       string    `json:"version"`
	State         string    `json:"state"` // created, running, stopping, stopped
	Ready         bool      `json:"ready"`
	StartedAt     time.Time `json:"started_at,omitzero"`
	UptimeSeconds float64   `json:"uptime_seconds"`

	// Ports are the bound ports of bound endpoints and the configured ports
	// otherwise (0 = off, -1 = ephemeral, not bound yet).
	Ports PortsInfo `json:"ports"`
	// Addresses maps each bound endpoint (client, resp, http) to its
	// listening address.
	Addresses map[string]string `json:"addresses"`

	Memory       MemoryInfo `json:"memory"`
	Items        int64      `json:"items"`
	ReplicaItems int64      `json:"replica_items"`
	Eviction     string     `json:"eviction"`

	Config ConfigSummary `json:"config"`
}

// PortsInfo lists the node's ports.
type PortsInfo struct {
	Client int `json:"client"`
	RESP   int `json:"resp"`
	Peer   int `json:"peer"`
	Gossip int `json:"gossip"`
	HTTP   int `json:"http"`
}

// MemoryInfo is the node's memory (R-MEM): the data as the cap accounts
// it, what the op-log and indexes retain, and what the process costs — the
// Go heap and the resident set size a container limit is compared with.
type MemoryInfo struct {
	UsedBytes    int64 `json:"used_bytes"` // owned data, what the cap governs
	MaxBytes     int64 `json:"max_bytes"`
	ReplicaBytes int64 `json:"replica_bytes"`
	MaxItemBytes int   `json:"max_item_bytes"`
	// OpLogBytes: values and effects the op-logs retain plus a per-entry
	// cost (a live value is shared with its record); an estimate.
	OpLogBytes   int64 `json:"oplog_bytes"`
	OpLogEntries int64 `json:"oplog_entries"`
	// FeedBytes: what the change feed retains beyond the op-log
	// (--feed-retention).
	FeedBytes int64 `json:"feed_bytes"`
	// IndexBytes: the TTL index and the tombstone list; an estimate.
	IndexBytes int64 `json:"index_bytes"`
	// EvictionCeilingBytes is what eviction works against now: max_bytes,
	// or less while RSS is over max_rss_bytes.
	EvictionCeilingBytes int64 `json:"eviction_ceiling_bytes"`
	// GoHeapBytes: heap objects (live and not yet swept); GoHeapLiveBytes:
	// the live heap at the last GC; GoRuntimeBytes: all the runtime holds
	// from the OS and has not released; GoMemoryLimitBytes: GOMEMLIMIT.
	GoHeapBytes        int64 `json:"go_heap_bytes"`
	GoHeapLiveBytes    int64 `json:"go_heap_live_bytes"`
	GoRuntimeBytes     int64 `json:"go_runtime_bytes"`
	GoMemoryLimitBytes int64 `json:"go_memory_limit_bytes"`
	// RSSBytes is the process's resident set size; RSSSource says where it
	// was read ("proc": the kernel, "go-runtime": an estimate off Linux).
	RSSBytes  int64  `json:"rss_bytes"`
	RSSSource string `json:"rss_source"`
	// MaxRSSBytes is --memory-max-rss (0 = off).
	MaxRSSBytes int64 `json:"max_rss_bytes"`
}

// ConfigSummary is the configuration without secrets.
type ConfigSummary struct {
	Bind              string   `json:"bind"`
	Join              []string `json:"join"`
	DataDir           string   `json:"data_dir"`
	ReplicationFactor int      `json:"replication_factor"`
	ReplicationMode   string   `json:"replication_mode"`
	WriteQuorum       string   `json:"write_quorum"`
	MaxWorkers        int      `json:"max_workers"`
	MinWorkers        int      `json:"min_workers"`
	ShutdownTimeout   string   `json:"shutdown_timeout"`
	LogLevel          string   `json:"log_level"`
	LogFormat         string   `json:"log_format"`
	AuthEnabled       bool     `json:"auth_enabled"`
	TLSEnabled        bool     `json:"tls_enabled"`
	ClientCAEnabled   bool     `json:"tls_client_ca_enabled"`
}

// Info describes the node now.
func (n *Node) Info() Info {
	c := n.cfg
	n.mu.Lock()
	state, startedAt := n.state, n.startedAt
	ports := [numEndpoints]int{}
	addrs := make(map[string]string)
	for ep := Endpoint(0); ep < numEndpoints; ep++ {
		ports[ep] = c.port(ep)
		if ln := n.listeners[ep]; ln != nil {
			addrs[ep.String()] = ln.Addr().String()
			if p := portOf(ln.Addr()); p > 0 {
				ports[ep] = p
			}
		}
	}
	peerPort, gossipPort := c.PeerPort, c.GossipPort
	if n.peer != nil {
		peerPort = portOf(n.peer.Addr())
	}
	if n.cluster != nil {
		gossipPort = n.cluster.GossipPort()
	}
	n.mu.Unlock()

	st := n.store.Stats()
	mem := n.store.Memory()
	rt := procmem.ReadRuntime()
	rss, rssSource := procmem.RSS()
	info := Info{
		NodeID:    c.NodeID,
		Store:     c.Store,
		Version:   Version(),
		State:     stateNames[state],
		Ready:     n.Ready(),
		StartedAt: startedAt,
		Ports: PortsInfo{
			Client: ports[EndpointClient], RESP: ports[EndpointRESP], HTTP: ports[EndpointHTTP],
			Peer: peerPort, Gossip: gossipPort,
		},
		Addresses: addrs,
		Memory: MemoryInfo{
			UsedBytes: st.OwnedBytes, MaxBytes: st.MaxMemoryBytes,
			ReplicaBytes: st.ReplicaBytes, MaxItemBytes: c.MaxItemBytes,
			OpLogBytes: mem.OpLogBytes, OpLogEntries: mem.OpLogEntries, IndexBytes: mem.IndexBytes,
			FeedBytes:            st.FeedBytes,
			EvictionCeilingBytes: mem.EvictionCeiling,
			GoHeapBytes:          rt.HeapObjects, GoHeapLiveBytes: rt.HeapLive,
			GoRuntimeBytes: rt.Total - rt.Released, GoMemoryLimitBytes: rt.Limit,
			RSSBytes: rss, RSSSource: string(rssSource), MaxRSSBytes: c.MemoryMaxRSS,
		},
		Items:        st.Items,
		ReplicaItems: st.ReplicaItems,
		Eviction:     c.Eviction.String(),
		Config: ConfigSummary{
			Bind:              c.Bind,
			Join:              append([]string{}, c.Join...),
			DataDir:           c.DataDir,
			ReplicationFactor: c.ReplicationFactor,
			ReplicationMode:   string(c.ReplicationMode),
			WriteQuorum:       string(c.WriteQuorum),
			MaxWorkers:        c.MaxWorkers,
			MinWorkers:        c.MinWorkers,
			ShutdownTimeout:   c.ShutdownTimeout.String(),
			LogLevel:          strings.ToLower(c.LogLevel.String()),
			LogFormat:         string(c.LogFormat),
			AuthEnabled:       c.AuthEnabled(),
			TLSEnabled:        c.TLSEnabled(),
			ClientCAEnabled:   c.TLSCA != "",
		},
	}
	if state == stateRunning {
		info.UptimeSeconds = time.Since(startedAt).Seconds()
	}
	return info
}

func portOf(addr net.Addr) int {
	if a, ok := addr.(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

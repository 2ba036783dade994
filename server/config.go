package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/zaris-io/zaris/internal/evloop"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/procmem"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/store"
)

// Defaults of the server binary (API.md "The server binary", DESIGN.md
// "Ports", SPEC R-MEM, R-OPS-3).
const (
	DefaultStore             = "default"
	DefaultBind              = "127.0.0.1"
	DefaultClientPort        = 7861
	DefaultRESPPort          = 6380
	DefaultPeerPort          = 7811
	DefaultGossipPort        = 7946
	DefaultHTTPPort          = 7801
	DefaultReplicationFactor = 1
	DefaultMemoryMaxBytes    = store.DefaultMaxMemoryBytes // 1 GiB
	DefaultMaxItemBytes      = store.DefaultMaxItemBytes   // 4 MiB
	DefaultShutdownTimeout   = 30 * time.Second
	DefaultSyncTimeout       = 2 * time.Second

	// RSSPerOwnedByte and RSSBaseBytes make the default --memory-max-rss
	// (DefaultMemoryMaxRSS): measured process RSS per accounted byte of data
	// under a write storm with the GC tuning of zaris-server, and the
	// process's own floor (runtime, raft, memberlist, buffers) — docs/DECISIONS.md.
	RSSPerOwnedByte = 2.0
	RSSBaseBytes    = 128 << 20

	// EphemeralPort, in any port field, asks the operating system for a free
	// port at Start; Node.Addr reports the port actually bound. Tests use it
	// to run several nodes in one process. It is a separate value because 0
	// already means "off" for the RESP and HTTP ports (API.md).
	EphemeralPort = -1

	// MaxItemBytesLimit is the ceiling of MaxItemBytes: a value must fit in
	// one native-protocol frame with room to spare.
	MaxItemBytesLimit = 512 << 20

	// MaxWorkersLimit is the ceiling of MaxWorkers: a wider dispatch pool
	// only adds context switches (seed 003, "worker pool").
	MaxWorkersLimit = 4096
)

// ReplicationMode decides when a write is acknowledged (R-REP-2).
type ReplicationMode string

const (
	// ReplicationAsync acknowledges after the local apply; replicas follow
	// in the background. The default: the right trade-off for a cache.
	ReplicationAsync ReplicationMode = "async"
	// ReplicationSync acknowledges after the replicas required by the
	// WriteQuorum have applied the write.
	ReplicationSync ReplicationMode = "sync"
)

// WriteQuorum is how many replica acknowledgements a sync write needs
// (R-REP-2). It only bites under ReplicationSync.
type WriteQuorum string

const (
	WriteQuorumAll        WriteQuorum = "all"        // every replica; the default
	WriteQuorumMajority   WriteQuorum = "majority"   // floor(RF/2)+1 copies
	WriteQuorumBestEffort WriteQuorum = "besteffort" // failures are logged, never fail the write
)

// LogFormat selects the slog handler.
type LogFormat string

const (
	LogText LogFormat = "text" // slog.TextHandler, the default
	LogJSON LogFormat = "json" // slog.JSONHandler
)

// Config configures one node. Build it with DefaultConfig (or LoadConfig, for
// the binary) and change fields; NewNode calls Validate.
//
// Every field is an option of the server binary: the comment names its flag;
// its environment variable is ZARIS_ followed by the flag name in upper snake
// case, and its YAML key is the flag name (see LoadConfig).
type Config struct {
	// NodeID is the node's stable identity in the cluster (--node-id).
	// 1–64 characters of [A-Za-z0-9._-], starting with a letter or a digit.
	// Default "": NewNode derives it from the host name, which is stable for
	// a Kubernetes StatefulSet pod.
	NodeID string

	// Store is the name of the one store this cluster serves (--store); a
	// client naming another store is refused. 1–64 characters of
	// [A-Za-z0-9_-]. Default "default".
	Store string

	// Bind is the address every listener binds (--bind): an IP address or a
	// host name. Default "127.0.0.1"; "0.0.0.0" or "::" for every interface.
	Bind string

	// ClientPort is the native-protocol port (--client-port). Default 7861.
	// 0 is invalid (a node always serves clients); EphemeralPort lets the
	// operating system choose.
	ClientPort int
	// RESPPort is the Redis-protocol port (--resp-port). Default 6380;
	// 0 = RESP off; EphemeralPort lets the operating system choose.
	RESPPort int
	// ClientEventLoops is how many event loops serve plain-TCP native
	// connections on Linux once their handshake is done
	// (--client-event-loops; D66): 0 (the default) = one per two CPUs, at
	// least one; -1 = every connection on a goroutine of its own.
	ClientEventLoops int
	// RESPEventLoops is how many event loops serve plain-TCP RESP
	// connections on Linux (--resp-event-loops; D66): 0 (the default) = one
	// per two CPUs, at least one; -1 = every connection on a goroutine of
	// its own.
	RESPEventLoops int
	// PeerPort carries replication, migration and raft (--peer-port).
	// Default 7811. 0 is invalid; EphemeralPort lets the operating system
	// choose.
	PeerPort int
	// GossipPort is the memberlist port (--gossip-port). Default 7946.
	// 0 is invalid; EphemeralPort lets the operating system choose.
	GossipPort int
	// HTTPPort serves health, readiness, metrics, info and the REST API
	// (--http-port). Default 7801; 0 = HTTP off; EphemeralPort lets the
	// operating system choose.
	HTTPPort int

	// Join lists the gossip addresses (HOST:PORT) of existing members
	// (--join, comma separated). Empty (the default) = start a new cluster.
	Join []string

	// DataDir holds the control-plane state (--data-dir). Default "" = the
	// control-plane state lives in memory and a restarted node rejoins as a
	// new member.
	DataDir string

	// ReplicationFactor is the total number of copies of each partition,
	// primary included (--replication-factor). Default 1 = no replica.
	// Must be at least 1.
	ReplicationFactor int
	// ReplicationMode is async or sync (--replication-mode). Default async.
	ReplicationMode ReplicationMode
	// WriteQuorum is all, majority or besteffort (--write-quorum); only used
	// with ReplicationSync. Default all.
	WriteQuorum WriteQuorum
	// SyncTimeout bounds a sync write's wait for its replicas
	// (--sync-timeout): after it the write answers Timeout — it stays
	// applied on the owner, it is just not acknowledged (besteffort answers
	// Success). Default 2 s. Must be positive.
	SyncTimeout time.Duration
	// OpLogMaxOps and OpLogMaxBytes bound each segment's op-log
	// (--oplog-max-ops, --oplog-max-bytes): a replica further behind than
	// the log reaches catches up by snapshot (R-REP-1). Defaults 256
	// entries and 256 KiB of values. Must be positive.
	OpLogMaxOps   int
	OpLogMaxBytes int
	// FeedRetentionBytes and FeedRetentionAge bound, per segment, the
	// change feed's retention beyond the op-log (--feed-retention: a size,
	// a duration, or both, e.g. "64MiB,10m"; R-OPS-4): a change-feed
	// cursor, a resumed watch or a follower can resume from that far back.
	// Retained bytes are accounted (zaris_feed_retained_bytes). 0 = off.
	FeedRetentionBytes int64
	FeedRetentionAge   time.Duration
	// Follow makes this cluster a WAN follower of another (--follow
	// zaris://PRIMARY_SEEDS/STORE, R-OPS-4): its leader applies the
	// primary's change feed and every node refuses client writes until
	// zarisctl promote. It acts on a cluster that never followed; a
	// promoted cluster ignores it (zarisctl follow starts a new follow).
	Follow string

	// MemoryMaxBytes caps the bytes of owned data on this node (R-MEM-1)
	// (--memory-max-bytes; plain bytes or with a unit: 512MiB, 1GiB).
	// Default 1 GiB. There is no "unlimited": 0 or less is invalid.
	MemoryMaxBytes int64
	// MaxItemBytes caps one key's item size (R-MEM-3) (--max-item-bytes):
	// a string's value, a collection's data as serialised (its members,
	// fields, values and entries plus a few bytes of framing each). A write
	// past it is ItemTooLarge. Default 4 MiB. Must be positive, at most
	// MemoryMaxBytes and at most MaxItemBytesLimit.
	MaxItemBytes int
	// MemoryMaxRSS bounds the memory of the whole process, its resident
	// set size (--memory-max-rss): the eviction loop evicts below the
	// owned-data cap while RSS is over it, and zaris-server sets the Go
	// runtime's soft memory limit (GOMEMLIMIT) from it. 0 = off. Not given
	// to zaris-server (LoadConfig), it is DefaultMemoryMaxRSS of the cap and
	// the replication factor. When set, at least MemoryMaxBytes.
	MemoryMaxRSS int64
	// Eviction is what a full node does (--eviction POLICY). Default lru:
	// sampled LRU eviction in the background (R-MEM-2); noeviction refuses
	// writes with CapacityExceeded instead; lfu and Redis's other
	// maxmemory-policy names choose what the background eviction drops.
	Eviction store.EvictionPolicy

	// Token, when set, is required from every client (--token): native and
	// RESP AUTH, and "Authorization: Bearer <token>" on the HTTP API except
	// /healthz and /readyz (R-OPS-5). Default "" = no authentication.
	// Printable ASCII without spaces. Never logged, never shown by Info.
	Token string

	// TLSCert and TLSKey are PEM files (--tls-cert, --tls-key); both or
	// neither. When set, every listener of the node speaks TLS. Default ""
	// = plain TCP.
	TLSCert string
	TLSKey  string
	// TLSCA is a PEM bundle of the CA that signs peer and client
	// certificates (--tls-ca); a client certificate, when presented, must
	// chain to it. Requires TLSCert and TLSKey. Default "" = no client
	// certificate verification.
	TLSCA string
	// TLSClientAuth is what the client-facing listeners (native, RESP,
	// HTTP) ask of a client's certificate (--tls-client-auth): none, request
	// (a certificate, when presented, must chain to TLSCA) or require (every
	// client presents one chaining to TLSCA). Default "" = require when
	// TLSCA is set, else none. The peer port always requires and verifies
	// a certificate of TLSCA, whatever this says.
	TLSClientAuth string

	// ClusterSecretFile names the cluster secret (--cluster-secret-file):
	// one base64 key (16, 24 or 32 bytes) a line, the first the primary.
	// With it gossip is encrypted (AES-GCM) and every peer connection
	// authenticates before its protocol (challenge-response over the
	// secret); re-read on SIGHUP (key rotation, docs/OPERATIONS.md
	// "Security"). Default "" = the cluster plane is open.
	ClusterSecretFile string

	// MaxWorkers bounds the dispatch worker pool that runs long operations
	// (--max-workers; env ZARIS_SERVER_MAX_WORKERS, R-OPS-3). Default
	// NumCPU×16 clamped to 64..1024. Must be MinWorkers..MaxWorkersLimit.
	MaxWorkers int
	// MinWorkers is the number of workers kept warm (--min-workers; env
	// ZARIS_SERVER_MIN_WORKERS). Default max(4, NumCPU×4), at most the
	// default MaxWorkers. Must be 1..MaxWorkers.
	MinWorkers int

	// ShutdownTimeout bounds a graceful stop (--shutdown-timeout): after it,
	// remaining connections are closed. Default 30 s. Must be positive.
	ShutdownTimeout time.Duration

	// LogLevel is the minimum level logged (--log-level debug|info|warn|
	// error). Default info (the zero slog.Level).
	LogLevel slog.Level
	// LogFormat is text or json (--log-format). Default text.
	LogFormat LogFormat

	// ClusterID names the cluster (--cluster-id): a node of another cluster
	// is refused, even for the same store. Default "" (every node must agree
	// on it, empty included). 0–64 characters of [A-Za-z0-9_-].
	ClusterID string
	// Zone is this node's failure domain (--zone): a rack, a room or a
	// cloud availability zone. The planner keeps a partition's copies in
	// distinct zones when the members' zones allow it, and warns when they
	// do not (R-CLU-7). Default "" (no zone). 0–64 characters of
	// [A-Za-z0-9_-].
	Zone string
	// Nodes is the node registry (--nodes; YAML "nodes:" as a list of
	// {id, host, client-port, peer-port, gossip-port, resp-port, http-port}
	// or of ID@HOST:CLIENT:PEER:GOSSIP[:RESP[:HTTP]] strings). Default
	// empty. Every registry node joins the others, the registry's first five
	// are the raft voters at bootstrap, and the formation gate waits for all
	// of them. A node listed in it takes its ports from its entry.
	Nodes []NodeEntry
	// StatefulSetReplicas, when positive and Nodes is empty, derives the
	// registry from Kubernetes StatefulSet ordinals (--statefulset-replicas,
	// R-OPS-6): pods NAME-0..NAME-(N-1) at NAME-i.StatefulSetDomain, each with
	// this node's ports; the pod name is NodeID, else $HOSTNAME. LoadConfig
	// does the derivation (StatefulSetRegistry); NewNode does not. Default 0
	// = off.
	StatefulSetReplicas int
	// StatefulSetDomain is the DNS domain of the StatefulSet's headless
	// service (--statefulset-domain), e.g. "zaris.default.svc.cluster.local".
	// Required with StatefulSetReplicas. Default "".
	StatefulSetDomain string
	// ExpectNodes is how many members the formation gate waits for before
	// the first map (--expect-nodes). Default 0 = the registry size, or 1.
	ExpectNodes int
	// AutoRebalance (--auto-rebalance, default true): once membership is
	// stable, a member that holds nothing (a node that joined) is given its
	// share of the partitions by live migration (R-MIG-1); false leaves it
	// a spare until an operator's rebalance.
	AutoRebalance bool
	// Partitions is the least number of partitions of the first map
	// (--partitions): the planner halves its largest ranges until there are
	// that many. Default 0 = as many as the placement needs (one per range
	// of segments with the same owner and replicas, R-CLU-7). At most the
	// store's segment count (256).
	Partitions int
	// Timings are the cluster's clocks. The flags --formation-stable (3s),
	// --formation-timeout (30s), --traffic-guard (60s), --member-grace
	// (30s), --raft-heartbeat-timeout (1s), --raft-election-timeout (1s),
	// --raft-leader-lease (500ms) and --gossip-probe-interval (500ms) set the
	// main ones; cluster.TestTimings() are short ones for tests.
	Timings cluster.Timings

	// MigrationPhaseHook is for tests only (no flag, no YAML): the raft
	// leader's migration driver calls it as a move reaches a phase
	// (cluster.MigrationPhase*); false abandons that step, as if the
	// leader died right there. Tests inject a fault in a precise phase.
	MigrationPhaseHook func(phase string, p cluster.Partition) bool `yaml:"-"`
	// FailoverHook is for tests only (no flag, no YAML): the raft leader's
	// failover sweep calls it before it acts on a partition whose owner is
	// not alive; false leaves the partition alone in that sweep. Tests hold
	// a failover back to reach what the map change of a lost member does.
	FailoverHook func(p cluster.Partition) bool `yaml:"-"`
}

// NodeEntry is one node of the registry (Config.Nodes).
type NodeEntry struct {
	ID         string `yaml:"id"`
	Host       string `yaml:"host"`
	ClientPort int    `yaml:"client-port"`
	PeerPort   int    `yaml:"peer-port"`
	GossipPort int    `yaml:"gossip-port"`
	RESPPort   int    `yaml:"resp-port"` // 0 = RESP off
	HTTPPort   int    `yaml:"http-port"` // 0 = HTTP off
}

// String is the compact form ID@HOST:CLIENT:PEER:GOSSIP:RESP:HTTP.
func (e NodeEntry) String() string {
	host := e.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return fmt.Sprintf("%s@%s:%d:%d:%d:%d:%d", e.ID, host, e.ClientPort, e.PeerPort, e.GossipPort, e.RESPPort, e.HTTPPort)
}

// ParseNodeEntry parses ID@HOST:CLIENT:PEER:GOSSIP[:RESP[:HTTP]] (a bracketed
// IPv6 host is allowed).
func ParseNodeEntry(s string) (NodeEntry, error) {
	id, rest, ok := strings.Cut(strings.TrimSpace(s), "@")
	if !ok || id == "" {
		return NodeEntry{}, errors.New("want ID@HOST:CLIENT:PEER:GOSSIP[:RESP[:HTTP]]")
	}
	var host string
	if strings.HasPrefix(rest, "[") {
		end := strings.Index(rest, "]")
		if end < 0 {
			return NodeEntry{}, errors.New("unclosed [ in the host")
		}
		host, rest = rest[1:end], strings.TrimPrefix(rest[end+1:], ":")
	} else {
		host, rest, _ = strings.Cut(rest, ":")
	}
	parts := strings.Split(rest, ":")
	if host == "" || len(parts) < 3 || len(parts) > 5 {
		return NodeEntry{}, errors.New("want ID@HOST:CLIENT:PEER:GOSSIP[:RESP[:HTTP]]")
	}
	ports := make([]int, 5)
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 {
			return NodeEntry{}, fmt.Errorf("port %q: want 0..65535", p)
		}
		ports[i] = n
	}
	return NodeEntry{ID: id, Host: host, ClientPort: ports[0], PeerPort: ports[1], GossipPort: ports[2],
		RESPPort: ports[3], HTTPPort: ports[4]}, nil
}

// registryEntry returns the registry entry of id.
func (c Config) registryEntry(id string) (NodeEntry, bool) {
	for _, e := range c.Nodes {
		if e.ID == id {
			return e, true
		}
	}
	return NodeEntry{}, false
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	maxW, minW := DefaultWorkers(runtime.NumCPU())
	return Config{
		Store:             DefaultStore,
		Bind:              DefaultBind,
		ClientPort:        DefaultClientPort,
		RESPPort:          DefaultRESPPort,
		PeerPort:          DefaultPeerPort,
		GossipPort:        DefaultGossipPort,
		HTTPPort:          DefaultHTTPPort,
		ReplicationFactor: DefaultReplicationFactor,
		AutoRebalance:     true,
		ReplicationMode:   ReplicationAsync,
		WriteQuorum:       WriteQuorumAll,
		SyncTimeout:       DefaultSyncTimeout,
		OpLogMaxOps:       store.DefaultOpLogMaxOps,
		OpLogMaxBytes:     store.DefaultOpLogMaxBytes,
		MemoryMaxBytes:    DefaultMemoryMaxBytes,
		MaxItemBytes:      DefaultMaxItemBytes,
		Eviction:          store.EvictLRU,
		MaxWorkers:        maxW,
		MinWorkers:        minW,
		ShutdownTimeout:   DefaultShutdownTimeout,
		LogLevel:          slog.LevelInfo,
		LogFormat:         LogText,
		Timings:           cluster.DefaultTimings(),
	}
}

// DefaultMemoryMaxRSS is the process memory bound zaris-server uses when
// --memory-max-rss is not given: the data a node holds — its owned data
// (memoryMaxBytes) plus, with replicationFactor copies, about as much again
// per extra copy in replica data — times RSSPerOwnedByte, plus RSSBaseBytes.
func DefaultMemoryMaxRSS(memoryMaxBytes int64, replicationFactor int) int64 {
	copies := int64(max(replicationFactor, 1))
	return int64(float64(memoryMaxBytes*copies)*RSSPerOwnedByte) + RSSBaseBytes
}

// DefaultWorkers is the default worker-pool width for cpus processors
// (seed 003, "worker pool"): max = cpus×16 clamped to 64..1024, min =
// max(4, cpus×4) but never above max.
func DefaultWorkers(cpus int) (maxWorkers, minWorkers int) {
	maxWorkers = min(max(cpus*16, 64), 1024)
	minWorkers = min(max(4, cpus*4), maxWorkers)
	return maxWorkers, minWorkers
}

// ErrInvalidConfig is wrapped by every error Validate returns.
var ErrInvalidConfig = errors.New("invalid config")

// sizeOf renders a byte size in a config error: "4 MiB (4194304 B)", so the
// user sees both the unit and the exact number the flag takes.
func sizeOf(n int64) string {
	h := kv.FormatBytes(n)
	if strings.HasSuffix(h, " B") {
		return h
	}
	return fmt.Sprintf("%s (%d B)", h, n)
}

// ConfigError is a field that Validate refused. Option is the flag name of
// the field (the name an operator knows). LoadConfig fills Source with where
// the refused value came from.
type ConfigError struct {
	Option  string // flag name, e.g. "client-port"
	Problem string
	Source  string // "" or e.g. "env ZARIS_CLIENT_PORT", "flag --client-port", "file zaris.yaml:3"
}

func (e *ConfigError) Error() string {
	s := fmt.Sprintf("%v: %s: %s", ErrInvalidConfig, e.Option, e.Problem)
	if e.Source != "" {
		s += " (set by " + e.Source + ")"
	}
	return s
}

// Unwrap makes errors.Is(err, ErrInvalidConfig) hold.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

var (
	nodeIDPattern    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	storeNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	hostnamePattern  = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$`)
)

// ValidNodeID reports whether id is a valid node id.
func ValidNodeID(id string) bool { return nodeIDPattern.MatchString(id) }

// ValidStoreName reports whether name is a valid store name.
func ValidStoreName(name string) bool { return storeNamePattern.MatchString(name) }

// Validate checks every field and the fields against each other. The first
// problem found is returned as a *ConfigError wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	bad := func(option, format string, args ...any) error {
		return &ConfigError{Option: option, Problem: fmt.Sprintf(format, args...)}
	}
	if c.NodeID != "" && !ValidNodeID(c.NodeID) {
		return bad("node-id", "%q: want 1-64 characters of [A-Za-z0-9._-] starting with a letter or digit", c.NodeID)
	}
	if !ValidStoreName(c.Store) {
		return bad("store", "%q: want 1-64 characters of [A-Za-z0-9_-]", c.Store)
	}
	if c.Bind == "" {
		return bad("bind", "empty (use 0.0.0.0 or :: to listen on every interface)")
	}
	if net.ParseIP(c.Bind) == nil && !hostnamePattern.MatchString(c.Bind) {
		return bad("bind", "%q is neither an IP address nor a host name", c.Bind)
	}

	ports := []struct {
		option string
		port   int
		offOK  bool
	}{
		{"client-port", c.ClientPort, false},
		{"resp-port", c.RESPPort, true},
		{"peer-port", c.PeerPort, false},
		{"gossip-port", c.GossipPort, false},
		{"http-port", c.HTTPPort, true},
	}
	used := make(map[int]string, len(ports))
	for _, p := range ports {
		switch {
		case p.port == EphemeralPort:
			continue
		case p.port == 0 && p.offOK:
			continue
		case p.port == 0:
			return bad(p.option, "0 is not allowed (this port cannot be turned off; -1 asks for an ephemeral port)")
		case p.port < 0 || p.port > 65535:
			return bad(p.option, "%d out of range 1..65535", p.port)
		}
		if other, dup := used[p.port]; dup {
			return bad(p.option, "port %d is also the %s", p.port, other)
		}
		used[p.port] = p.option
	}

	for _, addr := range c.Join {
		if err := checkHostPort(addr); err != nil {
			return bad("join", "%q: %v", addr, err)
		}
	}

	if c.ReplicationFactor < 1 {
		return bad("replication-factor", "%d: must be at least 1 (1 = no replica)", c.ReplicationFactor)
	}
	switch c.ReplicationMode {
	case ReplicationAsync, ReplicationSync:
	default:
		return bad("replication-mode", "%q: want async or sync", c.ReplicationMode)
	}
	switch c.WriteQuorum {
	case WriteQuorumAll, WriteQuorumMajority, WriteQuorumBestEffort:
	default:
		return bad("write-quorum", "%q: want all, majority or besteffort", c.WriteQuorum)
	}
	if c.SyncTimeout <= 0 {
		return bad("sync-timeout", "%v: must be positive", c.SyncTimeout)
	}
	if c.OpLogMaxOps < 1 {
		return bad("oplog-max-ops", "%d: must be at least 1", c.OpLogMaxOps)
	}
	if c.OpLogMaxBytes < 1 {
		return bad("oplog-max-bytes", "%d: must be at least 1", c.OpLogMaxBytes)
	}
	if c.Follow != "" {
		if err := validFollowSource(c.Follow); err != nil {
			return bad("follow", "%v", err)
		}
	}
	if c.FeedRetentionBytes < 0 || c.FeedRetentionBytes > 1<<40 || c.FeedRetentionAge < 0 {
		return bad("feed-retention", "%d bytes, %v: out of range (0..1TiB, a non-negative duration)", c.FeedRetentionBytes, c.FeedRetentionAge)
	}
	for _, l := range []struct {
		name string
		n    int
	}{{"client-event-loops", c.ClientEventLoops}, {"resp-event-loops", c.RESPEventLoops}} {
		if l.n < -1 || l.n > evloop.MaxLoops {
			return bad(l.name, "%d: out of range (-1 = none, 0 = one per two CPUs, at most %d)", l.n, evloop.MaxLoops)
		}
	}

	if c.MemoryMaxBytes <= 0 {
		return bad("memory-max-bytes", "%d: must be positive (there is no unlimited)", c.MemoryMaxBytes)
	}
	if c.MemoryMaxRSS != 0 && c.MemoryMaxRSS < c.MemoryMaxBytes {
		return bad("memory-max-rss", "%s is below memory-max-bytes %s (0 = off)", sizeOf(c.MemoryMaxRSS), sizeOf(c.MemoryMaxBytes))
	}
	switch {
	case c.MaxItemBytes <= 0:
		return bad("max-item-bytes", "%d: must be positive", c.MaxItemBytes)
	case int64(c.MaxItemBytes) > c.MemoryMaxBytes:
		return bad("max-item-bytes", "%s exceeds memory-max-bytes %s: one item must fit in the cap", sizeOf(int64(c.MaxItemBytes)), sizeOf(c.MemoryMaxBytes))
	case c.MaxItemBytes > MaxItemBytesLimit:
		return bad("max-item-bytes", "%s exceeds the limit of %s", sizeOf(int64(c.MaxItemBytes)), sizeOf(MaxItemBytesLimit))
	}
	if _, err := store.ParseEvictionPolicy(c.Eviction.String()); err != nil {
		return bad("eviction", "%v: not an eviction policy", c.Eviction)
	}

	for _, r := range c.Token {
		if r <= ' ' || r > '~' {
			return bad("token", "must be printable ASCII without spaces (it travels in an HTTP header and in RESP AUTH)")
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return bad("tls-key", "tls-cert and tls-key go together: set both or neither")
	}
	if c.TLSCA != "" && c.TLSCert == "" {
		return bad("tls-ca", "needs tls-cert and tls-key (the CA verifies peers of a TLS listener)")
	}
	switch c.TLSClientAuth {
	case "", TLSClientAuthNone:
	case TLSClientAuthRequest, TLSClientAuthRequire:
		if c.TLSCA == "" {
			return bad("tls-client-auth", "%s needs tls-ca (the CA client certificates must chain to)", c.TLSClientAuth)
		}
	default:
		return bad("tls-client-auth", "%q: want none, request or require", c.TLSClientAuth)
	}

	if c.MaxWorkers < 1 || c.MaxWorkers > MaxWorkersLimit {
		return bad("max-workers", "%d out of range 1..%d", c.MaxWorkers, MaxWorkersLimit)
	}
	if c.MinWorkers < 1 || c.MinWorkers > c.MaxWorkers {
		return bad("min-workers", "%d out of range 1..max-workers (%d)", c.MinWorkers, c.MaxWorkers)
	}
	if c.ShutdownTimeout <= 0 {
		return bad("shutdown-timeout", "%v: must be positive", c.ShutdownTimeout)
	}
	switch c.LogFormat {
	case LogText, LogJSON:
	default:
		return bad("log-format", "%q: want text or json", c.LogFormat)
	}
	return c.validateCluster(bad)
}

// validateCluster checks the cluster options: the registry (no duplicate
// ids, no two services on one host:port, this node's entry agreeing with
// its ports), the formation and partition counts and the timings.
func (c Config) validateCluster(bad func(option, format string, args ...any) error) error {
	if c.ClusterID != "" && !storeNamePattern.MatchString(c.ClusterID) {
		return bad("cluster-id", "%q: want 0-64 characters of [A-Za-z0-9_-]", c.ClusterID)
	}
	if c.Zone != "" && !storeNamePattern.MatchString(c.Zone) {
		return bad("zone", "%q: want 0-64 characters of [A-Za-z0-9_-]", c.Zone)
	}
	seen := map[string]int{}
	owner := map[string]string{} // host:port → "node "x" client-port"
	for i, e := range c.Nodes {
		where := fmt.Sprintf("entry %d (%q)", i+1, e.ID)
		if !ValidNodeID(e.ID) {
			return bad("nodes", "%s: id %q: want 1-64 characters of [A-Za-z0-9._-] starting with a letter or digit", where, e.ID)
		}
		if j, dup := seen[e.ID]; dup {
			return bad("nodes", "node id %q is listed twice (entries %d and %d): node ids must be unique", e.ID, j+1, i+1)
		}
		seen[e.ID] = i
		if e.Host == "" || net.ParseIP(e.Host) == nil && !hostnamePattern.MatchString(e.Host) {
			return bad("nodes", "%s: host %q is neither an IP address nor a host name", where, e.Host)
		}
		for _, p := range []struct {
			name  string
			port  int
			offOK bool
		}{{"client-port", e.ClientPort, false}, {"peer-port", e.PeerPort, false}, {"gossip-port", e.GossipPort, false},
			{"resp-port", e.RESPPort, true}, {"http-port", e.HTTPPort, true}} {
			switch {
			case p.port == 0 && p.offOK:
				continue
			case p.port < 1 || p.port > 65535:
				return bad("nodes", "%s: %s %d out of range 1..65535", where, p.name, p.port)
			}
			key := net.JoinHostPort(e.Host, strconv.Itoa(p.port))
			what := fmt.Sprintf("node %q's %s", e.ID, p.name)
			if other, dup := owner[key]; dup {
				return bad("nodes", "%s and %s are both %s: overlapping ports", other, what, key)
			}
			owner[key] = what
		}
	}
	if e, ok := c.registryEntry(c.NodeID); ok && c.NodeID != "" {
		for _, p := range []struct {
			option     string
			mine, want int
		}{{"client-port", c.ClientPort, e.ClientPort}, {"peer-port", c.PeerPort, e.PeerPort},
			{"gossip-port", c.GossipPort, e.GossipPort}, {"resp-port", c.RESPPort, e.RESPPort}, {"http-port", c.HTTPPort, e.HTTPPort}} {
			if p.mine != p.want && p.mine != EphemeralPort {
				return bad(p.option, "%d, but this node's entry in nodes (%q) says %d: leave it unset or make them agree", p.mine, c.NodeID, p.want)
			}
		}
	}
	if c.ExpectNodes < 0 {
		return bad("expect-nodes", "%d: must be 0 (the registry size, or 1) or more", c.ExpectNodes)
	}
	if c.Partitions < 0 || c.Partitions > store.DefaultSegments {
		return bad("partitions", "%d out of range 0..%d (0 = as the placement needs)", c.Partitions, store.DefaultSegments)
	}
	if err := c.Timings.Validate(); err != nil {
		option, problem, _ := strings.Cut(err.Error(), ": ")
		return bad(option, "%s", problem)
	}
	return nil
}

func checkHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want HOST:PORT")
	}
	if host == "" {
		return errors.New("missing host")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q out of range 1..65535", port)
	}
	return nil
}

// The values of TLSClientAuth.
const (
	TLSClientAuthNone    = "none"
	TLSClientAuthRequest = "request"
	TLSClientAuthRequire = "require"
)

// ClientAuthMode is the effective TLSClientAuth: its default resolved.
func (c Config) ClientAuthMode() string {
	switch {
	case c.TLSClientAuth != "":
		return c.TLSClientAuth
	case c.TLSCA != "":
		return TLSClientAuthRequire
	}
	return TLSClientAuthNone
}

// TLSEnabled reports whether the node's listeners speak TLS.
func (c Config) TLSEnabled() bool { return c.TLSCert != "" }

// AuthEnabled reports whether clients must present the token.
func (c Config) AuthEnabled() bool { return c.Token != "" }

// LogValue keeps the token out of logs: a Config logged with slog shows
// whether authentication is on, never the secret.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("node_id", c.NodeID),
		slog.String("store", c.Store),
		slog.String("bind", c.Bind),
		slog.Int("client_port", c.ClientPort),
		slog.Int("resp_port", c.RESPPort),
		slog.Int("peer_port", c.PeerPort),
		slog.Int("gossip_port", c.GossipPort),
		slog.Int("http_port", c.HTTPPort),
		slog.Any("join", c.Join),
		slog.String("data_dir", c.DataDir),
		slog.Int("replication_factor", c.ReplicationFactor),
		slog.String("replication_mode", string(c.ReplicationMode)),
		slog.String("write_quorum", string(c.WriteQuorum)),
		slog.Duration("sync_timeout", c.SyncTimeout),
		slog.Int64("memory_max_bytes", c.MemoryMaxBytes),
		slog.Int("max_item_bytes", c.MaxItemBytes),
		slog.Int64("memory_max_rss", c.MemoryMaxRSS),
		slog.String("eviction", c.Eviction.String()),
		slog.Bool("auth", c.AuthEnabled()),
		slog.Bool("tls", c.TLSEnabled()),
		slog.String("tls_client_auth", c.ClientAuthMode()),
		slog.Bool("cluster_secret", c.ClusterSecretFile != ""),
		slog.Int("max_workers", c.MaxWorkers),
		slog.Int("min_workers", c.MinWorkers),
		slog.String("shutdown_timeout", c.ShutdownTimeout.String()),
		slog.String("cluster_id", c.ClusterID),
		slog.String("zone", c.Zone),
		slog.Int("registry_nodes", len(c.Nodes)),
		slog.Int("expect_nodes", c.ExpectNodes),
		slog.Int("partitions", c.Partitions),
	)
}

// storeConfig derives the store engine's configuration: the engine defaults
// with the node's memory, item and eviction settings.
func (c Config) storeConfig(logger *slog.Logger) store.Config {
	sc := store.DefaultConfig()
	sc.MaxMemoryBytes = c.MemoryMaxBytes
	sc.MaxItemBytes = c.MaxItemBytes
	if c.MemoryMaxRSS > 0 {
		sc.MaxProcessBytes = c.MemoryMaxRSS
		sc.ProcessBytes = func() int64 { n, _ := procmem.RSS(); return n }
	}
	sc.Eviction = c.Eviction
	sc.OpLogMaxOps, sc.OpLogMaxBytes = c.OpLogMaxOps, c.OpLogMaxBytes
	sc.FeedRetentionBytes, sc.FeedRetentionAge = int(c.FeedRetentionBytes), c.FeedRetentionAge
	sc.Logger = logger
	return sc
}

package server

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/zaris-io/zaris/server/store"
)

// ErrVersion is returned by LoadConfig when the arguments ask for the
// version (--version): the caller prints Version and exits 0.
var ErrVersion = errors.New("version requested")

// ErrHelp is returned by LoadConfig for -h / --help: the caller prints
// Usage and exits 0.
var ErrHelp = flag.ErrHelp

// SourceError is a value that could not be parsed, with where it came from:
//
//	ZARIS_CLIENT_PORT="abc": not a port
//	--memory-max-bytes="lots": not a byte size (e.g. 1073741824, 512MiB, 1GiB)
//	zaris.yaml:3: eviction="sometimes": want lru, lfu, noeviction, …
type SourceError struct {
	Source string // the variable, the flag, or FILE:LINE: KEY
	Value  string
	Err    error
}

func (e *SourceError) Error() string { return fmt.Sprintf("%s=%q: %v", e.Source, e.Value, e.Err) }
func (e *SourceError) Unwrap() error { return e.Err }

// option is one setting of the server binary: a flag, its environment
// variables and its YAML key, and how to parse a value into the Config.
type option struct {
	name  string   // flag name and YAML key
	env   []string // environment variables; env[0] is ZARIS_<NAME>
	arg   string   // value placeholder in the usage text
	usage string
	list  bool // repeated flags and YAML sequences append (comma-joined)
	set   func(c *Config, v string) error
	show  func(c Config) string // the default, for the usage text
}

// envName is the environment variable of a flag: ZARIS_ + upper snake case.
func envName(flagName string) string {
	return "ZARIS_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// options lists every setting, in usage order. The first block is fixed by
// API.md; the rest are Zaris additions.
var options = []option{
	{name: "node-id", arg: "ID", usage: "stable node id (default: the host name)",
		set:  func(c *Config, v string) error { c.NodeID = v; return nil },
		show: func(c Config) string { return c.NodeID }},
	{name: "store", arg: "NAME", usage: "store name",
		set:  func(c *Config, v string) error { c.Store = v; return nil },
		show: func(c Config) string { return c.Store }},
	{name: "bind", arg: "ADDR", usage: "listen address",
		set:  func(c *Config, v string) error { c.Bind = v; return nil },
		show: func(c Config) string { return c.Bind }},
	portOption("client-port", "native protocol port (-1 = ephemeral)", func(c *Config) *int { return &c.ClientPort }),
	portOption("resp-port", "RESP port (0 = off, -1 = ephemeral)", func(c *Config) *int { return &c.RESPPort }),
	intOption("client-event-loops", "event loops serving plain-TCP native connections (Linux; 0 = one per two CPUs, -1 = a goroutine per connection)", func(c *Config) *int { return &c.ClientEventLoops }),
	intOption("resp-event-loops", "event loops serving plain-TCP RESP connections (Linux; 0 = one per two CPUs, -1 = a goroutine per connection)", func(c *Config) *int { return &c.RESPEventLoops }),
	portOption("peer-port", "replication/migration/raft port (-1 = ephemeral)", func(c *Config) *int { return &c.PeerPort }),
	portOption("gossip-port", "memberlist port (-1 = ephemeral)", func(c *Config) *int { return &c.GossipPort }),
	portOption("http-port", "HTTP health/metrics/REST port (0 = off, -1 = ephemeral)", func(c *Config) *int { return &c.HTTPPort }),
	{name: "join", arg: "HOST:PORT,...", list: true, usage: "gossip addresses of existing members (empty = start a new cluster)",
		set:  func(c *Config, v string) error { c.Join = splitList(v); return nil },
		show: func(c Config) string { return strings.Join(c.Join, ",") }},
	{name: "data-dir", arg: "DIR", usage: "control-plane state directory (empty = in memory)",
		set:  func(c *Config, v string) error { c.DataDir = v; return nil },
		show: func(c Config) string { return c.DataDir }},
	intOption("replication-factor", "total copies of each partition", func(c *Config) *int { return &c.ReplicationFactor }),
	{name: "replication-mode", arg: "async|sync", usage: "acknowledge after the local apply (async) or after the replicas (sync)",
		set: func(c *Config, v string) error {
			switch m := ReplicationMode(strings.ToLower(v)); m {
			case ReplicationAsync, ReplicationSync:
				c.ReplicationMode = m
				return nil
			}
			return errors.New("want async or sync")
		},
		show: func(c Config) string { return string(c.ReplicationMode) }},
	{name: "write-quorum", arg: "all|majority|besteffort", usage: "replica acknowledgements a sync write needs",
		set: func(c *Config, v string) error {
			switch q := WriteQuorum(strings.ToLower(v)); q {
			case WriteQuorumAll, WriteQuorumMajority, WriteQuorumBestEffort:
				c.WriteQuorum = q
				return nil
			}
			return errors.New("want all, majority or besteffort")
		},
		show: func(c Config) string { return string(c.WriteQuorum) }},
	durationOption("sync-timeout", "how long a sync write waits for its replicas before answering Timeout", func(c *Config) *time.Duration { return &c.SyncTimeout }),
	intOption("oplog-max-ops", "op-log entries kept per segment (a replica further behind catches up by snapshot)", func(c *Config) *int { return &c.OpLogMaxOps }),
	{name: "oplog-max-bytes", arg: "N", usage: "value bytes kept by each segment's op-log (units allowed: 256KiB)",
		set: func(c *Config, v string) error {
			n, err := parseBytes(v)
			if err == nil && n > 1<<40 {
				return errors.New("too large")
			}
			c.OpLogMaxBytes = int(n)
			return err
		},
		show: func(c Config) string { return strconv.Itoa(c.OpLogMaxBytes) }},
	{name: "follow", arg: "zaris://PRIMARY_SEEDS/STORE", usage: "follow another cluster's change feed (a WAN follower): apply its changes, refuse client writes until zarisctl promote; acts on a cluster that never followed",
		set:  func(c *Config, v string) error { c.Follow = v; return nil },
		show: func(c Config) string { return "" }},
	{name: "feed-retention", arg: "SIZE|DURATION", usage: "change-feed retention per segment beyond the op-log: a size (64MiB), a duration (10m) or both (64MiB,10m); 0 = off",
		set: func(c *Config, v string) error {
			c.FeedRetentionBytes, c.FeedRetentionAge = 0, 0
			for _, part := range splitList(v) {
				if d, err := time.ParseDuration(part); err == nil {
					c.FeedRetentionAge = d
					continue
				}
				n, err := parseBytes(part)
				if err != nil {
					return fmt.Errorf("%q: want a size (64MiB) or a duration (10m)", part)
				}
				c.FeedRetentionBytes = n
			}
			return nil
		},
		show: func(c Config) string {
			var parts []string
			if c.FeedRetentionBytes > 0 {
				parts = append(parts, strconv.FormatInt(c.FeedRetentionBytes, 10))
			}
			if c.FeedRetentionAge > 0 {
				parts = append(parts, c.FeedRetentionAge.String())
			}
			if len(parts) == 0 {
				return "0"
			}
			return strings.Join(parts, ",")
		}},
	{name: "memory-max-bytes", arg: "N", usage: "cap of owned data in bytes (units allowed: 512MiB, 1GiB)",
		set: func(c *Config, v string) error {
			n, err := parseBytes(v)
			c.MemoryMaxBytes = n
			return err
		},
		show: func(c Config) string { return strconv.FormatInt(c.MemoryMaxBytes, 10) }},
	{name: "memory-max-rss", arg: "N", usage: "bound of the process's resident memory; eviction keeps RSS under it (default: from memory-max-bytes; 0 = off)",
		set: func(c *Config, v string) error {
			n, err := parseBytes(v)
			c.MemoryMaxRSS = n
			return err
		},
		show: func(c Config) string { return strconv.FormatInt(c.MemoryMaxRSS, 10) }},
	{name: "max-item-bytes", arg: "N", usage: "cap of one key in bytes: a string's value, a collection's data as serialised (units allowed: 4MiB)",
		set: func(c *Config, v string) error {
			n, err := parseBytes(v)
			if err == nil && n > int64(MaxItemBytesLimit) {
				return fmt.Errorf("above the limit of %d", MaxItemBytesLimit)
			}
			c.MaxItemBytes = int(n)
			return err
		},
		show: func(c Config) string { return strconv.Itoa(c.MaxItemBytes) }},
	{name: "token", arg: "T", usage: "token every client must present (empty = no authentication)",
		set:  func(c *Config, v string) error { c.Token = v; return nil },
		show: func(Config) string { return "" }},
	{name: "tls-cert", arg: "F", usage: "PEM certificate; with --tls-key every listener speaks TLS",
		set:  func(c *Config, v string) error { c.TLSCert = v; return nil },
		show: func(c Config) string { return c.TLSCert }},
	{name: "tls-key", arg: "F", usage: "PEM private key of --tls-cert",
		set:  func(c *Config, v string) error { c.TLSKey = v; return nil },
		show: func(c Config) string { return c.TLSKey }},
	{name: "tls-ca", arg: "F", usage: "PEM CA bundle that peer and client certificates must chain to",
		set:  func(c *Config, v string) error { c.TLSCA = v; return nil },
		show: func(c Config) string { return c.TLSCA }},
	{name: "tls-client-auth", arg: "MODE", usage: "client certificates: none, request or require (default: require with --tls-ca, else none)",
		set:  func(c *Config, v string) error { c.TLSClientAuth = v; return nil },
		show: func(c Config) string { return c.TLSClientAuth }},
	{name: "cluster-secret-file", arg: "F", usage: "cluster secret: base64 keys, one a line, first = primary; encrypts gossip, authenticates peers (SIGHUP re-reads)",
		set:  func(c *Config, v string) error { c.ClusterSecretFile = v; return nil },
		show: func(c Config) string { return c.ClusterSecretFile }},

	{name: "cluster-id", arg: "ID", usage: "cluster name; a node of another cluster is refused",
		set:  func(c *Config, v string) error { c.ClusterID = v; return nil },
		show: func(c Config) string { return c.ClusterID }},
	{name: "zone", arg: "ZONE", usage: "this node's failure domain (rack, zone): copies of a partition go to distinct zones",
		set:  func(c *Config, v string) error { c.Zone = v; return nil },
		show: func(c Config) string { return c.Zone }},
	{name: "nodes", arg: "ID@HOST:CLIENT:PEER:GOSSIP[:RESP[:HTTP]],...", list: true,
		usage: "node registry (YAML: a list of {id, host, client-port, peer-port, gossip-port, resp-port, http-port})",
		set: func(c *Config, v string) error {
			c.Nodes = nil
			for _, item := range splitList(v) {
				e, err := ParseNodeEntry(item)
				if err != nil {
					return fmt.Errorf("%q: %w", item, err)
				}
				c.Nodes = append(c.Nodes, e)
			}
			return nil
		},
		show: func(c Config) string {
			out := make([]string, len(c.Nodes))
			for i, e := range c.Nodes {
				out[i] = e.String()
			}
			return strings.Join(out, ",")
		}},
	intOption("statefulset-replicas", "derive the registry from Kubernetes StatefulSet ordinals: pods NAME-0..NAME-(N-1), this node's name from node-id or $HOSTNAME (0 = off)", func(c *Config) *int { return &c.StatefulSetReplicas }),
	{name: "statefulset-domain", arg: "DOMAIN", usage: "DNS domain of the StatefulSet's headless service (pods resolve as NAME-i.DOMAIN)",
		set:  func(c *Config, v string) error { c.StatefulSetDomain = v; return nil },
		show: func(c Config) string { return c.StatefulSetDomain }},
	intOption("expect-nodes", "members the formation gate waits for (0 = registry size, or 1)", func(c *Config) *int { return &c.ExpectNodes }),
	{name: "auto-rebalance", arg: "true|false", usage: "give a member that holds nothing its share by live migration once membership is stable (false: it stays a spare until a rebalance)",
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return errors.New("want true or false")
			}
			c.AutoRebalance = b
			return nil
		},
		show: func(c Config) string { return strconv.FormatBool(c.AutoRebalance) }},
	intOption("partitions", "least partitions of the first map (0 = as the placement needs)", func(c *Config) *int { return &c.Partitions }),
	durationOption("formation-stable", "membership stability before the first map", func(c *Config) *time.Duration { return &c.Timings.FormationStable }),
	durationOption("formation-timeout", "first map forced after this long", func(c *Config) *time.Duration { return &c.Timings.FormationTimeout }),
	durationOption("traffic-guard", "open the client ports after this long even unconverged", func(c *Config) *time.Duration { return &c.Timings.TrafficGuard }),
	durationOption("member-grace", "an unreachable member is lost after this long", func(c *Config) *time.Duration { return &c.Timings.MemberGrace }),
	durationOption("suspect-escalation", "a silent active owner is failed over after this long", func(c *Config) *time.Duration { return &c.Timings.SuspectEscalation }),
	durationOption("health-debounce", "a degraded partition whose copies caught up turns healthy after this long", func(c *Config) *time.Duration { return &c.Timings.HealthDebounce }),
	durationOption("raft-heartbeat-timeout", "raft follower timeout", func(c *Config) *time.Duration { return &c.Timings.RaftHeartbeat }),
	durationOption("raft-election-timeout", "raft candidate timeout", func(c *Config) *time.Duration { return &c.Timings.RaftElection }),
	durationOption("raft-leader-lease", "raft leader lease (at most the heartbeat timeout)", func(c *Config) *time.Duration { return &c.Timings.RaftLeaderLease }),
	durationOption("gossip-probe-interval", "memberlist failure-detector probe interval", func(c *Config) *time.Duration { return &c.Timings.GossipProbeInterval }),

	{name: "eviction", arg: "POLICY", usage: "at the memory cap: lru (sampled LRU, the default), lfu (sampled LFU), noeviction (refuse writes), or any Redis maxmemory-policy name (volatile-lru, allkeys-random, volatile-ttl, …)",
		set: func(c *Config, v string) error {
			p, err := store.ParseEvictionPolicy(strings.ToLower(v))
			if err != nil {
				return errors.New("want lru, lfu, noeviction, allkeys-lru, allkeys-lfu, allkeys-random, volatile-lru, volatile-lfu, volatile-random or volatile-ttl")
			}
			c.Eviction = p
			return nil
		},
		show: func(c Config) string { return c.Eviction.String() }},
	withEnv(intOption("max-workers", "dispatch worker pool bound", func(c *Config) *int { return &c.MaxWorkers }), "ZARIS_SERVER_MAX_WORKERS"),
	withEnv(intOption("min-workers", "dispatch workers kept warm", func(c *Config) *int { return &c.MinWorkers }), "ZARIS_SERVER_MIN_WORKERS"),
	{name: "shutdown-timeout", arg: "DURATION", usage: "bound of a graceful stop (e.g. 30s)",
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil {
				return errors.New("not a duration (e.g. 30s, 1m)")
			}
			c.ShutdownTimeout = d
			return nil
		},
		show: func(c Config) string { return c.ShutdownTimeout.String() }},
	{name: "log-level", arg: "LEVEL", usage: "debug, info, warn or error",
		set: func(c *Config, v string) error {
			var l slog.Level
			if err := l.UnmarshalText([]byte(v)); err != nil {
				return errors.New("want debug, info, warn or error")
			}
			c.LogLevel = l
			return nil
		},
		show: func(c Config) string { return strings.ToLower(c.LogLevel.String()) }},
	{name: "log-format", arg: "text|json", usage: "log line format",
		set: func(c *Config, v string) error {
			switch f := LogFormat(strings.ToLower(v)); f {
			case LogText, LogJSON:
				c.LogFormat = f
				return nil
			}
			return errors.New("want text or json")
		},
		show: func(c Config) string { return string(c.LogFormat) }},
}

func init() {
	for i := range options {
		options[i].env = append([]string{envName(options[i].name)}, options[i].env...)
	}
}

func portOption(name, usage string, field func(*Config) *int) option {
	return option{name: name, arg: "N", usage: usage,
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return errors.New("not a port")
			}
			if n < -1 || n > 65535 {
				return errors.New("not a port (want 0..65535, or -1 for an ephemeral port)")
			}
			*field(c) = n
			return nil
		},
		show: func(c Config) string { return strconv.Itoa(*field(&c)) }}
}

func durationOption(name, usage string, field func(*Config) *time.Duration) option {
	return option{name: name, arg: "DURATION", usage: usage,
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil {
				return errors.New("not a duration (e.g. 3s, 500ms)")
			}
			*field(c) = d
			return nil
		},
		show: func(c Config) string { return field(&c).String() }}
}

func intOption(name, usage string, field func(*Config) *int) option {
	return option{name: name, arg: "N", usage: usage,
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return errors.New("not an integer")
			}
			*field(c) = n
			return nil
		},
		show: func(c Config) string { return strconv.Itoa(*field(&c)) }}
}

// withEnv adds environment variables beyond ZARIS_<FLAG> (the R-OPS-3
// names of the worker-pool settings).
func withEnv(o option, env ...string) option {
	o.env = append(o.env, env...)
	return o
}

func lookupOption(name string) *option {
	for i := range options {
		if options[i].name == name {
			return &options[i]
		}
	}
	return nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// parseBytes parses a byte count: a plain integer, or a number with a unit
// (B, KB, MB, GB, TB in powers of 1000; KiB, MiB, GiB, TiB in powers of 1024).
func parseBytes(v string) (int64, error) {
	bad := errors.New("not a byte size (e.g. 1073741824, 512MiB, 1GiB)")
	s := strings.TrimSpace(v)
	i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsDigit(r) })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, bad
	}
	mult := map[string]int64{
		"": 1, "b": 1,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	}[strings.ToLower(unit)]
	if mult == 0 {
		return 0, bad
	}
	if n > (1<<63-1)/mult {
		return 0, errors.New("byte size overflows")
	}
	return n * mult, nil
}

// LoadConfig builds the configuration of the server binary from its
// arguments (without the program name) and its environment (lookupEnv is
// os.LookupEnv in the binary; nil means no environment).
//
// Every option is a flag (--client-port 7861), an environment variable
// (ZARIS_ + the flag name in upper snake case: ZARIS_CLIENT_PORT) and a key
// of the YAML file named by --config or ZARIS_CONFIG (the flag name:
// "client-port: 7861"). A value is taken from, in decreasing precedence:
//
//	flag  >  environment variable  >  config file  >  DefaultConfig()
//
// An environment variable set to the empty string counts as unset. Unknown
// YAML keys, unknown flags and positional arguments are errors. A value that
// does not parse is a *SourceError naming its origin
// (`ZARIS_CLIENT_PORT="abc": not a port`); a merged configuration that fails
// Validate is a *ConfigError whose Source names the origin of the refused
// value. --version returns ErrVersion and -h/--help returns ErrHelp.
//
// Besides ZARIS_MAX_WORKERS and ZARIS_MIN_WORKERS, the worker-pool bounds
// are also read from ZARIS_SERVER_MAX_WORKERS and ZARIS_SERVER_MIN_WORKERS
// (R-OPS-3); setting both names of one option to different values is an
// error.
func LoadConfig(args []string, lookupEnv func(string) (string, bool)) (Config, error) {
	if lookupEnv == nil {
		lookupEnv = func(string) (string, bool) { return "", false }
	}

	// 1. Parse the flags, recording values without applying them: they
	// apply last, whatever their position on the command line.
	type flagValue struct{ name, value string }
	var (
		flagValues  []flagValue
		configFile  string
		configGiven bool
		version     bool
	)
	fs := flag.NewFlagSet("zaris-server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for i := range options {
		name := options[i].name
		fs.Func(name, options[i].usage, func(v string) error {
			flagValues = append(flagValues, flagValue{name, v})
			return nil
		})
	}
	fs.Func("config", "YAML config file", func(v string) error {
		configFile, configGiven = v, true
		return nil
	})
	fs.BoolVar(&version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Config{}, ErrHelp
		}
		return Config{}, err
	}
	if version {
		return Config{}, ErrVersion
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q (every setting is a --flag)", fs.Arg(0))
	}

	cfg := DefaultConfig()
	sources := make(map[string]string) // option name → origin of its value

	// 2. The config file.
	if !configGiven {
		if v, ok := lookupEnv("ZARIS_CONFIG"); ok && v != "" {
			configFile, configGiven = v, true
		}
	}
	if configGiven {
		if configFile == "" {
			return Config{}, errors.New("--config: empty file name")
		}
		data, err := os.ReadFile(configFile)
		if err != nil {
			return Config{}, fmt.Errorf("config file: %w", err)
		}
		if err := applyYAML(&cfg, configFile, data, sources); err != nil {
			return Config{}, err
		}
	}

	// 3. The environment.
	for i := range options {
		o := &options[i]
		var value, from string
		for _, name := range o.env {
			v, ok := lookupEnv(name)
			if !ok || v == "" {
				continue
			}
			if from != "" && v != value {
				return Config{}, fmt.Errorf("%s=%q and %s=%q disagree: set one of them", from, value, name, v)
			}
			value, from = v, name
		}
		if from == "" {
			continue
		}
		if err := o.set(&cfg, value); err != nil {
			return Config{}, &SourceError{Source: from, Value: value, Err: err}
		}
		sources[o.name] = "env " + from
	}

	// 4. The flags. A repeated list flag (--join a --join b) appends.
	seen := make(map[string]bool)
	for _, fv := range flagValues {
		o := lookupOption(fv.name)
		value := fv.value
		if o.list && seen[o.name] {
			value = o.show(cfg) + "," + value
		}
		seen[o.name] = true
		if err := o.set(&cfg, value); err != nil {
			return Config{}, &SourceError{Source: "--" + o.name, Value: fv.value, Err: err}
		}
		sources[o.name] = "flag --" + o.name
	}

	// A StatefulSet pod derives the registry from its ordinal.
	if err := applyStatefulSet(&cfg, lookupEnv, sources); err != nil {
		return Config{}, err
	}

	// 5. A node listed in the registry takes the ports it left unset from
	// its entry.
	if len(cfg.Nodes) > 0 {
		id := cfg.NodeID
		if id == "" {
			host, _ := os.Hostname()
			id = NodeIDFromHostname(host)
		}
		if e, ok := cfg.registryEntry(id); ok {
			for _, p := range []struct {
				option string
				field  *int
				value  int
			}{{"client-port", &cfg.ClientPort, e.ClientPort}, {"peer-port", &cfg.PeerPort, e.PeerPort},
				{"gossip-port", &cfg.GossipPort, e.GossipPort}, {"resp-port", &cfg.RESPPort, e.RESPPort},
				{"http-port", &cfg.HTTPPort, e.HTTPPort}} {
				if sources[p.option] == "" {
					*p.field = p.value
					sources[p.option] = "nodes entry " + strconv.Quote(id)
				}
			}
		}
	}

	// The process memory bound follows the cap unless given.
	if sources["memory-max-rss"] == "" {
		cfg.MemoryMaxRSS = DefaultMemoryMaxRSS(cfg.MemoryMaxBytes, cfg.ReplicationFactor)
	}

	// The probe timeout has no flag of its own: it follows the probe
	// interval (half of it, at most the default).
	if half := cfg.Timings.GossipProbeInterval / 2; cfg.Timings.GossipProbeTimeout > half && half > 0 {
		cfg.Timings.GossipProbeTimeout = half
	}

	// A cap below the default item size: blame the flag the user set, not
	// the default they never touched, and say what to set.
	if sources["max-item-bytes"] == "" && sources["memory-max-bytes"] != "" && cfg.MemoryMaxBytes > 0 && int64(cfg.MaxItemBytes) > cfg.MemoryMaxBytes {
		return Config{}, &ConfigError{Option: "memory-max-bytes", Source: sources["memory-max-bytes"],
			Problem: fmt.Sprintf("%s is below the default max-item-bytes %s (one item must fit in the cap): raise --memory-max-bytes or also set --max-item-bytes to at most %d",
				sizeOf(cfg.MemoryMaxBytes), sizeOf(int64(cfg.MaxItemBytes)), cfg.MemoryMaxBytes)}
	}
	if err := cfg.Validate(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			ce.Source = sources[ce.Option]
		}
		return Config{}, err
	}
	return cfg, nil
}

// applyYAML sets the options of a YAML mapping whose keys are flag names.
func applyYAML(cfg *Config, path string, data []byte, sources map[string]string) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil // an empty file sets nothing
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%s:%d: the file must be a mapping of option: value (e.g. client-port: 7861)", path, root.Line)
	}
	seen := make(map[string]int)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		o := lookupOption(k.Value)
		if o == nil {
			hint := ""
			if alt := strings.ToLower(strings.ReplaceAll(k.Value, "_", "-")); lookupOption(alt) != nil {
				hint = fmt.Sprintf(" (did you mean %q?)", alt)
			}
			return fmt.Errorf("%s:%d: unknown key %q%s; keys are the flag names, e.g. client-port", path, k.Line, k.Value, hint)
		}
		if line, dup := seen[o.name]; dup {
			return fmt.Errorf("%s:%d: key %q already set on line %d", path, k.Line, k.Value, line)
		}
		seen[o.name] = k.Line
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		source := fmt.Sprintf("%s:%d: %s", path, v.Line, o.name)
		var value string
		switch {
		case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
			return &SourceError{Source: source, Value: "", Err: errors.New("no value")}
		case v.Kind == yaml.ScalarNode:
			value = v.Value
		case v.Kind == yaml.SequenceNode && o.list:
			var items []string
			for _, it := range v.Content {
				if it.Kind == yaml.MappingNode && o.name == "nodes" {
					var e NodeEntry
					if err := decodeNodeEntry(it, &e); err != nil {
						return fmt.Errorf("%s:%d: nodes: %v", path, it.Line, err)
					}
					items = append(items, e.String())
					continue
				}
				if it.Kind != yaml.ScalarNode {
					return fmt.Errorf("%s:%d: %s: list items must be plain values", path, it.Line, o.name)
				}
				items = append(items, it.Value)
			}
			value = strings.Join(items, ",")
		default:
			return fmt.Errorf("%s:%d: %s: want a single value", path, v.Line, o.name)
		}
		if err := o.set(cfg, value); err != nil {
			return &SourceError{Source: source, Value: value, Err: err}
		}
		sources[o.name] = fmt.Sprintf("file %s:%d", path, v.Line)
	}
	return nil
}

// Usage writes the options of the server binary, with their defaults and
// environment variables, to w.
func Usage(w io.Writer) {
	var b bytes.Buffer
	def := DefaultConfig()
	b.WriteString("usage: zaris-server [--config FILE.yaml] [flags]\n\n")
	b.WriteString("Every flag is also an environment variable and a YAML key of the config file.\n")
	b.WriteString("Precedence: flag > environment > config file > default.\n\n")
	fmt.Fprintf(&b, "  --%-27s %s (env ZARIS_CONFIG)\n", "config FILE", "YAML config file; keys are the flag names")
	for _, o := range options {
		fmt.Fprintf(&b, "  --%-27s %s", o.name+" "+o.arg, o.usage)
		if d := o.show(def); d != "" {
			fmt.Fprintf(&b, " (default %s)", d)
		}
		fmt.Fprintf(&b, "\n  %29s env %s\n", "", strings.Join(o.env, ", "))
	}
	fmt.Fprintf(&b, "  --%-27s %s\n", "version", "print the version and exit")
	_, _ = w.Write(b.Bytes())
}

// decodeNodeEntry decodes one registry entry of the YAML "nodes:" list,
// refusing unknown keys.
func decodeNodeEntry(n *yaml.Node, e *NodeEntry) error {
	known := map[string]bool{"id": true, "host": true, "client-port": true, "peer-port": true, "gossip-port": true,
		"resp-port": true, "http-port": true}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; !known[k] {
			return fmt.Errorf("unknown key %q in a node entry (keys: id, host, client-port, peer-port, gossip-port, resp-port, http-port)", k)
		}
	}
	if err := n.Decode(e); err != nil {
		return err
	}
	if e.ID == "" || strings.ContainsAny(e.ID, "@,") || strings.ContainsAny(e.Host, "@,") {
		return fmt.Errorf("entry needs an id and a host, without '@' or ','")
	}
	return nil
}

package server

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/store"
)

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "zaris.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// The precedence is flag > env > file > default, for every combination of
// sources (API.md "The server binary").
func TestLoadConfigPrecedence(t *testing.T) {
	file := writeFile(t, "client-port: 1001\nstore: from-file\n")
	for _, tc := range []struct {
		name      string
		file, env bool
		flag      bool
		wantPort  int
		wantStore string
	}{
		{"nothing: default", false, false, false, 7861, "default"},
		{"file only", true, false, false, 1001, "from-file"},
		{"env only", false, true, false, 1002, "default"},
		{"flag only", false, false, true, 1003, "default"},
		{"env beats file", true, true, false, 1002, "from-file"},
		{"flag beats file", true, false, true, 1003, "from-file"},
		{"flag beats env", false, true, true, 1003, "default"},
		{"flag beats env beats file", true, true, true, 1003, "from-file"},
	} {
		var args []string
		env := map[string]string{}
		if tc.file {
			args = append(args, "--config", file)
		}
		if tc.env {
			env["ZARIS_CLIENT_PORT"] = "1002"
		}
		if tc.flag {
			args = append(args, "--client-port", "1003")
		}
		cfg, err := LoadConfig(args, envMap(env))
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.wantPort, cfg.ClientPort, tc.name)
		require.Equal(t, tc.wantStore, cfg.Store, tc.name)
	}
}

func TestLoadConfigEveryOption(t *testing.T) {
	file := writeFile(t, `
node-id: n1
store: orders
bind: 0.0.0.0
client-port: 17861
resp-port: 0
peer-port: 17811
gossip-port: 17946
http-port: 17801
join:
  - 10.0.0.1:7946
  - 10.0.0.2:7946
data-dir: /var/lib/zaris
replication-factor: 3
replication-mode: sync
write-quorum: majority
sync-timeout: 750ms
oplog-max-ops: 64
oplog-max-bytes: 64KiB
memory-max-bytes: 2GiB
memory-max-rss: 5GiB
max-item-bytes: 1MiB
eviction: noeviction
token: file-token
tls-cert: /etc/zaris/cert.pem
tls-key: /etc/zaris/key.pem
tls-ca: /etc/zaris/ca.pem
max-workers: 512
min-workers: 64
shutdown-timeout: 45s
log-level: debug
log-format: json
auto-rebalance: false
`)
	cfg, err := LoadConfig([]string{"--config", file}, nil)
	require.NoError(t, err)
	want := Config{
		NodeID: "n1", Store: "orders", Bind: "0.0.0.0",
		ClientPort: 17861, RESPPort: 0, PeerPort: 17811, GossipPort: 17946, HTTPPort: 17801,
		Join:    []string{"10.0.0.1:7946", "10.0.0.2:7946"},
		DataDir: "/var/lib/zaris", ReplicationFactor: 3, ReplicationMode: ReplicationSync,
		WriteQuorum: WriteQuorumMajority, SyncTimeout: 750 * time.Millisecond, OpLogMaxOps: 64, OpLogMaxBytes: 64 << 10,
		MemoryMaxBytes: 2 << 30, MemoryMaxRSS: 5 << 30, MaxItemBytes: 1 << 20,
		Eviction: store.NoEviction, Token: "file-token",
		TLSCert: "/etc/zaris/cert.pem", TLSKey: "/etc/zaris/key.pem", TLSCA: "/etc/zaris/ca.pem",
		MaxWorkers: 512, MinWorkers: 64, ShutdownTimeout: 45 * time.Second,
		LogLevel: -4, LogFormat: LogJSON, Timings: cluster.DefaultTimings(),
	}
	require.Equal(t, want, cfg)

	// The same through flags, with the API.md spelling of every flag.
	args := []string{
		"--node-id", "n1", "--store", "orders", "--bind", "0.0.0.0",
		"--client-port", "17861", "--resp-port", "0", "--peer-port", "17811", "--gossip-port", "17946",
		"--http-port", "17801", "--join", "10.0.0.1:7946,10.0.0.2:7946", "--data-dir", "/var/lib/zaris",
		"--replication-factor", "3", "--replication-mode", "sync", "--write-quorum", "majority",
		"--sync-timeout", "750ms", "--oplog-max-ops", "64", "--oplog-max-bytes", "65536",
		"--memory-max-bytes", "2147483648", "--memory-max-rss", "5GiB", "--max-item-bytes", "1048576", "--eviction", "noeviction",
		"--token", "file-token", "--tls-cert", "/etc/zaris/cert.pem", "--tls-key", "/etc/zaris/key.pem",
		"--tls-ca", "/etc/zaris/ca.pem", "--max-workers", "512", "--min-workers", "64",
		"--shutdown-timeout", "45s", "--log-level", "debug", "--log-format", "json", "--auto-rebalance", "false",
	}
	cfg, err = LoadConfig(args, nil)
	require.NoError(t, err)
	require.Equal(t, want, cfg)

	// And through the environment: ZARIS_ + upper snake case of the flag.
	env := map[string]string{}
	for i := 0; i < len(args); i += 2 {
		env[envName(strings.TrimPrefix(args[i], "--"))] = args[i+1]
	}
	require.Equal(t, "17861", env["ZARIS_CLIENT_PORT"])
	cfg, err = LoadConfig(nil, envMap(env))
	require.NoError(t, err)
	require.Equal(t, want, cfg)
}

// --memory-max-rss follows the cap and the replication factor unless given;
// 0 turns it off; below the cap it is refused.
func TestMemoryMaxRSSDefaultAndBounds(t *testing.T) {
	cfg, err := LoadConfig([]string{"--memory-max-bytes", "256MiB", "--replication-factor", "2"}, nil)
	require.NoError(t, err)
	require.Equal(t, DefaultMemoryMaxRSS(256<<20, 2), cfg.MemoryMaxRSS)
	require.Equal(t, int64(2*256<<20*RSSPerOwnedByte)+RSSBaseBytes, cfg.MemoryMaxRSS)
	cfg, err = LoadConfig([]string{"--memory-max-rss", "0"}, nil)
	require.NoError(t, err)
	require.Zero(t, cfg.MemoryMaxRSS, "0 = off")
	require.Zero(t, cfg.storeConfig(nil).MaxProcessBytes)
	cfg, err = LoadConfig(nil, envMap(map[string]string{"ZARIS_MEMORY_MAX_RSS": "3GiB"}))
	require.NoError(t, err)
	require.Equal(t, int64(3<<30), cfg.MemoryMaxRSS)
	require.Equal(t, int64(3<<30), cfg.storeConfig(nil).MaxProcessBytes)
	_, err = LoadConfig([]string{"--memory-max-bytes", "1GiB", "--memory-max-rss", "512MiB"}, nil)
	require.EqualError(t, err, `invalid config: memory-max-rss: 512 MiB (536870912 B) is below memory-max-bytes 1 GiB (1073741824 B) (0 = off) (set by flag --memory-max-rss)`)
}

// A cap below the default item size blames the flag the user set and says
// what to set; an item cap the user set over the cap blames that one.
func TestLoadConfigBlamesTheFlagTheUserSet(t *testing.T) {
	_, err := LoadConfig([]string{"--memory-max-bytes", "1KB"}, nil)
	require.EqualError(t, err, `invalid config: memory-max-bytes: 1000 B is below the default max-item-bytes 4 MiB (4194304 B) (one item must fit in the cap): raise --memory-max-bytes or also set --max-item-bytes to at most 1000 (set by flag --memory-max-bytes)`)
	_, err = LoadConfig(nil, envMap(map[string]string{"ZARIS_MEMORY_MAX_BYTES": "2MiB"}))
	require.ErrorContains(t, err, "memory-max-bytes: 2 MiB (2097152 B) is below the default max-item-bytes")
	require.ErrorContains(t, err, "(set by env ZARIS_MEMORY_MAX_BYTES)")
	_, err = LoadConfig([]string{"--memory-max-bytes", "1KB", "--max-item-bytes", "2KB"}, nil)
	require.EqualError(t, err, `invalid config: max-item-bytes: 1.95 KiB (2000 B) exceeds memory-max-bytes 1000 B: one item must fit in the cap (set by flag --max-item-bytes)`)
	cfg, err := LoadConfig([]string{"--memory-max-bytes", "1KB", "--max-item-bytes", "512"}, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1000, cfg.MemoryMaxBytes)
}

func TestLoadConfigErrorsNameTheSource(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		file string
		want string // exact error text
	}{
		{"bad env port", nil, map[string]string{"ZARIS_CLIENT_PORT": "abc"}, "",
			`ZARIS_CLIENT_PORT="abc": not a port`},
		{"bad flag port", []string{"--http-port", "http"}, nil, "",
			`--http-port="http": not a port`},
		{"bad env byte size", nil, map[string]string{"ZARIS_MEMORY_MAX_BYTES": "lots"}, "",
			`ZARIS_MEMORY_MAX_BYTES="lots": not a byte size (e.g. 1073741824, 512MiB, 1GiB)`},
		{"bad file value", nil, nil, "store: x\neviction: random\n",
			`FILE:2: eviction="random": want lru, lfu, noeviction, allkeys-lru, allkeys-lfu, allkeys-random, volatile-lru, volatile-lfu, volatile-random or volatile-ttl`},
		{"file null value", nil, nil, "client-port:\n",
			`FILE:1: client-port="": no value`},
		{"bad R-OPS-3 variable", nil, map[string]string{"ZARIS_SERVER_MAX_WORKERS": "many"}, "",
			`ZARIS_SERVER_MAX_WORKERS="many": not an integer`},
		{"two names disagree", nil, map[string]string{"ZARIS_MAX_WORKERS": "100", "ZARIS_SERVER_MAX_WORKERS": "200"}, "",
			`ZARIS_MAX_WORKERS="100" and ZARIS_SERVER_MAX_WORKERS="200" disagree: set one of them`},
		{"invalid after merge, from env", nil, map[string]string{"ZARIS_HTTP_PORT": "7861"}, "",
			`invalid config: http-port: port 7861 is also the client-port (set by env ZARIS_HTTP_PORT)`},
		{"invalid after merge, from flag", []string{"--store", "a.b"}, nil, "",
			`invalid config: store: "a.b": want 1-64 characters of [A-Za-z0-9_-] (set by flag --store)`},
		{"invalid after merge, from file", nil, nil, "\n\nreplication-factor: 0\n",
			`invalid config: replication-factor: 0: must be at least 1 (1 = no replica) (set by file FILE:3)`},
		{"unknown flag", []string{"--client_port", "1"}, nil, "",
			`flag provided but not defined: -client_port`},
		{"positional argument", []string{"serve"}, nil, "",
			`unexpected argument "serve" (every setting is a --flag)`},
	} {
		args := tc.args
		path := ""
		if tc.file != "" {
			path = writeFile(t, tc.file)
			args = append([]string{"--config", path}, args...)
		}
		_, err := LoadConfig(args, envMap(tc.env))
		require.Error(t, err, tc.name)
		require.Equal(t, strings.ReplaceAll(tc.want, "FILE", path), err.Error(), tc.name)
	}
}

func TestLoadConfigUnknownYAMLKey(t *testing.T) {
	path := writeFile(t, "store: orders\nclient_port: 7000\n")
	_, err := LoadConfig([]string{"--config", path}, nil)
	require.EqualError(t, err, path+`:2: unknown key "client_port" (did you mean "client-port"?); keys are the flag names, e.g. client-port`)

	path = writeFile(t, "colour: blue\n")
	_, err = LoadConfig([]string{"--config", path}, nil)
	require.ErrorContains(t, err, `unknown key "colour"`)

	// --config cannot nest, and a key may appear once.
	path = writeFile(t, "config: other.yaml\n")
	_, err = LoadConfig([]string{"--config", path}, nil)
	require.ErrorContains(t, err, `unknown key "config"`)
	path = writeFile(t, "store: a\nstore: b\n")
	_, err = LoadConfig([]string{"--config", path}, nil)
	require.ErrorContains(t, err, `key "store" already set on line 1`)
}

func TestLoadConfigFileShape(t *testing.T) {
	path := writeFile(t, "- client-port\n")
	_, err := LoadConfig([]string{"--config", path}, nil)
	require.ErrorContains(t, err, "must be a mapping")

	path = writeFile(t, "store: {name: x}\n")
	_, err = LoadConfig([]string{"--config", path}, nil)
	require.ErrorContains(t, err, "store: want a single value")

	path = writeFile(t, "")
	cfg, err := LoadConfig([]string{"--config", path}, nil)
	require.NoError(t, err, "an empty file sets nothing")
	want := DefaultConfig()
	want.MemoryMaxRSS = DefaultMemoryMaxRSS(want.MemoryMaxBytes, want.ReplicationFactor) // derived by LoadConfig
	require.Equal(t, want, cfg)

	_, err = LoadConfig([]string{"--config", filepath.Join(t.TempDir(), "missing.yaml")}, nil)
	require.ErrorIs(t, err, os.ErrNotExist)

	// ZARIS_CONFIG names the file when --config does not.
	path = writeFile(t, "store: via-env\n")
	cfg, err = LoadConfig(nil, envMap(map[string]string{"ZARIS_CONFIG": path}))
	require.NoError(t, err)
	require.Equal(t, "via-env", cfg.Store)
}

func TestLoadConfigDetails(t *testing.T) {
	// An empty environment variable counts as unset.
	cfg, err := LoadConfig(nil, envMap(map[string]string{"ZARIS_CLIENT_PORT": ""}))
	require.NoError(t, err)
	require.Equal(t, DefaultClientPort, cfg.ClientPort)

	// R-OPS-3 names of the worker-pool variables.
	cfg, err = LoadConfig(nil, envMap(map[string]string{"ZARIS_SERVER_MAX_WORKERS": "512", "ZARIS_SERVER_MIN_WORKERS": "64"}))
	require.NoError(t, err)
	require.Equal(t, 512, cfg.MaxWorkers)
	require.Equal(t, 64, cfg.MinWorkers)
	cfg, err = LoadConfig(nil, envMap(map[string]string{"ZARIS_MAX_WORKERS": "300", "ZARIS_SERVER_MAX_WORKERS": "300"}))
	require.NoError(t, err, "two names agreeing is fine")
	require.Equal(t, 300, cfg.MaxWorkers)

	// A repeated --join appends; a later flag of any other kind replaces.
	cfg, err = LoadConfig([]string{"--join", "a:1", "--join", "b:2,c:3", "--store", "x", "--store", "y"}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"a:1", "b:2", "c:3"}, cfg.Join)
	require.Equal(t, "y", cfg.Store)

	// Flags apply last whatever their position relative to --config.
	path := writeFile(t, "store: from-file\n")
	cfg, err = LoadConfig([]string{"--store", "from-flag", "--config", path}, nil)
	require.NoError(t, err)
	require.Equal(t, "from-flag", cfg.Store)

	// Single-dash flags work too (the flag package accepts both).
	cfg, err = LoadConfig([]string{"-http-port=0", "-resp-port", "-1"}, nil)
	require.NoError(t, err)
	require.Equal(t, 0, cfg.HTTPPort)
	require.Equal(t, EphemeralPort, cfg.RESPPort)

	// --eviction takes every policy the store has, by Redis's names too.
	for name, want := range map[string]store.EvictionPolicy{"lru": store.EvictLRU, "allkeys-lru": store.EvictLRU,
		"lfu": store.EvictAllKeysLFU, "allkeys-lfu": store.EvictAllKeysLFU, "volatile-lfu": store.EvictVolatileLFU,
		"volatile-ttl": store.EvictVolatileTTL, "NoEviction": store.NoEviction} {
		cfg, err = LoadConfig([]string{"--eviction", name}, nil)
		require.NoError(t, err, name)
		require.Equal(t, want, cfg.Eviction, name)
	}

	_, err = LoadConfig([]string{"--version"}, nil)
	require.ErrorIs(t, err, ErrVersion)
	_, err = LoadConfig([]string{"--help"}, nil)
	require.ErrorIs(t, err, ErrHelp)
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1024": 1024, "4MiB": 4 << 20, "1GiB": 1 << 30, "1 GiB": 1 << 30,
		"2g": 2 << 30, "10KB": 10_000, "3MB": 3_000_000, "7b": 7,
	} {
		got, err := parseBytes(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "-1", "1.5GiB", "GiB", "12XB", "99999999999TiB"} {
		_, err := parseBytes(in)
		require.Error(t, err, in)
	}
}

func TestUsageListsEveryOptionAndEnv(t *testing.T) {
	var b bytes.Buffer
	Usage(&b)
	out := b.String()
	for _, o := range options {
		require.Contains(t, out, "--"+o.name+" ")
		require.Contains(t, out, o.env[0])
	}
	require.Contains(t, out, "ZARIS_SERVER_MAX_WORKERS")
	require.Contains(t, out, "flag > environment > config file > default")
}

// --gossip-probe-interval alone stays valid below the default probe
// timeout: the timeout follows it.
func TestProbeTimeoutFollowsTheProbeInterval(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want time.Duration
	}{
		{"200ms", 100 * time.Millisecond},
		{"2s", 250 * time.Millisecond},
	} {
		c, err := LoadConfig([]string{"--gossip-probe-interval", tc.flag}, func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatalf("%s: %v", tc.flag, err)
		}
		if c.Timings.GossipProbeTimeout != tc.want {
			t.Errorf("%s: probe timeout %v, want %v", tc.flag, c.Timings.GossipProbeTimeout, tc.want)
		}
	}
}

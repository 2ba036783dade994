package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/server/store"
)

func TestDefaultConfigIsValidAndMatchesAPI(t *testing.T) {
	c := DefaultConfig()
	require.NoError(t, c.Validate())
	// The defaults API.md and DESIGN.md fix.
	require.Equal(t, "default", c.Store)
	require.Equal(t, "127.0.0.1", c.Bind)
	require.Equal(t, 7861, c.ClientPort)
	require.Equal(t, 6380, c.RESPPort)
	require.Equal(t, 7811, c.PeerPort)
	require.Equal(t, 7946, c.GossipPort)
	require.Equal(t, 7801, c.HTTPPort)
	require.Equal(t, 1, c.ReplicationFactor)
	require.Equal(t, ReplicationAsync, c.ReplicationMode)
	require.Equal(t, int64(1<<30), c.MemoryMaxBytes)
	require.Equal(t, 4<<20, c.MaxItemBytes)
	require.Equal(t, store.EvictLRU, c.Eviction)
	require.Equal(t, LogText, c.LogFormat)
}

func TestDefaultWorkers(t *testing.T) {
	for _, tc := range []struct {
		cpus, max, min int
		why            string
	}{
		{1, 64, 4, "a tiny node still gets a pool wide enough that a few parked workers cannot stall it"},
		{2, 64, 8, "floor of 64 workers"},
		{4, 64, 16, "cpus×16 = 64"},
		{8, 128, 32, "scales with cores"},
		{64, 1024, 256, "cpus×16 = 1024, the cap"},
		{256, 1024, 1024, "the cap bounds context switching; min never exceeds max"},
	} {
		maxW, minW := DefaultWorkers(tc.cpus)
		require.Equal(t, tc.max, maxW, "cpus=%d: %s", tc.cpus, tc.why)
		require.Equal(t, tc.min, minW, "cpus=%d: %s", tc.cpus, tc.why)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mod    func(*Config)
		option string // "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"ephemeral ports everywhere (tests)", func(c *Config) {
			c.ClientPort, c.RESPPort, c.PeerPort, c.GossipPort, c.HTTPPort = -1, -1, -1, -1, -1
		}, ""},
		{"resp and http off", func(c *Config) { c.RESPPort, c.HTTPPort = 0, 0 }, ""},
		{"event loops off", func(c *Config) { c.RESPEventLoops, c.ClientEventLoops = -1, -1 }, ""},
		{"event loops at the bound", func(c *Config) { c.RESPEventLoops, c.ClientEventLoops = 1024, 1024 }, ""},
		{"resp event loops past the bound", func(c *Config) { c.RESPEventLoops = 1 << 62 }, "resp-event-loops"},
		{"client event loops negative other than -1", func(c *Config) { c.ClientEventLoops = -1 << 62 }, "client-event-loops"},
		{"client port cannot be off", func(c *Config) { c.ClientPort = 0 }, "client-port"},
		{"peer port cannot be off", func(c *Config) { c.PeerPort = 0 }, "peer-port"},
		{"port out of range", func(c *Config) { c.GossipPort = 70000 }, "gossip-port"},
		{"negative port other than -1", func(c *Config) { c.HTTPPort = -2 }, "http-port"},
		{"two listeners on one port", func(c *Config) { c.HTTPPort = c.ClientPort }, "http-port"},
		{"resp on the peer port", func(c *Config) { c.RESPPort = c.PeerPort }, "peer-port"},
		{"two off ports are not a clash", func(c *Config) { c.RESPPort, c.HTTPPort = 0, 0 }, ""},
		{"node id syntax", func(c *Config) { c.NodeID = "node 1" }, "node-id"},
		{"node id may not start with a dot", func(c *Config) { c.NodeID = ".n1" }, "node-id"},
		{"node id too long", func(c *Config) { c.NodeID = strings.Repeat("n", 65) }, "node-id"},
		{"node id of a pod", func(c *Config) { c.NodeID = "zaris-0.zaris.default.svc" }, ""},
		{"store name empty", func(c *Config) { c.Store = "" }, "store"},
		{"store name with a dot", func(c *Config) { c.Store = "a.b" }, "store"},
		{"store name of 64", func(c *Config) { c.Store = strings.Repeat("s", 64) }, ""},
		{"store name of 65", func(c *Config) { c.Store = strings.Repeat("s", 65) }, "store"},
		{"bind empty", func(c *Config) { c.Bind = "" }, "bind"},
		{"bind garbage", func(c *Config) { c.Bind = "not an address!" }, "bind"},
		{"bind all v6", func(c *Config) { c.Bind = "::" }, ""},
		{"bind host name", func(c *Config) { c.Bind = "localhost" }, ""},
		{"join without port", func(c *Config) { c.Join = []string{"10.0.0.1"} }, "join"},
		{"join with bad port", func(c *Config) { c.Join = []string{"10.0.0.1:0"} }, "join"},
		{"join without host", func(c *Config) { c.Join = []string{":7946"} }, "join"},
		{"join ok", func(c *Config) { c.Join = []string{"10.0.0.1:7946", "[::1]:7946", "zaris-0:7946"} }, ""},
		{"replication factor 0", func(c *Config) { c.ReplicationFactor = 0 }, "replication-factor"},
		{"replication mode", func(c *Config) { c.ReplicationMode = "eventually" }, "replication-mode"},
		{"write quorum", func(c *Config) { c.WriteQuorum = "some" }, "write-quorum"},
		{"sync timeout", func(c *Config) { c.SyncTimeout = 0 }, "sync-timeout"},
		{"op-log entries", func(c *Config) { c.OpLogMaxOps = 0 }, "oplog-max-ops"},
		{"op-log bytes", func(c *Config) { c.OpLogMaxBytes = -1 }, "oplog-max-bytes"},
		{"no unlimited memory", func(c *Config) { c.MemoryMaxBytes = 0 }, "memory-max-bytes"},
		{"item size zero", func(c *Config) { c.MaxItemBytes = 0 }, "max-item-bytes"},
		{"item larger than memory", func(c *Config) { c.MemoryMaxBytes, c.MaxItemBytes = 1<<20, 2<<20 }, "max-item-bytes"},
		{"item larger than a frame", func(c *Config) { c.MaxItemBytes = MaxItemBytesLimit + 1 }, "max-item-bytes"},
		{"eviction unknown", func(c *Config) { c.Eviction = store.EvictionPolicy(9) }, "eviction"},
		{"token with space", func(c *Config) { c.Token = "a b" }, "token"},
		{"token with newline (header injection)", func(c *Config) { c.Token = "a\r\nX: y" }, "token"},
		{"token ok", func(c *Config) { c.Token = "s3cr3t-Token_1" }, ""},
		{"tls cert without key", func(c *Config) { c.TLSCert = "c.pem" }, "tls-key"},
		{"tls key without cert", func(c *Config) { c.TLSKey = "k.pem" }, "tls-key"},
		{"tls ca without cert", func(c *Config) { c.TLSCA = "ca.pem" }, "tls-ca"},
		{"tls full", func(c *Config) { c.TLSCert, c.TLSKey, c.TLSCA = "c", "k", "ca" }, ""},
		{"min workers above max", func(c *Config) { c.MaxWorkers, c.MinWorkers = 64, 65 }, "min-workers"},
		{"min workers zero", func(c *Config) { c.MinWorkers = 0 }, "min-workers"},
		{"max workers above the cap", func(c *Config) { c.MaxWorkers = MaxWorkersLimit + 1 }, "max-workers"},
		{"shutdown timeout zero", func(c *Config) { c.ShutdownTimeout = 0 }, "shutdown-timeout"},
		{"log format", func(c *Config) { c.LogFormat = "xml" }, "log-format"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		err := c.Validate()
		if tc.option == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		require.Error(t, err, tc.name)
		require.True(t, errors.Is(err, ErrInvalidConfig), tc.name)
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), tc.name)
		require.Equal(t, tc.option, ce.Option, "%s: %v", tc.name, err)
	}
}

func TestNodeIDFromHostname(t *testing.T) {
	for host, want := range map[string]string{
		"zaris-0":               "zaris-0",
		"zaris-0.zaris.ns.svc":  "zaris-0.zaris.ns.svc",
		"my host":               "my-host",
		"":                      "zaris",
		"---":                   "zaris",
		strings.Repeat("h", 80): strings.Repeat("h", 64),
		"_leading.underscore":   "leading.underscore",
		"ünïcode":               "n--code",
	} {
		got := NodeIDFromHostname(host)
		require.Equal(t, want, got, "host %q", host)
		require.True(t, ValidNodeID(got))
	}
}

func TestConfigLogValueHidesToken(t *testing.T) {
	c := DefaultConfig()
	c.Token = "top-secret"
	s := c.LogValue().String()
	require.NotContains(t, s, "top-secret")
	require.Contains(t, s, "auth=true")
}

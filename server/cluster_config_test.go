package server

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRegistryValidation(t *testing.T) {
	entry := func(id, host string, client, peer, gossip int) NodeEntry {
		return NodeEntry{ID: id, Host: host, ClientPort: client, PeerPort: peer, GossipPort: gossip}
	}
	cases := []struct {
		name  string
		nodes []NodeEntry
		want  string // part of the message; "" = valid
	}{
		{"distinct nodes on one host", []NodeEntry{entry("a", "127.0.0.1", 7001, 7101, 7201), entry("b", "127.0.0.1", 7002, 7102, 7202)}, ""},
		{"the same ports on different hosts", []NodeEntry{entry("a", "10.0.0.1", 7001, 7101, 7201), entry("b", "10.0.0.2", 7001, 7101, 7201)}, ""},
		{"duplicate node ids: two members would fight over one identity",
			[]NodeEntry{entry("a", "10.0.0.1", 7001, 7101, 7201), entry("a", "10.0.0.2", 7001, 7101, 7201)}, `node id "a" is listed twice`},
		{"overlapping ports across nodes of one host",
			[]NodeEntry{entry("a", "127.0.0.1", 7001, 7101, 7201), entry("b", "127.0.0.1", 7002, 7001, 7202)}, "overlapping ports"},
		{"overlapping ports inside one entry",
			[]NodeEntry{entry("a", "127.0.0.1", 7001, 7001, 7201)}, "overlapping ports"},
		{"a required port missing", []NodeEntry{entry("a", "127.0.0.1", 7001, 0, 7201)}, "peer-port 0 out of range"},
		{"a bad id", []NodeEntry{entry("-a", "127.0.0.1", 7001, 7101, 7201)}, "id"},
		{"a bad host", []NodeEntry{entry("a", "not a host", 7001, 7101, 7201)}, "host"},
	}
	for _, c := range cases {
		cfg := DefaultConfig()
		cfg.Nodes = c.nodes
		err := cfg.Validate()
		if c.want == "" {
			require.NoError(t, err, c.name)
			continue
		}
		require.ErrorIs(t, err, ErrInvalidConfig, c.name)
		require.Contains(t, err.Error(), c.want, c.name)
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), c.name)
		require.Equal(t, "nodes", ce.Option, c.name)
	}

	// NewNode refuses it too, before binding anything.
	cfg := testConfig()
	cfg.Nodes = cases[2].nodes
	_, err := NewNode(cfg, nil)
	require.ErrorContains(t, err, "listed twice")

	// This node's entry must agree with its own ports.
	cfg = DefaultConfig()
	cfg.NodeID = "a"
	cfg.Nodes = []NodeEntry{entry("a", "127.0.0.1", 7001, 7101, 7201)}
	require.ErrorContains(t, cfg.Validate(), "this node's entry in nodes")

	for _, bad := range []func(*Config){
		func(c *Config) { c.ClusterID = "a b" },
		func(c *Config) { c.Partitions = 1000 },
		func(c *Config) { c.ExpectNodes = -1 },
		func(c *Config) { c.Timings.RaftLeaderLease = 2 * c.Timings.RaftHeartbeat },
	} {
		c := DefaultConfig()
		bad(&c)
		require.ErrorIs(t, c.Validate(), ErrInvalidConfig)
	}
}

func TestParseNodeEntry(t *testing.T) {
	e, err := ParseNodeEntry("n1@10.0.0.1:7861:7811:7946:6380:7801")
	require.NoError(t, err)
	require.Equal(t, NodeEntry{ID: "n1", Host: "10.0.0.1", ClientPort: 7861, PeerPort: 7811, GossipPort: 7946, RESPPort: 6380, HTTPPort: 7801}, e)
	back, err := ParseNodeEntry(e.String())
	require.NoError(t, err)
	require.Equal(t, e, back)
	e, err = ParseNodeEntry("n2@[::1]:1:2:3")
	require.NoError(t, err)
	require.Equal(t, "::1", e.Host)
	back, err = ParseNodeEntry(e.String())
	require.NoError(t, err)
	require.Equal(t, e, back)
	for _, bad := range []string{"", "n1", "@h:1:2:3", "n1@h:1:2", "n1@h:1:2:3:4:5:6", "n1@h:x:2:3", "n1@[::1:1:2:3"} {
		_, err := ParseNodeEntry(bad)
		require.Error(t, err, bad)
	}
}

func TestLoadConfigRegistry(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "zaris.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`
cluster-id: blue
partitions: 3
formation-stable: 1s
nodes:
  - {id: n1, host: 127.0.0.1, client-port: 7001, peer-port: 7101, gossip-port: 7201, resp-port: 7301, http-port: 7401}
  - {id: n2, host: 127.0.0.1, client-port: 7002, peer-port: 7102, gossip-port: 7202}
  - n3@127.0.0.1:7003:7103:7203
`), 0o600))
	cfg, err := LoadConfig([]string{"--config", file, "--node-id", "n1"}, nil)
	require.NoError(t, err)
	require.Equal(t, "blue", cfg.ClusterID)
	require.Equal(t, 3, cfg.Partitions)
	require.Len(t, cfg.Nodes, 3)
	require.Equal(t, "n3", cfg.Nodes[2].ID)
	// The node takes the ports it left unset from its entry.
	require.Equal(t, 7001, cfg.ClientPort)
	require.Equal(t, 7101, cfg.PeerPort)
	require.Equal(t, 7201, cfg.GossipPort)
	require.Equal(t, 7301, cfg.RESPPort)
	require.Equal(t, 7401, cfg.HTTPPort)
	require.Equal(t, "1s", cfg.Timings.FormationStable.String())

	// A port set elsewhere that contradicts the entry is refused.
	_, err = LoadConfig([]string{"--config", file, "--node-id", "n1", "--client-port", "9999"}, nil)
	require.ErrorContains(t, err, "this node's entry in nodes")

	// The flag form, and an unknown key in an entry.
	cfg, err = LoadConfig([]string{"--nodes", "a@127.0.0.1:1:2:3,b@127.0.0.1:4:5:6", "--node-id", "b"}, nil)
	require.NoError(t, err)
	require.Len(t, cfg.Nodes, 2)
	require.Equal(t, 4, cfg.ClientPort)
	require.NoError(t, os.WriteFile(file, []byte("nodes:\n  - {id: n1, host: h, client: 1}\n"), 0o600))
	_, err = LoadConfig([]string{"--config", file}, nil)
	require.ErrorContains(t, err, `unknown key "client"`)
	require.True(t, strings.Contains(err.Error(), "zaris.yaml:2"), err.Error())
}

func TestStandaloneNodeLeadsItsOwnCluster(t *testing.T) {
	n := startNode(t, testConfig())
	require.True(t, n.Ready(), "a lone node is ready when Start returns")
	st := n.ClusterStatus()
	require.Equal(t, "test-node", string(st.Leader))
	require.Equal(t, uint64(1), st.MapVersion)
	require.Len(t, st.Partitions, 1)
	require.Equal(t, 0, st.Partitions[0].FirstSegment)
	require.Equal(t, 255, st.Partitions[0].LastSegment)
	require.Equal(t, "open", st.TrafficGate)
	require.True(t, n.Store().Segment(0).Owned())
	require.NoError(t, n.WaitReady(context.Background()))

	// The control plane survives a restart with a data directory: the map
	// comes back from the raft log.
	cfg := testConfig()
	cfg.DataDir = t.TempDir()
	d := startNode(t, cfg)
	require.Equal(t, uint64(1), d.ClusterStatus().MapVersion)
	require.NoError(t, d.Stop(context.Background()))
	d2 := startNode(t, cfg)
	require.True(t, d2.Ready())
	// Version 1 replayed from the log, then version 2: the restarted node
	// bound new ephemeral ports and the map follows its addresses.
	// The address update is committed by the node's control loop after it
	// is ready: wait for it (and never see a re-plan from 1).
	require.Eventually(t, func() bool {
		v := d2.ClusterStatus().MapVersion
		if v != 2 {
			return false
		}
		self, ok := d2.Cluster().Map().Node("test-node")
		return ok && self.ClientPort == d2.ClientAddr().(*net.TCPAddr).Port
	}, 10*time.Second, 5*time.Millisecond, "replayed then updated to follow the new addresses")
}

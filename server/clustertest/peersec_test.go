package clustertest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/clustertest"
)

// logBuffer collects every node's log lines for assertions.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) count(s string) int { return strings.Count(l.String(), s) }

func refusals(c *clustertest.Cluster, reason string) uint64 {
	var n uint64
	for _, nd := range c.Running() {
		n += nd.Cluster().PeerAuthRefusals()[reason]
	}
	return n
}

// peerDialer is a process that reaches the peer port: a PeerMux of its own
// on a throwaway listener, with keys (nil = no secret).
func peerDialer(t *testing.T, id string, keys [][]byte) *cluster.PeerMux {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := cluster.NewPeerMux(ln, cluster.NodeID(id), nil, slog.New(slog.DiscardHandler))
	if keys != nil {
		s, err := cluster.NewSecret(keys)
		if err != nil {
			t.Fatal(err)
		}
		m.UseSecret(s)
	}
	m.Serve()
	t.Cleanup(m.Close)
	return m
}

func randomKey(t *testing.T) []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSecuredClusterRefusesOutsiders is issue #15 item 6: a cluster with a
// secret (RF 2, sync: raft, map fetches, replication and possession all
// run authenticated), and processes without the secret — or with another
// one — that try every door of the cluster plane on real sockets:
//   - join the gossip (a memberlist without the key, then a whole Zaris
//     node without --cluster-secret-file);
//   - open the peer port as raft, map fetch, replication (the replication
//     and migration streams ride it), possession and migration fence;
//   - the same after pushing raw bytes of a protocol without any handshake.
//
// Every attempt is refused and counted, both sides log a clear line, and
// the data, the map and the membership are unchanged.
func TestSecuredClusterRefusesOutsiders(t *testing.T) {
	logs := &logBuffer{}
	c := clustertest.Start(t, 3, clustertest.Options{Secret: true, NoRESP: true,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Mutate: func(cfg *server.Config) {
			cfg.ReplicationFactor = 2
			cfg.ReplicationMode, cfg.WriteQuorum = server.ReplicationSync, server.WriteQuorumAll
		}})
	if c.SecretFile() == "" {
		t.Fatal("no secret")
	}
	ctx := context.Background()
	cl, err := sdk.Connect(ctx, c.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	const n = 100
	for i := range n {
		wctx, cancel := context.WithTimeout(ctx, testscale.D(10*time.Second))
		r, err := cl.Put(wctx, "sec:"+strconv.Itoa(i), []byte("v"+strconv.Itoa(i)), nil)
		cancel()
		if err != nil || !r.OK() {
			t.Fatalf("put: %s %v", r.Status, err)
		}
	}
	before := c.WaitConverged(testscale.D(10 * time.Second))
	leader := c.WaitLeader()
	term := leader.Cluster().Term()
	m := c.Map()

	// Gossip: a memberlist without the key tries to join.
	mc := memberlist.DefaultLANConfig()
	mc.Name, mc.BindAddr, mc.BindPort = "intruder-gossip", "127.0.0.1", 0
	mc.LogOutput = io.Discard
	ml, err := memberlist.Create(mc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ml.Shutdown() })
	if joined, err := ml.Join([]string{clustertest.GossipAddr(leader)}); err == nil && joined > 0 {
		t.Fatalf("a memberlist without the key joined %d member(s)", joined)
	}
	t.Log("gossip attack")
	c.Eventually(testscale.D(10*time.Second), "the gossip refusal is counted", func() bool {
		return refusals(c, cluster.RefuseGossip) > 0
	})

	// The peer port, every protocol, without a secret and with another.
	open := peerDialer(t, "intruder-open", nil)
	other := peerDialer(t, "intruder-other", [][]byte{randomKey(t)})
	protos := map[string]byte{"raft": cluster.PeerRaft, "map fetch": cluster.PeerMapFetch,
		"replication": cluster.PeerReplication, "possession": cluster.PeerPossession, "migration": cluster.PeerMigrate}
	for _, nd := range m.Nodes {
		addr := cluster.PeerAddr(nd)
		for name, proto := range protos {
			dctx, cancel := context.WithTimeout(ctx, testscale.D(5*time.Second))
			conn, err := open.DialNode(dctx, addr, nd.ID, proto)
			if err == nil {
				conn.Close()
				t.Fatalf("%s to %s without the secret: accepted", name, nd.ID)
			}
			if !errors.Is(err, cluster.ErrPeerAuthRequired) {
				t.Fatalf("%s to %s without the secret: %v, want ErrPeerAuthRequired", name, nd.ID, err)
			}
			conn, err = other.DialNode(dctx, addr, nd.ID, proto)
			cancel()
			if err == nil {
				conn.Close()
				t.Fatalf("%s to %s with another secret: accepted", name, nd.ID)
			}
			if !errors.Is(err, cluster.ErrPeerBadSecret) {
				t.Fatalf("%s to %s with another secret: %v, want ErrPeerBadSecret", name, nd.ID, err)
			}
			// Raw: the protocol byte and a payload, no handshake. The
			// node answers the one refusal byte and closes; nothing of
			// the payload is read as its protocol.
			raw, err := net.DialTimeout("tcp", addr, testscale.D(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			_ = raw.SetDeadline(time.Now().Add(testscale.D(5 * time.Second)))
			_, _ = raw.Write(append([]byte{proto}, bytes.Repeat([]byte{0xA5}, 4096)...))
			got, _ := io.ReadAll(raw)
			raw.Close()
			if !bytes.Equal(got, []byte{2}) {
				t.Fatalf("%s raw to %s: answered %x, want the refusal byte 02 and the close", name, nd.ID, got)
			}
		}
	}
	// The dialer can see its refusal before the node has counted it (the
	// node counts once it has written the refusal), so the counts are polled.
	c.Eventually(testscale.D(10*time.Second), "every no_handshake and bad_secret refusal counted", func() bool {
		return refusals(c, cluster.RefuseNoHandshake) >= uint64(2*len(m.Nodes)*len(protos)) &&
			refusals(c, cluster.RefuseBadSecret) >= uint64(len(m.Nodes)*len(protos))
	})

	t.Log("peer attacks done")
	// A whole node without the secret: refused, with a clear line on
	// both sides.
	intruderLogs := &logBuffer{}
	cfg := clustertest.NodeConfig("intruder", clustertest.Options{NoRESP: true})
	cfg.ExpectNodes, cfg.Join = 1, []string{clustertest.GossipAddr(leader)}
	intruder, err := server.NewNode(cfg, slog.New(slog.NewTextHandler(intruderLogs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = intruder.Start(ctx) }()
	t.Cleanup(func() { _ = intruder.Stop(context.Background()) })
	c.Eventually(testscale.D(20*time.Second), "the intruder logs its refusal", func() bool {
		return strings.Contains(intruderLogs.String(), "or the cluster is secured and this node has no --cluster-secret-file")
	})
	if logs.count("refused a gossip message") == 0 {
		t.Fatalf("the cluster logged no gossip refusal:\n%s", logs.String())
	}
	if logs.count("refused a peer connection that did not authenticate") == 0 ||
		logs.count("refused a peer connection: the remote holds no key") == 0 {
		t.Fatal("the cluster logged no peer refusal")
	}

	// Nothing changed: data, map, leader term, membership.
	for i := range n {
		r, err := cl.Get(ctx, "sec:"+strconv.Itoa(i))
		if err != nil || !r.OK() || string(r.Value) != "v"+strconv.Itoa(i) {
			t.Fatalf("sec:%d after the attacks: %s %q %v", i, r.Status, r.Value, err)
		}
	}
	// The map may move on by itself (health debouncing), never to
	// another membership.
	if after := c.Map(); after.Version < before || !sameNodes(after, m) {
		t.Fatalf("map after the attacks: version %d, nodes %v; before: version %d, nodes %v", after.Version, after.Nodes, before, m.Nodes)
	}
	t.Logf("raft term %d before the attacks, %d after", term, leader.Cluster().Term())
	for _, nd := range c.Running() {
		for _, ns := range nd.ClusterStatus().Nodes {
			if strings.HasPrefix(string(ns.ID), "intruder") {
				t.Fatalf("%s sees the intruder %s as a member", nd.Cluster().Status().Self, ns.ID)
			}
		}
	}
}

// TestSecretRotationWithoutDowntime rotates the cluster secret on a
// running cluster the documented way — add the new key (second line,
// reload), make it primary (first line, reload), drop the old (reload) —
// while the cluster keeps serving, then a node holding only the new key
// joins and one holding only the old key is refused.
func TestSecretRotationWithoutDowntime(t *testing.T) {
	logs := &logBuffer{}
	c := clustertest.Start(t, 3, clustertest.Options{Secret: true, NoRESP: true,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	data, err := os.ReadFile(c.SecretFile())
	if err != nil {
		t.Fatal(err)
	}
	oldKey := strings.TrimSpace(string(data))
	newKey := base64.StdEncoding.EncodeToString(randomKey(t))
	ctx := context.Background()
	cl, err := sdk.Connect(ctx, c.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	step := func(lines ...string) {
		t.Helper()
		if err := os.WriteFile(c.SecretFile(), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, nd := range c.Running() {
			if err := nd.Reload(); err != nil {
				t.Fatal(err)
			}
		}
		// Serving all along: a write and a read through every step.
		for i := range 20 {
			k := "rot:" + strconv.Itoa(i)
			if r, err := cl.Put(ctx, k, []byte(newKey[:8]), nil); err != nil || !r.OK() {
				t.Fatalf("put during rotation: %s %v", r.Status, err)
			}
		}
	}
	step(oldKey, newKey)
	step(newKey, oldKey)
	step(newKey)
	refusedBefore := refusals(c, cluster.RefuseBadSecret)

	// A node with only the new key joins.
	dir := t.TempDir()
	newFile, oldFile := dir+"/new", dir+"/old"
	if err := os.WriteFile(newFile, []byte(newKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(oldFile, []byte(oldKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	joiner := c.AddNodeWith(func(cfg *server.Config) { cfg.ClusterSecretFile = newFile })
	c.Eventually(testscale.D(20*time.Second), "the new-key node is a member", func() bool {
		return inMembers(c, joinerID(joiner))
	})

	// A node with only the old key is refused.
	stale := peerDialer(t, "stale", [][]byte{mustDecode(t, oldKey)})
	nd := c.Map().Nodes[0]
	if conn, err := stale.DialNode(ctx, cluster.PeerAddr(nd), nd.ID, cluster.PeerRaft); err == nil {
		conn.Close()
		t.Fatal("a dialer with the retired key was accepted")
	} else if !errors.Is(err, cluster.ErrPeerBadSecret) {
		t.Fatalf("retired key: %v", err)
	}
	// The listener counts the refusal after it has answered it: poll.
	c.Eventually(testscale.D(10*time.Second), "the retired key's refusal is counted", func() bool {
		return refusals(c, cluster.RefuseBadSecret) > refusedBefore
	})
}

func joinerID(nd *server.Node) string { return string(nd.Cluster().Status().Self) }

func inMembers(c *clustertest.Cluster, id string) bool {
	for _, nd := range c.Running() {
		if string(nd.Cluster().Status().Self) == id {
			continue
		}
		found := false
		for _, ns := range nd.ClusterStatus().Nodes {
			found = found || string(ns.ID) == id
		}
		if !found {
			return false
		}
	}
	return true
}

func mustDecode(t *testing.T, s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameNodes(a, b *cluster.PartitionMap) bool {
	if len(a.Nodes) != len(b.Nodes) {
		return false
	}
	for i := range a.Nodes {
		if a.Nodes[i].ID != b.Nodes[i].ID {
			return false
		}
	}
	return true
}

// Package clustertest runs real Zaris clusters inside one test process:
// N server.Nodes on 127.0.0.1 with ports the kernel chooses (client, RESP,
// HTTP, peer and gossip), in-memory raft stores and short cluster timings
// (Timings: formation in 200 ms, a 5 s grace window). It is test support for
// the server's own tests and for the SDK's: a test imports it, calls Start
// and gets running, converged nodes.
//
// Every timing and every deadline here is scaled by ZARIS_TEST_TIME_SCALE
// (internal/testscale): a busy machine stretches them all with one knob.
//
//	c := clustertest.Start(t, 4, clustertest.Options{})
//	client, _ := sdk.Connect(ctx, c.ConnString())
//	...
//	c.Node("n2").RequestCounts().Batches // one per GetMany that touched n2
//
// Nodes are named n1…nN; n1 bootstraps the cluster and the others join it
// through its gossip port; every node expects N members, so the first map
// is planned with all of them (one partition per node). Everything stops
// in t.Cleanup. The package imports the server, never the SDK.
package clustertest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster"
)

// Options shape a test cluster. The zero value is a cluster of store
// "default", RESP and HTTP on, one partition per node.
type Options struct {
	// Store is the store name (default "default").
	Store string
	// ClusterID is the cluster id (default "").
	ClusterID string
	// NoRESP and NoHTTP turn those front ends off.
	NoRESP, NoHTTP bool
	// Partitions is the number of partitions (0 = one per node).
	Partitions int
	// Token, when set, is required from every client.
	Token string
	// Mutate, when set, changes each node's configuration last.
	Mutate func(cfg *server.Config)
	// Logger receives every node's log lines (nil = the last lines are
	// kept and printed if the test fails; ZARIS_TEST_LOG=1 prints all of
	// them on stderr as they come).
	Logger *slog.Logger
	// Timeout bounds formation and convergence (default 30 s), before
	// scaling by ZARIS_TEST_TIME_SCALE.
	Timeout time.Duration
	// Secret runs the cluster with a cluster secret (a fresh random key in
	// a file of the test's temporary directory, Cluster.SecretFile): gossip
	// encrypted, peer connections authenticated. ZARIS_TEST_CLUSTER_SECRET=1
	// turns it on for every test cluster, so the whole suite can run
	// secured.
	Secret bool
}

// SecretEnv names the variable that runs every test cluster with a
// cluster secret (Options.Secret).
const SecretEnv = "ZARIS_TEST_CLUSTER_SECRET"

// NewSecretFile writes a cluster secret file holding one fresh random
// 32-byte key in dir and returns its path and the key's base64 line.
func NewSecretFile(t testing.TB, dir string) (path, key string) {
	t.Helper()
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	key = base64.StdEncoding.EncodeToString(raw)
	f, err := os.CreateTemp(dir, "cluster-secret-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(key + "\n"); err != nil {
		t.Fatal(err)
	}
	return f.Name(), key
}

// Cluster is a running test cluster.
type Cluster struct {
	t    testing.TB
	opts Options

	mu      sync.Mutex // guards nodes, stopped, next
	nodes   []*server.Node
	stopped map[*server.Node]bool
	next    int

	secretFile string // the cluster secret's file ("" = none)
}

// nodeConfig is NodeConfig with the cluster's secret.
func (c *Cluster) nodeConfig(id string) server.Config {
	cfg := NodeConfig(id, c.opts)
	if c.secretFile != "" && cfg.ClusterSecretFile == "" {
		cfg.ClusterSecretFile = c.secretFile
	}
	return cfg
}

// SecretFile is the cluster secret's file, "" when the cluster has none.
func (c *Cluster) SecretFile() string { return c.secretFile }

// Timings are the cluster timings of test nodes: cluster.TestTimings
// (tolerant of a loaded two-CPU machine running -race) scaled by
// ZARIS_TEST_TIME_SCALE. A test that needs a timing longer or shorter sets
// it in Options.Mutate.
func Timings() cluster.Timings { return cluster.TestTimings().Scaled(testscale.Factor()) }

// NodeConfig is the configuration of test node id: 127.0.0.1, every port
// chosen by the kernel when the node binds (server.EphemeralPort), test
// timings (Timings), a 64 MiB memory cap.
func NodeConfig(id string, opts Options) server.Config {
	c := server.DefaultConfig()
	c.NodeID = id
	if opts.Store != "" {
		c.Store = opts.Store
	}
	c.ClusterID = opts.ClusterID
	// The node binds every port on :0 itself: no port is picked before it
	// is bound, so none can be taken meanwhile (a restart re-binds the
	// same ports: restart holds them while the node is down).
	c.ClientPort, c.PeerPort, c.GossipPort = server.EphemeralPort, server.EphemeralPort, server.EphemeralPort
	c.RESPPort, c.HTTPPort = server.EphemeralPort, server.EphemeralPort
	if opts.NoRESP {
		c.RESPPort = 0
	}
	if opts.NoHTTP {
		c.HTTPPort = 0
	}
	c.Partitions = opts.Partitions
	c.Token = opts.Token
	c.MemoryMaxBytes = 64 << 20
	c.MinWorkers, c.MaxWorkers = 2, 64
	c.ShutdownTimeout = testscale.D(5 * time.Second)
	c.Timings = Timings()
	if opts.Mutate != nil {
		opts.Mutate(&c)
	}
	return c
}

// Start runs an n-node cluster and returns once every node is ready and
// all agree on one map version.
func Start(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("clustertest: %d nodes", n)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	opts.Timeout = testscale.D(opts.Timeout)
	c := &Cluster{t: t, opts: opts, stopped: map[*server.Node]bool{}}
	if opts.Secret || os.Getenv(SecretEnv) == "1" {
		c.secretFile, _ = NewSecretFile(t, t.TempDir())
	}
	if c.opts.Logger == nil && os.Getenv("ZARIS_TEST_LOG") == "" {
		// Registered before StopAll, so it runs after it: the tail ends
		// with the shutdown.
		c.opts.Logger = newFailureLog(t)
	}
	t.Cleanup(c.StopAll)
	first := c.startNode("n1", n, nil)
	seed := []string{GossipAddr(first)}
	for i := 2; i <= n; i++ {
		c.startNode(fmt.Sprint("n", i), n, seed)
	}
	c.next = n + 1
	c.waitReady(opts.Timeout)
	c.waitFormed(n, opts.Timeout)
	return c
}

// waitFormed waits until every running node follows one leader and applied
// one map naming all n nodes: the cluster Start promised, not a node that
// formed alone before the others reached it. On a loaded machine the first
// map may name fewer nodes (a member suspected at formation) and an
// automatic rebalance then moves partitions to the others: Start waits for
// it to end too, so a test's first write does not meet a move.
func (c *Cluster) waitFormed(n int, timeout time.Duration) {
	c.t.Helper()
	c.eventually(timeout, fmt.Sprintf("one cluster of %d nodes on one map and one leader, no rebalance under way", n), func() bool {
		_, ok := c.agreement()
		if !ok {
			return false
		}
		m := c.Map()
		return m != nil && len(m.Nodes) == n && c.settled(m)
	})
}

// settled reports that no partition of m is moving, the leader runs no
// rebalance, and — under auto-rebalance, where copies enough for every
// node exist — no node is left holding nothing (the leader would move
// partitions to it next).
func (c *Cluster) settled(m *cluster.PartitionMap) bool {
	for _, p := range m.Partitions {
		if p.Migrating() {
			return false
		}
	}
	leader := c.Leader()
	if leader == nil {
		return false
	}
	if rs := leader.Cluster().RebalanceStatus(); rs.Active || rs.Pending {
		return false
	}
	cfg := leader.Config()
	if !cfg.AutoRebalance || len(m.Partitions)*min(max(cfg.ReplicationFactor, 1), len(m.Nodes)) < len(m.Nodes) {
		return true
	}
	for _, nd := range m.Nodes {
		if !cluster.Holds(m, nd.ID) {
			return false
		}
	}
	return true
}

func (c *Cluster) startNode(id string, expect int, join []string) *server.Node {
	c.t.Helper()
	return c.startNodeWith(id, expect, join, nil)
}

func (c *Cluster) startNodeWith(id string, expect int, join []string, mutate func(*server.Config)) *server.Node {
	c.t.Helper()
	cfg := c.nodeConfig(id)
	cfg.ExpectNodes = expect
	cfg.Join = join
	if mutate != nil {
		mutate(&cfg)
	}
	logger := c.opts.Logger
	if logger == nil && os.Getenv("ZARIS_TEST_LOG") != "" {
		// Debugging a test: every node's log lines on stderr.
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if logger != nil {
		logger = logger.With("test_node", id)
	}
	nd, err := server.NewNode(cfg, logger)
	if err != nil {
		c.t.Fatalf("clustertest: node %s: %v", id, err)
	}
	if err := nd.Start(context.Background()); err != nil {
		_ = nd.Stop(context.Background())
		c.t.Fatalf("clustertest: start %s: %v", id, err)
	}
	c.mu.Lock()
	c.nodes = append(c.nodes, nd)
	c.mu.Unlock()
	return nd
}

// AddNode starts one more node that joins the cluster (it becomes a spare:
// a member owning nothing until a rebalance) and waits for it to be ready.
func (c *Cluster) AddNode() *server.Node { return c.AddNodeWith(nil) }

// AddNodeWith is AddNode with mutate applied last to the new node's
// configuration (nil = none).
func (c *Cluster) AddNodeWith(mutate func(*server.Config)) *server.Node {
	c.t.Helper()
	c.mu.Lock()
	id := fmt.Sprint("n", c.next)
	c.next++
	c.mu.Unlock()
	var seeds []string
	for _, nd := range c.Running() {
		seeds = append(seeds, GossipAddr(nd))
	}
	nd := c.startNodeWith(id, 1, seeds, mutate)
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
	defer cancel()
	if err := nd.WaitReady(ctx); err != nil {
		c.t.Fatalf("clustertest: %s: %v", id, err)
	}
	return nd
}

// WaitLeader waits until the running nodes agree on a leader that is one of
// them, and returns it: never nil (the test fails at the deadline).
func (c *Cluster) WaitLeader() *server.Node {
	c.t.Helper()
	var leader *server.Node
	c.eventually(c.opts.Timeout, "a leader every running node follows", func() bool {
		id, ok := c.agreedLeader()
		if !ok {
			return false
		}
		leader = c.Node(id)
		return leader != nil && leader.Cluster() != nil && leader.Cluster().IsLeader()
	})
	return leader
}

// Rebalance asks the leader to rebalance, retrying while the leader moves
// or a partition's owner is away (cluster.ErrOwnerAway: on a loaded
// machine a member can be suspected for a moment), and returns the
// committed map version.
func (c *Cluster) Rebalance() uint64 {
	c.t.Helper()
	var v uint64
	var last error
	c.eventually(c.opts.Timeout, "a rebalance the leader accepts", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
		defer cancel()
		v, last = c.WaitLeader().Rebalance(ctx)
		if last != nil && !errors.Is(last, cluster.ErrNotLeader) && !errors.Is(last, cluster.ErrOwnerAway) {
			c.t.Fatalf("clustertest: rebalance: %v", last)
		}
		return last == nil
	})
	return v
}

// WaitMap waits until some running node applied a map and returns it:
// never nil.
func (c *Cluster) WaitMap() *cluster.PartitionMap {
	c.t.Helper()
	var m *cluster.PartitionMap
	c.eventually(c.opts.Timeout, "a partition map", func() bool {
		m = c.Map()
		return m != nil
	})
	return m
}

// agreedLeader reports the leader every running node names (ok=false when
// one names none or they differ).
func (c *Cluster) agreedLeader() (string, bool) {
	leader := ""
	for _, nd := range c.Running() {
		cl := nd.Cluster()
		if cl == nil || cl.Leader() == "" {
			return "", false
		}
		if l := string(cl.Leader()); leader == "" {
			leader = l
		} else if l != leader {
			return "", false
		}
	}
	return leader, leader != ""
}

// agreement reports the map version every running node applied, when they
// all applied the same one and follow the same leader.
func (c *Cluster) agreement() (uint64, bool) {
	if _, ok := c.agreedLeader(); !ok {
		return 0, false
	}
	var v uint64
	for _, nd := range c.Running() {
		m := nd.Cluster().Map()
		if m == nil || v != 0 && m.Version != v {
			return 0, false
		}
		v = m.Version
	}
	return v, v != 0
}

// Nodes returns every node started, stopped ones included.
func (c *Cluster) Nodes() []*server.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*server.Node(nil), c.nodes...)
}

// Running returns the nodes not stopped.
func (c *Cluster) Running() []*server.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*server.Node
	for _, nd := range c.nodes {
		if !c.stopped[nd] {
			out = append(out, nd)
		}
	}
	return out
}

// Node returns the running node with id, else the last one started with
// it (nil when none).
func (c *Cluster) Node(id string) *server.Node {
	var last *server.Node
	for _, nd := range c.Nodes() {
		if nd.Config().NodeID == id {
			last = nd
		}
	}
	for _, nd := range c.Running() {
		if nd.Config().NodeID == id {
			return nd
		}
	}
	return last
}

// Stop stops one node (a crash, as far as the others can tell: it does not
// announce a leave).
func (c *Cluster) Stop(nd *server.Node) {
	c.mu.Lock()
	c.stopped[nd] = true
	c.mu.Unlock()
	_ = nd.Stop(context.Background())
}

// Restart stops nd (a crash: its memory is gone) unless it is stopped
// already, runs whileDown (nil = nothing), then starts a fresh node with the
// same id on the same ports, joining the running nodes, and waits for it to
// be ready. Its store starts empty: what it held comes back only through
// replication.
func (c *Cluster) Restart(nd *server.Node, whileDown func()) *server.Node {
	c.t.Helper()
	return c.restart(nd, nd.Config().NodeID, whileDown)
}

// RestartAs is Restart under another node id: a new, empty node comes up on
// nd's ports (host and every port the same), joining the running nodes — a
// pod rescheduled under a new identity, a configuration mix-up. The others
// must not take it for nd (issue #8).
func (c *Cluster) RestartAs(nd *server.Node, id string, whileDown func()) *server.Node {
	c.t.Helper()
	return c.restart(nd, id, whileDown)
}

func (c *Cluster) restart(nd *server.Node, id string, whileDown func()) *server.Node {
	c.t.Helper()
	ports := nd.Info().Ports
	c.Stop(nd)
	// Hold the ports while the node is down: a port the kernel handed out
	// is from its ephemeral range, and an outgoing connection (of this
	// process or another) could otherwise take one as its local end.
	held := holdPorts(ports.Client, ports.Peer, ports.RESP, ports.HTTP)
	held.add(holdGossip(ports.Gossip))
	if whileDown != nil {
		whileDown()
	}
	var seeds []string
	for _, r := range c.Running() {
		seeds = append(seeds, GossipAddr(r))
	}
	cfg := c.nodeConfig(id)
	cfg.ClientPort, cfg.PeerPort, cfg.GossipPort = ports.Client, ports.Peer, ports.Gossip
	if cfg.RESPPort != 0 {
		cfg.RESPPort = ports.RESP
	}
	if cfg.HTTPPort != 0 {
		cfg.HTTPPort = ports.HTTP
	}
	cfg.ExpectNodes, cfg.Join = 1, seeds
	logger := c.opts.Logger
	if logger == nil && os.Getenv("ZARIS_TEST_LOG") != "" {
		// Debugging a test: every node's log lines on stderr.
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if logger != nil {
		logger = logger.With("test_node", cfg.NodeID)
	}
	fresh, err := server.NewNode(cfg, logger)
	if err != nil {
		held.release()
		c.t.Fatalf("clustertest: restart %s: %v", cfg.NodeID, err)
	}
	// Hand the ports over, then bind them; retry briefly should another
	// socket slip in between.
	held.release()
	deadline := time.Now().Add(c.opts.Timeout)
	for {
		err = fresh.Start(context.Background())
		if err == nil {
			break
		}
		_ = fresh.Stop(context.Background())
		if time.Now().After(deadline) {
			c.t.Fatalf("clustertest: restart %s: %v", cfg.NodeID, err)
		}
		time.Sleep(50 * time.Millisecond) // poll interval of a bind retry with a deadline
		if fresh, err = server.NewNode(cfg, logger); err != nil {
			c.t.Fatalf("clustertest: restart %s: %v", cfg.NodeID, err)
		}
	}
	c.mu.Lock()
	c.nodes = append(c.nodes, fresh)
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
	defer cancel()
	if err := fresh.WaitReady(ctx); err != nil {
		c.t.Fatalf("clustertest: %s after restart: %v", cfg.NodeID, err)
	}
	return fresh
}

// Decommission takes nd out of the cluster for good (its leave is
// announced) and stops it.
//
// A drain moves data — every partition and copy the node holds, each with
// its own catch-up and cut-over — and on a starved machine its steps pause
// while a member looks suspected, so its bound is on progress, not on the
// whole: it fails once no running node has applied a new map for twice the
// formation bound (a wedged drain), or after ten formation bounds in all.
func (c *Cluster) Decommission(nd *server.Node) {
	c.t.Helper()
	c.mu.Lock()
	c.stopped[nd] = true
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*c.opts.Timeout)
	defer cancel()
	var stalled atomic.Bool
	watchdogDone := make(chan struct{})
	go func() {
		defer close(watchdogDone)
		c.cancelWhenStalled(ctx, cancel, nd, 2*c.opts.Timeout, &stalled)
	}()
	err := nd.Decommission(ctx)
	cancel()
	<-watchdogDone
	if err != nil {
		why := "in all"
		if stalled.Load() {
			why = "without a new map"
		}
		c.t.Fatalf("clustertest: decommission %s: %v (%s); %s", nd.Config().NodeID, err, why, c.drainReport(nd))
	}
}

// cancelWhenStalled cancels a drain once no node (nd included) has applied
// a new map version for stall.
func (c *Cluster) cancelWhenStalled(ctx context.Context, cancel func(), nd *server.Node, stall time.Duration,
	stalled *atomic.Bool) {
	latest := func() uint64 {
		var v uint64
		for _, n := range append(c.Running(), nd) {
			if cl := n.Cluster(); cl != nil {
				if m := cl.Map(); m != nil {
					v = max(v, m.Version)
				}
			}
		}
		return v
	}
	seen, since := latest(), time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if v := latest(); v != seen {
			seen, since = v, time.Now()
		} else if time.Since(since) > stall {
			stalled.Store(true)
			cancel()
			return
		}
	}
}

// drainReport says where a drain of nd stands: the leader's rebalance, the
// members as the leader sees them, and each node's applied map.
func (c *Cluster) drainReport(nd *server.Node) string {
	var b strings.Builder
	id := cluster.NodeID(nd.Config().NodeID)
	if l := c.Leader(); l != nil {
		st := l.Cluster().RebalanceStatus()
		fmt.Fprintf(&b, "leader %s: rebalance active %v, pending %v, reason %q, %d moves in flight %+v, %d completed, %d aborted; members:",
			l.Config().NodeID, st.Active, st.Pending, st.Reason, len(st.Migrations), st.Migrations, st.Completed, st.Aborted)
		for _, ns := range l.Cluster().Status().Nodes {
			fmt.Fprintf(&b, " %s=%s", ns.ID, ns.State)
		}
	} else {
		b.WriteString("no leader")
	}
	for _, n := range append(c.Running(), nd) {
		if cl := n.Cluster(); cl != nil {
			if m := cl.Map(); m != nil {
				fmt.Fprintf(&b, "; %s applied map v%d (drained node holds: %v)", n.Config().NodeID, m.Version, cluster.Holds(m, id))
			}
		}
	}
	return b.String()
}

// StopAll stops every node (t.Cleanup does it too).
func (c *Cluster) StopAll() {
	var wg sync.WaitGroup
	for _, nd := range c.Running() {
		wg.Add(1)
		go func() { defer wg.Done(); c.Stop(nd) }()
	}
	wg.Wait()
}

// Endpoints are the running nodes' client (native protocol) addresses.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, nd := range c.Running() {
		if a := nd.ClientAddr(); a != nil {
			out = append(out, a.String())
		}
	}
	return out
}

// RESPEndpoints are the running nodes' RESP addresses.
func (c *Cluster) RESPEndpoints() []string {
	var out []string
	for _, nd := range c.Running() {
		if a := nd.RESPAddr(); a != nil {
			out = append(out, a.String())
		}
	}
	return out
}

// ConnString is an SDK connection string naming every running node as a
// seed: zaris://host:port,host:port/store (with ?token= when set).
func (c *Cluster) ConnString() string {
	store := c.opts.Store
	if store == "" {
		store = server.DefaultStore
	}
	s := "zaris://" + strings.Join(c.Endpoints(), ",") + "/" + store
	if c.opts.Token != "" {
		s += "?token=" + c.opts.Token
	}
	return s
}

// Leader is the running node leading the control plane (nil when none).
func (c *Cluster) Leader() *server.Node {
	for _, nd := range c.Running() {
		if cl := nd.Cluster(); cl != nil && cl.IsLeader() {
			return nd
		}
	}
	return nil
}

// Map is the map applied by the first running node.
func (c *Cluster) Map() *cluster.PartitionMap {
	for _, nd := range c.Running() {
		if cl := nd.Cluster(); cl != nil {
			if m := cl.Map(); m != nil {
				return m
			}
		}
	}
	return nil
}

// Owner is the running node that owns key in the current map.
func (c *Cluster) Owner(key string) *server.Node {
	m := c.Map()
	if m == nil {
		return nil
	}
	return c.Node(string(m.OwnerOfKey(key)))
}

// NonOwner is a running node that does not own key (nil with one node).
func (c *Cluster) NonOwner(key string) *server.Node {
	owner := c.Owner(key)
	for _, nd := range c.Running() {
		if nd != owner {
			return nd
		}
	}
	return nil
}

// KeyOwnedBy returns a key (prefix + a number) owned by node id.
func (c *Cluster) KeyOwnedBy(id, prefix string) string {
	m := c.Map()
	for i := 0; m != nil && i < 1_000_000; i++ {
		k := prefix + strconv.Itoa(i)
		if string(m.OwnerOfSegment(int(placement.SegmentOf(k, m.TotalSegments)))) == id {
			return k
		}
	}
	c.t.Fatalf("clustertest: no key owned by %s", id)
	return ""
}

// WaitReady waits until every running node serves traffic (timeout is
// scaled by ZARIS_TEST_TIME_SCALE).
func (c *Cluster) WaitReady(timeout time.Duration) {
	c.t.Helper()
	c.waitReady(testscale.D(timeout))
}

func (c *Cluster) waitReady(timeout time.Duration) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, nd := range c.Running() {
		if err := nd.WaitReady(ctx); err != nil {
			c.t.Fatalf("clustertest: %s not ready: %v", nd.Config().NodeID, err)
		}
	}
}

// WaitConverged waits until every running node applied the same map
// version and follows the same leader, and returns that version (timeout
// is scaled by ZARIS_TEST_TIME_SCALE).
func (c *Cluster) WaitConverged(timeout time.Duration) uint64 {
	c.t.Helper()
	var v uint64
	c.Eventually(timeout, "every running node on one map version and one leader", func() bool {
		var ok bool
		v, ok = c.agreement()
		return ok
	})
	return v
}

// WaitVersion waits until every running node applied at least version v
// and they agree, and returns the version (timeout is scaled by
// ZARIS_TEST_TIME_SCALE).
func (c *Cluster) WaitVersion(v uint64, timeout time.Duration) uint64 {
	c.t.Helper()
	var got uint64
	c.Eventually(timeout, fmt.Sprintf("every running node on one map version ≥ %d", v), func() bool {
		got = 0
		for _, nd := range c.Running() {
			cl := nd.Cluster()
			if cl == nil {
				return false
			}
			m := cl.Map()
			if m == nil || m.Version < v || got != 0 && m.Version != got {
				return false
			}
			got = m.Version
		}
		return got != 0
	})
	return got
}

// Eventually polls cond every 10 ms until it holds, failing the test after
// timeout scaled by ZARIS_TEST_TIME_SCALE.
func (c *Cluster) Eventually(timeout time.Duration, what string, cond func() bool) {
	c.t.Helper()
	c.eventually(testscale.D(timeout), what, cond)
}

// eventually is Eventually with a timeout already scaled.
func (c *Cluster) eventually(timeout time.Duration, what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("clustertest: timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
}

// GossipAddr is a node's gossip address (to --join it).
func GossipAddr(nd *server.Node) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(nd.Info().Ports.Gossip))
}

// heldPorts are ports bound by the test process itself, so that nothing
// else takes them until they are handed to a node.
type heldPorts struct{ closers []interface{ Close() error } }

// holdPorts binds TCP on each port (0 = none). A port that cannot be bound
// is left alone: the node's own bind then says why.
func holdPorts(ports ...int) *heldPorts {
	h := &heldPorts{}
	for _, p := range ports {
		if p <= 0 {
			continue
		}
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
			h.closers = append(h.closers, l)
		}
	}
	return h
}

// holdGossip binds TCP and UDP on port: memberlist needs both on it.
func holdGossip(port int) *heldPorts {
	h := holdPorts(port)
	if port > 0 {
		if u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			h.closers = append(h.closers, u)
		}
	}
	return h
}

func (h *heldPorts) add(o *heldPorts) { h.closers = append(h.closers, o.closers...) }

// release closes every held socket: the ports are the node's to bind.
func (h *heldPorts) release() {
	for _, c := range h.closers {
		_ = c.Close() // a bound, unused socket: nothing to flush
	}
	h.closers = nil
}

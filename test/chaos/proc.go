// Package chaos owns the multi-process chaos harness of issue #8 (items 6
// and 7): a launcher of real zaris-server processes on loopback (proc.go), a
// ledger of acknowledged writes and the workload that fills and checks it
// (ledger.go, workload.go), a seeded fault schedule — kill -9, SIGSTOP and
// SIGCONT, restart, leader kill — (faults.go), and the scenarios
// cmd/chaos runs (scenario.go).
//
// It drives the server only from the outside: through its command line, its
// HTTP admin API and the SDK. It must not import server/... packages (a
// process under test is a binary built from ./cmd/zaris-server, without the
// race detector), nor test-only code: the package is importable by a
// program (cmd/chaos) as well as by tests.
package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zaris-io/zaris/internal/placement"
)

// Options describe a cluster to Start.
type Options struct {
	Nodes  int    // default 3
	RF     int    // --replication-factor; 0 = the server's default (1)
	Mode   string // --replication-mode async|sync; "" = the server's default
	Quorum string // --write-quorum all|majority|besteffort; "" = the server's default
	Binary string // zaris-server path (BuildServer)
	// ClusterID is --cluster-id; default "chaos". Two clusters of one test
	// (a primary and its WAN follower) carry different ids.
	ClusterID string
	// Dir is the working directory: per-node data dirs (--data-dir, so a
	// restarted node keeps its raft state) and logs. "" = a temporary
	// directory that Close removes.
	Dir string
	// Hosts is each node's bind and advertise host; default 127.0.0.1 for
	// every node. A shorter list is padded with 127.0.0.1.
	Hosts []string
	// Wrap is an optional command prefix per node (e.g.
	// {"ip","netns","exec","zns1"}); nil = none. The prefix must exec the
	// server in place (same pid), so that signals reach it.
	Wrap func(i int) []string
	// Extra are extra flags for every node (e.g. "--suspect-escalation=2s").
	// A flag named here replaces the same flag of ChaosTimings.
	Extra []string
	// DefaultTimings runs the nodes with the server's production timings:
	// ChaosTimings are not passed (Extra still is).
	DefaultTimings bool
	Log            io.Writer // harness progress; nil = discard
}

// ChaosTimings are the timings the harness passes unless
// Options.DefaultTimings is set: short enough that a fault is detected and
// repaired within seconds, long enough that a loaded 2-CPU machine does not
// mistake a slow node for a dead one. Member grace stays well above the
// longest outage the fault schedule causes, so a faulty node keeps its place
// in the map.
var ChaosTimings = []string{
	"--formation-stable=1s",
	"--suspect-escalation=2s",
	"--member-grace=20s",
	"--health-debounce=2s",
}

// Node ids are "n1".."nN": node index i (0-based) is NodeID(i).
func NodeID(i int) string { return "n" + strconv.Itoa(i+1) }

// ports are one node's listening ports.
type ports struct{ client, peer, gossip, resp, http int }

// node is one server process slot: its identity, ports and, while it runs,
// its process.
type node struct {
	id    string
	host  string
	ports ports
	dir   string // --data-dir
	log   string // log file (appended across restarts)

	held *heldPorts // the ports while no process of this node binds them; guarded by Cluster.mu
	// args replaces the cluster's common flags for a node added after the
	// start (it joins through gossip instead of the registry); nil = those.
	args []string
	// gone: drained and decommissioned; never restarted (guarded by Cluster.mu).
	gone bool

	// guarded by Cluster.mu
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	paused  bool
	starts  int
	killing bool // the harness sent SIGKILL: the exit is expected
}

// Cluster is a set of zaris-server processes started by Start. Its methods
// are safe for concurrent use.
type Cluster struct {
	opts     Options
	args     []string // flags common to every node
	nodes    []*node
	ownDir   bool // Dir was created by Start: Close removes it
	http     *http.Client
	log      io.Writer
	mu       sync.Mutex // guards every node's cmd, done, paused, starts, killing; closed, crashes
	closed   bool
	crashes  []string // exits the harness did not cause
	registry string
}

// BuildServer compiles ./cmd/zaris-server (without the race detector) into
// dir and returns the binary's path. The module root is found with `go env
// GOMOD`, or from this source file's location when the working directory is
// outside the module.
func BuildServer(ctx context.Context, dir string) (string, error) {
	return buildCommand(ctx, dir, "zaris-server")
}

// BuildZarisctl compiles ./cmd/zarisctl (the operator CLI) into dir and
// returns the binary's path.
func BuildZarisctl(ctx context.Context, dir string) (string, error) {
	return buildCommand(ctx, dir, "zarisctl")
}

// buildCommand compiles ./cmd/name into dir, without the race detector.
func buildCommand(ctx context.Context, dir, name string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/"+name)
	cmd.Dir = root
	cmd.Env = withoutRace(os.Environ())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("chaos: go build ./cmd/%s: %w\n%s", name, err, out)
	}
	return bin, nil
}

// withoutRace drops a -race from GOFLAGS: the processes under test run at
// production speed even when the harness itself runs under -race.
func withoutRace(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			var keep []string
			for _, f := range strings.Fields(v) {
				if f != "-race" {
					keep = append(keep, f)
				}
			}
			kv = "GOFLAGS=" + strings.Join(keep, " ")
		}
		out = append(out, kv)
	}
	return out
}

func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err == nil {
		if gomod := strings.TrimSpace(string(out)); gomod != "" && gomod != os.DevNull && isZaris(gomod) {
			return filepath.Dir(gomod), nil
		}
	}
	// Outside the module (e.g. go run from another directory): this file
	// sits in <root>/test/chaos.
	if _, file, _, ok := runtime.Caller(0); ok {
		root := filepath.Join(filepath.Dir(file), "..", "..")
		if isZaris(filepath.Join(root, "go.mod")) {
			return filepath.Clean(root), nil
		}
	}
	return "", errors.New("chaos: cannot find the zaris module root (run from inside the repository)")
}

func isZaris(gomod string) bool {
	b, err := os.ReadFile(gomod)
	return err == nil && strings.Contains(string(b), "module github.com/zaris-io/zaris\n")
}

// Start launches o.Nodes servers forming one cluster (registry form, like
// scripts/cluster.sh) and waits until every node's /readyz answers 200 and
// every node has applied the same map. On error every started process is
// killed.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	if o.Binary == "" {
		return nil, errors.New("chaos: Options.Binary is empty (BuildServer)")
	}
	c := &Cluster{opts: o, log: o.Log, http: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	if c.log == nil {
		c.log = io.Discard
	}
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "zaris-chaos-")
		if err != nil {
			return nil, err
		}
		c.opts.Dir, c.ownDir = d, true
	}
	var entries []string
	for i := range o.Nodes {
		host := "127.0.0.1"
		if i < len(o.Hosts) && o.Hosts[i] != "" {
			host = o.Hosts[i]
		}
		p, held, err := pickPorts(host)
		if err != nil {
			c.Close()
			return nil, err
		}
		n := &node{id: NodeID(i), host: host, ports: p, held: held,
			dir: filepath.Join(c.opts.Dir, NodeID(i)), log: filepath.Join(c.opts.Dir, NodeID(i)+".log")}
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			c.Close()
			return nil, err
		}
		c.nodes = append(c.nodes, n)
		entries = append(entries, fmt.Sprintf("%s@%s:%d:%d:%d:%d:%d", n.id, host, p.client, p.peer, p.gossip, p.resp, p.http))
	}
	c.registry = strings.Join(entries, ",")
	clusterID := o.ClusterID
	if clusterID == "" {
		clusterID = "chaos"
	}
	c.args = []string{"--nodes", c.registry, "--cluster-id", clusterID, "--memory-max-bytes", "256MiB"}
	if o.RF > 0 {
		c.args = append(c.args, "--replication-factor", strconv.Itoa(o.RF))
	}
	if o.Mode != "" {
		c.args = append(c.args, "--replication-mode", o.Mode)
	}
	if o.Quorum != "" {
		c.args = append(c.args, "--write-quorum", o.Quorum)
	}
	c.args = append(c.args, TimingFlags(o.DefaultTimings, o.Extra)...)
	c.logf("cluster: %d nodes in %s, flags %s", o.Nodes, c.opts.Dir, strings.Join(c.args[4:], " "))
	c.logf("cluster: registry %s", c.registry)
	for i := range c.nodes {
		if err := c.spawn(i); err != nil {
			c.Close()
			return nil, err
		}
	}
	for i := range c.nodes {
		if err := c.WaitReady(ctx, i); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.waitSameMap(ctx); err != nil {
		c.Close()
		return nil, err
	}
	c.logf("cluster: ready")
	return c, nil
}

// TimingFlags returns the flags Start adds for the timings: ChaosTimings
// (unless defaults) overridden by extra — a flag of extra replaces the
// timing of the same name — then extra.
func TimingFlags(defaults bool, extra []string) []string {
	named := map[string]bool{}
	for _, f := range extra {
		named[flagName(f)] = true
	}
	var out []string
	if !defaults {
		for _, f := range ChaosTimings {
			if !named[flagName(f)] {
				out = append(out, f)
			}
		}
	}
	return append(out, extra...)
}

func flagName(f string) string {
	f = strings.TrimLeft(f, "-")
	name, _, _ := strings.Cut(f, "=")
	return name
}

func (c *Cluster) logf(format string, args ...any) {
	fmt.Fprintf(c.log, "%s chaos: %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// N is the number of nodes.
func (c *Cluster) N() int { return len(c.nodes) }

// Dir is the cluster's working directory (data dirs and logs).
func (c *Cluster) Dir() string { return c.opts.Dir }

// Registry is the --nodes value every node was started with.
func (c *Cluster) Registry() string { return c.registry }

// HTTPAddr is node i's HTTP host:port.
func (c *Cluster) HTTPAddr(i int) string {
	return net.JoinHostPort(c.nodes[i].host, strconv.Itoa(c.nodes[i].ports.http))
}

// ClientAddr is node i's native-protocol host:port.
func (c *Cluster) ClientAddr(i int) string {
	return net.JoinHostPort(c.nodes[i].host, strconv.Itoa(c.nodes[i].ports.client))
}

// RESPAddr is node i's RESP (Redis protocol) host:port.
func (c *Cluster) RESPAddr(i int) string {
	return net.JoinHostPort(c.nodes[i].host, strconv.Itoa(c.nodes[i].ports.resp))
}

// Pid is the process id of node i's running process, or 0 when it is not
// running.
func (c *Cluster) Pid(i int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[i]
	if n.cmd == nil || exited(n.done) {
		return 0
	}
	return n.cmd.Process.Pid
}

// Starts is how many times node i's process was started.
func (c *Cluster) Starts(i int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i].starts
}

// Index returns the index of the node with id, or -1.
func (c *Cluster) Index(id string) int {
	for i, n := range c.nodes {
		if n.id == id {
			return i
		}
	}
	return -1
}

// spawn starts node i's process.
func (c *Cluster) spawn(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("chaos: cluster closed")
	}
	n := c.nodes[i]
	if n.cmd != nil && !exited(n.done) {
		return fmt.Errorf("chaos: %s is already running", n.id)
	}
	logf, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child holds its own descriptor
	argv := []string{c.opts.Binary, "--node-id", n.id, "--bind", n.host, "--data-dir", n.dir}
	if n.args != nil {
		argv = append(argv, n.args...)
	} else {
		argv = append(argv, c.args...)
	}
	if c.opts.Wrap != nil {
		argv = append(append([]string(nil), c.opts.Wrap(i)...), argv...)
	}
	n.starts++
	fmt.Fprintf(logf, "==== chaos: start #%d of %s at %s: %s\n", n.starts, n.id, time.Now().UTC().Format(time.RFC3339Nano), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = serverEnv()
	// The servers die with the harness (SIGKILL when its thread exits),
	// and a Ctrl-C at a terminal reaches the harness only.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	n.held.release() // hand the ports over
	n.held = nil
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("chaos: start %s: %w", n.id, err)
	}
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		c.mu.Lock()
		if !c.closed {
			n.held = holdPorts(n.host, n.ports) // until the next start
		}
		if !n.killing {
			msg := fmt.Sprintf("%s %s (pid %d) exited on its own: %v", time.Now().UTC().Format("15:04:05.000"), n.id, cmd.Process.Pid, err)
			c.crashes = append(c.crashes, msg)
			c.mu.Unlock()
			c.logf("%s", msg)
		} else {
			c.mu.Unlock()
		}
		close(done)
	}()
	n.cmd, n.done, n.paused, n.killing = cmd, done, false, false
	c.logf("%s started (pid %d, start #%d)", n.id, cmd.Process.Pid, n.starts)
	return nil
}

// AddNode starts one more node — not in the registry: it joins through the
// gossip ports of the registry's nodes, as an operator adds a machine — and
// returns its index once it is ready.
func (c *Cluster) AddNode(ctx context.Context) (int, error) {
	host := "127.0.0.1"
	p, held, err := pickPorts(host)
	if err != nil {
		return -1, err
	}
	var seeds []string
	c.mu.Lock()
	for _, n := range c.nodes {
		seeds = append(seeds, fmt.Sprintf("%s:%d", n.host, n.ports.gossip))
	}
	i := len(c.nodes)
	args := []string{"--join", strings.Join(seeds, ","), "--client-port", strconv.Itoa(p.client),
		"--peer-port", strconv.Itoa(p.peer), "--gossip-port", strconv.Itoa(p.gossip), "--resp-port", strconv.Itoa(p.resp),
		"--http-port", strconv.Itoa(p.http)}
	// The common flags minus the registry.
	for j := 0; j < len(c.args); j++ {
		if c.args[j] == "--nodes" {
			j++
			continue
		}
		args = append(args, c.args[j])
	}
	n := &node{id: NodeID(i), host: host, ports: p, held: held, args: args,
		dir: filepath.Join(c.opts.Dir, NodeID(i)), log: filepath.Join(c.opts.Dir, NodeID(i)+".log")}
	c.nodes = append(c.nodes, n)
	c.mu.Unlock()
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return -1, err
	}
	if err := c.spawn(i); err != nil {
		return -1, err
	}
	if err := c.WaitReady(ctx, i); err != nil {
		return -1, err
	}
	c.logf("%s added (joined through gossip)", n.id)
	return i, nil
}

// Decommission asks node i to drain and leave (POST /v1/node/decommission)
// and waits until its process has exited 0; the node is gone for good.
func (c *Cluster) Decommission(ctx context.Context, i int) error {
	c.mu.Lock()
	n := c.nodes[i]
	if n.cmd == nil || exited(n.done) {
		c.mu.Unlock()
		return fmt.Errorf("chaos: decommission %s: not running", n.id)
	}
	n.killing, n.gone = true, true // its exit is expected
	cmd, done := n.cmd, n.done
	c.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+c.HTTPAddr(i)+"/v1/node/decommission", nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("chaos: decommission %s: %w", n.id, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("chaos: decommission %s: HTTP %d", n.id, resp.StatusCode)
	}
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("chaos: %s did not drain and exit: %w", n.id, ctx.Err())
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("chaos: %s exited %d after its decommission; log tail:\n%s", n.id, code, c.LogTail(i, 20))
	}
	c.logf("%s drained and decommissioned", n.id)
	return nil
}

// Gone reports whether node i was decommissioned.
func (c *Cluster) Gone(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i].gone
}

// serverEnv is the harness's environment without ZARIS_* variables, so that
// a developer's shell configures nothing behind the flags' back.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ZARIS_") {
			env = append(env, kv)
		}
	}
	return env
}

func exited(done chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// Running reports whether node i's process is alive (paused included).
func (c *Cluster) Running(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[i]
	return n.cmd != nil && !exited(n.done)
}

// Paused reports whether node i is stopped by Pause.
func (c *Cluster) Paused(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[i]
	return n.cmd != nil && !exited(n.done) && n.paused
}

// serving reports whether node i is alive and not paused (it can answer).
func (c *Cluster) serving(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[i]
	return n.cmd != nil && !exited(n.done) && !n.paused
}

// Kill sends SIGKILL to node i and waits for the process to exit.
func (c *Cluster) Kill(i int) error {
	c.mu.Lock()
	n := c.nodes[i]
	if n.cmd == nil || exited(n.done) {
		c.mu.Unlock()
		return fmt.Errorf("chaos: kill %s: not running", n.id)
	}
	cmd, done := n.cmd, n.done
	n.killing = true
	c.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("chaos: kill %s: %w", n.id, err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("chaos: %s (pid %d) did not exit 10s after SIGKILL", n.id, cmd.Process.Pid)
	}
	c.mu.Lock()
	n.paused = false
	c.mu.Unlock()
	c.logf("%s killed (SIGKILL, pid %d)", n.id, cmd.Process.Pid)
	return nil
}

// Pause sends SIGSTOP to node i.
func (c *Cluster) Pause(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[i]
	if n.cmd == nil || exited(n.done) {
		return fmt.Errorf("chaos: pause %s: not running", n.id)
	}
	if err := n.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("chaos: pause %s: %w", n.id, err)
	}
	n.paused = true
	// A signal is delivered asynchronously: a thread running on another
	// CPU may still answer a request after kill(2) returned. Wait until
	// every thread is stopped, so the pause starts when Pause returns.
	if err := waitStopped(n.cmd.Process.Pid, 2*time.Second); err != nil {
		return fmt.Errorf("chaos: pause %s: %w", n.id, err)
	}
	c.logf("%s paused (SIGSTOP)", n.id)
	return nil
}

// waitStopped polls /proc until every thread of pid is in state T
// (stopped), or timeout passes. Without /proc (not Linux) it returns at
// once.
func waitStopped(pid int, timeout time.Duration) error {
	taskDir := fmt.Sprintf("/proc/%d/task", pid)
	if _, err := os.Stat(taskDir); err != nil {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for {
		stopped := true
		tasks, err := os.ReadDir(taskDir)
		if err != nil {
			return err
		}
		for _, t := range tasks {
			b, err := os.ReadFile(filepath.Join(taskDir, t.Name(), "stat"))
			if err != nil {
				continue // the thread exited
			}
			// pid (comm) STATE ...: comm may hold spaces and parentheses.
			if i := strings.LastIndexByte(string(b), ')'); i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
				stopped = false
				break
			}
		}
		if stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d not stopped %v after SIGSTOP", pid, timeout)
		}
		time.Sleep(time.Millisecond) // polling /proc, bounded by deadline
	}
}

// Resume sends SIGCONT to node i.
func (c *Cluster) Resume(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[i]
	if n.cmd == nil || exited(n.done) {
		return fmt.Errorf("chaos: resume %s: not running", n.id)
	}
	if err := n.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("chaos: resume %s: %w", n.id, err)
	}
	n.paused = false
	c.logf("%s resumed (SIGCONT)", n.id)
	return nil
}

// Restart starts node i again with the same id, ports and data dir, and
// waits (up to 30 s) until its HTTP service answers /healthz, so that a
// process that cannot start (a port taken meanwhile) is reported here.
// Readiness is WaitReady's or WaitHealthy's business: a restarted owner may
// hold its listeners while it recovers.
func (c *Cluster) Restart(i int) error {
	if err := c.spawn(i); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.poll(ctx, fmt.Sprintf("%s /healthz after restart", NodeID(i)), func() (bool, error) {
		if !c.Running(i) {
			return false, fmt.Errorf("chaos: %s exited after restart; log tail:\n%s", NodeID(i), c.LogTail(i, 20))
		}
		return c.get(ctx, i, "/healthz", nil) == nil, nil
	})
}

// WaitReady waits until node i's /readyz answers 200.
func (c *Cluster) WaitReady(ctx context.Context, i int) error {
	ctx, cancel := withDefaultDeadline(ctx, 90*time.Second)
	defer cancel()
	return c.poll(ctx, NodeID(i)+" ready", func() (bool, error) {
		if !c.Running(i) {
			return false, fmt.Errorf("chaos: %s exited; log tail:\n%s", NodeID(i), c.LogTail(i, 20))
		}
		return c.get(ctx, i, "/readyz", nil) == nil, nil
	})
}

func withDefaultDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// poll calls cond every 100 ms until it holds, it fails, or ctx ends.
func (c *Cluster) poll(ctx context.Context, what string, cond func() (bool, error)) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: timed out waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

// get fetches path from node i's HTTP service; out (if not nil) receives the
// decoded JSON body. A status other than 200 is an error. One request takes
// at most 2 s, so that a paused node does not hold a poll loop.
func (c *Cluster) get(ctx context.Context, i int, path string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.HTTPAddr(i)+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return fmt.Errorf("chaos: GET %s on %s: %s", path, NodeID(i), resp.Status)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Status is the part of GET /v1/cluster the harness reads.
type Status struct {
	Self        string            `json:"self"`
	MapVersion  uint64            `json:"mapVersion"`
	Leader      string            `json:"leader"`
	Term        uint64            `json:"term"`
	TrafficGate string            `json:"trafficGate"`
	Nodes       []NodeStatus      `json:"nodes"`
	Partitions  []PartitionStatus `json:"partitions"`
	// Rebalance is the leader's live-migration status (only on the leader).
	Rebalance *struct {
		Active     bool   `json:"active"`
		Pending    bool   `json:"pending"`
		Completed  uint64 `json:"completed_moves"`
		Aborted    uint64 `json:"aborted_moves"`
		KeysMoved  int64  `json:"keys_moved"`
		BytesMoved int64  `json:"bytes_moved"`
	} `json:"rebalance,omitempty"`
	// Follow is the WAN follower's state (absent on a cluster that never
	// followed another).
	Follow *FollowStatus `json:"follow,omitempty"`
}

// FollowStatus is the follow document of GET /v1/cluster.
type FollowStatus struct {
	State          string `json:"state"` // following | promoted
	Source         string `json:"source"`
	Generation     uint64 `json:"generation"`
	AppliedChanges uint64 `json:"appliedChanges"` // covered by the cursor in raft
	PromotedFrom   string `json:"promotedFrom"`
	// Applier is the live view of the node that runs the applier (the
	// control-plane leader): only that node's document has it.
	Applier *struct {
		Node           string  `json:"node"`
		Connected      bool    `json:"connected"`
		LagRevisions   uint64  `json:"lagRevisions"`
		LagSeconds     float64 `json:"lagSeconds"`
		AppliedChanges uint64  `json:"appliedChanges"`
		FullCopies     uint64  `json:"fullCopies"`
		LastError      string  `json:"lastError"`
	} `json:"applier,omitempty"`
}

// NodeStatus is one member as a node sees it.
type NodeStatus struct {
	ID         string `json:"id"`
	ClientAddr string `json:"clientAddr"`
	State      string `json:"state"`
	InMap      bool   `json:"inMap"`
	Raft       string `json:"raft"`
	Leader     bool   `json:"leader"`
	Partitions []int  `json:"partitions"`
}

// PartitionStatus is one partition of a node's applied map.
type PartitionStatus struct {
	ID          int             `json:"id"`
	Primary     string          `json:"primary"`
	ActiveOwner string          `json:"activeOwner"`
	Replicas    []string        `json:"replicas"`
	Epoch       uint64          `json:"epoch"`
	Generation  uint64          `json:"generation"`
	Health      string          `json:"health"`
	Demoted     []string        `json:"demoted,omitempty"`
	SyncSource  string          `json:"syncSource,omitempty"`
	Incoming    []string        `json:"incoming,omitempty"`
	MoveTo      string          `json:"moveTo,omitempty"`
	FirstSlot   int             `json:"firstSlot"`
	LastSlot    int             `json:"lastSlot"`
	Replication []ReplicaStatus `json:"replication,omitempty"`
	Recovery    string          `json:"recovery,omitempty"`
}

// ReplicaStatus is a replica's progress as the active owner sees it.
type ReplicaStatus struct {
	Node         string `json:"node"`
	State        string `json:"state"`
	LagRevisions uint64 `json:"lagRevisions"`
}

// Status fetches node i's GET /v1/cluster.
func (c *Cluster) Status(ctx context.Context, i int) (*Status, error) {
	var st Status
	if err := c.get(ctx, i, "/v1/cluster", &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Leader returns the index of the node that leads the control plane: a
// serving node whose own status names itself leader (the highest term wins
// if a deposed leader has not noticed yet).
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	best, term := -1, uint64(0)
	var lastErr error
	for i := range c.nodes {
		if !c.serving(i) {
			continue
		}
		st, err := c.Status(ctx, i)
		if err != nil {
			lastErr = err
			continue
		}
		if st.Leader == st.Self && (best < 0 || st.Term > term) {
			best, term = i, st.Term
		}
	}
	if best < 0 {
		return -1, fmt.Errorf("chaos: no node leads the control plane (last error: %v)", lastErr)
	}
	return best, nil
}

// view returns the cluster as the leader sees it (its fold of the log is
// the freshest), or as any serving node sees it when no leader answers.
func (c *Cluster) view(ctx context.Context) (*Status, error) {
	if l, err := c.Leader(ctx); err == nil {
		if st, err := c.Status(ctx, l); err == nil {
			return st, nil
		}
	}
	var lastErr error = errors.New("no node is serving")
	for i := range c.nodes {
		if !c.serving(i) {
			continue
		}
		st, err := c.Status(ctx, i)
		if err == nil {
			return st, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("chaos: no node answers /v1/cluster: %w", lastErr)
}

// OwnerOf returns the index of the active owner of key's partition.
func (c *Cluster) OwnerOf(ctx context.Context, key string) (int, error) {
	st, err := c.view(ctx)
	if err != nil {
		return -1, err
	}
	slot := int(placement.Slot(key))
	for _, p := range st.Partitions {
		if p.FirstSlot <= slot && slot <= p.LastSlot {
			i := c.Index(p.ActiveOwner)
			if i < 0 {
				return -1, fmt.Errorf("chaos: partition %d of %q has unknown owner %q", p.ID, key, p.ActiveOwner)
			}
			return i, nil
		}
	}
	return -1, fmt.Errorf("chaos: no partition of %s's map covers slot %d", st.Self, slot)
}

// Describe summarises the map as the leader sees it: each partition's
// owner, replicas, epoch and generation, and the leader (for the fault
// timeline).
func (c *Cluster) Describe(ctx context.Context) string {
	st, err := c.view(ctx)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "map v%d leader %s term %d:", st.MapVersion, st.Leader, st.Term)
	for _, p := range st.Partitions {
		fmt.Fprintf(&b, " p%d primary %s replicas %v active owner %s, %s epoch %d gen %d;", p.ID, p.Primary, p.Replicas, p.ActiveOwner, p.Health, p.Epoch, p.Generation)
	}
	return strings.TrimSuffix(b.String(), ";")
}

// WaitHealthy waits (by default up to 90 s; ctx may bound it) until every
// running node answers, has applied the same map version, names the same
// leader, sees every partition healthy and every running node alive, and
// serves traffic.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	ctx, cancel := withDefaultDeadline(ctx, 90*time.Second)
	defer cancel()
	var why string
	err := c.poll(ctx, "a healthy cluster", func() (bool, error) {
		why = c.unhealthy(ctx)
		return why == "", nil
	})
	if err != nil {
		return fmt.Errorf("%w (last: %s)", err, why)
	}
	return nil
}

// unhealthy says why the cluster is not healthy now, or "".
func (c *Cluster) unhealthy(ctx context.Context) string {
	var ref *Status
	for i := range c.nodes {
		if !c.Running(i) {
			continue
		}
		if c.Paused(i) {
			return NodeID(i) + " is paused"
		}
		if err := c.get(ctx, i, "/readyz", nil); err != nil {
			return NodeID(i) + " not ready: " + err.Error()
		}
		st, err := c.Status(ctx, i)
		if err != nil {
			return err.Error()
		}
		if st.TrafficGate != "open" {
			return st.Self + " traffic gate " + st.TrafficGate
		}
		if ref == nil {
			ref = st
		} else if st.MapVersion != ref.MapVersion || st.Leader != ref.Leader {
			return fmt.Sprintf("%s sees map v%d leader %q, %s sees v%d leader %q",
				st.Self, st.MapVersion, st.Leader, ref.Self, ref.MapVersion, ref.Leader)
		}
		if st.Leader == "" {
			return st.Self + " knows no leader"
		}
		for _, p := range st.Partitions {
			if p.Health != "healthy" {
				return fmt.Sprintf("%s sees partition %d %s (owner %s)", st.Self, p.ID, p.Health, p.ActiveOwner)
			}
		}
		for _, ns := range st.Nodes {
			if j := c.Index(ns.ID); j >= 0 && c.Running(j) && ns.State != "alive" {
				return fmt.Sprintf("%s sees %s %s", st.Self, ns.ID, ns.State)
			}
		}
	}
	if ref == nil {
		return "no node is running"
	}
	return ""
}

// waitSameMap waits until every node has applied one map version.
func (c *Cluster) waitSameMap(ctx context.Context) error {
	ctx, cancel := withDefaultDeadline(ctx, 60*time.Second)
	defer cancel()
	return c.poll(ctx, "every node on the same map", func() (bool, error) {
		var v uint64
		for i := range c.nodes {
			st, err := c.Status(ctx, i)
			if err != nil || st.MapVersion == 0 || (i > 0 && st.MapVersion != v) {
				return false, nil
			}
			v = st.MapVersion
		}
		return true, nil
	})
}

// ConnString is the native cluster connection string with every node as a
// seed, for sdk.Connect.
func (c *Cluster) ConnString() string {
	addrs := make([]string, len(c.nodes))
	for i := range c.nodes {
		addrs[i] = c.ClientAddr(i)
	}
	return "zaris://" + strings.Join(addrs, ",") + "/default"
}

// LogTail returns the last n lines of node i's log.
func (c *Cluster) LogTail(i, n int) string {
	f, err := os.Open(c.nodes[i].log)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	ring := make([]string, 0, n)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if len(ring) == n {
			ring = ring[1:]
		}
		ring = append(ring, sc.Text())
	}
	return strings.Join(ring, "\n")
}

// Crashes lists the process exits the harness did not cause (a crash, a
// fatal error, a failed start).
func (c *Cluster) Crashes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.crashes...)
}

// LogProblems scans every node's log for what must never appear — a panic,
// a Go fatal error, a data race report — and returns the matching lines
// with the node id (at most 20 per node).
func (c *Cluster) LogProblems() []string {
	var out []string
	for i, n := range c.nodes {
		f, err := os.Open(n.log)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		found := 0
		for sc.Scan() && found < 20 {
			line := sc.Text()
			if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") ||
				strings.Contains(line, "WARNING: DATA RACE") || strings.Contains(line, "level=ERROR msg=\"panic") {
				out = append(out, NodeID(i)+": "+line)
				found++
			}
		}
		f.Close()
	}
	return out
}

// LogPath is node i's log file (every start of the node appends to it).
func (c *Cluster) LogPath(i int) string { return c.nodes[i].log }

// Close kills every process still running (SIGKILL, paused ones included)
// and waits for them. It removes the working directory only if Start
// created it. Safe to call more than once.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	var running []*node
	for _, n := range c.nodes {
		n.held.release()
		n.held = nil
		if n.cmd != nil && !exited(n.done) {
			n.killing = true
			_ = n.cmd.Process.Signal(syscall.SIGKILL)
			running = append(running, n)
		}
	}
	c.mu.Unlock()
	var errs []error
	for _, n := range running {
		select {
		case <-n.done:
		case <-time.After(10 * time.Second):
			errs = append(errs, fmt.Errorf("chaos: %s did not exit after SIGKILL", n.id))
		}
	}
	if c.ownDir {
		errs = append(errs, os.RemoveAll(c.opts.Dir))
	}
	return errors.Join(errs...)
}

// Port picking. The registry names every node's ports before any process
// starts, so each port is taken from the kernel (bind on port 0) and held —
// a TCP listener, plus a UDP socket on the gossip port (memberlist needs both
// on one number) — until the node's process is spawned; the harness holds
// them again while the process is down (kill -9, before a restart), since
// a port from the kernel's ephemeral range could otherwise become the local
// end of some outgoing connection meanwhile. A port a node of this process
// was given is never given again. On a host this process cannot bind (it
// lives in another network namespace, Net) the port is taken on loopback
// and not held: nothing else binds in that namespace.

var (
	portMu    sync.Mutex
	handedOut = map[int]bool{} // guarded by portMu
)

// heldPorts are sockets keeping a node's ports until its process binds them.
type heldPorts struct{ socks []io.Closer }

// release closes the held sockets (nil-safe): the ports are the node's.
func (h *heldPorts) release() {
	if h == nil {
		return
	}
	for _, s := range h.socks {
		_ = s.Close() // bound, never used: nothing to flush
	}
	h.socks = nil
}

// pickPorts takes one node's five ports from the kernel and holds them.
func pickPorts(host string) (ports, *heldPorts, error) {
	var p ports
	held := &heldPorts{}
	for _, dst := range []*int{&p.client, &p.peer, &p.gossip, &p.resp, &p.http} {
		port, socks, err := kernelPort(host, dst == &p.gossip)
		if err != nil {
			held.release()
			return p, nil, err
		}
		*dst = port
		held.socks = append(held.socks, socks...)
	}
	return p, held, nil
}

// kernelPort binds port 0 on host (loopback when host is not local) — TCP,
// and UDP on the same number when udp is set, retrying when that UDP port
// is taken — and returns the port with its sockets.
func kernelPort(host string, udp bool) (int, []io.Closer, error) {
	portMu.Lock()
	defer portMu.Unlock()
	bindHost := host
	for range 100 {
		port, l, err := bindTCP(bindHost, 0)
		if err != nil && isAddrNotAvail(err) && bindHost != "127.0.0.1" {
			bindHost = "127.0.0.1" // another namespace's address: nothing to hold here
			continue
		}
		if err != nil {
			return 0, nil, fmt.Errorf("chaos: no port from the kernel on %s: %w", host, err)
		}
		if handedOut[port] {
			l.Close()
			continue
		}
		socks := []io.Closer{l}
		if udp {
			u, err := net.ListenPacket("udp", net.JoinHostPort(bindHost, strconv.Itoa(port)))
			if err != nil { // that UDP port is someone else's: another pair
				l.Close()
				continue
			}
			socks = append(socks, u)
		}
		handedOut[port] = true
		if bindHost != host {
			for _, s := range socks {
				s.Close()
			}
			socks = nil
		}
		return port, socks, nil
	}
	return 0, nil, fmt.Errorf("chaos: no free TCP+UDP port pair from the kernel on %s", host)
}

// holdPorts binds a stopped node's ports again (what cannot be bound — a
// host of another namespace, a port taken meanwhile — is left to the next
// start, which then fails loudly).
func holdPorts(host string, p ports) *heldPorts {
	held := &heldPorts{}
	for _, port := range []int{p.client, p.peer, p.gossip, p.resp, p.http} {
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		if _, l, err := bindTCP(host, port); err == nil {
			held.socks = append(held.socks, l)
		}
		if port == p.gossip {
			if u, err := net.ListenPacket("udp", addr); err == nil {
				held.socks = append(held.socks, u)
			}
		}
	}
	return held
}

// bindTCP binds a TCP socket to host:port (0: a port from the kernel)
// without listening on it. The port is reserved — no other bind takes it,
// no outgoing connection uses it as its local end — and a connection to it
// is refused, as to a port of a process that died. (A listener would accept
// connections into its backlog and leave them hanging: the node would look
// unreachable rather than dead, and its clients and peers would wait for
// their timeouts — 2–3 s more per failover measured by -scenario
// failover-time.)
func bindTCP(host string, port int) (int, io.Closer, error) {
	ip := net.ParseIP(host)
	if ip == nil {
		return 0, nil, fmt.Errorf("chaos: %q is not an IP address", host)
	}
	family, sa := syscall.AF_INET6, syscall.Sockaddr(nil)
	if ip4 := ip.To4(); ip4 != nil {
		a := &syscall.SockaddrInet4{Port: port}
		copy(a.Addr[:], ip4)
		family, sa = syscall.AF_INET, a
	} else {
		a := &syscall.SockaddrInet6{Port: port}
		copy(a.Addr[:], ip.To16())
		sa = a
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, nil, os.NewSyscallError("socket", err)
	}
	if err := syscall.Bind(fd, sa); err != nil {
		syscall.Close(fd)
		return 0, nil, os.NewSyscallError("bind", err)
	}
	got, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		return 0, nil, os.NewSyscallError("getsockname", err)
	}
	switch a := got.(type) {
	case *syscall.SockaddrInet4:
		port = a.Port
	case *syscall.SockaddrInet6:
		port = a.Port
	}
	return port, boundSocket(fd), nil
}

// boundSocket closes a socket bindTCP bound.
type boundSocket int

func (b boundSocket) Close() error { return syscall.Close(int(b)) }

func isAddrNotAvail(err error) bool {
	return errors.Is(err, syscall.EADDRNOTAVAIL)
}

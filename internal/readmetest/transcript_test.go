package readmetest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testenv"
	"github.com/zaris-io/zaris/internal/testscale"
)

// The documented ports of node i (0-based) in the pages, as `make run` and
// `make cluster` use them: native 7861+i, RESP 6380+i, HTTP 7801+i, peer
// 7811+i, gossip 7946+i.
func documentedPorts(i int) []int {
	return []int{7861 + i, 6380 + i, 7801 + i, 7811 + i, 7946 + i}
}

// Every console transcript of the pages runs against real servers and
// prints what the page says it prints.
func TestTranscripts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real zaris-server processes (skipped with -short)")
	}
	for _, tool := range []string{"bash", "curl", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the transcripts use %s, which is not installed (apt-get install -y curl redis-tools)", tool)
		}
	}
	for _, page := range pages {
		t.Run(page, func(t *testing.T) {
			envs := map[string]*env{}
			ran := 0
			for _, b := range readBlocks(t, page) {
				if b.lang != "console" {
					continue
				}
				kind, retry, err := parseRunMarker(b.marker)
				if err != nil {
					t.Fatalf("%s: %v", b, err)
				}
				e := envs[kind]
				if e == nil {
					e = startEnv(t, kind)
					envs[kind] = e
				}
				for _, st := range parseTranscript(b) {
					e.check(t, b, st, retry)
					ran++
				}
			}
			if ran == 0 {
				t.Fatalf("%s: no console transcript", page)
			}
			t.Logf("%s: %d commands checked", page, ran)
		})
	}
}

// step is one command of a transcript and the output expected from it.
type step struct {
	line int // line of the command on the page
	cmd  string
	want []string
}

func parseTranscript(b block) []step {
	var out []step
	for i, l := range strings.Split(b.body, "\n") {
		if cmd, ok := strings.CutPrefix(l, "$ "); ok {
			out = append(out, step{line: b.line + 1 + i, cmd: cmd})
			continue
		}
		if len(out) == 0 {
			out = append(out, step{line: b.line + 1 + i}) // output before any command: fails below
		}
		out[len(out)-1].want = append(out[len(out)-1].want, l)
	}
	return out
}

// env is a running set of servers and the working directory the commands
// run in.
type env struct {
	kind  string
	dir   string
	nodes []*node
	// toReal and toDoc rewrite the documented ports into the real ones (in
	// commands) and back (in output), as whole numbers only.
	toReal, toDoc map[string]string
}

// node is one zaris-server process of an env.
type node struct {
	id    string
	ports []int // documentedPorts' order: native, RESP, HTTP, peer, gossip
	cmd   *exec.Cmd
	log   *testenv.SyncBuffer
	done  chan struct{}
}

func (n *node) httpAddr() string { return "127.0.0.1:" + strconv.Itoa(n.ports[2]) }

var number = regexp.MustCompile(`\b\d{4,5}\b`)

func rewrite(s string, m map[string]string) string {
	return number.ReplaceAllStringFunc(s, func(n string) string {
		if r, ok := m[n]; ok {
			return r
		}
		return n
	})
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds zaris-server, zarisctl and examples/echo-app once per test process, without
// the race detector (the servers run at production speed).
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "zaris-readme-bin-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+"/", "./cmd/zaris-server", "./cmd/zarisctl", "./examples/echo-app")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// startEnv starts the servers of kind: "node", one server as `make run`
// starts it (its own cluster of one); "cluster", three with the flags of
// scripts/cluster.sh (registry, cluster id local, RF 2, sync, 256 MiB);
// "echo-app", such a cluster and two copies of examples/echo-app on it
// (documented ports 8080 and 8081), sharing one SESSION_KEY.
// The processes are started here rather than by test/chaos: that harness
// holds a killed node's ports, so a client would hang on them, where after
// a real kill -9 it is refused at once — which is what the page shows.
func startEnv(t *testing.T, kind string) *env {
	t.Helper()
	bins := binaries(t)
	server := filepath.Join(bins, "zaris-server")
	e := &env{kind: kind, dir: t.TempDir(), toReal: map[string]string{}, toDoc: map[string]string{}}
	count := 1
	if kind != "node" {
		count = 3
	}
	// A port the kernel gave us free can be taken (as a connection's source
	// port, the same range) before the server binds it: a node that exits
	// for that is started again, with all the env's nodes, on new ports.
	for attempt := 1; ; attempt++ {
		err := startNodes(t, e, kind, server, count)
		if err == nil {
			break
		}
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("attempt %d: %v; again on other ports", attempt, err)
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	if kind == "echo-app" {
		var seeds []string
		for _, n := range e.nodes {
			seeds = append(seeds, "127.0.0.1:"+strconv.Itoa(n.ports[0]))
		}
		appPorts := kernelPorts(t, 2)
		for i, doc := range []int{8080, 8081} {
			app := &node{id: "echo-app " + strconv.Itoa(doc), ports: appPorts[i : i+1], log: &testenv.SyncBuffer{}, done: make(chan struct{})}
			e.toReal[strconv.Itoa(doc)] = strconv.Itoa(app.ports[0])
			e.toDoc[strconv.Itoa(app.ports[0])] = strconv.Itoa(doc)
			app.cmd = exec.Command(filepath.Join(bins, "echo-app"))
			app.cmd.Env = append(os.Environ(), "ADDR=127.0.0.1:"+strconv.Itoa(app.ports[0]),
				"ZARIS_URL=zaris://"+strings.Join(seeds, ",")+"/default", "SESSION_KEY=readme-test-session-key-of-32-bytes")
			start(t, app)
			// Any answer (404) to a path the app does not serve: the
			// transcript starts with the app's state untouched.
			waitHTTP(t, hc, app, "http://127.0.0.1:"+strconv.Itoa(app.ports[0])+"/readme-test-probe", true)
		}
	}

	// bin/zarisctl is the real one, pointed at this env's first node
	// (zarisctl's default --http is 127.0.0.1:7801); bin/zaris-server the
	// real server; bin/cluster/nI.pid as scripts/cluster.sh writes them.
	must(t, os.MkdirAll(filepath.Join(e.dir, "bin", "cluster"), 0o755))
	wrapper := fmt.Sprintf("#!/bin/sh\nexec %s --http %s \"$@\"\n", filepath.Join(bins, "zarisctl"), e.nodes[0].httpAddr())
	must(t, os.WriteFile(filepath.Join(e.dir, "bin", "zarisctl"), []byte(wrapper), 0o755))
	must(t, os.Symlink(server, filepath.Join(e.dir, "bin", "zaris-server")))
	for _, n := range e.nodes {
		must(t, os.WriteFile(filepath.Join(e.dir, "bin", "cluster", n.id+".pid"), []byte(strconv.Itoa(n.cmd.Process.Pid)+"\n"), 0o644))
	}
	return e
}

// startNodes starts count servers of kind on ports from the kernel and
// waits until each is ready. A node that exits first makes it stop them all
// and return the node's log.
func startNodes(t *testing.T, e *env, kind, server string, count int) error {
	t.Helper()
	e.nodes = nil
	clear(e.toReal)
	clear(e.toDoc)
	var registry []string
	ports := kernelPorts(t, 5*count) // all held until all are chosen: distinct
	for i := range count {
		n := &node{id: "n" + strconv.Itoa(i+1), ports: ports[5*i : 5*i+5], log: &testenv.SyncBuffer{}, done: make(chan struct{})}
		e.nodes = append(e.nodes, n)
		for j, doc := range documentedPorts(i) {
			e.toReal[strconv.Itoa(doc)] = strconv.Itoa(n.ports[j])
			e.toDoc[strconv.Itoa(n.ports[j])] = strconv.Itoa(doc)
		}
		registry = append(registry, fmt.Sprintf("%s@127.0.0.1:%d:%d:%d:%d:%d", n.id, n.ports[0], n.ports[3], n.ports[4], n.ports[1], n.ports[2]))
	}
	for _, n := range e.nodes {
		args := []string{"--node-id", n.id}
		if kind != "node" {
			args = append(args, "--nodes", strings.Join(registry, ","), "--cluster-id", "local",
				"--replication-factor", "2", "--replication-mode", "sync", "--memory-max-bytes", "256MiB")
		} else {
			args = append(args, "--client-port", strconv.Itoa(n.ports[0]), "--resp-port", strconv.Itoa(n.ports[1]),
				"--http-port", strconv.Itoa(n.ports[2]), "--peer-port", strconv.Itoa(n.ports[3]), "--gossip-port", strconv.Itoa(n.ports[4]))
		}
		n.cmd = exec.Command(server, args...)
		start(t, n)
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	for _, n := range e.nodes {
		if err := waitReady(t, hc, n, "http://"+n.httpAddr()+"/readyz", false); err != nil {
			for _, m := range e.nodes {
				m.cmd.Process.Kill()
				<-m.done
			}
			return err
		}
	}
	return nil
}

// start starts n's process, killed at cleanup (and with the test process).
func start(t *testing.T, n *node) {
	t.Helper()
	n.cmd.Stdout, n.cmd.Stderr = n.log, n.log
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { n.cmd.Wait(); close(n.done) }()
	t.Cleanup(func() {
		n.cmd.Process.Kill()
		<-n.done
	})
}

// waitHTTP polls url until it answers 200 (with anyStatus, until it answers
// at all); n exiting first fails the test.
func waitHTTP(t *testing.T, hc *http.Client, n *node, url string, anyStatus bool) {
	t.Helper()
	if err := waitReady(t, hc, n, url, anyStatus); err != nil {
		t.Fatal(err)
	}
}

// waitReady is waitHTTP returning n's exit before it was ready as an error.
func waitReady(t *testing.T, hc *http.Client, n *node, url string, anyStatus bool) error {
	t.Helper()
	var exited error
	testscale.Eventually(t, 2*time.Minute, 100*time.Millisecond, n.id+" ready", func() bool {
		select {
		case <-n.done:
			exited = fmt.Errorf("%s exited before it was ready:\n%s", n.id, n.log.String())
			return true
		default:
		}
		resp, err := hc.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return anyStatus || resp.StatusCode == http.StatusOK
	})
	return exited
}

// kernelPorts returns count distinct free ports from the kernel, each free
// for TCP and for UDP (the gossip port needs both), released for the
// server to bind.
func kernelPorts(t *testing.T, count int) []int {
	t.Helper()
	var out []int
	var closers []func() error
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for len(out) < count {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closers = append(closers, l.Close)
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // that UDP port is taken: another one
		}
		closers = append(closers, u.Close)
		out = append(out, port)
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// logTail is the end of the first node's log, for a failure message.
func (e *env) logTail() string {
	lines := strings.Split(strings.TrimRight(e.nodes[0].log.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], "\n")
}

// check runs st and compares its output; with retry it runs it again until
// the output matches or a deadline passes.
func (e *env) check(t *testing.T, b block, st step, retry bool) {
	t.Helper()
	if st.cmd == "" {
		t.Fatalf("%s:%d: output before any \"$ \" command", b.page, st.line)
	}
	start := time.Now()
	deadline := start.Add(testscale.D(90 * time.Second))
	var first, got string
	for attempt := 0; ; attempt++ {
		got = e.run(st.cmd)
		if attempt == 0 {
			first = got
		}
		if matchOutput(st.want, splitOutput(got)) {
			if attempt > 0 {
				t.Logf("%s:%d ($ %s): matched after %d attempts, %v", b.page, st.line, st.cmd, attempt+1, time.Since(start).Round(time.Millisecond))
			}
			return
		}
		if !retry || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond) // poll interval of the retry, not a synchronisation
	}
	t.Errorf("%s:%d ($ %s): the output differs from the page (%s env; logs of node 1:\n%s)\n--- page:\n%s\n--- got:\n%s\n--- first attempt:\n%s",
		b.page, st.line, st.cmd, e.kind, e.logTail(), strings.Join(st.want, "\n"), got, first)
}

// run runs one command line with bash in the env's directory and returns
// its combined output with the real ports shown as the documented ones.
func (e *env) run(cmdline string) string {
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	// redis-cli formats its replies as on a terminal, as the pages show.
	cmdline = strings.ReplaceAll(rewrite(cmdline, e.toReal), "redis-cli ", "redis-cli --no-raw ")
	cmd := exec.CommandContext(ctx, "bash", "-c", cmdline)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	s := rewrite(string(out), e.toDoc)
	if ctx.Err() != nil {
		s += fmt.Sprintf("\n[timed out: %v]", err)
	}
	return s
}

func splitOutput(s string) []string {
	s = trimLines(s)
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// matchOutput reports whether got matches want, where a want line "..."
// stands for any number of lines and "..." within a line for any text.
func matchOutput(want, got []string) bool {
	want = splitOutput(strings.Join(want, "\n"))
	memo := map[[2]int]bool{}
	var match func(i, j int) bool
	match = func(i, j int) bool {
		key := [2]int{i, j}
		if v, ok := memo[key]; ok {
			return v
		}
		var ok bool
		switch {
		case i == len(want):
			ok = j == len(got)
		case strings.TrimSpace(want[i]) == "...":
			ok = match(i+1, j) || (j < len(got) && match(i, j+1))
		default:
			ok = j < len(got) && lineMatches(want[i], got[j]) && match(i+1, j+1)
		}
		memo[key] = ok
		return ok
	}
	return match(0, 0)
}

func lineMatches(want, got string) bool {
	if !strings.Contains(want, "...") {
		return want == got
	}
	parts := strings.Split(want, "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(got)
}

// The matcher itself: the wildcards match what they should and nothing else.
func TestMatchOutput(t *testing.T) {
	cases := []struct {
		want, got string
		ok        bool
	}{
		{"a\nb", "a\nb", true},
		{"a\nb", "a\nc", false},
		{"a\nb", "a", false},
		{"a", "a\nb", false},
		{"...", "", true},
		{"...", "x\ny", true},
		{"a\n...\nd", "a\nb\nc\nd", true},
		{"a\n...\nd", "a\nd", true},
		{"a\n...\nd", "a\nb\nc", false},
		{`{"version":...}`, `{"version":2,"ttl_ms":5}`, true},
		{`{"version":...}`, `{"ver":2}`, false},
		{"n... Running", "n1 Running", true},
		{"n... Running", "n1 Stopped", false},
		{"", "", true},
		{"", "x", false},
	}
	for _, c := range cases {
		if got := matchOutput(strings.Split(c.want, "\n"), splitOutput(c.got)); got != c.ok {
			t.Errorf("match(%q, %q) = %v, want %v", c.want, c.got, got, c.ok)
		}
	}
}

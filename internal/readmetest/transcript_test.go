package readmetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/test/chaos"
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
	kind string
	dir  string
	c    *chaos.Cluster
	// toReal and toDoc rewrite the documented ports into the real ones (in
	// commands) and back (in output), as whole numbers only.
	toReal, toDoc map[string]string
}

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

// binaries builds zaris-server and zarisctl once per test process, without
// the race detector (the servers run at production speed).
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "zaris-readme-bin-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+"/", "./cmd/zaris-server", "./cmd/zarisctl")
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

func startEnv(t *testing.T, kind string) *env {
	t.Helper()
	bins := binaries(t)
	o := chaos.Options{Binary: filepath.Join(bins, "zaris-server"), Nodes: 1}
	if kind == "cluster" {
		// What scripts/cluster.sh starts: RF 2, sync, the default timings.
		o = chaos.Options{Binary: o.Binary, Nodes: 3, RF: 2, Mode: "sync", DefaultTimings: true}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	c, err := chaos.Start(ctx, o)
	if err != nil {
		t.Fatalf("start %s: %v", kind, err)
	}
	t.Cleanup(func() { c.Close() })

	e := &env{kind: kind, dir: t.TempDir(), c: c, toReal: map[string]string{}, toDoc: map[string]string{}}
	for i, entry := range strings.Split(c.Registry(), ",") {
		// id@host:client:peer:gossip:resp:http
		_, addr, _ := strings.Cut(entry, "@")
		f := strings.Split(addr, ":")
		real := []string{f[1], f[4], f[5], f[2], f[3]} // documentedPorts' order
		for j, doc := range documentedPorts(i) {
			e.toReal[strconv.Itoa(doc)] = real[j]
			e.toDoc[real[j]] = strconv.Itoa(doc)
		}
	}

	// bin/zarisctl is the real one, pointed at this env's first node
	// (zarisctl's default --http is 127.0.0.1:7801); bin/zaris-server the
	// real server; bin/cluster/nI.pid as scripts/cluster.sh writes them.
	must(t, os.MkdirAll(filepath.Join(e.dir, "bin", "cluster"), 0o755))
	wrapper := fmt.Sprintf("#!/bin/sh\nexec %s --http %s \"$@\"\n", filepath.Join(bins, "zarisctl"), c.HTTPAddr(0))
	must(t, os.WriteFile(filepath.Join(e.dir, "bin", "zarisctl"), []byte(wrapper), 0o755))
	must(t, os.Symlink(o.Binary, filepath.Join(e.dir, "bin", "zaris-server")))
	for i := range c.N() {
		must(t, os.WriteFile(filepath.Join(e.dir, "bin", "cluster", chaos.NodeID(i)+".pid"), []byte(strconv.Itoa(c.Pid(i))+"\n"), 0o644))
	}
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// check runs st and compares its output; with retry it runs it again until
// the output matches or a deadline passes.
func (e *env) check(t *testing.T, b block, st step, retry bool) {
	t.Helper()
	if st.cmd == "" {
		t.Fatalf("%s:%d: output before any \"$ \" command", b.page, st.line)
	}
	deadline := time.Now().Add(testscale.D(90 * time.Second))
	var first, got string
	for attempt := 0; ; attempt++ {
		got = e.run(st.cmd)
		if attempt == 0 {
			first = got
		}
		if matchOutput(st.want, splitOutput(got)) {
			return
		}
		if !retry || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond) // poll interval of the retry, not a synchronisation
	}
	t.Errorf("%s:%d ($ %s): the output differs from the page (%s env; logs of node 1:\n%s)\n--- page:\n%s\n--- got:\n%s\n--- first attempt:\n%s",
		b.page, st.line, st.cmd, e.kind, e.c.LogTail(0, 5), strings.Join(st.want, "\n"), got, first)
}

// run runs one command line with bash in the env's directory and returns
// its combined output with the real ports shown as the documented ones.
func (e *env) run(cmdline string) string {
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", rewrite(cmdline, e.toReal))
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

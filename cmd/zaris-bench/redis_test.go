package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/redistest"
)

// startRedis runs a real redis-server on a free loopback port for the
// test's lifetime and returns its address. It skips the test only when
// redis-server is not installed.
func startRedis(t *testing.T, extra ...string) string {
	t.Helper()
	return redistest.Start(t, extra...)
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// respConfig is a small, fast RESP run against addr.
func respConfig(addr string) Config {
	cfg := DefaultConfig()
	cfg.Protocol = ProtocolRESP
	cfg.Addr = addr
	cfg.Connections = 8
	cfg.Pipeline = 16
	cfg.Keyspace = 2000
	cfg.Duration = 0
	cfg.Requests = 20_000
	cfg.Progress = 0
	cfg.Seed = 1
	return cfg
}

// checkReport asserts the invariants every clean run satisfies.
func checkReport(t *testing.T, rep Report) {
	t.Helper()
	if rep.TotalOps == 0 {
		t.Fatalf("no ops: %+v", rep)
	}
	if rep.Errors != 0 {
		t.Fatalf("%d errors (first: %s)", rep.Errors, rep.FirstError)
	}
	if rep.Gets+rep.Sets != rep.TotalOps {
		t.Errorf("gets %d + sets %d != total %d", rep.Gets, rep.Sets, rep.TotalOps)
	}
	if rep.Hits+rep.Misses != rep.Gets {
		t.Errorf("hits %d + misses %d != gets %d", rep.Hits, rep.Misses, rep.Gets)
	}
	l := rep.Latency
	if !(l.Min > 0 && l.Min <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
		t.Errorf("latency percentiles out of order: %+v", l)
	}
	if rep.OpsPerSec <= 0 || rep.ElapsedSeconds <= 0 {
		t.Errorf("throughput %v over %vs", rep.OpsPerSec, rep.ElapsedSeconds)
	}
}

// TestRESPRequestsWarmedMix: a 1:1 mix bounded by count against a warmed
// keyspace answers exactly -n requests, every GET a hit.
func TestRESPRequestsWarmedMix(t *testing.T) {
	addr := startRedis(t)
	cfg := respConfig(addr)
	var out, errOut bytes.Buffer
	rep, err := run(context.Background(), cfg, &out, &errOut)
	if err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	checkReport(t, rep)
	if rep.TotalOps != uint64(cfg.Requests) {
		t.Errorf("total ops %d, want exactly %d", rep.TotalOps, cfg.Requests)
	}
	if rep.WarmupKeys != cfg.Keyspace {
		t.Errorf("warmup keys %d, want %d", rep.WarmupKeys, cfg.Keyspace)
	}
	if rep.Gets == 0 || rep.Sets == 0 || rep.Hits != rep.Gets {
		t.Errorf("warmed 1:1 mix: gets %d sets %d hits %d", rep.Gets, rep.Sets, rep.Hits)
	}
	for _, want := range []string{"throughput", "latency µs", "p99.9", "hits " + strconv.FormatUint(rep.Hits, 10)} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, out.String())
		}
	}
	// The keys really are in redis, with the configured value size.
	if got := redisCommand(t, addr, "STRLEN", "key:0042"); got != ":32" {
		t.Errorf("STRLEN key:0042 = %q, want :32", got)
	}
	if got := redisCommand(t, addr, "DBSIZE"); got != ":"+strconv.Itoa(cfg.Keyspace) {
		t.Errorf("DBSIZE = %q, want %d keys", got, cfg.Keyspace)
	}
}

// TestRESPDurationAndProgress: a run bounded by time stops by itself near
// its duration, prints progress lines, and emits parseable JSON.
func TestRESPDurationAndProgress(t *testing.T) {
	addr := startRedis(t)
	cfg := respConfig(addr)
	cfg.Requests = 0
	cfg.Duration = 600 * time.Millisecond
	cfg.Progress = 150 * time.Millisecond
	cfg.JSON = true
	var out, errOut bytes.Buffer
	start := time.Now()
	rep, err := run(context.Background(), cfg, &out, &errOut)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	checkReport(t, rep)
	if rep.ElapsedSeconds < 0.6 || time.Since(start) > 10*time.Second {
		t.Errorf("elapsed %.3fs (wall %v) for a 600ms run", rep.ElapsedSeconds, time.Since(start))
	}
	if n := strings.Count(errOut.String(), "ops/s"); n < 2 {
		t.Errorf("%d progress lines, want ≥ 2:\n%s", n, errOut.String())
	}
	var decoded Report
	if err := json.Unmarshal(out.Bytes(), &decoded); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, out.String())
	}
	if decoded.TotalOps != rep.TotalOps || decoded.Latency.P99 != rep.Latency.P99 {
		t.Errorf("JSON %+v differs from returned %+v", decoded, rep)
	}
}

// TestRESPRatios: SET-only never warms up; GET-only without warmup on an
// empty server misses every time.
func TestRESPRatios(t *testing.T) {
	addr := startRedis(t)

	cfg := respConfig(addr)
	cfg.GetRatio, cfg.SetRatio = 0, 1
	rep, err := run(context.Background(), cfg, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, rep)
	if rep.WarmupKeys != 0 || rep.Gets != 0 || rep.Sets != uint64(cfg.Requests) {
		t.Errorf("SET only: warmup %d gets %d sets %d", rep.WarmupKeys, rep.Gets, rep.Sets)
	}

	cfg = respConfig(addr)
	cfg.GetRatio, cfg.SetRatio = 1, 0
	cfg.Warmup = false
	cfg.KeyPrefix = "never-set:"
	rep, err = run(context.Background(), cfg, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, rep)
	if rep.WarmupKeys != 0 || rep.Sets != 0 || rep.Hits != 0 || rep.Misses != uint64(cfg.Requests) {
		t.Errorf("GET only, cold: warmup %d sets %d hits %d misses %d", rep.WarmupKeys, rep.Sets, rep.Hits, rep.Misses)
	}
}

// TestRESPAuth: with requirepass, the right --token works, a wrong one and
// none are refused with ErrHandshakeRejected before any load.
func TestRESPAuth(t *testing.T) {
	addr := startRedis(t, "--requirepass", "s3cret")
	cfg := respConfig(addr)
	cfg.Token = "s3cret"
	rep, err := run(context.Background(), cfg, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, rep)

	for _, tok := range []string{"wrong", ""} {
		cfg.Token = tok
		_, err := run(context.Background(), cfg, io.Discard, io.Discard)
		if !errors.Is(err, ErrHandshakeRejected) {
			t.Errorf("token %q: err = %v, want ErrHandshakeRejected", tok, err)
		}
	}
}

// TestRESPErrorReplies: error replies are counted, not fatal: GETs of a key
// holding a list all fail with WRONGTYPE and the run completes.
func TestRESPErrorReplies(t *testing.T) {
	addr := startRedis(t)
	redisCommand(t, addr, "RPUSH", "list:0", "x")
	cfg := respConfig(addr)
	cfg.KeyPrefix = "list:"
	cfg.Keyspace = 1
	cfg.GetRatio, cfg.SetRatio = 1, 0
	cfg.Warmup = false
	cfg.Requests = 100
	rep, err := run(context.Background(), cfg, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors != 100 || rep.TotalOps != 100 || !strings.Contains(rep.FirstError, "WRONGTYPE") {
		t.Errorf("errors %d of %d, first %q; want 100 WRONGTYPE", rep.Errors, rep.TotalOps, rep.FirstError)
	}
}

// TestInterrupt: canceling the context ends a long run promptly with a
// partial report marked interrupted.
func TestInterrupt(t *testing.T) {
	addr := startRedis(t)
	cfg := respConfig(addr)
	cfg.Requests = 0
	cfg.Duration = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	rep, err := run(ctx, cfg, io.Discard, io.Discard)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want interrupted by the deadline", err)
	}
	if !rep.Interrupted || rep.TotalOps == 0 || rep.Errors != 0 {
		t.Errorf("partial report: %+v", rep)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v to stop", d)
	}
}

// TestConnectionRefused: nothing listening is a clear error before load.
func TestConnectionRefused(t *testing.T) {
	for _, p := range []Protocol{ProtocolRESP, ProtocolNative} {
		cfg := respConfig(net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t))))
		cfg.Protocol = p
		_, err := run(context.Background(), cfg, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("%s: err = %v, want connection refused", p, err)
		}
	}
}

// TestBinary builds zaris-bench and runs it as a user would: -n 1000
// against redis-server with a JSON report, then the failure exit codes.
func TestBinary(t *testing.T) {
	addr := startRedis(t)
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("go tool not found:", err)
	}
	bin := filepath.Join(t.TempDir(), "zaris-bench")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cmd := exec.CommandContext(ctx, bin, "--protocol", "resp", "--addr", addr,
		"-c", "10", "-P", "8", "-n", "1000", "--keyspace", "500", "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("zaris-bench: %v\nstderr: %s", err, stderr.String())
	}
	var rep Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, stdout.String())
	}
	checkReport(t, rep)
	if rep.TotalOps != 1000 || rep.Hits != rep.Gets || rep.WarmupKeys != 500 {
		t.Errorf("report: total %d (want 1000), hits %d of %d gets, warmup %d", rep.TotalOps, rep.Hits, rep.Gets, rep.WarmupKeys)
	}

	failures := []struct {
		name     string
		args     []string
		code     int
		contains string
	}{
		{"refused", []string{"--protocol", "resp", "--addr", net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t))), "-n", "10"}, exitRun, "connection refused"},
		{"remote", []string{"--addr", "192.0.2.1:7861", "-n", "10"}, exitRun, "--allow-remote"},
		{"bad token", []string{"--protocol", "resp", "--addr", addr, "--token", "nope", "-n", "10"}, exitRun, "handshake rejected"},
		{"bad ratio", []string{"--ratio", "x"}, exitUsage, "--ratio"},
		{"bad flag", []string{"--no-such-flag"}, exitUsage, "unknown flag"},
	}
	for _, f := range failures {
		cmd := exec.CommandContext(ctx, bin, f.args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != f.code {
			t.Errorf("%s: err %v, want exit code %d", f.name, err, f.code)
		}
		if !strings.Contains(stderr.String(), f.contains) {
			t.Errorf("%s: stderr %q lacks %q", f.name, stderr.String(), f.contains)
		}
	}
}

// redisCommand sends one command on a fresh connection and returns the
// first line of the reply.
func redisCommand(t *testing.T, addr string, args ...string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	if _, err := c.Write(appendCommand(nil, bs...)); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 0, 64)
	one := make([]byte, 1)
	for {
		if _, err := c.Read(one); err != nil {
			t.Fatal(err)
		}
		if one[0] == '\n' {
			return strings.TrimSuffix(string(line), "\r")
		}
		line = append(line, one[0])
	}
}

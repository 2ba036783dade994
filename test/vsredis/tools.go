package vsredis

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// BenchResult is one load run's outcome against one server.
type BenchResult struct {
	// OpsPerSec is the client-side throughput.
	OpsPerSec float64
	// Requests is the number of requests the run sent (the server CPU per
	// request is divided by it).
	Requests int64
	// P50, P99 are latencies in microseconds (0 when the tool gives none).
	P50, P99 float64
	// LoadCores is the load generator's CPU time (user + system) over its
	// run's wall time: near 1 for the single-threaded redis-benchmark, the
	// row measured the load generator's ceiling, not the server's.
	LoadCores float64
}

// runLoad runs cmd to completion and returns its stdout and the CPU cores
// it kept busy on average.
func runLoad(cmd *exec.Cmd) (out []byte, cores float64, err error) {
	start := time.Now()
	out, err = cmd.Output()
	wall := time.Since(start)
	if cmd.ProcessState != nil && wall > 0 {
		cores = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds() / wall.Seconds()
	}
	return out, cores, err
}

// RedisBenchmark runs redis-benchmark for one -t test and parses its --csv
// line. args are the shared flags (-c, -n, -d, -r, -P); requests is -n.
func RedisBenchmark(ctx context.Context, bin, addr, test string, requests int64, args []string) (BenchResult, error) {
	host, port, err := splitAddr(addr)
	if err != nil {
		return BenchResult{}, err
	}
	full := append([]string{"-h", host, "-p", port, "-t", test, "-n", strconv.FormatInt(requests, 10), "--csv"}, args...)
	out, cores, err := runLoad(exec.CommandContext(ctx, bin, full...))
	if err != nil {
		return BenchResult{}, fmt.Errorf("redis-benchmark %s: %w%s", strings.Join(full, " "), err, stderrOf(err))
	}
	r, err := ParseRedisBenchmarkCSV(out, test)
	if err != nil {
		return BenchResult{}, err
	}
	r.Requests, r.LoadCores = requests, cores
	return r, nil
}

// ParseRedisBenchmarkCSV reads redis-benchmark --csv output (a header line,
// then "TEST","rps","avg_latency_ms",…,"p99_latency_ms",…) and returns the
// row of test. Latencies are converted to microseconds.
func ParseRedisBenchmarkCSV(out []byte, test string) (BenchResult, error) {
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		return BenchResult{}, fmt.Errorf("redis-benchmark output is not CSV: %w: %q", err, out)
	}
	if len(rows) < 2 {
		return BenchResult{}, fmt.Errorf("redis-benchmark printed no result row: %q", out)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, need := range []string{"test", "rps", "p50_latency_ms", "p99_latency_ms"} {
		if _, ok := col[need]; !ok {
			return BenchResult{}, fmt.Errorf("redis-benchmark CSV header %q lacks %q", rows[0], need)
		}
	}
	for _, row := range rows[1:] {
		if len(row) != len(rows[0]) || !benchmarkNamed(row[col["test"]], test) {
			continue
		}
		num := func(name string) (float64, error) {
			v, err := strconv.ParseFloat(row[col[name]], 64)
			if err != nil {
				return 0, fmt.Errorf("redis-benchmark %s %q: %w", name, row[col[name]], err)
			}
			return v, nil
		}
		rps, err1 := num("rps")
		p50, err2 := num("p50_latency_ms")
		p99, err3 := num("p99_latency_ms")
		if err := firstErr(err1, err2, err3); err != nil {
			return BenchResult{}, err
		}
		return BenchResult{OpsPerSec: rps, P50: p50 * 1000, P99: p99 * 1000}, nil
	}
	return BenchResult{}, fmt.Errorf("redis-benchmark printed no %s row: %q", test, out)
}

// benchmarkNamed reports whether redis-benchmark's row name is test's:
// the name itself, or the name with redis-benchmark's note after it
// ("MSET (10 keys)", "LRANGE_100 (first 100 elements)") — not the LPUSH
// that fills the list before an LRANGE test ("LPUSH (needed to benchmark
// LRANGE)" is a row of its own).
func benchmarkNamed(row, test string) bool {
	if strings.EqualFold(row, test) {
		return true
	}
	name, _, noted := strings.Cut(row, " (")
	return noted && strings.EqualFold(name, test) && !strings.HasPrefix(strings.ToLower(row), "lpush (needed")
}

// zarisBenchReport is the part of cmd/zaris-bench's --json report used here.
type zarisBenchReport struct {
	TotalOps  int64   `json:"total_ops"`
	OpsPerSec float64 `json:"ops_per_sec"`
	Errors    int64   `json:"errors"`
	First     string  `json:"first_error"`
	Latency   struct {
		P50 float64 `json:"p50"`
		P99 float64 `json:"p99"`
	} `json:"latency_us"`
}

// ZarisBench runs cmd/zaris-bench with args (which must include --json) and
// parses its report. A run with error replies fails: a benchmark that
// measured errors measured the wrong thing.
func ZarisBench(ctx context.Context, bin string, args []string) (BenchResult, error) {
	out, cores, err := runLoad(exec.CommandContext(ctx, bin, args...))
	if err != nil {
		return BenchResult{}, fmt.Errorf("zaris-bench %s: %w%s", strings.Join(args, " "), err, stderrOf(err))
	}
	r, err := parseZarisBench(out)
	r.LoadCores = cores
	return r, err
}

func parseZarisBench(out []byte) (BenchResult, error) {
	var r zarisBenchReport
	if err := json.Unmarshal(out, &r); err != nil {
		return BenchResult{}, fmt.Errorf("zaris-bench --json output: %w: %q", err, out)
	}
	if r.Errors > 0 {
		return BenchResult{}, fmt.Errorf("zaris-bench saw %d errors, first: %s", r.Errors, r.First)
	}
	if r.TotalOps == 0 {
		return BenchResult{}, fmt.Errorf("zaris-bench completed no request: %q", out)
	}
	return BenchResult{OpsPerSec: r.OpsPerSec, Requests: r.TotalOps, P50: r.Latency.P50, P99: r.Latency.P99}, nil
}

// WriteSetLoad writes n RESP SET commands of "key:%012d" (16 B) with a value
// of valueSize bytes to w: the input of redis-cli --pipe.
func WriteSetLoad(w io.Writer, n, valueSize int) error { return WriteSetLoadTTL(w, n, valueSize, 0) }

// WriteSetLoadTTL is WriteSetLoad with `EX ttlSeconds` on every SET (none
// when ttlSeconds is 0): the memory of keys that expire.
func WriteSetLoadTTL(w io.Writer, n, valueSize, ttlSeconds int) error {
	value := strings.Repeat("v", valueSize)
	ex := ""
	if ttlSeconds > 0 {
		t := strconv.Itoa(ttlSeconds)
		ex = fmt.Sprintf("$2\r\nEX\r\n$%d\r\n%s\r\n", len(t), t)
	}
	head := "*3\r\n"
	if ex != "" {
		head = "*5\r\n"
	}
	var b []byte
	for i := range n {
		b = fmt.Appendf(b[:0], "%s$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n%s\r\n%s", head, i, valueSize, value, ex)
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// PipeLoad feeds file to redis-cli --pipe against addr. redis-cli reports
// "errors: N, replies: M"; any error reply fails the load.
func PipeLoad(ctx context.Context, bin, addr, file string) error {
	host, port, err := splitAddr(addr)
	if err != nil {
		return err
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, bin, "-h", host, "-p", port, "--pipe")
	cmd.Stdin = f
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("redis-cli --pipe: %w: %s", err, out)
	}
	if !bytes.Contains(out, []byte("errors: 0,")) {
		return fmt.Errorf("redis-cli --pipe reported errors: %s", out)
	}
	return nil
}

func splitAddr(addr string) (host, port string, err error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return "", "", fmt.Errorf("address %q without a port", addr)
	}
	return addr[:i], addr[i+1:], nil
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return ": " + tail(string(ee.Stderr), 1000)
	}
	return ""
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

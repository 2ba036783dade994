package vsredis

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseCPUTicks(t *testing.T) {
	// A command name with spaces and a parenthesis: fields count after the last ')'.
	line := []byte("4242 (zaris (x) y) S 1 4242 4242 0 -1 4194560 1234 0 0 0 731 129 0 0 20 0 9 0 100 0 0\n")
	ticks, err := ParseCPUTicks(line)
	require.NoError(t, err)
	require.Equal(t, int64(731+129), ticks)

	_, err = ParseCPUTicks([]byte("4242 zaris S 1"))
	require.Error(t, err, "no command name")
	_, err = ParseCPUTicks([]byte("4242 (z) S 1 2"))
	require.Error(t, err, "too few fields")
	_, err = ParseCPUTicks([]byte("4242 (z) S 1 4242 4242 0 -1 4194560 1234 0 0 0 x 129 0"))
	require.Error(t, err, "utime not a number")
}

func TestCPUSecondsOfThisProcessGrows(t *testing.T) {
	before, err := CPUSeconds(os.Getpid())
	require.NoError(t, err)
	// Burn CPU until the counter (10 ms ticks) moves: it must, or the
	// per-request figures would all be zero.
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	for {
		for i := range 1_000_000 {
			x += i
		}
		after, err := CPUSeconds(os.Getpid())
		require.NoError(t, err)
		if after > before {
			break
		}
		require.True(t, time.Now().Before(deadline), "the CPU time of a spinning process did not move (x=%d)", x)
	}
	rss, err := RSSBytes(os.Getpid())
	require.NoError(t, err)
	require.Greater(t, rss, int64(1<<20))
}

func TestParseRedisBenchmarkCSV(t *testing.T) {
	out := []byte(`"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"LPUSH","175438.59","4.035","0.032","3.679","8.351","10.871","14.175"
`)
	r, err := ParseRedisBenchmarkCSV(out, "lpush")
	require.NoError(t, err)
	require.InDelta(t, 175438.59, r.OpsPerSec, 0.001)
	require.InDelta(t, 3679, r.P50, 0.001)
	require.InDelta(t, 10871, r.P99, 0.001)

	_, err = ParseRedisBenchmarkCSV(out, "set")
	require.ErrorContains(t, err, "no set row")

	// A row name with redis-benchmark's note is the test's; the LPUSH that
	// fills the list for an LRANGE test is not the LPUSH test.
	noted := []byte(`"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"LPUSH (needed to benchmark LRANGE)","300000.00","1.0","0.1","1.0","2.0","3.0","4.0"
"LRANGE_100 (first 100 elements)","50000.00","1.0","0.1","2.0","2.0","5.0","6.0"
"MSET (10 keys)","90000.00","1.0","0.1","3.0","2.0","7.0","8.0"
`)
	r, err = ParseRedisBenchmarkCSV(noted, "lrange_100")
	require.NoError(t, err)
	require.InDelta(t, 50000, r.OpsPerSec, 0.001)
	r, err = ParseRedisBenchmarkCSV(noted, "mset")
	require.NoError(t, err)
	require.InDelta(t, 90000, r.OpsPerSec, 0.001)
	_, err = ParseRedisBenchmarkCSV(noted, "lpush")
	require.ErrorContains(t, err, "no lpush row")
	_, err = ParseRedisBenchmarkCSV([]byte("WARNING: could not fetch server CONFIG\n"), "set")
	require.Error(t, err)
	_, err = ParseRedisBenchmarkCSV([]byte("\"test\",\"rps\"\n\"SET\",\"1\"\n"), "set")
	require.ErrorContains(t, err, "lacks")
}

func TestParseZarisBench(t *testing.T) {
	r, err := parseZarisBench([]byte(`{"total_ops": 1000, "ops_per_sec": 250.5, "errors": 0, "latency_us": {"p50": 12.5, "p99": 99.1}}`))
	require.NoError(t, err)
	require.Equal(t, BenchResult{OpsPerSec: 250.5, Requests: 1000, P50: 12.5, P99: 99.1}, r)
	_, err = parseZarisBench([]byte(`{"total_ops": 1000, "errors": 3, "first_error": "OOM"}`))
	require.ErrorContains(t, err, "OOM")
	_, err = parseZarisBench([]byte(`{"total_ops": 0}`))
	require.Error(t, err)
}

func TestMedianAndRatios(t *testing.T) {
	require.Equal(t, 0.0, Median(nil))
	require.Equal(t, 2.0, Median([]float64{3, 1, 2}))
	require.Equal(t, 2.5, Median([]float64{4, 1, 2, 3}))
	xs := []float64{3, 1, 2}
	Median(xs)
	require.Equal(t, []float64{3, 1, 2}, xs, "Median must not reorder its input")

	row := &Row{
		Redis: []Sample{{BenchResult: BenchResult{OpsPerSec: 100}}, {BenchResult: BenchResult{OpsPerSec: 50}}, {BenchResult: BenchResult{OpsPerSec: 200}}},
		Zaris: []Sample{{BenchResult: BenchResult{OpsPerSec: 120}}, {BenchResult: BenchResult{OpsPerSec: 40}}, {BenchResult: BenchResult{OpsPerSec: 300}}},
	}
	// Round by round: 1.2, 0.8, 1.5 → median 1.2 (the ratio of the medians
	// would be 120/100 too here, but the rounds pair up, not the medians).
	require.InDelta(t, 1.2, Median(ratios(row, ops)), 1e-9)
}

func TestThousands(t *testing.T) {
	require.Equal(t, "1 298 701", thousands(1298701.4))
	require.Equal(t, "999", thousands(999))
	require.Equal(t, "1 000", thousands(999.6))
}

func TestWriteSetLoadIsRESP(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteSetLoad(&b, 2, 4))
	require.Equal(t, "*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000000\r\n$4\r\nvvvv\r\n*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000001\r\n$4\r\nvvvv\r\n", b.String())
	b.Reset()
	require.NoError(t, WriteSetLoadTTL(&b, 1, 4, 100000))
	require.Equal(t, "*5\r\n$3\r\nSET\r\n$16\r\nkey:000000000000\r\n$4\r\nvvvv\r\n$2\r\nEX\r\n$6\r\n100000\r\n", b.String())
}

// TestRunLoadChargesTheLoadGeneratorsCPU: a process that spins keeps a
// core busy, one that sleeps does not — the column that tells a row bound by
// the load generator from one bound by the server.
func TestRunLoadChargesTheLoadGeneratorsCPU(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	_, spin, err := runLoad(exec.Command("sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"))
	require.NoError(t, err)
	_, idle, err := runLoad(exec.Command("sleep", "0.3"))
	require.NoError(t, err)
	require.Positive(t, spin)
	require.Less(t, idle, spin, "a sleeping process was charged as much CPU as a spinning one")
	require.Less(t, idle, 0.5)
}

// TestRunAgainstRealServers runs one tiny round of every section against a
// real redis-server and a real zaris-server built from the tree: the tables
// come out with a figure in every cell and both servers were charged CPU.
func TestRunAgainstRealServers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs zaris-server and redis-server: skipped with -short")
	}
	tools := map[string]string{}
	for _, name := range []string{"redis-server", "redis-benchmark", "redis-cli"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("%s not on the PATH (apt-get install -y redis-server redis-tools)", name)
		}
		tools[name] = p
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+"/", "github.com/zaris-io/zaris/cmd/zaris-server", "github.com/zaris-io/zaris/cmd/zaris-bench",
		"github.com/zaris-io/zaris/test/ablation/cmd/pongfloor")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	cfg := DefaultConfig()
	cfg.ZarisServer, cfg.ZarisBench = filepath.Join(dir, "zaris-server"), filepath.Join(dir, "zaris-bench")
	cfg.PongFloor = filepath.Join(dir, "pongfloor")
	cfg.Sections = append(cfg.Sections, "floor")
	cfg.RedisServer, cfg.RedisBenchmark, cfg.RedisCLI = tools["redis-server"], tools["redis-benchmark"], tools["redis-cli"]
	cfg.Rounds = 1
	cfg.RESPRequests = 2000
	cfg.RESPTests = []string{"set", "lpush"}
	cfg.RESPPipelines = []int{16}
	cfg.NativeDuration = 200 * time.Millisecond
	cfg.MemKeys = 20_000
	cfg.TempDir = dir
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)

	require.Len(t, res.RESP, 2)
	require.Len(t, res.Native, 8)
	// CPU time moves in 10 ms ticks: a tiny row may see none, the run as a
	// whole must have charged both servers.
	var redisCPU, zarisCPU, loadCores float64
	for _, row := range append(res.RESP, res.Native...) {
		require.Len(t, row.Redis, 1, row.Label)
		require.Len(t, row.Zaris, 1, row.Label)
		for _, s := range []Sample{row.Redis[0], row.Zaris[0]} {
			require.Positive(t, s.OpsPerSec, row.Label)
			require.Positive(t, s.P99, row.Label)
		}
		redisCPU += row.Redis[0].CPUMicrosPerOp
		zarisCPU += row.Zaris[0].CPUMicrosPerOp
		loadCores += row.Redis[0].LoadCores + row.Zaris[0].LoadCores
	}
	require.Positive(t, redisCPU)
	require.Positive(t, zarisCPU)
	require.Positive(t, loadCores, "the load generators were charged no CPU")
	require.Len(t, res.MemRedis, 1)
	require.Len(t, res.MemZaris, 1)
	require.Positive(t, res.MemZaris[0].RSSAfter)
	require.Len(t, res.MemRedisTTL, 1)
	require.Len(t, res.MemZarisTTL, 1)
	require.Positive(t, res.MemZarisTTL[0].RSSAfter)
	require.Len(t, res.Floor, 1)
	for _, name := range FloorServers {
		require.Len(t, res.Floor[0].Samples[name], 1, name)
		require.Positive(t, res.Floor[0].Samples[name][0].OpsPerSec, name)
	}

	var md strings.Builder
	res.Write(&md)
	for _, want := range []string{"| SET | 16 |", "| LPUSH | 16 |", "load-gen cores Redis / Zaris", "| 50 | 16 | SET |", "RSS growth per key", "redis-benchmark -h 127.0.0.1", "| 16 | go-epoll |"} {
		require.Contains(t, md.String(), want)
	}
}

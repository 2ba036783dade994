package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/testenv"
)

// The write-storm measurement of --memory-max-rss (issue 16): a real
// zaris-server process is written at far more than its cap — a key space of
// 3 × the cap, values of 64 B to 8 KiB, over RESP from many pipelined
// connections — while its RSS is sampled from /proc/<pid>/statm. RSS must
// stay within 10 % of the bound. In the suite it runs ~20 s with a small
// cap; the long run is
//
//	ZARIS_STORM_DURATION=5m ZARIS_STORM_CAP=256MiB make storm
//
// Knobs (environment): ZARIS_STORM_DURATION (default 20s), ZARIS_STORM_CAP
// (default 48MiB), ZARIS_STORM_RSS (default: zaris-server's own default for
// the cap; 0 = off, to see the process without the bound).
func TestWriteStormKeepsRSSUnderTheBound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a write storm against the real binary: skipped with -short")
	}
	if runtime.GOOS != "linux" {
		t.Skip("samples RSS from /proc")
	}
	duration := envDuration(t, "ZARIS_STORM_DURATION", 20*time.Second)
	capBytes := envBytes(t, "ZARIS_STORM_CAP", 48<<20)
	args := []string{"--memory-max-bytes", strconv.FormatInt(capBytes, 10)}
	if v := os.Getenv("ZARIS_STORM_RSS"); v != "" {
		args = append(args, "--memory-max-rss", v)
	}
	bin := buildBinary(t)
	p := startStormServer(t, bin, args...)
	limit := p.info(t).Memory.MaxRSSBytes
	t.Logf("cap %d MiB, --memory-max-rss %d MiB, storm %v", capBytes>>20, limit>>20, duration)

	// Sample RSS every 50 ms, and the owned bytes every 500 ms, until the
	// storm ends.
	var (
		samples   []int64
		peakOwned int64
		sampleMu  sync.Mutex
	)
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for i := 0; ; i++ {
			if rss, ok := pidRSS(p.cmd.Process.Pid); ok {
				sampleMu.Lock()
				samples = append(samples, rss)
				sampleMu.Unlock()
			}
			if i%10 == 0 {
				if owned, ok := p.ownedBytes(); ok {
					sampleMu.Lock()
					peakOwned = max(peakOwned, owned)
					sampleMu.Unlock()
				}
			}
			select {
			case <-stopSampling:
				return
			case <-tk.C:
			}
		}
	}()

	written, bytesWritten := storm(t, p.respAddr, capBytes, duration)
	close(stopSampling)
	<-sampled

	select {
	case <-p.exited:
		t.Fatalf("the server died during the storm (%v):\n%s", *p.waitErr, tail(p.stderr.String()))
	default:
	}
	info := p.info(t)
	sampleMu.Lock()
	defer sampleMu.Unlock()
	require.NotEmpty(t, samples)
	peak, sum := int64(0), int64(0)
	over := 0
	for _, s := range samples {
		peak = max(peak, s)
		sum += s
		if limit > 0 && float64(s) > 1.10*float64(limit) {
			over++
		}
	}
	// The steady state: the last half of the storm.
	late := samples[len(samples)/2:]
	latePeak := int64(0)
	for _, s := range late {
		latePeak = max(latePeak, s)
	}
	t.Logf("wrote %d values (%d MiB, %.1f× the cap) in %v: %.0f writes/s", written, bytesWritten>>20,
		float64(bytesWritten)/float64(capBytes), duration, float64(written)/duration.Seconds())
	t.Logf("RSS: peak %d MiB (%.2f× the bound), mean %d MiB, peak of the second half %d MiB; %d of %d samples over bound+10%%",
		peak>>20, float64(peak)/float64(max(limit, 1)), sum/int64(len(samples))>>20, latePeak>>20, over, len(samples))
	t.Logf("owned data: peak %d MiB (%.2f× the cap)", peakOwned>>20, float64(peakOwned)/float64(capBytes))
	t.Logf("at the end: owned %d MiB (ceiling %d MiB), op-log %d MiB, go heap %d MiB (live %d MiB), go runtime %d MiB, GOMEMLIMIT %d MiB, rss %d MiB",
		info.Memory.UsedBytes>>20, info.Memory.EvictionCeilingBytes>>20, info.Memory.OpLogBytes>>20,
		info.Memory.GoHeapBytes>>20, info.Memory.GoHeapLiveBytes>>20, info.Memory.GoRuntimeBytes>>20,
		info.Memory.GoMemoryLimitBytes>>20, info.Memory.RSSBytes>>20)
	if limit == 0 {
		t.Log("--memory-max-rss off: measured only")
		return
	}
	require.LessOrEqual(t, float64(peak), 1.10*float64(limit),
		"RSS peaked at %d MiB, more than 10 %% over the %d MiB bound", peak>>20, limit>>20)
	require.Greater(t, bytesWritten, 3*capBytes, "the storm did not write 3 × the cap: it proves nothing")
	// The cap holds too: a write past the trigger wakes the evictor, which
	// evicts in bursts over the cap (measured ≤ 1.00×; 1.55× before).
	require.LessOrEqual(t, float64(peakOwned), 1.30*float64(capBytes),
		"owned data peaked at %d MiB against a %d MiB cap", peakOwned>>20, capBytes>>20)
}

// storm writes random keys of a key space sized to 3 × capBytes (mean value
// size 4 KiB) until duration passes, and returns the values and bytes
// written.
func storm(t *testing.T, addr string, capBytes int64, duration time.Duration) (int64, int64) {
	t.Helper()
	const conns, pipeline = 8, 64
	keys := int(3 * capBytes / 4096)
	var written, bytesWritten atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	values := make([]byte, 8192)
	for i := range values {
		values[i] = byte('a' + i%26)
	}
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
			defer rdb.Close()
			rng := rand.New(rand.NewPCG(uint64(c), 42))
			for ctx.Err() == nil {
				p := rdb.Pipeline()
				n := int64(0)
				for range pipeline {
					size := 64 + rng.IntN(8192-64)
					p.Set(context.Background(), "storm:"+strconv.Itoa(rng.IntN(keys)), values[:size], 0)
					n += int64(size)
				}
				if _, err := p.Exec(context.Background()); err != nil {
					errs <- err
					return
				}
				written.Add(pipeline)
				bytesWritten.Add(n)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a storm writer failed: %v", err)
	}
	return written.Load(), bytesWritten.Load()
}

// pidRSS reads the resident set size of a process from /proc.
func pidRSS(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	return pages * int64(os.Getpagesize()), err == nil
}

type stormServer struct {
	cmd      *exec.Cmd
	httpBase string
	respAddr string
	exited   chan struct{}
	waitErr  *error
	stderr   *testenv.SyncBuffer
}

type infoMemory struct {
	Memory struct {
		UsedBytes            int64 `json:"used_bytes"`
		EvictionCeilingBytes int64 `json:"eviction_ceiling_bytes"`
		OpLogBytes           int64 `json:"oplog_bytes"`
		GoHeapBytes          int64 `json:"go_heap_bytes"`
		GoHeapLiveBytes      int64 `json:"go_heap_live_bytes"`
		GoRuntimeBytes       int64 `json:"go_runtime_bytes"`
		GoMemoryLimitBytes   int64 `json:"go_memory_limit_bytes"`
		RSSBytes             int64 `json:"rss_bytes"`
		MaxRSSBytes          int64 `json:"max_rss_bytes"`
	} `json:"memory"`
}

func (p stormServer) info(t *testing.T) infoMemory {
	t.Helper()
	resp, err := http.Get(p.httpBase + "/v1/info")
	require.NoError(t, err)
	defer resp.Body.Close()
	var info infoMemory
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&info))
	return info
}

// ownedBytes reads the owned data from /v1/info; false when the request
// fails (the sampler keeps going).
func (p stormServer) ownedBytes() (int64, bool) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(p.httpBase + "/v1/info")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var info infoMemory
	if json.NewDecoder(resp.Body).Decode(&info) != nil {
		return 0, false
	}
	return info.Memory.UsedBytes, true
}

var addrAttr = regexp.MustCompile(`"(http|resp)_addr":"([^"]+)"`)

// startStormServer runs bin on kernel-chosen ports and waits for the node to
// be ready, reading its addresses from its log.
func startStormServer(t *testing.T, bin string, args ...string) stormServer {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--client-port", "-1", "--http-port", "-1", "--resp-port", "-1",
		"--peer-port", "-1", "--gossip-port", "-1", "--log-format", "json"}, args...)...)
	cmd.Env = append(os.Environ(), "ZARIS_NODE_ID=storm")
	stderr := &testenv.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	require.NoError(t, cmd.Start())
	waitErr := new(error)
	exited := make(chan struct{})
	go func() { *waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		logs := stderr.String()
		if bytes.Contains([]byte(logs), []byte(`"msg":"node ready"`)) {
			p := stormServer{cmd: cmd, exited: exited, waitErr: waitErr, stderr: stderr}
			for _, m := range addrAttr.FindAllStringSubmatch(logs, -1) {
				switch m[1] {
				case "http":
					p.httpBase = "http://" + m[2]
				case "resp":
					p.respAddr = m[2]
				}
			}
			require.NotEmpty(t, p.httpBase, logs)
			require.NotEmpty(t, p.respAddr, logs)
			return p
		}
		select {
		case <-exited:
			t.Fatalf("the server exited before it was ready (%v):\n%s", *waitErr, logs)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready within the deadline:\n%s", logs)
		}
	}
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, name)
	return d
}

func envBytes(t *testing.T, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	units := map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "": 1}
	m := regexp.MustCompile(`^(\d+)(KiB|MiB|GiB|)$`).FindStringSubmatch(v)
	require.NotNil(t, m, "%s=%q: want e.g. 256MiB", name, v)
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n * units[m[2]]
}

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}

// TestRSSPerKey measures the RSS growth per key of 1 M keys of 16 B with
// 32 B values, loaded over RESP, for zaris-server and — when redis-server is
// on the PATH — for redis-server on the same machine. A measurement, not a
// check: it runs only with ZARIS_MEASURE_PER_KEY=1 (make mem-per-key).
func TestRSSPerKey(t *testing.T) {
	if os.Getenv("ZARIS_MEASURE_PER_KEY") == "" {
		t.Skip("a measurement: set ZARIS_MEASURE_PER_KEY=1 (make mem-per-key)")
	}
	const keys = 1_000_000
	bin := buildBinary(t)
	p := startStormServer(t, bin, "--memory-max-bytes", "2GiB")
	before, _ := pidRSS(p.cmd.Process.Pid)
	loadKeys(t, p.respAddr, keys)
	after, _ := pidRSS(p.cmd.Process.Pid)
	info := p.info(t)
	t.Logf("zaris-server: RSS %d → %d MiB: %.0f B/key; accounted %.0f B/key; Go live heap %.0f B/key, heap objects %.0f B/key, GOMEMLIMIT %d MiB",
		before>>20, after>>20, float64(after-before)/keys, float64(info.Memory.UsedBytes)/keys,
		float64(info.Memory.GoHeapLiveBytes)/keys, float64(info.Memory.GoHeapBytes)/keys, info.Memory.GoMemoryLimitBytes>>20)

	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Log("redis-server not on the PATH: no comparison")
		return
	}
	l := freePort(t)
	cmd := exec.Command(redisBin, "--port", strconv.Itoa(l), "--save", "", "--appendonly", "no", "--bind", "127.0.0.1")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(l)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for rdb.Ping(context.Background()).Err() != nil {
		require.True(t, time.Now().Before(deadline), "redis-server did not answer")
		time.Sleep(20 * time.Millisecond)
	}
	rb, _ := pidRSS(cmd.Process.Pid)
	loadKeys(t, addr, keys)
	ra, _ := pidRSS(cmd.Process.Pid)
	t.Logf("redis-server: RSS %d → %d MiB: %.0f B/key", rb>>20, ra>>20, float64(ra-rb)/keys)
}

// loadKeys writes n keys of 16 B ("key:" + 12 digits) with 32 B values.
func loadKeys(t *testing.T, addr string, n int) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 30 * time.Second})
	defer rdb.Close()
	value := bytes.Repeat([]byte("v"), 32)
	const batch = 1000
	for i := 0; i < n; i += batch {
		p := rdb.Pipeline()
		for j := i; j < i+batch && j < n; j++ {
			p.Set(context.Background(), fmt.Sprintf("key:%012d", j), value, 0)
		}
		_, err := p.Exec(context.Background())
		require.NoError(t, err)
	}
	require.Equal(t, int64(n), rdb.DBSize(context.Background()).Val())
}

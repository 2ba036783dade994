package vsredis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is one side-by-side run. Start from DefaultConfig.
type Config struct {
	// Binaries. ZarisServer and ZarisBench are built from the tree by
	// scripts/bench-vs-redis.sh; the Redis ones come from the redis-server
	// and redis-tools packages.
	ZarisServer, ZarisBench, RedisServer, RedisBenchmark, RedisCLI string
	// PongFloor is test/ablation/cmd/pongfloor, needed by the "floor"
	// section only.
	PongFloor string

	// Rounds is how many times every row is measured on both servers; the
	// tables give medians. Default 3.
	Rounds int
	// Sections to run, among "resp", "native", "memory" and "floor".
	// Default the first three.
	Sections []string

	// RESP table: redis-benchmark -c RESPClients -n RESPRequests -d 32
	// -r 100000 -t <each of RESPTests> -P <each of RESPPipelines>.
	RESPClients   int
	RESPRequests  int64
	RESPTests     []string
	RESPPipelines []int

	// Native table: zaris-bench rows of NativeDuration each, both servers.
	NativeDuration time.Duration

	// Memory: MemKeys SETs of 16-byte keys and MemValueSize-byte values,
	// loaded with redis-cli --pipe into a fresh server.
	MemKeys      int
	MemValueSize int

	// TempDir holds the --pipe input file. "" uses os.TempDir.
	TempDir string
	// Progress receives one line per measured run. nil discards.
	Progress io.Writer
}

// The workload constants shared by both tables, as in issue #17.
const (
	dataSize = 32
	keyspace = 100_000
)

// DefaultConfig is the full run of issue #17 (about 15 minutes on the
// 2-core machine).
func DefaultConfig() Config {
	return Config{
		Rounds:         3,
		Sections:       []string{"resp", "native", "memory"},
		RESPClients:    50,
		RESPRequests:   200_000,
		RESPTests:      []string{"set", "get", "incr", "lpush", "hset"},
		RESPPipelines:  []int{1, 16},
		NativeDuration: 4 * time.Second,
		MemKeys:        1_000_000,
		MemValueSize:   32,
	}
}

// Quick shrinks c to a smoke run of about two minutes: one round, shorter
// rows, 200 000 keys.
func (c *Config) Quick() {
	c.Rounds = 1
	c.RESPRequests = 50_000
	c.NativeDuration = time.Second
	c.MemKeys = 200_000
}

// Validate checks the fields.
func (c *Config) Validate() error {
	var errs []error
	for name, path := range map[string]string{"zaris-server": c.ZarisServer, "zaris-bench": c.ZarisBench,
		"redis-server": c.RedisServer, "redis-benchmark": c.RedisBenchmark, "redis-cli": c.RedisCLI} {
		if path == "" {
			errs = append(errs, fmt.Errorf("the path of %s is not set", name))
		}
	}
	if c.Rounds < 1 {
		errs = append(errs, fmt.Errorf("rounds %d: want ≥ 1", c.Rounds))
	}
	for _, s := range c.Sections {
		if s != "resp" && s != "native" && s != "memory" && s != "floor" {
			errs = append(errs, fmt.Errorf("section %q: want resp, native, memory or floor", s))
		}
		if s == "floor" && c.PongFloor == "" {
			errs = append(errs, errors.New("the floor section needs the path of pongfloor"))
		}
	}
	if c.RESPRequests < 1 || c.RESPClients < 1 || c.NativeDuration <= 0 || c.MemKeys < 1 || c.MemValueSize < 1 {
		errs = append(errs, errors.New("requests, clients, duration, keys and value size must be positive"))
	}
	return errors.Join(errs...)
}

func (c *Config) has(section string) bool {
	for _, s := range c.Sections {
		if s == section {
			return true
		}
	}
	return false
}

// Sample is one measured run against one server.
type Sample struct {
	BenchResult
	// CPUMicrosPerOp is the server process's CPU time (user + system) over
	// the run divided by the requests sent.
	CPUMicrosPerOp float64
}

// Row is one table row: the samples of every round on both servers.
type Row struct {
	Label        []string // the row's leading cells, e.g. {"SET", "1"}
	Redis, Zaris []Sample
}

// MemSample is one memory round on one server.
type MemSample struct {
	RSSBefore, RSSAfter int64
	Keys                int
}

// BytesPerKey is the RSS growth per key loaded.
func (m MemSample) BytesPerKey() float64 { return float64(m.RSSAfter-m.RSSBefore) / float64(m.Keys) }

// Results is what a run measured.
type Results struct {
	Config             Config
	Started            time.Time
	LoadStart, LoadEnd string
	RESP, Native       []*Row
	Floor              []*FloorRow
	MemRedis, MemZaris []MemSample
	// MemRedisTTL and MemZarisTTL: the same load with a TTL on every key
	// (SET … EX MemTTLSeconds).
	MemRedisTTL, MemZarisTTL []MemSample
	RedisVersion, ZarisVer   string
}

// Run measures every section of cfg, interleaving the servers row by row
// (the order flips each row and each round, so neither server always runs
// first), and returns the samples.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	res := &Results{Config: cfg, Started: time.Now(), LoadStart: LoadAverage()}
	res.RedisVersion = versionOf(ctx, cfg.RedisServer, "--version")
	res.ZarisVer = versionOf(ctx, cfg.ZarisServer, "--version")
	if cfg.has("resp") {
		rows, err := runRESP(ctx, cfg, progress)
		if err != nil {
			return nil, fmt.Errorf("RESP table: %w", err)
		}
		res.RESP = rows
	}
	if cfg.has("native") {
		rows, err := runNative(ctx, cfg, progress)
		if err != nil {
			return nil, fmt.Errorf("native table: %w", err)
		}
		res.Native = rows
	}
	if cfg.has("floor") {
		rows, err := runFloor(ctx, cfg, progress)
		if err != nil {
			return nil, fmt.Errorf("floor table: %w", err)
		}
		res.Floor = rows
	}
	if cfg.has("memory") {
		r, z, err := runMemory(ctx, cfg, 0, progress)
		if err != nil {
			return nil, fmt.Errorf("memory: %w", err)
		}
		res.MemRedis, res.MemZaris = r, z
		if r, z, err = runMemory(ctx, cfg, MemTTLSeconds, progress); err != nil {
			return nil, fmt.Errorf("memory with a TTL: %w", err)
		}
		res.MemRedisTTL, res.MemZarisTTL = r, z
	}
	res.LoadEnd = LoadAverage()
	return res, nil
}

// ThroughputFlags are the zaris-server flags of the RESP and native tables:
// redis-benchmark's LPUSH grows one list by every request (hundreds of
// thousands of elements per round), which the default cap of one item
// (4 MiB, --max-item-bytes) refuses; Redis has no such cap.
var ThroughputFlags = []string{"--max-item-bytes", "512MiB"}

// pairOfServers starts a fresh redis-server and zaris-server.
func pairOfServers(cfg Config) (redis, zaris *Server, err error) {
	redis, err = StartRedis(cfg.RedisServer, 30*time.Second)
	if err != nil {
		return nil, nil, err
	}
	zaris, err = StartZaris(cfg.ZarisServer, 60*time.Second, ThroughputFlags...)
	if err != nil {
		redis.Stop()
		return nil, nil, err
	}
	return redis, zaris, nil
}

// measure runs load against s and charges the server's CPU time to it.
func measure(s *Server, load func() (BenchResult, error)) (Sample, error) {
	before, err := CPUSeconds(s.Pid())
	if err != nil {
		return Sample{}, err
	}
	r, err := load()
	if err != nil {
		return Sample{}, fmt.Errorf("%s: %w", s.Name, err)
	}
	after, err := CPUSeconds(s.Pid())
	if err != nil {
		return Sample{}, err
	}
	if err := s.Alive(); err != nil {
		return Sample{}, err
	}
	return Sample{BenchResult: r, CPUMicrosPerOp: (after - before) * 1e6 / float64(r.Requests)}, nil
}

// both measures one row on both servers, in the order that flips with flip.
func both(row *Row, redis, zaris *Server, flip bool, load func(*Server) (BenchResult, error), progress io.Writer) error {
	order := []*Server{redis, zaris}
	if flip {
		order = []*Server{zaris, redis}
	}
	for _, s := range order {
		smp, err := measure(s, func() (BenchResult, error) { return load(s) })
		if err != nil {
			return fmt.Errorf("%s: %w", strings.Join(row.Label, " "), err)
		}
		if s == redis {
			row.Redis = append(row.Redis, smp)
		} else {
			row.Zaris = append(row.Zaris, smp)
		}
		fmt.Fprintf(progress, "  %-24s %-5s %12.0f ops/s  p99 %8.1f µs  server CPU %6.2f µs/op  load-gen %4.2f cores  (load %s)\n",
			strings.Join(row.Label, " "), s.Name, smp.OpsPerSec, smp.P99, smp.CPUMicrosPerOp, smp.LoadCores, LoadAverage())
	}
	return nil
}

// RESPArgs are the redis-benchmark flags shared by every RESP row, -n and
// -t apart.
func (c *Config) RESPArgs(pipeline int) []string {
	return []string{"-c", strconv.Itoa(c.RESPClients), "-d", strconv.Itoa(dataSize), "-r", strconv.Itoa(keyspace), "-P", strconv.Itoa(pipeline)}
}

func runRESP(ctx context.Context, cfg Config, progress io.Writer) ([]*Row, error) {
	var rows []*Row
	for _, p := range cfg.RESPPipelines {
		for _, t := range cfg.RESPTests {
			rows = append(rows, &Row{Label: []string{strings.ToUpper(t), strconv.Itoa(p)}})
		}
	}
	for round := range cfg.Rounds {
		fmt.Fprintf(progress, "RESP round %d/%d\n", round+1, cfg.Rounds)
		// Fresh servers each round: LPUSH grows one list, and each round
		// should start from the same state on both.
		redis, zaris, err := pairOfServers(cfg)
		if err != nil {
			return nil, err
		}
		for i, row := range rows {
			p, _ := strconv.Atoi(row.Label[1])
			test := strings.ToLower(row.Label[0])
			err = both(row, redis, zaris, (round+i)%2 == 1, func(s *Server) (BenchResult, error) {
				return RedisBenchmark(ctx, cfg.RedisBenchmark, s.RESPAddr, test, cfg.RESPRequests, cfg.RESPArgs(p))
			}, progress)
			if err != nil {
				break
			}
		}
		redis.Stop()
		zaris.Stop()
		if err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// NativeArgs are the zaris-bench flags of one native-table row against s:
// --protocol native for Zaris, resp for Redis.
func (c *Config) NativeArgs(s *Server, conns, pipeline int, op string) []string {
	proto, addr := "native", s.NativeAddr
	if s.NativeAddr == "" {
		proto, addr = "resp", s.RESPAddr
	}
	ratio := "1:0"
	if op == "SET" {
		ratio = "0:1"
	}
	return []string{"--protocol", proto, "--addr", addr, "-c", strconv.Itoa(conns), "-P", strconv.Itoa(pipeline),
		"-d", strconv.Itoa(dataSize), "--keyspace", strconv.Itoa(keyspace), "--ratio", ratio,
		"--duration", c.NativeDuration.String(), "--warmup=false", "--progress", "0", "--json"}
}

// warmupArgs SET every key of the keyspace once through zaris-bench's
// warmup, then stop after one request.
func warmupArgs(s *Server) []string {
	proto, addr := "native", s.NativeAddr
	if s.NativeAddr == "" {
		proto, addr = "resp", s.RESPAddr
	}
	return []string{"--protocol", proto, "--addr", addr, "-c", "50", "-d", strconv.Itoa(dataSize),
		"--keyspace", strconv.Itoa(keyspace), "--ratio", "1:0", "--warmup", "--requests", "1", "--progress", "0", "--json"}
}

func runNative(ctx context.Context, cfg Config, progress io.Writer) ([]*Row, error) {
	var rows []*Row
	for _, conns := range []int{1, 50} {
		for _, p := range []int{1, 16} {
			for _, op := range []string{"GET", "SET"} {
				rows = append(rows, &Row{Label: []string{strconv.Itoa(conns), strconv.Itoa(p), op}})
			}
		}
	}
	for round := range cfg.Rounds {
		fmt.Fprintf(progress, "native round %d/%d\n", round+1, cfg.Rounds)
		redis, zaris, err := pairOfServers(cfg)
		if err != nil {
			return nil, err
		}
		// Every key once, so that GETs hit on both (not measured).
		for _, s := range []*Server{redis, zaris} {
			if _, err = ZarisBench(ctx, cfg.ZarisBench, warmupArgs(s)); err != nil {
				break
			}
		}
		for i, row := range rows {
			if err != nil {
				break
			}
			conns, _ := strconv.Atoi(row.Label[0])
			p, _ := strconv.Atoi(row.Label[1])
			err = both(row, redis, zaris, (round+i)%2 == 1, func(s *Server) (BenchResult, error) {
				return ZarisBench(ctx, cfg.ZarisBench, cfg.NativeArgs(s, conns, p, row.Label[2]))
			}, progress)
		}
		redis.Stop()
		zaris.Stop()
		if err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// MemTTLSeconds is the TTL of the memory table's second load: long enough
// that nothing expires while it is measured.
const MemTTLSeconds = 100_000

func runMemory(ctx context.Context, cfg Config, ttlSeconds int, progress io.Writer) (redisSamples, zarisSamples []MemSample, err error) {
	dir := cfg.TempDir
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "vsredis-load-*.resp")
	if err != nil {
		return nil, nil, err
	}
	defer os.Remove(f.Name())
	if err := WriteSetLoadTTL(f, cfg.MemKeys, cfg.MemValueSize, ttlSeconds); err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := f.Close(); err != nil {
		return nil, nil, err
	}
	for round := range cfg.Rounds {
		fmt.Fprintf(progress, "memory round %d/%d (TTL %d s)\n", round+1, cfg.Rounds, ttlSeconds)
		names := []string{"redis", "zaris"}
		if round%2 == 1 {
			names = []string{"zaris", "redis"}
		}
		for _, name := range names {
			m, err := memoryOnce(ctx, cfg, name, f.Name())
			if err != nil {
				return nil, nil, err
			}
			if name == "redis" {
				redisSamples = append(redisSamples, m)
			} else {
				zarisSamples = append(zarisSamples, m)
			}
			fmt.Fprintf(progress, "  %-5s RSS %d → %d MiB: %.0f B/key (load %s)\n", name, m.RSSBefore>>20, m.RSSAfter>>20, m.BytesPerKey(), LoadAverage())
		}
	}
	return redisSamples, zarisSamples, nil
}

// memoryOnce loads the keys into a fresh server and reads its RSS before and
// after.
func memoryOnce(ctx context.Context, cfg Config, name, file string) (MemSample, error) {
	var s *Server
	var err error
	if name == "redis" {
		s, err = StartRedis(cfg.RedisServer, 30*time.Second)
	} else {
		s, err = StartZaris(cfg.ZarisServer, 60*time.Second)
	}
	if err != nil {
		return MemSample{}, err
	}
	defer s.Stop()
	before, err := RSSBytes(s.Pid())
	if err != nil {
		return MemSample{}, err
	}
	if err := PipeLoad(ctx, cfg.RedisCLI, s.RESPAddr, file); err != nil {
		return MemSample{}, fmt.Errorf("%s: %w", name, err)
	}
	after, err := RSSBytes(s.Pid())
	if err != nil {
		return MemSample{}, err
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := Command(dctx, s.RESPAddr, "DBSIZE")
	if err != nil {
		return MemSample{}, fmt.Errorf("%s DBSIZE: %w", name, err)
	}
	if n != ":"+strconv.Itoa(cfg.MemKeys) {
		return MemSample{}, fmt.Errorf("%s holds %s keys after the load, want %d", name, n, cfg.MemKeys)
	}
	return MemSample{RSSBefore: before, RSSAfter: after, Keys: cfg.MemKeys}, nil
}

func versionOf(ctx context.Context, bin string, arg string) string {
	out, err := exec.CommandContext(ctx, bin, arg).Output()
	if err != nil {
		return filepath.Base(bin) + " (version unknown)"
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

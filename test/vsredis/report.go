package vsredis

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// Median is the middle value of xs (the mean of the two middle ones for an
// even count); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// field extracts one figure from every sample.
func field(ss []Sample, f func(Sample) float64) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

// ratios is Zaris/Redis of f round by round (the two samples of a round ran
// back to back, so their ratio cancels most of the machine's drift).
func ratios(r *Row, f func(Sample) float64) []float64 {
	n := min(len(r.Redis), len(r.Zaris))
	out := make([]float64, 0, n)
	for i := range n {
		if d := f(r.Redis[i]); d > 0 {
			out = append(out, f(r.Zaris[i])/d)
		}
	}
	return out
}

func ops(s Sample) float64       { return s.OpsPerSec }
func p50(s Sample) float64       { return s.P50 }
func p99(s Sample) float64       { return s.P99 }
func cpu(s Sample) float64       { return s.CPUMicrosPerOp }
func loadCores(s Sample) float64 { return s.LoadCores }

// Write prints the results as markdown: a header (date, load, versions,
// rounds) and one table per section, each under the command that produced
// its figures.
func (r *Results) Write(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "Measured %s by `scripts/bench-vs-redis.sh` (ROUNDS=%d): %s; %s; %d-CPU machine, load average %s at the start, %s at the end.\n",
		r.Started.UTC().Format("2006-01-02 15:04 MST"), c.Rounds, r.ZarisVer, r.RedisVersion, runtime.NumCPU(), r.LoadStart, r.LoadEnd)
	fmt.Fprintf(w, "Medians of %d interleaved rounds (fresh servers each round; within a round each row runs on both servers back to back, the order flipping every row); **Zaris/Redis** is the median of the per-round ratios. Server CPU is the process's user + system time (/proc/<pid>/stat) over the row divided by its requests; load-gen cores is the load generator's CPU time over its wall time (redis-benchmark is single-threaded: at ~1.0 the row ran at the load generator's ceiling, whatever the server).\n\n", c.Rounds)
	if len(r.RESP) > 0 {
		pipes := make([]string, len(c.RESPPipelines))
		for i, p := range c.RESPPipelines {
			pipes[i] = strconv.Itoa(p)
		}
		fmt.Fprintf(w, "RESP: `redis-benchmark -h 127.0.0.1 -p PORT -t TEST -n %d -c %d -d %d -r %d -P {%s} --csv` against each server (one `-t` per run, so the CPU is per test; the rows of one round run in order on the same servers: a test finds what the tests before it wrote); zaris-server runs with `%s` (LPUSH grows one list past the default 4 MiB item cap).\n\n",
			c.RESPRequests, c.RESPClients, dataSize, keyspace, strings.Join(pipes, "|"), strings.Join(ThroughputFlags, " "))
		fmt.Fprintln(w, "| test | -P | Redis rps | Zaris rps | **Zaris/Redis** | p99 ms Redis / Zaris | server CPU µs/op Redis / Zaris | load-gen cores Redis / Zaris |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
		for _, row := range r.RESP {
			fmt.Fprintf(w, "| %s | %s | %s | %s | **%.2f** | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f |\n", row.Label[0], row.Label[1],
				thousands(Median(field(row.Redis, ops))), thousands(Median(field(row.Zaris, ops))), Median(ratios(row, ops)),
				Median(field(row.Redis, p99))/1000, Median(field(row.Zaris, p99))/1000,
				Median(field(row.Redis, cpu)), Median(field(row.Zaris, cpu)),
				Median(field(row.Redis, loadCores)), Median(field(row.Zaris, loadCores)))
		}
		fmt.Fprintln(w)
	}
	if len(r.Native) > 0 {
		fmt.Fprintf(w, "Native: `zaris-bench --protocol native --addr ZARIS_CLIENT_ADDR` against Zaris and `zaris-bench --protocol resp --addr REDIS_ADDR` against Redis, each row `-c C -P P -d %d --keyspace %d --ratio {1:0|0:1} --duration %s --warmup=false --json`, after one `--warmup` run that SETs every key.\n\n",
			dataSize, keyspace, c.NativeDuration)
		fmt.Fprintln(w, "| conns | -P | op | Redis ops/s | Zaris ops/s | **Zaris/Redis** | p50 / p99 µs Redis | p50 / p99 µs Zaris | p99 Zaris/Redis | server CPU µs/op Redis / Zaris | load-gen cores Redis / Zaris |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
		for _, row := range r.Native {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | **%.2f** | %.0f / %.0f | %.0f / %.0f | %.2f | %.2f / %.2f | %.2f / %.2f |\n", row.Label[0], row.Label[1], row.Label[2],
				thousands(Median(field(row.Redis, ops))), thousands(Median(field(row.Zaris, ops))), Median(ratios(row, ops)),
				Median(field(row.Redis, p50)), Median(field(row.Redis, p99)),
				Median(field(row.Zaris, p50)), Median(field(row.Zaris, p99)), Median(ratios(row, p99)),
				Median(field(row.Redis, cpu)), Median(field(row.Zaris, cpu)),
				Median(field(row.Redis, loadCores)), Median(field(row.Zaris, loadCores)))
		}
		fmt.Fprintln(w)
	}
	if len(r.Floor) > 0 {
		r.writeFloor(w)
	}
	if len(r.MemRedis) > 0 {
		fmt.Fprintf(w, "Memory: %d × `SET key:%%012d <%d bytes>` (16-byte keys) written by `redis-cli -p PORT --pipe` into a fresh server (redis-server `--save '' --appendonly no`; zaris-server with its defaults), RSS from /proc/<pid>/statm before and after.\n\n",
			c.MemKeys, c.MemValueSize)
		bpk := func(ms []MemSample) []float64 {
			out := make([]float64, len(ms))
			for i, m := range ms {
				out[i] = m.BytesPerKey()
			}
			return out
		}
		rb, zb := bpk(r.MemRedis), bpk(r.MemZaris)
		var per []float64
		for i := range min(len(rb), len(zb)) {
			per = append(per, zb[i]/rb[i])
		}
		fmt.Fprintln(w, "| | Redis | Zaris | **Zaris/Redis** |")
		fmt.Fprintln(w, "|---|---|---|---|")
		fmt.Fprintf(w, "| RSS growth per key, bytes (rounds: %s / %s) | %.0f | %.0f | **%.2f** |\n",
			joinf(rb), joinf(zb), Median(rb), Median(zb), Median(per))
		if len(r.MemRedisTTL) > 0 {
			rb, zb := bpk(r.MemRedisTTL), bpk(r.MemZarisTTL)
			var per []float64
			for i := range min(len(rb), len(zb)) {
				per = append(per, zb[i]/rb[i])
			}
			fmt.Fprintf(w, "| the same with `EX %d` on every SET (rounds: %s / %s) | %.0f | %.0f | **%.2f** |\n",
				MemTTLSeconds, joinf(rb), joinf(zb), Median(rb), Median(zb), Median(per))
		}
		fmt.Fprintln(w)
	}
}

func joinf(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(s, ", ")
}

// thousands formats v rounded to an integer with thin-space-free spaces as
// the docs write numbers ("1 298 701").
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(ch)
	}
	return b.String()
}

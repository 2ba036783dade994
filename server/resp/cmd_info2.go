package resp

import (
	"math/bits"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Per-command statistics (INFO commandstats, latencystats), error replies
// by code (INFO errorstats), and the INFO sections Redis 7 has beyond the
// first ones (persistence, cpu, modules, …). Counters live per server in a
// slice indexed by the command's position in the table, so the hot path
// is a few atomic adds, no lock and no map.

var (
	indexOnce   sync.Once
	indexedCmds []*command // every command and subcommand, by idx
)

// indexCommands numbers every command and subcommand once the table is
// complete (after every init has registered).
func indexCommands() {
	indexOnce.Do(func() {
		for _, cmd := range sortedCommands() {
			cmd.idx = len(indexedCmds)
			indexedCmds = append(indexedCmds, cmd)
			for _, s := range cmd.subs {
				s.idx = len(indexedCmds)
				indexedCmds = append(indexedCmds, s)
			}
		}
	})
}

// latency histogram: exact below 16 µs, then 8 buckets per power of two
// (12.5 % resolution), as Redis's HDR histogram reports about 2 digits.
const histBuckets = 16 + 60*8

func histBucket(us uint64) int {
	if us < 16 {
		return int(us)
	}
	e := bits.Len64(us) - 1
	return min(16+(e-4)*8+int((us>>(e-3))&7), histBuckets-1)
}

// histUpper is the largest value of bucket i.
func histUpper(i int) uint64 {
	if i < 16 {
		return uint64(i)
	}
	e := (i-16)/8 + 4
	sub := uint64((i - 16) % 8)
	return ((8+sub+1)<<(e-3) - 1)
}

type cmdStat struct {
	calls, usec, rejected, failed atomic.Uint64
	hist                          atomic.Pointer[[histBuckets]atomic.Uint64]
}

// cmdStatsTable is INFO's commandstats and latencystats. Sharded: a
// connection records into one of cmdStatShards copies of the table (by its
// id, so its batch of commands keeps one line on the CPU running it) and a
// reader sums them, because one
// counter per command was a cache line every connection running that
// command wrote (3 % of a SET -P 16's CPU once the store's own counters
// were sharded, D65).
type cmdStatsTable struct {
	shards [cmdStatShards][]cmdStat

	errMu  sync.Mutex
	errors map[string]uint64 // error code → replies
	errTot atomic.Uint64
}

const cmdStatShards = 8 // a power of two

// maxErrorCodes: as Redis, at most 128 distinct codes are tracked.
const maxErrorCodes = 128

func (s *Server) initObservability() {
	indexCommands()
	for i := range s.cmdStats.shards {
		s.cmdStats.shards[i] = make([]cmdStat, len(indexedCmds))
	}
	s.cmdStats.errors = map[string]uint64{}
}

func (t *cmdStatsTable) shard(conn int64) []cmdStat { return t.shards[conn&(cmdStatShards-1)] }

func (t *cmdStatsTable) record(conn int64, cmd *command, d time.Duration, failed bool) {
	us := uint64(max(d.Microseconds(), 0))
	var nFailed uint64
	if failed {
		nFailed = 1
	}
	t.recordRun(conn, cmd, 1, us, nFailed, histBucket(us))
}

// recordRun counts n calls of cmd whose durations, in whole µs each, sum
// to us and all fall in latency bucket b; failed of them failed.
func (t *cmdStatsTable) recordRun(conn int64, cmd *command, n, us, failed uint64, b int) {
	st := &t.shard(conn)[cmd.idx]
	st.calls.Add(n)
	st.usec.Add(us)
	if failed > 0 {
		st.failed.Add(failed)
	}
	h := st.hist.Load()
	if h == nil {
		h = new([histBuckets]atomic.Uint64)
		if !st.hist.CompareAndSwap(nil, h) {
			h = st.hist.Load()
		}
	}
	h[b].Add(n)
}

func (t *cmdStatsTable) reject(conn int64, cmd *command) { t.shard(conn)[cmd.idx].rejected.Add(1) }

// cmdTotals are one command's counters summed over the shards.
type cmdTotals struct{ calls, usec, rejected, failed uint64 }

func (t *cmdStatsTable) totals(idx int) cmdTotals {
	var c cmdTotals
	for _, sh := range t.shards {
		st := &sh[idx]
		c.calls += st.calls.Load()
		c.usec += st.usec.Load()
		c.rejected += st.rejected.Load()
		c.failed += st.failed.Load()
	}
	return c
}

// latency is one command's latency histogram summed over the shards, and
// its total.
func (t *cmdStatsTable) latency(idx int) (counts [histBuckets]uint64, total uint64) {
	for _, sh := range t.shards {
		h := sh[idx].hist.Load()
		if h == nil {
			continue
		}
		for i := range h {
			n := h[i].Load()
			counts[i] += n
			total += n
		}
	}
	return counts, total
}

// countError counts one error reply by its code (the first word).
func (t *cmdStatsTable) countError(msg string) {
	code, _, _ := strings.Cut(msg, " ")
	if code == "" {
		code = "ERR"
	}
	t.errTot.Add(1)
	t.errMu.Lock()
	if _, ok := t.errors[code]; ok || len(t.errors) < maxErrorCodes {
		t.errors[code]++
	}
	t.errMu.Unlock()
}

func (t *cmdStatsTable) reset() {
	for _, sh := range t.shards {
		for i := range sh {
			st := &sh[i]
			st.calls.Store(0)
			st.usec.Store(0)
			st.rejected.Store(0)
			st.failed.Store(0)
			st.hist.Store(nil)
		}
	}
	t.errMu.Lock()
	t.errors = map[string]uint64{}
	t.errMu.Unlock()
	t.errTot.Store(0)
}

// statName is the command's name in INFO: "get", "config|get".
func infoCommandStats(s *Server, b *strings.Builder, _ time.Time) {
	for _, cmd := range indexedCmds {
		tot := s.cmdStats.totals(cmd.idx)
		calls, rej, fail, usec := tot.calls, tot.rejected, tot.failed, tot.usec
		if calls == 0 && rej == 0 && fail == 0 {
			continue
		}
		per := 0.0
		if calls > 0 {
			per = float64(usec) / float64(calls)
		}
		field(b, "cmdstat_"+cmd.name, "calls="+strconv.FormatUint(calls, 10)+",usec="+strconv.FormatUint(usec, 10)+
			",usec_per_call="+strconv.FormatFloat(per, 'f', 2, 64)+",rejected_calls="+strconv.FormatUint(rej, 10)+
			",failed_calls="+strconv.FormatUint(fail, 10))
	}
}

func infoErrorStats(s *Server, b *strings.Builder, _ time.Time) {
	t := &s.cmdStats
	t.errMu.Lock()
	codes := make([]string, 0, len(t.errors))
	for c := range t.errors {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	counts := make([]uint64, len(codes))
	for i, c := range codes {
		counts[i] = t.errors[c]
	}
	t.errMu.Unlock()
	for i, c := range codes {
		field(b, "errorstat_"+c, "count="+strconv.FormatUint(counts[i], 10))
	}
}

// infoLatencyStats: Redis's latency_percentiles_usec_<cmd> lines at the
// percentiles Redis reports by default (50, 99, 99.9).
func infoLatencyStats(s *Server, b *strings.Builder, _ time.Time) {
	for _, cmd := range indexedCmds {
		counts, total := s.cmdStats.latency(cmd.idx)
		if total == 0 {
			continue
		}
		var parts []string
		for _, p := range []struct {
			name string
			q    float64
		}{{"p50", 0.50}, {"p99", 0.99}, {"p99.9", 0.999}} {
			want := uint64(float64(total)*p.q + 0.999999)
			var seen uint64
			v := uint64(0)
			for i, n := range counts {
				seen += n
				if seen >= want {
					v = histUpper(i)
					break
				}
			}
			parts = append(parts, p.name+"="+strconv.FormatFloat(float64(v), 'f', 3, 64))
		}
		field(b, "latency_percentiles_usec_"+cmd.name, strings.Join(parts, ","))
	}
}

func infoPersistence(s *Server, b *strings.Builder, now time.Time) {
	// Zaris writes no RDB or AOF file: every field says so, truthfully.
	field(b, "loading", 0)
	field(b, "async_loading", 0)
	field(b, "current_cow_peak", 0)
	field(b, "current_cow_size", 0)
	field(b, "current_cow_size_age", 0)
	field(b, "current_fork_perc", "0.00")
	field(b, "current_save_keys_processed", 0)
	field(b, "current_save_keys_total", 0)
	field(b, "rdb_changes_since_last_save", 0)
	field(b, "rdb_bgsave_in_progress", 0)
	field(b, "rdb_last_save_time", s.started.Unix())
	field(b, "rdb_last_bgsave_status", "ok")
	field(b, "rdb_last_bgsave_time_sec", -1)
	field(b, "rdb_current_bgsave_time_sec", -1)
	field(b, "rdb_saves", 0)
	field(b, "rdb_last_cow_size", 0)
	field(b, "rdb_last_load_keys_expired", 0)
	field(b, "rdb_last_load_keys_loaded", 0)
	field(b, "aof_enabled", 0)
	field(b, "aof_rewrite_in_progress", 0)
	field(b, "aof_rewrite_scheduled", 0)
	field(b, "aof_last_rewrite_time_sec", -1)
	field(b, "aof_current_rewrite_time_sec", -1)
	field(b, "aof_last_bgrewrite_status", "ok")
	field(b, "aof_rewrites", 0)
	field(b, "aof_rewrites_consecutive_failures", 0)
	field(b, "aof_last_write_status", "ok")
	field(b, "aof_last_cow_size", 0)
	field(b, "module_fork_in_progress", 0)
	field(b, "module_fork_last_cow_size", 0)
}

func infoCPU(_ *Server, b *strings.Builder, _ time.Time) {
	sys, user := processCPU()
	field(b, "used_cpu_sys", strconv.FormatFloat(sys.Seconds(), 'f', 6, 64))
	field(b, "used_cpu_user", strconv.FormatFloat(user.Seconds(), 'f', 6, 64))
	field(b, "used_cpu_sys_children", "0.000000")
	field(b, "used_cpu_user_children", "0.000000")
	field(b, "used_cpu_sys_main_thread", strconv.FormatFloat(sys.Seconds(), 'f', 6, 64))
	field(b, "used_cpu_user_main_thread", strconv.FormatFloat(user.Seconds(), 'f', 6, 64))
	field(b, "zaris_goroutines", runtime.NumGoroutine())
	field(b, "zaris_gomaxprocs", runtime.GOMAXPROCS(0))
}

func infoModules(*Server, *strings.Builder, time.Time) {} // no modules: an empty section, as Redis without any

// countError is the connection's Writer.OnError: one error reply.
func (c *conn) countError(msg string) {
	c.errReplies++
	c.srv.cmdStats.countError(msg)
}

// observe records an executed command: its statistics, a slow log entry
// past slowlog-log-slower-than, a latency spike past
// latency-monitor-threshold, and the MONITOR line. A command that blocked
// (BLPOP waiting) is timed in the statistics but, as in Redis, not logged
// as slow: its wait is not work.
// observe records a command that took d and ended el after its batch's
// anchor (c.clock).
func (c *conn) observe(cmd *command, args [][]byte, d, el time.Duration) {
	s := c.srv
	blocked := c.wasBlocked
	c.wasBlocked = false
	if !blocked {
		if thr := s.live.slowerThan.Load(); thr >= 0 && d.Microseconds() >= thr && !skipSlowlog[baseName(cmd)] {
			if n := s.live.slowlogLen.Load(); n > 0 {
				s.slowlog.add(c, args, d, c.clock.Add(el), int(min(n, 1<<31-1)))
			}
		}
	}
	if !blocked {
		if thr := s.live.latencyMs.Load(); thr > 0 && d.Milliseconds() >= thr {
			event := "command"
			if cmd.flags&flagFast != 0 {
				event = "fast-command"
			}
			s.latency.add(event, c.clock.Add(el), d.Milliseconds())
		}
	}
	if s.monitors.n.Load() > 0 {
		s.monitors.feed(c, cmd, args, c.clock.Add(el))
	}
}

// skipSlowlog are the commands Redis never logs as slow (CMD_SKIP_SLOWLOG:
// credentials, and EXEC whose commands are logged themselves).
var skipSlowlog = map[string]bool{"auth": true, "hello": true, "exec": true}

package resp

import (
	"strconv"
	"strings"
	"sync"
	"time"
)

// SLOWLOG and LATENCY: the commands that took longer than
// slowlog-log-slower-than (µs) are kept, newest first, up to slowlog-max-len
// entries, in Redis's entry shape (id, Unix time, µs, arguments, client
// address, client name); LATENCY keeps, per event ("command" for any
// command, "fast-command" for one flagged fast), the latest and highest
// spikes above latency-monitor-threshold (ms) and a history of 160 samples,
// as Redis does.

// slowlogMaxArgs and slowlogMaxArgLen are Redis's SLOWLOG_ENTRY_MAX_ARGC and
// SLOWLOG_ENTRY_MAX_STRING.
const (
	slowlogMaxArgs   = 32
	slowlogMaxArgLen = 128
)

type slowEntry struct {
	id       int64
	at       int64 // Unix seconds
	micros   int64
	args     []string
	addr     string
	clientNm string
}

type slowlog struct {
	mu      sync.Mutex
	nextID  int64
	entries []slowEntry // newest first
}

// add records a slow command, copying what it keeps of the arguments.
func (l *slowlog) add(c *conn, args [][]byte, dur time.Duration, at time.Time, maxLen int) {
	n := min(len(args), slowlogMaxArgs)
	kept := make([]string, 0, n)
	for i := 0; i < n; i++ {
		if i == slowlogMaxArgs-1 && len(args) > slowlogMaxArgs {
			kept = append(kept, "... ("+strconv.Itoa(len(args)-slowlogMaxArgs+1)+" more arguments)")
			break
		}
		a := args[i]
		if len(a) > slowlogMaxArgLen {
			kept = append(kept, string(a[:slowlogMaxArgLen])+"... ("+strconv.Itoa(len(a)-slowlogMaxArgLen)+" more bytes)")
			continue
		}
		kept = append(kept, string(a))
	}
	e := slowEntry{at: at.Unix(), micros: dur.Microseconds(), args: kept,
		addr: c.nc.RemoteAddr().String(), clientNm: loadString(c.name.Load())}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.entries = append(l.entries, slowEntry{})
	copy(l.entries[1:], l.entries)
	l.entries[0] = e
	if len(l.entries) > maxLen {
		l.entries = l.entries[:maxLen]
	}
}

func (l *slowlog) trim(maxLen int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.entries) > maxLen {
		l.entries = l.entries[:maxLen]
	}
}

func (l *slowlog) snapshot(n int) []slowEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	n = min(n, len(l.entries))
	return append([]slowEntry(nil), l.entries[:n]...)
}

func (l *slowlog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

func (l *slowlog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
}

func init() {
	register(
		&command{name: "slowlog", arity: -2, group: "server", since: "2.2.12",
			summary: "A container for slow log commands.", subs: []*command{
				{name: "get", arity: -2, flags: flagAdmin | flagLoading | flagStale, summary: "Returns the slow log's entries.", tips: []string{"request_policy:all_nodes", "nondeterministic_output"}, run: cmdSlowlogGet},
				{name: "len", arity: 2, flags: flagAdmin | flagLoading | flagStale, summary: "Returns the number of entries in the slow log.", tips: []string{"request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"}, run: cmdSlowlogLen},
				{name: "reset", arity: 2, flags: flagAdmin | flagLoading | flagStale, summary: "Clears all entries from the slow log.", tips: []string{"request_policy:all_nodes", "response_policy:all_succeeded"}, run: cmdSlowlogReset},
				{name: "help", arity: 2, flags: flagLoading | flagStale, summary: "Show helpful text about the different subcommands", run: cmdSlowlogHelp},
			}},
		&command{name: "latency", arity: -2, group: "server", since: "2.8.13",
			summary: "A container for latency diagnostics commands.", subs: []*command{
				{name: "latest", arity: 2, flags: adminFlags, summary: "Returns the latest latency samples for all events.", tips: []string{"request_policy:all_nodes", "nondeterministic_output"}, run: cmdLatencyLatest},
				{name: "history", arity: 3, flags: adminFlags, summary: "Returns timestamp-latency samples for an event.", tips: []string{"request_policy:all_nodes", "nondeterministic_output"}, run: cmdLatencyHistory},
				{name: "reset", arity: -2, flags: adminFlags, summary: "Resets the latency data for one or more events.", tips: []string{"request_policy:all_nodes", "response_policy:agg_sum"}, run: cmdLatencyReset},
				{name: "doctor", arity: 2, flags: adminFlags, summary: "Returns a human-readable latency analysis report.", tips: []string{"nondeterministic_output"}, run: cmdLatencyDoctor},
				{name: "histogram", arity: -2, flags: adminFlags, since: "7.0.0", summary: "Returns the cumulative distribution of latencies of a subset or all commands (calls, and per power of two of microseconds the calls that took at most as long).", tips: []string{"request_policy:all_nodes", "nondeterministic_output"}, run: cmdLatencyHistogram},
				{name: "help", arity: 2, flags: flagLoading | flagStale, summary: "Returns helpful text about the different subcommands.", run: cmdLatencyHelp},
			}},
	)
}

func cmdSlowlogGet(c *conn, args [][]byte) {
	count := int64(10)
	if len(args) == 3 {
		n, ok := parseInt(args[2])
		if !ok || n < -1 {
			c.err("ERR count should be greater than or equal to -1")
			return
		}
		if n == -1 {
			n = 1<<31 - 1
		}
		count = n
	} else if len(args) > 3 {
		c.err("ERR wrong number of arguments for 'slowlog|get' command")
		return
	}
	entries := c.srv.slowlog.snapshot(int(min(count, 1<<31-1)))
	c.out.Array(len(entries))
	for _, e := range entries {
		c.out.Array(6)
		c.out.Int(e.id)
		c.out.Int(e.at)
		c.out.Int(e.micros)
		c.out.Array(len(e.args))
		for _, a := range e.args {
			c.out.BulkString(a)
		}
		c.out.BulkString(e.addr)
		c.out.BulkString(e.clientNm)
	}
}

func cmdSlowlogLen(c *conn, _ [][]byte) { c.out.Int(int64(c.srv.slowlog.len())) }

func cmdSlowlogReset(c *conn, _ [][]byte) {
	c.srv.slowlog.reset()
	c.out.OK()
}

func cmdSlowlogHelp(c *conn, _ [][]byte) {
	writeHelp(c, "SLOWLOG", []string{
		"GET [<count>]", "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
		"    Entries are made of:", "    id, timestamp, time in microseconds, arguments array, client IP and port,",
		"    client name", "LEN", "    Return the length of the slowlog.",
		"RESET", "    Reset the slowlog.",
	})
}

// --- LATENCY ---

const latencyHistoryLen = 160

type latencySample struct{ at, ms int64 }

type latencyEvent struct {
	samples []latencySample // oldest first, at most latencyHistoryLen; one per second
	max     int64
}

type latencyLog struct {
	mu     sync.Mutex
	events map[string]*latencyEvent
}

// add records a spike of an event (ms ≥ the threshold): samples of the
// same second merge into their maximum, as in Redis.
func (l *latencyLog) add(event string, at time.Time, ms int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.events == nil {
		l.events = map[string]*latencyEvent{}
	}
	ev := l.events[event]
	if ev == nil {
		ev = &latencyEvent{}
		l.events[event] = ev
	}
	sec := at.Unix()
	if n := len(ev.samples); n > 0 && ev.samples[n-1].at == sec {
		ev.samples[n-1].ms = max(ev.samples[n-1].ms, ms)
	} else {
		ev.samples = append(ev.samples, latencySample{sec, ms})
		if len(ev.samples) > latencyHistoryLen {
			ev.samples = ev.samples[1:]
		}
	}
	ev.max = max(ev.max, ms)
}

func (l *latencyLog) names() []string {
	var out []string
	for n := range l.events {
		out = append(out, n)
	}
	return out
}

func cmdLatencyLatest(c *conn, _ [][]byte) {
	l := &c.srv.latency
	l.mu.Lock()
	defer l.mu.Unlock()
	names := l.names()
	c.out.Array(len(names))
	for _, n := range names {
		ev := l.events[n]
		last := ev.samples[len(ev.samples)-1]
		c.out.Array(4)
		c.out.BulkString(n)
		c.out.Int(last.at)
		c.out.Int(last.ms)
		c.out.Int(ev.max)
	}
}

func cmdLatencyHistory(c *conn, args [][]byte) {
	l := &c.srv.latency
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := l.events[string(args[2])]
	if ev == nil {
		c.out.Array(0)
		return
	}
	c.out.Array(len(ev.samples))
	for _, s := range ev.samples {
		c.out.Array(2)
		c.out.Int(s.at)
		c.out.Int(s.ms)
	}
}

func cmdLatencyReset(c *conn, args [][]byte) {
	l := &c.srv.latency
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	if len(args) == 2 {
		n = len(l.events)
		l.events = nil
	} else {
		for _, a := range args[2:] {
			if _, ok := l.events[string(a)]; ok {
				delete(l.events, string(a))
				n++
			}
		}
	}
	c.out.Int(int64(n))
}

// cmdLatencyDoctor is a brief report: the monitor's state and, per event,
// its latest and worst spike.
func cmdLatencyDoctor(c *conn, _ [][]byte) {
	thr := c.srv.live.latencyMs.Load()
	l := &c.srv.latency
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	if thr == 0 && len(l.events) == 0 {
		b.WriteString("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it.\n")
	} else if len(l.events) == 0 {
		b.WriteString("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sleep tonight.\n")
	} else {
		b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
		i := 1
		for _, n := range l.names() {
			ev := l.events[n]
			last := ev.samples[len(ev.samples)-1]
			b.WriteString(strconv.Itoa(i) + ". " + n + ": " + strconv.Itoa(len(ev.samples)) + " latency spikes (threshold " +
				strconv.FormatInt(thr, 10) + " milliseconds). Worst all time event " + strconv.FormatInt(ev.max, 10) +
				" milliseconds. Latest at " + strconv.FormatInt(last.at, 10) + ": " + strconv.FormatInt(last.ms, 10) + " milliseconds.\n")
			i++
		}
		b.WriteString("\nCheck SLOWLOG GET for the commands behind these spikes.\n")
	}
	c.out.Verbatim(b.String())
}

func cmdLatencyHelp(c *conn, _ [][]byte) {
	writeHelp(c, "LATENCY", []string{
		"DOCTOR", "    Return a human readable latency analysis report.",
		"HISTORY <event>", "    Return time-latency samples for the <event> class.",
		"LATEST", "    Return the latest latency samples for all events.",
		"HISTOGRAM [<command> ...]", "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
		"    If no commands are specified then all histograms are replied.",
		"RESET [<event> ...]", "    Reset latency data of one or more <event> classes.",
		"    (default: reset all data for all event classes)",
	})
}

// cmdLatencyHistogram is LATENCY HISTOGRAM [command …]: per command that
// ran, its calls and the cumulative count of calls at each power of two of
// microseconds (1, 2, 4, …) where the count grows, as Redis's
// fillCommandCDF prints its HDR histogram. Named commands that do not
// exist are skipped; a container brings its subcommands.
func cmdLatencyHistogram(c *conn, args [][]byte) {
	var cmds []*command
	if len(args) == 2 {
		cmds = indexedCmds
	} else {
		for _, name := range args[2:] {
			cmd := lookupFullName(name)
			if cmd == nil {
				continue
			}
			cmds = append(cmds, cmd)
			cmds = append(cmds, cmd.subs...)
		}
	}
	type entry struct {
		name   string
		counts [histBuckets]uint64
		total  uint64
	}
	var out []entry
	for _, cmd := range cmds {
		if counts, total := c.srv.cmdStats.latency(cmd.idx); total > 0 {
			out = append(out, entry{cmd.name, counts, total})
		}
	}
	c.out.Map(len(out))
	for _, e := range out {
		c.out.BulkString(e.name)
		c.out.Map(2)
		c.out.BulkString("calls")
		c.out.Int(int64(e.total))
		c.out.BulkString("histogram_usec")
		cdf := latencyCDF(&e.counts, e.total)
		c.out.Map(len(cdf))
		for _, p := range cdf {
			c.out.Int(int64(p[0]))
			c.out.Int(int64(p[1]))
		}
	}
}

// latencyCDF turns a histogram into (bound, calls shorter than that)
// pairs at Redis's bounds, keeping those where the count grew, up to the
// bound that holds every call. Redis's bounds are those of its HDR
// histogram (nanoseconds, two significant digits) iterated from 1024 ns by
// powers of two: the top of each step's equivalence range in whole
// microseconds — 1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, …
func latencyCDF(counts *[histBuckets]uint64, total uint64) [][2]uint64 {
	var out [][2]uint64
	var cum, prev uint64
	i := 0
	for k := 0; k < 53; k++ {
		bound := (uint64(1)<<(10+k) + uint64(1)<<(3+k) - 1) / 1000
		for i < histBuckets && histUpper(i) < bound {
			cum += counts[i]
			i++
		}
		if cum > prev {
			out = append(out, [2]uint64{bound, cum})
			prev = cum
		}
		if cum >= total {
			break
		}
	}
	return out
}

package resp

import (
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// tally is what a connection's commands add to counters other goroutines
// read — the command table (INFO commandstats, latencystats), the
// operation metrics (zaris_ops_total), the connection's own counters
// (CLIENT LIST, INFO stats) — kept in plain fields while a batch of
// commands runs, and published when the batch ends or before its replies
// leave (issue #17, D113). Each published counter is an atomic add, a
// locked instruction that waits for the CPU's pending stores: a dozen per
// command were 5–10 % of a pipelined INCR's CPU. Published per batch, a
// run of the same command with the same outcome costs one add per counter.
//
// A command that is not fast (Redis's flag) publishes what came before it
// first: the readers of these counters (INFO, CLIENT LIST, CONFIG
// RESETSTAT, LATENCY) are not fast, so each sees the connection's own
// earlier commands as Redis's would, and a blocking command shows in
// CLIENT LIST while it waits.
type tally struct {
	cmds, hits, misses uint64
	lastCmd            *command // nil when published
	lastActive         int64    // Unix ns of the last command; 0 when published
	n                  int
	runs               [tallyRuns]tallyRun
}

const tallyRuns = 8

// tallyRun is n like commands: same command, status, failure, and latency
// buckets of the command table and of the metrics.
type tallyRun struct {
	cmd      *command
	status   kv.Status
	failed   bool
	opBucket uint8  // the metrics' bucket (metrics.Recorder.OpBucket)
	bucket   uint16 // histBucket of the µs
	n        uint32
	us       uint64 // Σ per-command whole µs, as record counts them
	ns       int64
}

// count adds one finished command to the tally.
func (c *conn) count(cmd *command, status kv.Status, d time.Duration, failed bool, at int64) {
	t := &c.tally
	t.cmds++
	t.lastActive = at
	us := uint64(max(d.Microseconds(), 0))
	r := tallyRun{cmd: cmd, status: status, failed: failed, bucket: uint16(histBucket(us)),
		opBucket: uint8(c.srv.cfg.Metrics.OpBucket(d))}
	if t.n > 0 {
		last := &t.runs[t.n-1]
		if last.cmd == r.cmd && last.status == r.status && last.failed == r.failed &&
			last.bucket == r.bucket && last.opBucket == r.opBucket && last.n < 1<<31 {
			last.n++
			last.us += us
			last.ns += max(int64(d), 0)
			return
		}
	}
	if t.n == len(t.runs) {
		c.publishRuns()
	}
	r.n, r.us, r.ns = 1, us, max(int64(d), 0)
	t.runs[t.n] = r
	t.n++
}

// publishTally adds the tally to the shared counters and empties it.
func (c *conn) publishTally() {
	t := &c.tally
	if t.cmds > 0 {
		c.cmds.Add(t.cmds)
		t.cmds = 0
	}
	if t.hits > 0 {
		c.hits.Add(t.hits)
		t.hits = 0
	}
	if t.misses > 0 {
		c.misses.Add(t.misses)
		t.misses = 0
	}
	if t.lastCmd != nil {
		if c.lastCmd.Load() != t.lastCmd {
			c.lastCmd.Store(t.lastCmd)
		}
		t.lastCmd = nil
	}
	if t.lastActive != 0 {
		c.lastActive.Store(t.lastActive)
		t.lastActive = 0
	}
	c.publishRuns()
}

func (c *conn) publishRuns() {
	t := &c.tally
	m := c.srv.cfg.Metrics
	for i := range t.runs[:t.n] {
		r := &t.runs[i]
		var failed uint64
		if r.failed {
			failed = uint64(r.n)
		}
		c.srv.cmdStats.recordRun(c.id, r.cmd, uint64(r.n), r.us, failed, int(r.bucket))
		m.OpShardN(uint32(c.id), r.cmd.metric, r.status, int(r.opBucket), uint64(r.n), r.ns)
		r.cmd = nil // no command kept alive from the table of a past batch
	}
	t.n = 0
}

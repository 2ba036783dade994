package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Metric names read by top (server/metrics/metrics.go and
// server/replication/status.go; a test checks them against the metrics
// package).
const (
	metricOps        = "zaris_ops_total"
	metricItems      = "zaris_store_items"
	metricMemoryUsed = "zaris_memory_used_bytes"
	metricMemoryMax  = "zaris_memory_max_bytes"
	metricLag        = "zaris_replication_lag_revisions"
)

// samples are the values of a Prometheus text exposition by metric name
// (every label set of a name, in order of appearance).
type samples map[string][]float64

func (s samples) sum(name string) float64 {
	var t float64
	for _, v := range s[name] {
		t += v
	}
	return t
}

func (s samples) max(name string) float64 {
	var m float64
	for _, v := range s[name] {
		m = math.Max(m, v)
	}
	return m
}

// parseProm reads the Prometheus text format (version 0.0.4): comment
// lines are skipped, each sample line is `name[{labels}] value
// [timestamp]`. Label values may hold any character, escaped quotes and
// braces included; labels themselves are not kept.
func parseProm(r io.Reader) (samples, error) {
	out := samples{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, err := cutSampleName(line)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w", ln, err)
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 || len(fields) > 2 {
			return nil, fmt.Errorf("metrics line %d: want a value and an optional timestamp: %q", ln, line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w", ln, err)
		}
		out[name] = append(out[name], v)
	}
	return out, sc.Err()
}

// cutSampleName splits a sample line into its metric name and what follows
// the label set.
func cutSampleName(line string) (name, rest string, err error) {
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return "", "", fmt.Errorf("no value: %q", line)
	}
	name, rest = line[:i], line[i:]
	if rest[0] != '{' {
		return name, rest, nil
	}
	inQuote := false
	for j := 1; j < len(rest); j++ {
		switch c := rest[j]; {
		case inQuote && c == '\\':
			j++ // the escaped character
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == '}':
			return name, rest[j+1:], nil
		}
	}
	return "", "", fmt.Errorf("unterminated label set: %q", line)
}

// scrape is one node's metrics at one instant.
type scrape struct {
	at  time.Time
	s   samples
	err error
}

func (a *api) metrics(ctx context.Context, addr string) scrape {
	var body []byte
	if err := a.do(ctx, http.MethodGet, addr, "/metrics", &body); err != nil {
		return scrape{at: time.Now(), err: err}
	}
	s, err := parseProm(strings.NewReader(string(body)))
	return scrape{at: time.Now(), s: s, err: err}
}

// topTarget is a node top watches.
type topTarget struct{ id, addr string }

func cmdTop(ctx context.Context, g *globals, args []string, stdout io.Writer) (int, error) {
	fs := flag.NewFlagSet("top", flag.ContinueOnError)
	interval := fs.Duration("interval", 2*time.Second, "refresh interval")
	count := fs.Int("count", 0, "tables to print, then exit (0 = until Ctrl-C)")
	if _, err := parseArgs(g, fs, args); err != nil {
		return exitError, err
	}
	if *interval <= 0 || *count < 0 {
		return exitError, fmt.Errorf("%w: --interval must be > 0 and --count >= 0", errUsage)
	}
	a := newAPI(g)
	d, _, err := a.discover(ctx, g)
	if err != nil {
		return exitError, err
	}
	var targets []topTarget
	for _, n := range d.Nodes {
		if n.HTTPAddr != "" && !gone(n.State) {
			targets = append(targets, topTarget{n.ID, n.HTTPAddr})
		}
	}
	prev := a.scrapeAll(ctx, targets)
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	for printed := 0; *count == 0 || printed < *count; printed++ {
		select {
		case <-ctx.Done():
			return exitOK, nil // Ctrl-C: a normal end
		case <-tick.C:
		}
		cur := a.scrapeAll(ctx, targets)
		if err := printTop(stdout, targets, prev, cur); err != nil {
			return exitError, err
		}
		prev = cur
	}
	return exitOK, nil
}

func (a *api) scrapeAll(ctx context.Context, targets []topTarget) []scrape {
	out := make([]scrape, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = a.metrics(ctx, t.addr) }()
	}
	wg.Wait()
	return out
}

// opsRate is the node's operations per second between two scrapes: the
// growth of zaris_ops_total (every op and status) over the time between
// them. A counter that went down (the node restarted) gives no rate.
func opsRate(prev, cur scrape) (float64, bool) {
	if prev.err != nil || cur.err != nil {
		return 0, false
	}
	dt := cur.at.Sub(prev.at).Seconds()
	delta := cur.s.sum(metricOps) - prev.s.sum(metricOps)
	if dt <= 0 || delta < 0 {
		return 0, false
	}
	return delta / dt, true
}

func printTop(w io.Writer, targets []topTarget, prev, cur []scrape) error {
	fmt.Fprintf(w, "%s\n", time.Now().UTC().Format(time.TimeOnly))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "NODE\tOPS/S\tMEMORY\tMAX\tITEMS\tREPL LAG\t")
	var errs []error
	for i, t := range targets {
		c := cur[i]
		if c.err != nil {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t\n", t.id)
			errs = append(errs, c.err)
			continue
		}
		rate := "-"
		if r, ok := opsRate(prev[i], c); ok {
			rate = fmt.Sprintf("%.1f", r)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.0f\t%.0f\t\n", t.id, rate,
			fmtBytes(int64(c.s.sum(metricMemoryUsed))), fmtBytes(int64(c.s.sum(metricMemoryMax))),
			c.s.sum(metricItems), c.s.max(metricLag))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, err := range errs {
		fmt.Fprintf(w, "  %v\n", err)
	}
	fmt.Fprintln(w)
	return nil
}

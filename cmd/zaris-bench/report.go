package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Report is the outcome of a run, printed as text or JSON.
type Report struct {
	Protocol    string `json:"protocol"`
	Addr        string `json:"addr"`
	Store       string `json:"store,omitempty"` // native only
	TLS         bool   `json:"tls,omitempty"`
	Connections int    `json:"connections"`
	Pipeline    int    `json:"pipeline"`
	DataSize    int    `json:"data_size"`
	Keyspace    int    `json:"keyspace"`
	Ratio       string `json:"ratio"` // GET:SET

	WarmupKeys    int     `json:"warmup_keys"`
	WarmupSeconds float64 `json:"warmup_seconds"`

	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// TotalOps counts answered requests, error replies included.
	TotalOps  uint64  `json:"total_ops"`
	OpsPerSec float64 `json:"ops_per_sec"`
	Gets      uint64  `json:"gets"`
	Sets      uint64  `json:"sets"`
	Hits      uint64  `json:"hits"`
	Misses    uint64  `json:"misses"`
	// Errors counts error replies plus requests lost with a failed
	// connection; FirstError is the first of them.
	Errors     uint64 `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	// Latency is each request's own write → response time, in microseconds.
	Latency LatencyReport `json:"latency_us"`
	// Interrupted is set when the run was canceled before its bound.
	Interrupted bool `json:"interrupted,omitempty"`
}

// LatencyReport holds latency statistics in microseconds. Percentiles are
// within 0.4% of the exact value (internal/hdr); Min, Max and Mean are exact.
type LatencyReport struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

func newReport(cfg *Config, addr string) Report {
	r := Report{
		Protocol:    string(cfg.Protocol),
		Addr:        addr,
		TLS:         cfg.TLS,
		Connections: cfg.Connections,
		Pipeline:    cfg.Pipeline,
		DataSize:    cfg.DataSize,
		Keyspace:    cfg.Keyspace,
		Ratio:       fmt.Sprintf("%d:%d", cfg.GetRatio, cfg.SetRatio),
	}
	if cfg.Protocol == ProtocolNative {
		r.Store = cfg.Store
	}
	return r
}

// fill sets the measured fields from the summed stats of a run that took
// elapsed seconds.
func (r *Report) fill(t *totals, elapsed time.Duration) {
	r.ElapsedSeconds = round(elapsed.Seconds(), 3)
	r.TotalOps = t.ops
	if s := elapsed.Seconds(); s > 0 {
		r.OpsPerSec = round(float64(t.ops)/s, 1)
	}
	r.Gets, r.Sets, r.Hits, r.Misses, r.Errors = t.gets, t.sets, t.hits, t.misses, t.errors
	r.FirstError = t.firstErr
	h := &t.hist
	r.Latency = LatencyReport{
		Min:  micros(h.Min()),
		Mean: round(h.Mean()/1e3, 1),
		P50:  micros(h.ValueAtQuantile(0.50)),
		P90:  micros(h.ValueAtQuantile(0.90)),
		P99:  micros(h.ValueAtQuantile(0.99)),
		P999: micros(h.ValueAtQuantile(0.999)),
		Max:  micros(h.Max()),
	}
}

// micros converts nanoseconds to microseconds with 0.1 µs resolution.
func micros(ns uint64) float64 { return round(float64(ns)/1e3, 1) }

func round(v float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(v*p) / p
}

func (r *Report) write(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	var b strings.Builder
	target := r.Addr
	if r.Store != "" {
		target += " store " + r.Store
	}
	if r.TLS {
		target += " (TLS)"
	}
	fmt.Fprintf(&b, "zaris-bench  %s %s\n", r.Protocol, target)
	fmt.Fprintf(&b, "workload     %d connections, pipeline %d, %d-byte values, %d keys, GET:SET %s\n",
		r.Connections, r.Pipeline, r.DataSize, r.Keyspace, r.Ratio)
	if r.WarmupKeys > 0 {
		fmt.Fprintf(&b, "warmup       %d keys in %.2fs\n", r.WarmupKeys, r.WarmupSeconds)
	}
	status := ""
	if r.Interrupted {
		status = "  (interrupted)"
	}
	fmt.Fprintf(&b, "elapsed      %.3fs%s\n", r.ElapsedSeconds, status)
	fmt.Fprintf(&b, "total ops    %d\n", r.TotalOps)
	fmt.Fprintf(&b, "throughput   %.0f ops/s\n", r.OpsPerSec)
	hitRate := 0.0
	if r.Hits+r.Misses > 0 {
		hitRate = 100 * float64(r.Hits) / float64(r.Hits+r.Misses)
	}
	fmt.Fprintf(&b, "GET          %d  (hits %d, misses %d, hit rate %.1f%%)\n", r.Gets, r.Hits, r.Misses, hitRate)
	fmt.Fprintf(&b, "SET          %d\n", r.Sets)
	fmt.Fprintf(&b, "errors       %d\n", r.Errors)
	if r.FirstError != "" {
		fmt.Fprintf(&b, "first error  %s\n", r.FirstError)
	}
	l := r.Latency
	fmt.Fprintf(&b, "latency µs   p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  (min %.1f, mean %.1f)\n",
		l.P50, l.P90, l.P99, l.P999, l.Max, l.Min, l.Mean)
	_, err := io.WriteString(w, b.String())
	return err
}

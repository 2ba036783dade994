// Package procmem reads what the process costs in memory: its resident set
// size (RSS) from the kernel, and the Go runtime's own breakdown. It is what
// a container's memory limit is compared with, so the server reports it and
// bounds it (--memory-max-rss).
//
// On Linux RSS comes from /proc/self/statm; elsewhere, or when /proc is not
// readable, it falls back to the memory the Go runtime holds from the OS and
// has not released, and says so (Source).
package procmem

import (
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"
)

// Source says where an RSS figure comes from.
type Source string

const (
	// SourceProc: the kernel's resident set size (/proc/self/statm).
	SourceProc Source = "proc"
	// SourceRuntime: the Go runtime's mapped, unreleased memory, an
	// approximation of RSS used off Linux.
	SourceRuntime Source = "go-runtime"
)

// RSS returns the resident set size of the process in bytes and its source.
func RSS() (int64, Source) {
	if n, ok := procRSS(); ok {
		return n, SourceProc
	}
	return runtimeResident(), SourceRuntime
}

var pageSize = int64(os.Getpagesize())

// procRSS reads the second field of /proc/self/statm (resident pages).
func procRSS() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	return parseStatm(b, pageSize)
}

// parseStatm returns the resident bytes of a statm line
// ("size resident shared text lib data dt", in pages).
func parseStatm(b []byte, page int64) (int64, bool) {
	fields := bytes.Fields(b)
	if len(fields) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(string(fields[1]), 10, 64)
	if err != nil || pages < 0 {
		return 0, false
	}
	return pages * page, true
}

// Runtime is the Go runtime's view of the process memory.
type Runtime struct {
	// HeapObjects is the bytes of heap objects, live or not yet swept.
	HeapObjects int64
	// HeapLive is the live heap as of the last completed GC.
	HeapLive int64
	// Total is every byte the runtime mapped from the OS.
	Total int64
	// Released is the part of Total returned to the OS (not resident).
	Released int64
	// Limit is the runtime's soft memory limit (GOMEMLIMIT).
	Limit int64
}

var runtimeSamples = []string{
	"/memory/classes/heap/objects:bytes",
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/gc/gomemlimit:bytes",
}

// ReadRuntime samples the runtime's memory metrics (cheap: no stop-the-world).
func ReadRuntime() Runtime {
	s := make([]metrics.Sample, len(runtimeSamples))
	for i, name := range runtimeSamples {
		s[i].Name = name
	}
	metrics.Read(s)
	v := func(i int) int64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(min(s[i].Value.Uint64(), 1<<63-1))
	}
	return Runtime{HeapObjects: v(0), HeapLive: v(1), Total: v(2), Released: v(3), Limit: v(4)}
}

func runtimeResident() int64 {
	r := ReadRuntime()
	return r.Total - r.Released
}

package vsredis

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// clockTicksPerSecond is USER_HZ, the unit of utime and stime in
// /proc/<pid>/stat: 100 on every Linux architecture Go supports (the kernel
// exports its internal HZ converted to this fixed unit).
const clockTicksPerSecond = 100

// ParseCPUTicks returns utime+stime (fields 14 and 15) of a /proc/<pid>/stat
// line. The command name (field 2) is in parentheses and may hold spaces or
// parentheses itself, so the fields are counted after the last ')'.
func ParseCPUTicks(stat []byte) (int64, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("stat line without a command name: %q", stat)
	}
	f := bytes.Fields(stat[end+1:])
	// f[0] is field 3 (state): utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("stat line with %d fields after the name, want ≥ 13", len(f))
	}
	utime, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil || utime < 0 || stime < 0 {
		return 0, fmt.Errorf("stat utime %q stime %q: not counters", f[11], f[12])
	}
	return utime + stime, nil
}

// CPUSeconds is the CPU time (user + system, every thread, live or exited)
// the process pid has used so far.
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	t, err := ParseCPUTicks(b)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return float64(t) / clockTicksPerSecond, nil
}

// ParseRSSPages returns the resident pages (field 2) of a /proc/<pid>/statm line.
func ParseRSSPages(statm []byte) (int64, error) {
	f := bytes.Fields(statm)
	if len(f) < 2 {
		return 0, fmt.Errorf("statm line with %d fields, want ≥ 2", len(f))
	}
	return strconv.ParseInt(string(f[1]), 10, 64)
}

// RSSBytes is the resident set size of the process pid.
func RSSBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0, err
	}
	pages, err := ParseRSSPages(b)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/statm: %w", pid, err)
	}
	return pages * int64(os.Getpagesize()), nil
}

// LoadAverage is the first three fields of /proc/loadavg, as written there.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return "unknown"
	}
	return string(bytes.Join(f[:3], []byte(" ")))
}

// Package vsredis measures zaris-server against redis-server side by side on
// one machine (issue #17): it starts both servers as processes on loopback
// ports the kernel chose, drives them with the same tools — redis-benchmark
// for the RESP table, cmd/zaris-bench for the native table (native protocol
// against Zaris, RESP against Redis), redis-cli --pipe for RSS per key — in
// interleaved rounds, charges each server's CPU time (/proc/<pid>/stat) to
// the requests of each row, and prints markdown tables of medians and
// Zaris/Redis ratios. scripts/bench-vs-redis.sh (make bench-redis) builds
// the binaries and runs cmd/vsredis.
//
// It imports nothing of Zaris: it measures the binaries as a user runs them.
package vsredis

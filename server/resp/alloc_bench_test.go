package resp_test

import (
	"bytes"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/zaris-io/zaris/server"
)

// BenchmarkRedisBenchmarkRows sends the commands of redis-benchmark's
// -t tests, 16 to a batch on one connection, to a real node in this
// process (issue #17). Its allocs/op are the server's (the client side
// allocates nothing per request): each allocation is collector work, which
// costs a pipelined command more CPU than anything else it does once the
// syscalls are shared.
func BenchmarkRedisBenchmarkRows(b *testing.B) {
	val := bytes.Repeat([]byte("x"), 32)
	k := func(i int) []byte { return fmt.Appendf(nil, "key:%012d", i) }
	rows := []struct {
		name string
		cmd  func(i int) [][]byte
	}{
		{"PING", func(int) [][]byte { return [][]byte{[]byte("PING")} }},
		{"SET", func(i int) [][]byte { return [][]byte{[]byte("SET"), k(i), val} }},
		{"GET", func(i int) [][]byte { return [][]byte{[]byte("GET"), k(i)} }},
		{"INCR", func(i int) [][]byte { return [][]byte{[]byte("INCR"), fmt.Appendf(nil, "counter:%012d", i)} }},
		{"LPUSH", func(int) [][]byte { return [][]byte{[]byte("LPUSH"), []byte("mylist"), val} }},
		{"RPUSH", func(int) [][]byte { return [][]byte{[]byte("RPUSH"), []byte("mylist"), val} }},
		{"LRANGE_100", func(int) [][]byte {
			return [][]byte{[]byte("LRANGE"), []byte("mylist"), []byte("0"), []byte("99")}
		}},
		{"LPOP", func(int) [][]byte { return [][]byte{[]byte("LPOP"), []byte("mylist")} }},
		{"RPOP", func(int) [][]byte { return [][]byte{[]byte("RPOP"), []byte("mylist")} }},
		{"SADD", func(i int) [][]byte { return [][]byte{[]byte("SADD"), []byte("myset"), k(i)} }},
		{"HSET", func(i int) [][]byte { return [][]byte{[]byte("HSET"), []byte("myhash"), k(i), val} }},
		{"SPOP", func(int) [][]byte { return [][]byte{[]byte("SPOP"), []byte("myset")} }},
		{"ZADD", func(i int) [][]byte {
			return [][]byte{[]byte("ZADD"), []byte("myzset"), strconv.AppendInt(nil, int64(i), 10), k(i)}
		}},
		{"ZPOPMIN", func(int) [][]byte { return [][]byte{[]byte("ZPOPMIN"), []byte("myzset")} }},
		{"MSET", func(i int) [][]byte {
			args := [][]byte{[]byte("MSET")}
			for j := range 10 {
				args = append(args, k((i+j*7919)%100000), val)
			}
			return args
		}},
		{"XADD", func(int) [][]byte {
			return [][]byte{[]byte("XADD"), []byte("mystream"), []byte("*"), []byte("myfield"), val}
		}},
	}
	n := startNode(b, func(c *server.Config) { c.MaxItemBytes, c.MemoryMaxBytes = 512<<20, 2<<30 }) // one list takes every LPUSH
	conn, err := net.Dial("tcp", n.RESPAddr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	const pipeline = 16
	buf := make([]byte, 1<<20)
	for _, row := range rows {
		b.Run(row.name, func(b *testing.B) {
			_ = conn.SetDeadline(time.Now().Add(10 * time.Minute))
			batches := pipelineBatches(pipeline, row.cmd)
			b.ReportAllocs()
			b.ResetTimer()
			for done, j := 0, 0; done < b.N; done, j = done+pipeline, j+1 {
				if _, err := conn.Write(batches[j%len(batches)]); err != nil {
					b.Fatal(err)
				}
				have, at, replies := 0, 0, 0
				for replies < pipeline {
					m, err := conn.Read(buf[have:])
					if err != nil {
						b.Fatal(err)
					}
					have += m
					for replies < pipeline {
						end := replyEnd(buf[at:have])
						if end < 0 {
							break
						}
						if buf[at] == '-' {
							b.Fatalf("reply %q", buf[at:at+end])
						}
						at += end
						replies++
					}
				}
			}
		})
	}
}

// pipelineBatches is 64 batches of n commands each, cmd's for the indexes
// i*97 mod 100 000: they cycle, so keys vary as redis-benchmark's -r does.
func pipelineBatches(n int, cmd func(i int) [][]byte) [][]byte {
	batches := make([][]byte, 64)
	for j := range batches {
		for i := range n {
			args := cmd((j*n + i) * 97 % 100000)
			batches[j] = fmt.Appendf(batches[j], "*%d\r\n", len(args))
			for _, a := range args {
				batches[j] = fmt.Appendf(batches[j], "$%d\r\n%s\r\n", len(a), a)
			}
		}
	}
	return batches
}

// replyEnd is the length of the complete RESP2 reply at the start of p, or
// -1 when p holds only part of it.
func replyEnd(p []byte) int {
	nl := bytes.IndexByte(p, '\n')
	if nl < 0 {
		return -1
	}
	switch p[0] {
	case '$':
		n, _ := strconv.Atoi(string(p[1 : nl-1]))
		if n < 0 {
			return nl + 1
		}
		if len(p) < nl+1+n+2 {
			return -1
		}
		return nl + 1 + n + 2
	case '*':
		n, _ := strconv.Atoi(string(p[1 : nl-1]))
		at := nl + 1
		for range max(n, 0) {
			e := replyEnd(p[at:])
			if e < 0 {
				return -1
			}
			at += e
		}
		return at
	}
	return nl + 1
}

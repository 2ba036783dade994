package resp_test

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"
)

// BenchmarkPipelined is redis-benchmark's five headline rows at -P 16 on
// one connection against a real node's RESP port (issue #17): keys drawn
// from 100 000 (-r 100000), 32-byte values. A profile of one row
// (-cpuprofile) shows where the server spends a request.
func BenchmarkPipelined(b *testing.B) {
	val := bytes.Repeat([]byte("x"), 32)
	rows := []struct {
		name string
		cmd  func(i int) [][]byte
	}{
		{"SET", func(i int) [][]byte { return [][]byte{[]byte("SET"), key(i), val} }},
		{"SET_EX", func(i int) [][]byte { return [][]byte{[]byte("SET"), key(i), val, []byte("EX"), []byte("100000")} }},
		{"GET", func(i int) [][]byte { return [][]byte{[]byte("GET"), key(i)} }},
		{"INCR", func(i int) [][]byte { return [][]byte{[]byte("INCR"), key(i)} }},
		{"HSET", func(i int) [][]byte { return [][]byte{[]byte("HSET"), []byte("myhash"), key(i), val} }},
	}
	for _, row := range rows {
		b.Run(row.name, func(b *testing.B) {
			n := startNode(b)
			conn, err := net.Dial("tcp", n.RESPAddr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Minute))
			const pipeline = 16
			batches := pipelineBatches(pipeline, row.cmd)
			buf := make([]byte, 64<<10)
			b.ReportAllocs()
			b.ResetTimer()
			for done, j := 0, 0; done < b.N; done, j = done+pipeline, j+1 {
				if _, err := conn.Write(batches[j%len(batches)]); err != nil {
					b.Fatal(err)
				}
				// Every reply of these rows is one line (GET of an absent
				// key "$-1", of a present one two): count replies by their
				// first byte at line starts.
				got, replies := 0, 0
				for replies < pipeline {
					m, err := conn.Read(buf[got:])
					if err != nil {
						b.Fatal(err)
					}
					replies += countReplies(buf[got : got+m])
					got += m
				}
				if buf[0] == '-' {
					b.Fatalf("reply %q", buf[:got])
				}
			}
		})
	}
}

func key(i int) []byte { return fmt.Appendf(nil, "key:%012d", i) }

// countReplies counts the replies that start in p: lines that begin with
// ':', '+', '-' or '$' (a bulk's payload is 32 x's, never one of those).
func countReplies(p []byte) int {
	n := 0
	for _, line := range bytes.SplitAfter(p, []byte("\r\n")) {
		if len(line) > 0 && bytes.IndexByte([]byte(":+-$"), line[0]) >= 0 {
			n++
		}
	}
	return n
}

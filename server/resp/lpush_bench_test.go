package resp_test

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/zaris-io/zaris/server"
)

// BenchmarkLPushPipelined is redis-benchmark's LPUSH row at -P 16 on one
// connection: LPUSH of a 32-byte element onto one list that grows by every
// request, against a real node's RESP port. The list holds b.N elements at
// the end, as redis-benchmark's does (issue #17: the worst RESP row).
func BenchmarkLPushPipelined(b *testing.B) {
	n := startNode(b, func(c *server.Config) { c.MaxItemBytes = 512 << 20; c.MemoryMaxBytes = 1 << 30 })
	conn, err := net.Dial("tcp", n.RESPAddr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Minute))
	const pipeline = 16
	elem := bytes.Repeat([]byte("x"), 32)
	var batch []byte
	for range pipeline {
		batch = fmt.Appendf(batch, "*3\r\n$5\r\nLPUSH\r\n$6\r\nmylist\r\n$%d\r\n%s\r\n", len(elem), elem)
	}
	// Integer replies: ":<length>\r\n", read up to the 16th CRLF.
	buf := make([]byte, 64<<10)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += pipeline {
		if _, err := conn.Write(batch); err != nil {
			b.Fatal(err)
		}
		got, lines := 0, 0
		for lines < pipeline {
			m, err := conn.Read(buf[got:])
			if err != nil {
				b.Fatal(err)
			}
			lines += bytes.Count(buf[got:got+m], []byte("\r\n"))
			got += m
		}
		if buf[0] != ':' {
			b.Fatalf("reply %q", buf[:got])
		}
	}
}

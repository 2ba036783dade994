// Command pongfloor is the I/O-model floor of a RESP server (issue #17): it
// answers every PING (the 14 bytes redis-benchmark's PING_MBULK sends) with
// +PONG and does nothing else, under one of two I/O models, so that
// redis-benchmark against it measures what the I/O model alone costs per
// request — the ceiling a server built on that model can reach.
//
//	-io goroutine  one goroutine per connection on Go's netpoller (what
//	               server/resp and server/native do today)
//	-io epoll      one event loop per CPU on its own epoll instance
//	               (level-triggered), reading and answering every ready
//	               connection in turn (what Redis does, one loop per core)
//
// It prints "listening <addr>" once it accepts connections.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
)

// ping is redis-benchmark's PING_MBULK request; pong its reply.
var (
	ping = []byte("*1\r\n$4\r\nPING\r\n")
	pong = []byte("+PONG\r\n")
)

func main() {
	io := flag.String("io", "goroutine", "I/O model: goroutine or epoll")
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	loops := flag.Int("loops", runtime.GOMAXPROCS(0), "event loops (-io epoll)")
	flag.Parse()
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("listening", l.Addr())
	switch *io {
	case "goroutine":
		err = serveGoroutines(l)
	case "epoll":
		err = serveEpoll(l.(*net.TCPListener), *loops)
	default:
		err = fmt.Errorf("unknown -io %q (goroutine or epoll)", *io)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// pongs appends a reply per complete request at the front of in — +PONG
// to PING, an error to anything else (redis-benchmark asks CONFIG GET
// first) — and reports how many bytes it consumed; a partial request stays.
func pongs(out, in []byte) ([]byte, int) {
	used := 0
	for {
		if len(in)-used >= len(ping) && bytes.Equal(in[used:used+len(ping)], ping) {
			out = append(out, pong...)
			used += len(ping)
			continue
		}
		n := requestLen(in[used:])
		if n == 0 {
			return out, used
		}
		out = append(out, "-ERR pongfloor answers PING only\r\n"...)
		used += n
	}
}

// requestLen is the length of the complete multibulk request at the front
// of b, 0 when it is incomplete (or not one: this floor trusts its client).
func requestLen(b []byte) int {
	count, at, ok := header(b, 0, '*')
	if !ok {
		return 0
	}
	for range count {
		var n int
		if n, at, ok = header(b, at, '$'); !ok || len(b) < at+n+2 {
			return 0
		}
		at += n + 2
	}
	return at
}

// header parses "<kind><digits>\r\n" at b[at:]: the number and where the
// line ends.
func header(b []byte, at int, kind byte) (int, int, bool) {
	if len(b) <= at || b[at] != kind {
		return 0, 0, false
	}
	n := 0
	for i := at + 1; i+1 < len(b); i++ {
		if b[i] == '\r' {
			return n, i + 2, b[i+1] == '\n'
		}
		if b[i] < '0' || b[i] > '9' {
			return 0, 0, false
		}
		n = n*10 + int(b[i]-'0')
	}
	return 0, 0, false
}

func serveGoroutines(l net.Listener) error {
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			in := make([]byte, 16<<10)
			out := make([]byte, 0, 16<<10)
			have := 0
			for {
				n, err := c.Read(in[have:])
				if err != nil {
					return
				}
				have += n
				var used int
				out, used = pongs(out[:0], in[:have])
				have = copy(in, in[used:have])
				if _, err := c.Write(out); err != nil {
					return
				}
			}
		}()
	}
}

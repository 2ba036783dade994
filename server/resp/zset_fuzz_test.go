package resp_test

import (
	"bufio"
	"bytes"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// zsetFuzzCommands are the commands whose argument parsers FuzzZSetGeoArgs
// drives: the unified ZRANGE family and the geo searches.
var zsetFuzzCommands = []string{"ZRANGE", "ZRANGESTORE", "ZRANGEBYSCORE", "ZREVRANGEBYSCORE", "ZRANGEBYLEX",
	"ZREVRANGEBYLEX", "ZREVRANGE", "GEOSEARCH", "GEOSEARCHSTORE", "GEORADIUS", "GEORADIUSBYMEMBER", "GEORADIUS_RO"}

// FuzzZSetGeoArgs sends arbitrary options to the ZRANGE and GEOSEARCH
// parsers of a node holding a sorted set, a lex set and a geo set, and —
// when redis-server is installed — the same commands to it: the replies
// must be byte-identical (Redis's order of checks, its errors, its
// answers); the node must never contain a panic and must go on serving.
// `go test` runs the seed corpus; `go test -fuzz FuzzZSetGeoArgs
// ./server/resp` explores.
func FuzzZSetGeoArgs(f *testing.F) {
	n := startNode(f)
	zaris := dialFuzz(f, n.RESPAddr().String())
	var redis *fuzzConn
	if _, err := exec.LookPath("redis-server"); err == nil {
		redis = dialFuzz(f, startRedis(f, false))
	}
	setup := [][]string{
		{"ZADD", "z", "1", "a", "2", "b", "2", "c", "3.5", "d", "inf", "e", "-inf", "f"},
		{"ZADD", "lx", "0", "a", "0", "b", "0", "c", "0", "dd"},
		{"GEOADD", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania", "12.758489", "38.788135", "x"},
	}
	for _, c := range setup {
		zaris.do(f, c)
		if redis != nil {
			redis.do(f, c)
		}
	}
	seeds := []string{
		"z 0 -1 WITHSCORES", "z (1 +inf BYSCORE LIMIT 1 2", "z +inf -inf BYSCORE REV LIMIT -1 9223372036854775807",
		"lx [a (c BYLEX", "lx + - BYLEX REV LIMIT 0 1", "z 0 1 LIMIT 0 -1", "z nan 1 BYSCORE", "z 0 1 BYSCORE BYLEX REV REV",
		"dst z 0 -1", "dst z (1 5 BYSCORE WITHSCORES", "z 1 3", "z 1 3 LIMIT 0 1", "lx - + LIMIT 9223372036854775807 -9223372036854775808",
		"g FROMLONLAT 15 37 BYRADIUS 200 km ASC WITHDIST WITHCOORD WITHHASH", "g FROMMEMBER Palermo BYBOX 400 400 km COUNT 2 ANY",
		"g FROMMEMBER nope BYRADIUS 1 m", "g BYRADIUS 1 m FROMLONLAT 0 0 COUNT 0", "g FROMLONLAT 200 0 BYRADIUS 1 m",
		"dst g FROMLONLAT 15 37 BYRADIUS 300 km STOREDIST", "g 15 37 200 km WITHDIST COUNT 1 DESC STORE dst",
		"g Palermo 100 km STOREDIST dst", "g 15 37 1e308 mi COUNT 9223372036854775807 ANY", "g FROMLONLAT 15 37 BYBOX inf nan km",
	}
	for i := range zsetFuzzCommands {
		for _, s := range seeds {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, blob []byte) {
		args := []string{zsetFuzzCommands[int(which)%len(zsetFuzzCommands)]}
		for _, a := range bytes.Fields(blob) {
			args = append(args, string(a))
		}
		if len(args) > 40 {
			args = args[:40]
		}
		got := zaris.do(t, args)
		if strings.HasPrefix(got, "-ERR internal error") {
			t.Fatalf("%q: a contained panic", args)
		}
		if redis != nil {
			if want := redis.do(t, args); want != got {
				t.Fatalf("%q:\n    redis: %q\n    zaris: %q", args, want, got)
			}
		}
		if pong := zaris.do(t, []string{"PING"}); pong != "+PONG\r\n" {
			t.Fatalf("after %q the node does not answer PING: %q", args, pong)
		}
	})
}

// fuzzConn is a raw RESP connection usable from a fuzz target and its
// inputs alike.
type fuzzConn struct {
	nc net.Conn
	r  *bufio.Reader
}

func dialFuzz(tb testing.TB, addr string) *fuzzConn {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = nc.Close() })
	return &fuzzConn{nc: nc, r: bufio.NewReader(nc)}
}

func (c *fuzzConn) do(tb testing.TB, args []string) string {
	tb.Helper()
	_ = c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Write([]byte(cmd(args...))); err != nil {
		tb.Fatalf("%q: %v", args, err)
	}
	s, err := readReply(c.r)
	if err != nil {
		tb.Fatalf("%q: no reply: %v", args, err)
	}
	return s
}

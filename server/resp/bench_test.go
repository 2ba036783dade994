package resp

import (
	"bytes"
	"io"
	"testing"

	"github.com/tidwall/redcon"
)

// pipelined is 16 SETs and 16 GETs as redis-benchmark -P 16 sends them.
var pipelined = func() []byte {
	var b bytes.Buffer
	for i := 0; i < 16; i++ {
		b.WriteString("*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000042\r\n$3\r\nxxx\r\n")
		b.WriteString("*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000042\r\n")
	}
	return b.Bytes()
}()

// BenchmarkParser parses a pipelined batch with the front end's parser.
func BenchmarkParser(b *testing.B) {
	var p Parser
	p.Reset()
	lim := Limits{}.withDefaults()
	b.SetBytes(int64(len(pipelined)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf := pipelined
		for len(buf) > 0 {
			_, n, err := p.Next(buf, &lim)
			if err != nil || n == 0 {
				b.Fatal("parse failed")
			}
			buf = buf[n:]
		}
	}
}

// BenchmarkRedconReader parses the same batch with redcon's Reader (the
// reader its server loop uses), for the comparison recorded in
// docs/RESP.md.
func BenchmarkRedconReader(b *testing.B) {
	src := bytes.NewReader(pipelined)
	rd := redcon.NewReader(src)
	b.SetBytes(int64(len(pipelined)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		src.Reset(pipelined)
		for n := 0; n < 32; {
			cmds, err := rd.ReadCommands()
			if err != nil && err != io.EOF {
				b.Fatal(err)
			}
			n += len(cmds)
		}
	}
}

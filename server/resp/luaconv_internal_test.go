package resp

import (
	"bytes"
	"runtime"
	"testing"
)

// A script's command reply is converted for Lua element by element;
// finding one element's line must not copy the rest of the reply. It did
// (strings.Index over string(b)): the conversion was quadratic in the
// reply's size — inside EVAL a ZRANDMEMBER of 40 000 draws took 1.6 s,
// of 20 000 0.4 s.
func TestRespLineDoesNotCopyTheRestOfTheReply(t *testing.T) {
	b := bytes.Repeat([]byte("$1\r\nx\r\n"), 1<<17) // ~900 KB, one element after the other
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 100 {
		line, n, err := respLine(b)
		if err != nil || n != 4 || line != "1" {
			t.Fatalf("respLine = %q, %d, %v; want \"1\", 4", line, n, err)
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Fatalf("100 line reads at the head of a %d-byte reply allocated %d bytes: each copies the reply", len(b), got)
	}
}

package procmem

import (
	"runtime"
	"testing"
)

func TestParseStatm(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"4321 1234 300 10 0 900 0\n", 1234 * 4096, true},
		{"1 0 0 0 0 0 0", 0, true},
		{"", 0, false},
		{"12", 0, false},
		{"12 x 3", 0, false},
		{"12 -5 3", 0, false},
	}
	for _, c := range cases {
		got, ok := parseStatm([]byte(c.in), 4096)
		if got != c.want || ok != c.ok {
			t.Errorf("parseStatm(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// RSS follows a real allocation: 64 MiB touched shows up.
func TestRSSSeesAnAllocation(t *testing.T) {
	before, src := RSS()
	if runtime.GOOS == "linux" && src != SourceProc {
		t.Fatalf("source %s on linux", src)
	}
	if before <= 0 {
		t.Fatalf("rss %d", before)
	}
	buf := make([]byte, 64<<20)
	for i := range buf {
		if i%4096 == 0 {
			buf[i] = 1
		}
	}
	after, _ := RSS()
	if after-before < 60<<20 {
		t.Fatalf("rss grew by %d after touching 64 MiB", after-before)
	}
	runtime.KeepAlive(buf)
	if r := ReadRuntime(); r.Total <= 0 || r.HeapObjects <= 0 || r.Limit <= 0 {
		t.Fatalf("runtime metrics %+v", r)
	}
}

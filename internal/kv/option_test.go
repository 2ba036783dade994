package kv

import (
	"bytes"
	"runtime"
	"testing"
)

// IsOption compares an argument with an option name as Redis's strcasecmp
// does: ASCII case only, without copying the argument (a client may send
// one of 512 MB where an option is expected; each comparison copied it).
func TestIsOptionIsRedisCaseFoldWithoutCopies(t *testing.T) {
	for _, c := range []struct {
		arg, opt string
		want     bool
	}{
		{"keepttl", "KEEPTTL", true},
		{"KeepTTL", "keepttl", true},
		{"KEEPTTL", "KEEPTTL", true},
		{"\u212aEEPTTL", "KEEPTTL", false},       // a Kelvin sign: Unicode folds it to k, redis-server answers a syntax error
		{"WITH\u017fCORES", "WITHSCORES", false}, // a long s: strings.ToUpper made it S
		{"KEEPTT", "KEEPTTL", false},
		{"KEEPTTL ", "KEEPTTL", false},
		{"[", "{", false}, // 0x20 apart outside the letters
		{"", "", true},
	} {
		if got := IsOption([]byte(c.arg), c.opt); got != c.want {
			t.Errorf("IsOption(%q, %q) = %v, want %v", c.arg, c.opt, got, c.want)
		}
	}
	big := bytes.Repeat([]byte("x"), 64<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, opt := range []string{"NX", "XX", "GT", "LT", "KEEPTTL", "WITHSCORES"} {
		if IsOption(big, opt) {
			t.Fatal("a 64 MB argument equals an option name")
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Fatalf("six option comparisons of a 64 MB argument allocated %d bytes", got)
	}
}

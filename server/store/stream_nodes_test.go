package store

import (
	"math"
	"strconv"
	"testing"
)

// canonicalInt takes exactly the strings Redis's string2ll takes — what a
// listpack then stores as an integer, which sizes the modelled nodes.
func TestCanonicalIntLikeString2ll(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"0", true}, {"7", true}, {"-7", true}, {"123456", true}, {"9223372036854775807", true},
		{"-9223372036854775808", true}, {"9223372036854775808", false}, {"-9223372036854775809", false},
		{"", false}, {"-", false}, {"-0", false}, {"00", false}, {"01", false}, {"+1", false}, {" 1", false},
		{"1 ", false}, {"1a", false}, {"18446744073709551616", false}, {"99999999999999999999", false},
	} {
		v, ok := canonicalInt([]byte(c.in))
		if ok != c.ok {
			t.Errorf("canonicalInt(%q) ok = %v, want %v", c.in, ok, c.ok)
			continue
		}
		if ok && strconv.FormatInt(v, 10) != c.in {
			t.Errorf("canonicalInt(%q) = %d", c.in, v)
		}
	}
	if v, _ := canonicalInt([]byte("-9223372036854775808")); v != math.MinInt64 {
		t.Errorf("MinInt64 read as %d", v)
	}
}

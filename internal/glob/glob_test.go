package glob

import (
	"regexp"
	"testing"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"h?llo", "hello", true},
		{"h?llo", "hllo", false},
		{"h*llo", "heeeello", true},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hbllo", true},
		{"h[a-b]llo", "hcllo", false},
		{"user:*:profile", "user:42:profile", true},
		{"user:*:profile", "user:42:settings", false},
		{`\*`, "*", true},
		{`\*`, "a", false},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"__keyspace@0__:*", "__keyspace@0__:foo", true},
		{"[", "[", false},   // Redis: an unterminated, empty class matches nothing
		{"[abc", "b", true}, // Redis: an unterminated class runs to the end of the pattern
		{"x[abc", "xd", false},
		{"*.*", "a.b", true},
		{"", "", true},
		{"", "a", false},
	}
	for _, c := range cases {
		if got := Match(c.pattern, c.s); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}

// toRegexp translates the subset of patterns without classes or escapes.
func toRegexp(p string) *regexp.Regexp {
	out := "^"
	for _, c := range p {
		switch c {
		case '*':
			out += "(?s:.*)"
		case '?':
			out += "(?s:.)"
		default:
			out += regexp.QuoteMeta(string(c))
		}
	}
	return regexp.MustCompile(out + "$")
}

func FuzzMatch(f *testing.F) {
	f.Add("a*b?c", "axxbyc")
	f.Add("[a-z]*\\*", "q*")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		got := Match(pattern, s) // must not panic or hang
		simple := true
		for i := 0; i < len(pattern); i++ {
			if pattern[i] == '[' || pattern[i] == '\\' || pattern[i] >= 0x80 {
				simple = false
			}
		}
		if simple && len(s) < 64 {
			ascii := true
			for i := 0; i < len(s); i++ {
				if s[i] >= 0x80 {
					ascii = false
				}
			}
			if ascii && got != toRegexp(pattern).MatchString(s) {
				t.Fatalf("Match(%q, %q) = %v, regexp disagrees", pattern, s, got)
			}
		}
	})
}

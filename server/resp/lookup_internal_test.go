package resp

import (
	"strings"
	"testing"
)

// TestLookupAnswersAsTheTable: the connection's remembered command never
// answers for another name — one of the same length, another case, an
// unknown name, a name longer than what is remembered.
func TestLookupAnswersAsTheTable(t *testing.T) {
	c := &conn{}
	names := []string{"SET", "SET", "GET", "get", "GEt", "SET", "SETX", "set", "nope", "set", "NOPE",
		"LPUSH", "lpush", "rpush", "CLIENT", strings.Repeat("x", 17), "client", "zremrangebyscore", "ZREMRANGEBYSCORE", "zremrangebyscorx", ""}
	for i, n := range names {
		want, got := lookupCommand([]byte(n)), c.lookup([]byte(n))
		if want != got {
			t.Fatalf("step %d, %q: lookup %v, the table %v", i, n, got, want)
		}
	}
}

// FuzzLookup: for any two names in turn, the second lookup answers as the
// table does.
func FuzzLookup(f *testing.F) {
	f.Add("SET", "GET")
	f.Add("get", "GET")
	f.Add("lpush", "lpusx")
	f.Fuzz(func(t *testing.T, a, b string) {
		c := &conn{}
		c.lookup([]byte(a))
		if want, got := lookupCommand([]byte(b)), c.lookup([]byte(b)); want != got {
			t.Fatalf("%q after %q: lookup %v, the table %v", b, a, got, want)
		}
	})
}

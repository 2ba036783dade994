package panics

import (
	"strings"
	"testing"
)

func TestDescribeKeepsRuntimeErrorsAndHidesValues(t *testing.T) {
	var rt any
	func() {
		defer func() { rt = recover() }()
		var s []int
		_ = s[len(s)+1-1:][0] // index out of range
	}()
	if got := Describe(rt); !strings.Contains(got, "index out of range") {
		t.Fatalf("runtime error described as %q", got)
	}
	if got := Describe("secret-key-42"); strings.Contains(got, "secret") || got != "panic value of type string" {
		t.Fatalf("a plain panic value leaked: %q", got)
	}
}

package readmetest

import (
	"os"
	"testing"
)

// TestMain removes the binaries the tests built (once per process, shared
// by the tests, so no single test's TempDir can own them).
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

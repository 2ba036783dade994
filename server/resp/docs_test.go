package resp_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/server/resp"
)

var update = flag.Bool("update", false, "rewrite docs/RESP.md from the command table")

// docs/RESP.md is generated from the command table: this test fails when
// they differ (run `go generate ./server/resp` to rewrite it).
func TestDocsUpToDate(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "RESP.md")
	want := resp.Docs()
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err, "docs/RESP.md is missing: run go generate ./server/resp")
	require.Equal(t, want, string(got), "docs/RESP.md is stale: run go generate ./server/resp")
}

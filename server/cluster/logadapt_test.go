package cluster

import (
	"bytes"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
)

// Raft's errors are errors while the node runs and debug lines once it
// stops: a normal stop logs no ERROR line.
func TestRaftErrorsAreQuietDuringAStop(t *testing.T) {
	var buf bytes.Buffer
	var stopping atomic.Bool
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	hl := newHCLogger(log, stopping.Load)
	hl.Error("failed to heartbeat to", "peer", "n2")
	if !strings.Contains(buf.String(), "level=ERROR") {
		t.Fatalf("a running node's raft error is not an ERROR: %s", buf.String())
	}
	buf.Reset()
	stopping.Store(true)
	hl.Error("failed to decode incoming command", "error", "use of closed network connection")
	if out := buf.String(); strings.Contains(out, "level=ERROR") || !strings.Contains(out, "level=DEBUG") {
		t.Fatalf("a stopping node's raft error is not demoted to debug: %s", out)
	}
}

package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// levelWriter forwards the lines memberlist (log.Logger, "[WARN] ...") and
// raft (hclog, "[WARN]  raft: ...") write to the node's slog logger at the
// level their prefix names. info lines of the libraries go to debug: the
// cluster logs the events that matter to an operator itself.
//
// While the node stops (quiet reports true), raft's errors are the
// expected echo of the stop — its transport closed under a read, a peer
// stopping at the same time refusing a heartbeat — and go to debug, so a
// normal stop logs no ERROR line.
type levelWriter struct {
	log   *slog.Logger
	quiet func() bool // nil = never
	// filter, when set, sees every line first; false drops it.
	filter func(line string) bool
}

func (w levelWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		s := string(line)
		level := slog.LevelDebug
		if i := strings.Index(s, "["); i >= 0 {
			if j := strings.Index(s[i:], "]"); j > 0 {
				switch s[i+1 : i+j] {
				case "WARN":
					level = slog.LevelWarn
				case "ERR", "ERROR":
					level = slog.LevelError
				}
				s = strings.TrimSpace(s[i+j+1:])
			}
		}
		if w.filter != nil && !w.filter(s) {
			continue
		}
		if strings.Contains(s, "heartbeat timeout reached, starting election") {
			level = slog.LevelInfo // every election starts so, a lone node's first included
		}
		if level == slog.LevelError && w.quiet != nil && w.quiet() {
			level = slog.LevelDebug
		}
		if w.log.Enabled(context.Background(), level) {
			w.log.Log(context.Background(), level, s)
		}
	}
	return len(p), nil
}

func newHCLogger(log *slog.Logger, quiet func() bool) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name: "raft", Level: hclog.Debug, Output: levelWriter{log: log, quiet: quiet}, DisableTime: true,
	})
}

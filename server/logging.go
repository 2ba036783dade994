package server

import (
	"io"
	"log/slog"
)

// NewLogger builds the node's structured logger from the configuration:
// LogFormat picks the text or JSON handler, LogLevel the minimum level.
// The binary calls it with os.Stderr and injects the result into NewNode;
// the package never installs a global logger.
func NewLogger(w io.Writer, cfg Config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == LogJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

package sdk

import (
	"log/slog"

	"github.com/zaris-io/zaris/server/store"
)

// Option configures Connect.
type Option func(*clientOptions)

type clientOptions struct {
	serializer  Serializer
	logger      *slog.Logger
	storeConfig *store.Config
}

// WithSerializer replaces the msgpack serializer used by GetAs/PutAs.
func WithSerializer(s Serializer) Option { return func(o *clientOptions) { o.serializer = s } }

// WithLogger sets the client's logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *clientOptions) { o.logger = l } }

// WithEmbeddedConfig configures the engine of an embedded store (memory cap,
// item cap, eviction…). It applies when this Connect creates the named
// store; a Connect that joins an existing store of that name keeps the
// existing configuration. Ignored for remote connection strings.
func WithEmbeddedConfig(cfg store.Config) Option {
	return func(o *clientOptions) { c := cfg; o.storeConfig = &c }
}

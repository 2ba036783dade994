package sdk

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/zaris-io/zaris/server/store"
)

// Option configures Connect.
type Option func(*clientOptions)

type clientOptions struct {
	serializer  Serializer
	logger      *slog.Logger
	storeConfig *store.Config
	mapPoll     time.Duration // 0: DefaultMapPollInterval; < 0: no polling
	maxAttempts int           // 0: DefaultMaxAttempts
	clientName  string        // "": the default, zaris-go-sdk

	tracerProvider trace.TracerProvider // nil: no spans
	meterProvider  metric.MeterProvider // nil: no measurements
	observed       bool                 // a provider was given: backends report node and attempts
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

// WithMapPollInterval sets how often a cluster client fetches the routing
// map besides the changes servers push (default DefaultMapPollInterval, 10 s;
// 0 keeps the default; a negative interval turns polling off, leaving push
// and the refresh on a redirect). Ignored by embedded and single-node
// clients.
func WithMapPollInterval(d time.Duration) Option { return func(o *clientOptions) { o.mapPoll = d } }

// WithMaxAttempts bounds the attempts of one cluster operation across
// redirects (refresh the map, retry at once) and transient transport
// failures (back off, retry); the call's deadline bounds them too. Default
// DefaultMaxAttempts (32, about ten seconds of backoff); n < 1 keeps the default. Ignored by embedded and
// single-node clients.
func WithMaxAttempts(n int) Option { return func(o *clientOptions) { o.maxAttempts = n } }

// WithClientName sets the client name every connection presents in its
// handshake (default "zaris-go-sdk"); servers show it in their logs.
func WithClientName(name string) Option { return func(o *clientOptions) { o.clientName = name } }

package session

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Defaults.
const (
	DefaultName            = "zaris_session"
	DefaultKeyPrefix       = "session:"
	DefaultIdleTimeout     = 30 * time.Minute
	DefaultAbsoluteTimeout = 24 * time.Hour
	DefaultPath            = "/"
)

// Options configure a Store. Zero fields take the documented defaults, so
// session.Options{} is valid; DefaultOptions returns them filled in.
type Options struct {
	// Name is the cookie name and the default session name. Default
	// "zaris_session".
	Name string
	// KeyPrefix prefixes every session key in the Zaris store. Default
	// "session:".
	KeyPrefix string
	// IdleTimeout is the sliding expiration: a session not loaded for this
	// long expires. Default 30 min; negative is invalid.
	IdleTimeout time.Duration
	// AbsoluteTimeout caps a session's life from its creation, however
	// active it is. Default 24 h; negative = no cap.
	AbsoluteTimeout time.Duration

	// Path of the cookie. Default "/".
	Path string
	// Domain of the cookie. Default "" (host-only).
	Domain string
	// MaxAge of the cookie in seconds. Default 0: a browser-session cookie
	// (no Max-Age attribute); server-side expiry is governed by IdleTimeout
	// and AbsoluteTimeout either way. With MaxAge > 0 the cookie is re-sent
	// on every refresh so the browser's expiry slides too. Negative is
	// invalid here (per session, Options.MaxAge < 0 on Save deletes).
	MaxAge int
	// Secure sets the cookie's Secure attribute. Default false; set it when
	// serving over HTTPS (always, in production).
	Secure bool
	// DisableHTTPOnly removes the HttpOnly attribute, which is on by
	// default so that scripts cannot read the session cookie.
	DisableHTTPOnly bool
	// SameSite of the cookie. Zero = http.SameSiteLaxMode (the default);
	// http.SameSiteNoneMode requires Secure.
	SameSite http.SameSite
	// Partitioned sets the cookie's Partitioned attribute (CHIPS).
	Partitioned bool

	// Serializer encodes session values. Default GobSerializer.
	Serializer Serializer
	// Now is the clock for the absolute cap. Default time.Now.
	Now func() time.Time
	// Logger receives failures the gorilla API cannot report (a refresh
	// failing during a load). Default slog.Default().
	Logger *slog.Logger

	// TracerProvider, when set, gives every load, save, refresh, delete
	// and regenerate a span ("zaris.session.<op>", attributes zaris.op and
	// zaris.outcome; never the session id). Give the client
	// sdk.WithTracerProvider too to see its calls as their children.
	// nil = no spans.
	TracerProvider trace.TracerProvider
	// MeterProvider, when set, records MetricOperations and
	// MetricOperationDuration by op and outcome. nil = no measurements.
	MeterProvider metric.MeterProvider
}

// DefaultOptions returns Options with every default filled in.
func DefaultOptions() Options {
	var o Options
	o.fill()
	return o
}

func (o *Options) fill() {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = DefaultKeyPrefix
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.AbsoluteTimeout == 0 {
		o.AbsoluteTimeout = DefaultAbsoluteTimeout
	}
	if o.Path == "" {
		o.Path = DefaultPath
	}
	if o.SameSite == 0 {
		o.SameSite = http.SameSiteLaxMode
	}
	if o.Serializer == nil {
		o.Serializer = GobSerializer{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// ErrInvalidOptions is wrapped by every error Validate returns.
var ErrInvalidOptions = errors.New("session: invalid options")

// Validate checks the options once defaults are applied to zero fields.
func (o Options) Validate() error {
	o.fill()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidOptions, fmt.Sprintf(format, args...))
	}
	switch {
	case !validCookieName(o.Name):
		return bad("cookie name %q is not a valid token", o.Name)
	case o.IdleTimeout < 0:
		return bad("IdleTimeout %v is negative", o.IdleTimeout)
	case o.MaxAge < 0:
		return bad("MaxAge %d is negative", o.MaxAge)
	case o.SameSite == http.SameSiteNoneMode && !o.Secure:
		return bad("SameSite=None requires Secure (browsers reject the cookie otherwise)")
	}
	return nil
}

func validCookieName(name string) bool {
	if name == "" {
		return false
	}
	return strings.IndexFunc(name, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r)
	}) < 0
}

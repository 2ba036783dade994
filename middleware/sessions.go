package middleware

import (
	"errors"
	"net/http"

	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"
	"github.com/zaris-io/zaris/session"
)

// ErrNoSessions: SessionFrom was called on a request that did not go
// through Sessions / EchoSessions.
var ErrNoSessions = errors.New("middleware: no session middleware on this request")

// Sessions returns net/http middleware that attaches a session Scope of
// store to every request. Handlers get their session with SessionFrom (or
// store.Get, gorilla style); nothing is read from Zaris until they ask
// (lazy). Just before the response header is written — and again when the
// handler returns, for changes made after — a changed session is saved, a
// session only read is refreshed (sliding expiration), a session never
// loaded costs nothing. A failed commit (store unreachable, session over
// the store's item cap) is logged with the store's logger; a handler that
// must know calls store.Save itself and checks the error.
func Sessions(store *session.Store) func(http.Handler) http.Handler {
	log := store.Options().Logger
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r, sc := store.Attach(r)
			commit := func() {
				if err := sc.Commit(w); err != nil {
					log.Error("zaris session: commit failed", "path", r.URL.Path, "err", err)
				}
			}
			sw := &commitWriter{ResponseWriter: w, before: commit}
			next.ServeHTTP(sw, r)
			commit()
		})
	}
}

// SessionFrom returns the request's default session (the store's
// Options.Name), loading it on first use. A missing, tampered, unknown or
// expired cookie gives a new empty session and a nil error; an error means
// the store could not be read (a new session comes with it).
func SessionFrom(r *http.Request) (*sessions.Session, error) {
	sc := session.ScopeFromContext(r.Context())
	if sc == nil {
		return nil, ErrNoSessions
	}
	// Through the store, with the handler's request: gorilla's registry and
	// the response cache's load observer both see it.
	return sc.Store().Get(r, sc.Store().Name())
}

// EchoSessions is Sessions for echo. Handlers use EchoSessionFrom(c).
func EchoSessions(store *session.Store) echo.MiddlewareFunc {
	log := store.Options().Logger
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r, sc := store.Attach(c.Request())
			c.SetRequest(r)
			resp := c.Response()
			commit := func() {
				if err := sc.Commit(resp); err != nil {
					log.Error("zaris session: commit failed", "path", r.URL.Path, "err", err)
				}
			}
			resp.Before(commit)
			err := next(c)
			// For changes made after the response started, or a response
			// never written. Commit is idempotent; an error page echo
			// renders after this returns runs the Before hook again, which
			// finds nothing left to do.
			commit()
			return err
		}
	}
}

// EchoSessionFrom is SessionFrom for echo.
func EchoSessionFrom(c echo.Context) (*sessions.Session, error) {
	return SessionFrom(c.Request())
}

// commitWriter runs before once, just before the first byte of the
// response (header) is written, so cookies set by it are sent.
type commitWriter struct {
	http.ResponseWriter
	before func()
	done   bool
}

func (w *commitWriter) fire() {
	if !w.done {
		w.done = true
		w.before()
	}
}

func (w *commitWriter) WriteHeader(code int) {
	w.fire()
	w.ResponseWriter.WriteHeader(code)
}

func (w *commitWriter) Write(b []byte) (int, error) {
	w.fire()
	return w.ResponseWriter.Write(b)
}

// Flush commits, then flushes the underlying writer when it can.
func (w *commitWriter) Flush() {
	w.fire()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *commitWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

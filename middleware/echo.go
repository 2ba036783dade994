package middleware

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/zaris-io/zaris/cache"
)

// EchoResponseCache returns echo middleware caching GET/HEAD responses in c
// (see ResponseCache). Policies match echo's route pattern (RoutePolicy.Route)
// or the URL path prefix.
func EchoResponseCache(c cache.Cache, opts ResponseCacheOptions) echo.MiddlewareFunc {
	return NewResponseCacher(c, opts).Echo()
}

// Echo returns the echo middleware of this cacher.
func (rc *ResponseCacher) Echo() echo.MiddlewareFunc { return rc.echo(nil) }

// EchoWith returns echo middleware applying policy p — per-route caching:
// e.GET("/catalog", h, rc.EchoWith(p)).
func (rc *ResponseCacher) EchoWith(p Policy) echo.MiddlewareFunc { return rc.echo(&p) }

func (rc *ResponseCacher) echo(fixed *Policy) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p := fixed
			if p == nil {
				p = rc.policyFor(c.Request(), c.Path())
			}
			resp := c.Response()
			orig := c.Request()
			run := func(w http.ResponseWriter, r *http.Request) {
				// The handler writes through echo's Response; when recording,
				// its Writer is the recorder for the duration of the call.
				if w != http.ResponseWriter(resp) {
					prev := resp.Writer
					resp.Writer = w
					defer func() { resp.Writer = prev }()
				}
				c.SetRequest(r)
				defer c.SetRequest(orig)
				if err := next(c); err != nil {
					c.Error(err) // rendered inside the recording, so error pages are cached by the same rules
				}
			}
			// A recorded answer is written beneath echo's Response, which the
			// handler has already committed (status set, Before hooks run).
			raw := &sizeWriter{ResponseWriter: resp.Writer, resp: resp}
			rc.serve(exchange{w: resp, raw: raw, r: orig, run: run}, p)
			return nil
		}
	}
}

// sizeWriter writes beneath echo's Response and keeps its Size honest for
// loggers.
type sizeWriter struct {
	http.ResponseWriter
	resp *echo.Response
}

func (w *sizeWriter) WriteHeader(code int) {
	w.resp.Status = code
	w.resp.Committed = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *sizeWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.resp.Size += int64(n)
	return n, err
}

func (w *sizeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

package httpapi

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
)

// net/http answers a request it cannot parse (a bad percent-escape in the
// path, a malformed header, headers too large) itself, before any handler,
// with a text/plain body. problemListener rewrites exactly those answers
// into problem documents so that every error of the API has one format.
// net/http writes them in one Write straight to the connection, prefixed
// by a status line and these headers, and closes the connection after.
var rawErrorHeaders = []byte("\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n")

type problemListener struct{ net.Listener }

func (l problemListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if _, isTLS := c.(*tls.Conn); isTLS {
		// net/http must see the *tls.Conn itself (r.TLS, ALPN): over TLS
		// these rare parse errors keep net/http's text body.
		return c, nil
	}
	return &problemConn{Conn: c}, nil
}

type problemConn struct{ net.Conn }

func (c *problemConn) Write(p []byte) (int, error) {
	if out, ok := rewriteRawError(p); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// rewriteRawError turns net/http's own "HTTP/1.1 400 Bad Request" + text
// answer into the same status with a problem document; ok is false for
// anything else.
func rewriteRawError(p []byte) ([]byte, bool) {
	rest, found := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !found || len(rest) < 3 {
		return nil, false
	}
	statusLine, text, found := bytes.Cut(rest, rawErrorHeaders)
	if !found {
		return nil, false
	}
	code, err := strconv.Atoi(string(statusLine[:3]))
	if err != nil || code < 400 || code > 499 {
		return nil, false
	}
	detail := "the request could not be parsed: " + string(text)
	if code == http.StatusBadRequest && bytes.Equal(text, []byte("400 Bad Request")) {
		detail = "the request could not be parsed (a malformed request line, e.g. an invalid percent-escape in the path: escape '%' as %25)"
	}
	body, err := json.Marshal(Problem{Type: "about:blank", Title: http.StatusText(code), Status: code, Detail: detail, Code: "BadRequest"})
	if err != nil {
		return nil, false
	}
	out := fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		code, http.StatusText(code), MIMEProblem, len(body))
	return append(out, body...), true
}

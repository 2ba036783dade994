package middleware

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file holds the RFC 9111 rules the response cache applies, as pure
// functions of headers and instants (no I/O), tested as tables.

// cacheControl is a parsed Cache-Control header. Durations are -1 when the
// directive is absent.
type cacheControl struct {
	noStore, noCache, private, public bool
	mustRevalidate, proxyRevalidate   bool
	maxAge, sMaxAge, minFresh         time.Duration
}

func parseCacheControl(values []string) cacheControl {
	cc := cacheControl{maxAge: -1, sMaxAge: -1, minFresh: -1}
	for _, line := range values {
		for _, part := range strings.Split(line, ",") {
			name, arg, _ := strings.Cut(strings.TrimSpace(part), "=")
			name = strings.ToLower(strings.TrimSpace(name))
			arg = strings.Trim(strings.TrimSpace(arg), `"`)
			switch name {
			case "no-store":
				cc.noStore = true
			case "no-cache":
				cc.noCache = true // with or without field names: never served without revalidation
			case "private":
				cc.private = true // with field names too: a shared cache does not store it
			case "public":
				cc.public = true
			case "must-revalidate":
				cc.mustRevalidate = true
			case "proxy-revalidate":
				cc.proxyRevalidate = true
			case "max-age":
				cc.maxAge = deltaSeconds(arg)
			case "s-maxage":
				cc.sMaxAge = deltaSeconds(arg)
			case "min-fresh":
				cc.minFresh = deltaSeconds(arg)
			}
		}
	}
	return cc
}

// deltaSeconds parses a delta-seconds argument; an invalid one counts as 0
// (RFC 9111 §1.2.2: treat as stale / most restrictive).
func deltaSeconds(s string) time.Duration {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	if n > 1<<31 {
		n = 1 << 31
	}
	return time.Duration(n) * time.Second
}

// requestRule says what a request allows: looking a response up, storing
// the response the handler produces.
type requestRule struct {
	lookup, store bool
	reason        string // when neither, why (for the status header / logs)
}

func ruleForRequest(method string, h http.Header) requestRule {
	if method != http.MethodGet && method != http.MethodHead {
		return requestRule{reason: "method"}
	}
	if h.Get("Range") != "" {
		return requestRule{reason: "range"} // partial content is not cached
	}
	cc := parseCacheControl(h.Values("Cache-Control"))
	if cc.noStore {
		return requestRule{reason: "no-store"}
	}
	r := requestRule{lookup: true, store: method == http.MethodGet}
	pragmaNoCache := len(h.Values("Cache-Control")) == 0 && strings.Contains(strings.ToLower(h.Get("Pragma")), "no-cache")
	if cc.noCache || pragmaNoCache || cc.maxAge == 0 {
		r.lookup = false // must not be served from cache without revalidation: fetch fresh, store it
	}
	return r
}

// cacheableStatus lists the status codes a cache may store (RFC 9110
// §15.1, heuristically cacheable, plus 200/203/204 and the redirects).
var cacheableStatus = map[int]bool{
	200: true, 203: true, 204: true, 300: true, 301: true, 308: true,
	404: true, 405: true, 410: true, 414: true, 501: true,
}

// storeDecision is whether a response may be stored, and for how long it
// stays fresh.
type storeDecision struct {
	ok         bool
	lifetime   time.Duration // freshness lifetime
	initialAge time.Duration // age the response already had (its Age header)
	reason     string        // when !ok
}

// decideStore applies RFC 9111 §3 for a shared cache. fallback is the
// freshness lifetime when the response gives none (the route's policy: the
// application opted in to caching this route).
func decideStore(status int, req, resp http.Header, now time.Time, fallback time.Duration) storeDecision {
	if !cacheableStatus[status] {
		return storeDecision{reason: "status"}
	}
	cc := parseCacheControl(resp.Values("Cache-Control"))
	switch {
	case cc.noStore:
		return storeDecision{reason: "no-store"}
	case cc.private:
		return storeDecision{reason: "private"}
	case cc.noCache:
		return storeDecision{reason: "no-cache"}
	case len(resp.Values("Set-Cookie")) > 0:
		return storeDecision{reason: "set-cookie"}
	case slices.Contains(varyNames(resp), "*"):
		return storeDecision{reason: "vary-star"}
	case req.Get("Authorization") != "" && !cc.public && cc.sMaxAge < 0 && !cc.mustRevalidate:
		return storeDecision{reason: "authorization"} // §3.5
	}
	d := storeDecision{ok: true}
	switch {
	case cc.sMaxAge >= 0:
		d.lifetime = cc.sMaxAge
	case cc.maxAge >= 0:
		d.lifetime = cc.maxAge
	case resp.Get("Expires") != "":
		exp, err := http.ParseTime(resp.Get("Expires"))
		if err != nil {
			return storeDecision{reason: "expired"} // invalid Expires = already expired
		}
		date := now
		if dv, err := http.ParseTime(resp.Get("Date")); err == nil {
			date = dv
		}
		d.lifetime = exp.Sub(date)
	default:
		d.lifetime = fallback
	}
	if age := resp.Get("Age"); age != "" {
		d.initialAge = deltaSeconds(age)
	}
	if d.lifetime-d.initialAge <= 0 {
		return storeDecision{reason: "stale"}
	}
	return d
}

// freshFor reports whether a stored response of the given lifetime and
// current age may answer a request with these headers (its max-age and
// min-fresh constraints).
func freshFor(req http.Header, lifetime, age time.Duration) bool {
	if age >= lifetime {
		return false
	}
	cc := parseCacheControl(req.Values("Cache-Control"))
	if cc.maxAge >= 0 && age > cc.maxAge {
		return false
	}
	if cc.minFresh >= 0 && lifetime-age < cc.minFresh {
		return false
	}
	return true
}

// varyNames returns the canonical header names of resp's Vary, sorted and
// deduplicated ("*" kept as is).
func varyNames(resp http.Header) []string {
	var names []string
	for _, line := range resp.Values("Vary") {
		for _, n := range strings.Split(line, ",") {
			n = strings.TrimSpace(n)
			if n == "" {
				continue
			}
			if n != "*" {
				n = http.CanonicalHeaderKey(n)
			}
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// notModified evaluates the request's validators against a stored
// response (RFC 9110 §13.1.2/§13.1.3): If-None-Match (weak comparison) wins
// over If-Modified-Since.
func notModified(req http.Header, etag, lastModified string) bool {
	if inm := req.Values("If-None-Match"); len(inm) > 0 {
		if etag == "" {
			return false
		}
		for _, line := range inm {
			for _, tag := range strings.Split(line, ",") {
				tag = strings.TrimSpace(tag)
				if tag == "*" || weakEqual(tag, etag) {
					return true
				}
			}
		}
		return false
	}
	ims := req.Get("If-Modified-Since")
	if ims == "" || lastModified == "" {
		return false
	}
	t, err := http.ParseTime(ims)
	if err != nil {
		return false
	}
	lm, err := http.ParseTime(lastModified)
	return err == nil && !lm.After(t)
}

func weakEqual(a, b string) bool {
	return strings.TrimPrefix(a, "W/") == strings.TrimPrefix(b, "W/")
}

// hopByHop headers are never stored (RFC 9111 §3.1), nor the headers this
// cache computes per response.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Proxy-Authenticate": true, "Proxy-Authorization": true, "Age": true,
}

// notModifiedHeaders are the stored headers a 304 repeats (RFC 9110 §15.4.5).
var notModifiedHeaders = []string{"Cache-Control", "Content-Location", "Date", "Etag", "Expires", "Vary", "Last-Modified"}

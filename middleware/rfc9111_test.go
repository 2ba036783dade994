package middleware

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func TestParseCacheControl(t *testing.T) {
	cc := parseCacheControl([]string{`public, max-age=60`, `s-maxage="120", Must-Revalidate`})
	if !cc.public || cc.maxAge != time.Minute || cc.sMaxAge != 2*time.Minute || !cc.mustRevalidate || cc.noStore || cc.minFresh != -1 {
		t.Fatalf("%+v", cc)
	}
	cc = parseCacheControl([]string{`no-cache="Set-Cookie", private="X", no-store, max-age=-5, min-fresh=abc`})
	if !cc.noCache || !cc.private || !cc.noStore || cc.maxAge != 0 || cc.minFresh != 0 {
		t.Fatalf("field-name forms and invalid numbers: %+v", cc)
	}
}

func TestRuleForRequest(t *testing.T) {
	cases := []struct {
		name          string
		method        string
		h             http.Header
		lookup, store bool
	}{
		{"plain GET: look up and store", "GET", hdr(), true, true},
		{"HEAD: served from GET entries, never fills", "HEAD", hdr(), true, false},
		{"POST is never cached", "POST", hdr(), false, false},
		{"request no-store: bypass entirely", "GET", hdr("Cache-Control", "no-store"), false, false},
		{"request no-cache: fresh answer, stored", "GET", hdr("Cache-Control", "no-cache"), false, true},
		{"Pragma no-cache without Cache-Control", "GET", hdr("Pragma", "no-cache"), false, true},
		{"Pragma ignored when Cache-Control is present", "GET", hdr("Pragma", "no-cache", "Cache-Control", "max-age=10"), true, true},
		{"max-age=0: must revalidate", "GET", hdr("Cache-Control", "max-age=0"), false, true},
		{"Range: partial content is not cached", "GET", hdr("Range", "bytes=0-10"), false, false},
	}
	for _, tc := range cases {
		r := ruleForRequest(tc.method, tc.h)
		if r.lookup != tc.lookup || r.store != tc.store {
			t.Errorf("%s: %+v", tc.name, r)
		}
	}
}

func TestDecideStore(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	const fallback = 30 * time.Second
	cases := []struct {
		name     string
		status   int
		req      http.Header
		resp     http.Header
		ok       bool
		lifetime time.Duration
		reason   string
	}{
		{"200 without directives: the route's TTL", 200, hdr(), hdr(), true, fallback, ""},
		{"max-age", 200, hdr(), hdr("Cache-Control", "max-age=90"), true, 90 * time.Second, ""},
		{"s-maxage wins over max-age for a shared cache", 200, hdr(), hdr("Cache-Control", "max-age=90, s-maxage=10"), true, 10 * time.Second, ""},
		{"Expires minus Date", 200, hdr(), hdr("Date", now.Format(http.TimeFormat), "Expires", now.Add(time.Hour).Format(http.TimeFormat)), true, time.Hour, ""},
		{"invalid Expires is already expired", 200, hdr(), hdr("Expires", "0"), false, 0, "expired"},
		{"404 is cacheable", 404, hdr(), hdr(), true, fallback, ""},
		{"410 is cacheable", 410, hdr(), hdr(), true, fallback, ""},
		{"500 is not", 500, hdr(), hdr(), false, 0, "status"},
		{"302 is not", 302, hdr(), hdr(), false, 0, "status"},
		{"no-store", 200, hdr(), hdr("Cache-Control", "no-store"), false, 0, "no-store"},
		{"private", 200, hdr(), hdr("Cache-Control", "private, max-age=60"), false, 0, "private"},
		{"no-cache", 200, hdr(), hdr("Cache-Control", "no-cache"), false, 0, "no-cache"},
		{"Set-Cookie is never stored", 200, hdr(), hdr("Set-Cookie", "a=b", "Cache-Control", "public, max-age=60"), false, 0, "set-cookie"},
		{"Vary: *", 200, hdr(), hdr("Vary", "*"), false, 0, "vary-star"},
		{"Authorization without public", 200, hdr("Authorization", "Bearer x"), hdr("Cache-Control", "max-age=60"), false, 0, "authorization"},
		{"Authorization with public", 200, hdr("Authorization", "Bearer x"), hdr("Cache-Control", "public, max-age=60"), true, time.Minute, ""},
		{"Authorization with s-maxage", 200, hdr("Authorization", "Bearer x"), hdr("Cache-Control", "s-maxage=60"), true, time.Minute, ""},
		{"max-age=0 is stale at once", 200, hdr(), hdr("Cache-Control", "max-age=0"), false, 0, "stale"},
		{"Age at least the lifetime: stale", 200, hdr(), hdr("Cache-Control", "max-age=10", "Age", "10"), false, 0, "stale"},
	}
	for _, tc := range cases {
		d := decideStore(tc.status, tc.req, tc.resp, now, fallback)
		if d.ok != tc.ok || d.lifetime != tc.lifetime || d.reason != tc.reason {
			t.Errorf("%s: %+v", tc.name, d)
		}
	}
	if d := decideStore(200, hdr(), hdr("Cache-Control", "max-age=60", "Age", "15"), now, fallback); d.initialAge != 15*time.Second {
		t.Fatalf("initial age %v", d.initialAge)
	}
}

func TestFreshFor(t *testing.T) {
	cases := []struct {
		name          string
		req           http.Header
		lifetime, age time.Duration
		fresh         bool
	}{
		{"young", hdr(), time.Minute, 10 * time.Second, true},
		{"at its lifetime: stale", hdr(), time.Minute, time.Minute, false},
		{"request max-age older than allowed", hdr("Cache-Control", "max-age=5"), time.Minute, 10 * time.Second, false},
		{"request max-age satisfied", hdr("Cache-Control", "max-age=20"), time.Minute, 10 * time.Second, true},
		{"min-fresh not met", hdr("Cache-Control", "min-fresh=55"), time.Minute, 10 * time.Second, false},
		{"min-fresh met", hdr("Cache-Control", "min-fresh=30"), time.Minute, 10 * time.Second, true},
	}
	for _, tc := range cases {
		if got := freshFor(tc.req, tc.lifetime, tc.age); got != tc.fresh {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
}

func TestNotModified(t *testing.T) {
	lm := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Format(http.TimeFormat)
	later := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC).Format(http.TimeFormat)
	earlier := time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC).Format(http.TimeFormat)
	cases := []struct {
		name string
		req  http.Header
		etag string
		lm   string
		want bool
	}{
		{"matching tag", hdr("If-None-Match", `"a"`), `"a"`, "", true},
		{"one of several", hdr("If-None-Match", `"x", "a"`), `"a"`, "", true},
		{"weak comparison", hdr("If-None-Match", `W/"a"`), `"a"`, "", true},
		{"star", hdr("If-None-Match", `*`), `"a"`, "", true},
		{"other tag", hdr("If-None-Match", `"b"`), `"a"`, "", false},
		{"If-None-Match wins over If-Modified-Since", hdr("If-None-Match", `"b"`, "If-Modified-Since", later), `"a"`, lm, false},
		{"not modified since", hdr("If-Modified-Since", later), "", lm, true},
		{"modified since", hdr("If-Modified-Since", earlier), "", lm, false},
		{"no validators", hdr(), `"a"`, lm, false},
	}
	for _, tc := range cases {
		if got := notModified(tc.req, tc.etag, tc.lm); got != tc.want {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
}

func TestVaryNames(t *testing.T) {
	got := varyNames(hdr("Vary", "accept-language, Accept-Encoding", "Vary", "accept-language"))
	if !slices.Equal(got, []string{"Accept-Encoding", "Accept-Language"}) {
		t.Fatalf("%v", got)
	}
	h := hdr("Vary", "Accept")
	addVary(h, []string{"x-tenant", "accept"})
	if h.Get("Vary") != "Accept, X-Tenant" {
		t.Fatalf("%q", h.Get("Vary"))
	}
}

func FuzzParseCacheControl(f *testing.F) {
	for _, s := range []string{"public, max-age=60", `no-cache="Set-Cookie", s-maxage=10`, "max-age=-1,,=,", `private="a, b"`, "min-fresh=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cc := parseCacheControl([]string{s})
		for _, d := range []time.Duration{cc.maxAge, cc.sMaxAge, cc.minFresh} {
			if d < -1 {
				t.Fatalf("negative duration from %q: %+v", s, cc)
			}
		}
		h := http.Header{"Cache-Control": {s}}
		decideStore(200, http.Header{}, h, time.Now(), time.Minute)
		ruleForRequest("GET", h)
	})
}

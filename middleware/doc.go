// Package middleware is the HTTP side of the Zaris SDK integrations (SPEC
// R-SDK-4), for net/http and echo: session middleware over package session,
// and an HTTP response cache over package cache.
//
// It owns request/response plumbing only: session semantics belong to
// package session, storage and expiration to package cache; it talks to
// Zaris only through them. It must not import server/* or internal/*.
//
// # Sessions
//
// Sessions(store) / EchoSessions(store) attach a session.Scope to each
// request. SessionFrom(r) / EchoSessionFrom(c) (or store.Get, gorilla style)
// load the session on first use — a request that never asks reads nothing.
// Just before the response header goes out (and again when the handler
// returns), a changed session is saved and its cookie set, a session only
// read is refreshed (its sliding expiration moves), a new empty one is never
// written. A bad cookie gives a new empty session, never an error page.
//
// # Response cache
//
// ResponseCache(c, opts) / EchoResponseCache(c, opts), or a ResponseCacher
// for per-route policies (With, EchoWith), eviction by tag and Stats, cache
// GET and HEAD responses in a cache.Cache as a shared cache per RFC 9111:
//
//   - requests: only GET and HEAD (HEAD is answered from GET entries and
//     never fills); Cache-Control no-store or a Range header bypass the
//     cache; no-cache, Pragma: no-cache or max-age=0 skip the lookup but
//     store the fresh answer; max-age=N and min-fresh=N constrain the age
//     of what may be served;
//   - responses stored: status 200, 203, 204, 300, 301, 308, 404, 405, 410,
//     414 or 501; never with no-store, private, no-cache, Set-Cookie or
//     Vary: *; with an Authorization request header only if public,
//     s-maxage or must-revalidate; and never when the handler loaded a
//     session (personalised content), whatever the middleware order;
//   - freshness: s-maxage, else max-age, else Expires − Date, else the
//     route's Policy.TTL (default 1 min); the response's own Age counts;
//     stale entries are never served (the store expires them);
//   - Vary: the primary key (host, path, sorted query) then holds a small
//     descriptor naming the varying request headers, and each combination
//     of their values is its own entry; Policy.VaryByHeader adds names;
//   - validators: a stored 200 without an ETag gets one (a hash of the
//     body); If-None-Match (weak comparison) or If-Modified-Since answer
//     304 from the cache; the handler always sees the request without them,
//     so what gets stored is the full answer;
//   - every answer carries X-Cache: HIT, MISS or BYPASS; hits carry Age;
//   - single flight (golang.org/x/sync/singleflight): concurrent misses on
//     one URL run the handler once per instance and share its answer — only
//     if that answer is shareable and selects the same variant; otherwise
//     a waiting request fills for itself (and never receives another
//     user's Set-Cookie). The cache is read again inside the flight. A leader's handler runs without its client's cancellation,
//     since others wait for it;
//   - bodies over MaxBodyBytes (default 1 MiB), and handlers that Flush,
//     stream to the client uncached; a response the store refuses (e.g.
//     sdk.ErrItemTooLarge) is served normally and counted in StoreErrors.
//     Cache failures never fail a request: they are logged and served as
//     misses.
//
// Stored entries are MessagePack (see storedResponse). Tags: every tag has a
// random generation token in the cache; an entry records the tokens of its
// tags as read before its handler ran, and a lookup compares them with the
// current ones. EvictByTag replaces the token — one write, effective at once
// on every instance sharing the cache and KeyPrefix, with no clock
// comparison — and then removes the keys listed in the tag's index (best
// effort: the index is a read-modify-write list, so a concurrent fill may
// drop a line; that entry is already invalid and simply waits for its TTL).
package middleware

// Package session is the Zaris session store (SPEC R-SDK-3): an
// implementation of github.com/gorilla/sessions.Store whose session data
// lives in a Zaris store — embedded (zaris://inproc/<name>) or a cluster —
// through the public sdk API only, so it works unchanged on every topology.
//
// It owns: session ids, the signed session cookie, the stored record, the
// sliding idle timeout and the absolute lifetime cap, id regeneration, and
// the per-request Scope that lets middleware load lazily, save what changed
// and refresh what was only read. It must not import server/* or internal/*
// packages, nor any HTTP framework (echo lives in package middleware).
//
// # Ids and cookies
//
// A session id is 256 random bits (crypto/rand), base64url-encoded. The
// cookie holds only that id, signed (and encrypted when a block key is given)
// by gorilla/securecookie; key rotation is gorilla's: pass the new key pair
// first and the old ones after (securecookie.CodecsFromPairs). A cookie
// decoded with an old key is re-issued under the new one.
//
// An id the store does not hold is never adopted: a request carrying an
// unknown, expired, tampered or badly signed cookie gets a new empty session
// (and no error — a bad cookie is an expected outcome, not a failure), and a
// fresh id is issued when that session is first written. A client therefore
// cannot choose its session id (session fixation); Regenerate issues a new id
// on demand, e.g. at login.
//
// # Expiration
//
// Every request that loads a session slides its time to live to IdleTimeout
// (default 30 min), capped by AbsoluteTimeout (default 24 h) counted from
// the session's creation: lifetime = min(IdleTimeout, created+AbsoluteTimeout
// − now). A refresh is a read and a conditional rewrite of the same bytes
// with a fresh time to live (Put with IfMatchVersion), as in the .NET
// session package: it costs one more round trip than a TTL primitive but is
// correct on every topology, and it never resurrects a session deleted or
// rewritten meanwhile. Without middleware, Store.New refreshes at load; under
// a Scope attached by middleware (Store.Attach), the refresh is deferred to
// Scope.Commit and skipped when the session is saved anyway.
//
// An empty session that was never written is never written: no key, no
// cookie. Saving with Options.MaxAge < 0 deletes the session and expires the
// cookie.
//
// # Stored record
//
//	offset size  field
//	0      2     magic "ZS"
//	2      1     format version, 1
//	3      8     creation instant, Unix nanoseconds, big-endian int64
//	11     …     the session values, encoded by Options.Serializer
//
// The default serializer is encoding/gob (gorilla's own convention for
// map[interface{}]interface{} values): the map is written as a gob struct of
// two lists, keys and values, in a canonical key order, so that an
// unchanged session encodes to the same bytes. Basic types work out of the
// box; other concrete types stored in a session must be registered with
// gob.Register. A record larger than the store's item cap is
// refused with an error wrapping sdk.ErrItemTooLarge.
package session

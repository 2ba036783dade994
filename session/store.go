package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gorilla/securecookie"
	"github.com/gorilla/sessions"
	"github.com/zaris-io/zaris/sdk"
)

// ErrNoKeys: a Store needs at least one non-empty hash key.
var ErrNoKeys = errors.New("session: at least one hash key is required")

// ErrExpired is returned by Save when the session reached its absolute
// lifetime cap during the request: it is deleted instead of written.
var ErrExpired = errors.New("session: absolute lifetime reached")

// Store is a gorilla/sessions Store backed by Zaris. It is safe for
// concurrent use; per-request state lives in a Scope.
type Store struct {
	client *sdk.Client
	opts   Options // defaults filled in
	codecs []securecookie.Codec
	cookie sessions.Options // template copied into every new session
	log    *slog.Logger
	stats  storeStats
	tel    *telemetry // nil unless Options names a tracer or meter provider
}

var _ sessions.Store = (*Store)(nil)

type storeStats struct {
	loads, unknown, rejected, expired              atomic.Uint64
	writes, refreshes, deletes, regenerated, reuse atomic.Uint64
}

// Stats are counters since the Store was created.
type Stats struct {
	Loads         uint64 // sessions found in the store and loaded
	Unknown       uint64 // valid cookies naming an id the store does not hold (never adopted)
	Rejected      uint64 // cookies that failed signature or decoding (tampered, old key, garbage)
	Expired       uint64 // sessions dropped at load for reaching the absolute cap
	Writes        uint64 // records written (Save, Regenerate)
	Refreshes     uint64 // sliding refreshes (read + conditional rewrite)
	Deletes       uint64 // sessions deleted (MaxAge < 0)
	Regenerations uint64 // ids regenerated
	ScopeHits     uint64 // loads answered by the request's Scope without a round trip
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	return Stats{
		Loads: s.stats.loads.Load(), Unknown: s.stats.unknown.Load(), Rejected: s.stats.rejected.Load(),
		Expired: s.stats.expired.Load(), Writes: s.stats.writes.Load(), Refreshes: s.stats.refreshes.Load(),
		Deletes: s.stats.deletes.Load(), Regenerations: s.stats.regenerated.Load(), ScopeHits: s.stats.reuse.Load(),
	}
}

// New builds a Store over client. keyPairs are gorilla/securecookie pairs —
// hash key (32 or 64 bytes recommended), then an optional block key (16, 24
// or 32 bytes, enables encryption) — newest first for key rotation.
func New(client *sdk.Client, opts Options, keyPairs ...[]byte) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidOptions)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if len(keyPairs) == 0 || len(keyPairs[0]) == 0 {
		return nil, ErrNoKeys
	}
	opts.fill()
	s := &Store{client: client, opts: opts, log: opts.Logger}
	var err error
	if s.tel, err = newTelemetry(opts); err != nil {
		return nil, err
	}
	s.codecs = securecookie.CodecsFromPairs(keyPairs...)
	maxAge := 0 // securecookie's own timestamp check; 0 = off
	if opts.AbsoluteTimeout > 0 {
		// A cookie is (re)encoded on every write, all after the session's
		// creation, so a valid one is never older than the cap.
		maxAge = int((opts.AbsoluteTimeout + time.Minute) / time.Second)
	}
	for _, c := range s.codecs {
		if sc, ok := c.(*securecookie.SecureCookie); ok {
			sc.MaxAge(maxAge)
			sc.SetSerializer(securecookie.NopEncoder{})
		}
	}
	s.cookie = sessions.Options{
		Path: opts.Path, Domain: opts.Domain, MaxAge: opts.MaxAge, Secure: opts.Secure,
		HttpOnly: !opts.DisableHTTPOnly, SameSite: opts.SameSite, Partitioned: opts.Partitioned,
	}
	return s, nil
}

// NewStore is New for configuration known to be valid: it panics on invalid
// options or missing keys (a programming error, caught at startup).
func NewStore(client *sdk.Client, opts Options, keyPairs ...[]byte) *Store {
	s, err := New(client, opts, keyPairs...)
	if err != nil {
		panic(err)
	}
	return s
}

// Options returns the store's options with defaults filled in.
func (s *Store) Options() Options { return s.opts }

// Name is the default session (and cookie) name.
func (s *Store) Name() string { return s.opts.Name }

func (s *Store) key(id string) string { return s.opts.KeyPrefix + id }

// Get returns the session name of request r, loading it once per request
// (gorilla's registry). A missing, tampered or unknown cookie yields a new
// empty session and a nil error; an error means the store could not be read
// (a new session is returned with it).
func (s *Store) Get(r *http.Request, name string) (*sessions.Session, error) {
	return sessions.GetRegistry(r).Get(s, name)
}

// New loads session name for r (gorilla's Store.New). Prefer Get, which
// caches per request. Without a Scope attached by middleware, loading slides
// the session's expiration at once.
func (s *Store) New(r *http.Request, name string) (*sessions.Session, error) {
	notifyLoad(r.Context())
	return s.scopeFor(r).Get(name)
}

// Save writes session sess and sets its cookie. A new session that is empty
// is not written (no key, no cookie). sess.Options.MaxAge < 0 deletes the
// session and expires the cookie. A fresh id is issued for a session this
// store did not load or write: an id never comes from the client.
func (s *Store) Save(r *http.Request, w http.ResponseWriter, sess *sessions.Session) error {
	return s.scopeFor(r).save(w, sess)
}

// Regenerate gives sess a new id (session-fixation defence: call it when
// the privilege level changes, e.g. at login): the data is written under the
// new id, the old key is deleted and the cookie is replaced. The absolute
// lifetime keeps counting from the session's original creation.
func (s *Store) Regenerate(r *http.Request, w http.ResponseWriter, sess *sessions.Session) error {
	return s.scopeFor(r).regenerate(w, sess)
}

// Destroy deletes sess and expires its cookie (Save with MaxAge −1).
func (s *Store) Destroy(r *http.Request, w http.ResponseWriter, sess *sessions.Session) error {
	if sess.Options == nil {
		sess.Options = &sessions.Options{}
	}
	sess.Options.MaxAge = -1
	return s.Save(r, w, sess)
}

// Refresh slides the expiration of sess: read, then rewrite the same bytes
// with a fresh time to live if nobody wrote it meanwhile. A session that is
// gone, or not yet written, is left alone.
func (s *Store) Refresh(ctx context.Context, sess *sessions.Session) error {
	if sess == nil || !validID(sess.ID) {
		return nil
	}
	key := s.key(sess.ID)
	res, err := s.client.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("session: refresh: %w", err)
	}
	switch res.Status {
	case sdk.StatusSuccess:
	case sdk.StatusNotFound:
		return nil
	default:
		return fmt.Errorf("session: refresh: %w", res.Err())
	}
	created, _, err := decodeRecord(res.Value)
	if err != nil {
		return fmt.Errorf("session: refresh: %w", err)
	}
	_, err = s.rewrite(ctx, key, res.Value, res.Version, created)
	return err
}

// rewrite is the write half of a refresh: the record read at version is
// written back with a fresh time to live, conditionally on that version. A
// lost race (Conflict) means a newer write refreshed it already. Past the
// absolute cap the session is deleted instead. It returns the new version
// (0 when nothing was written).
func (s *Store) rewrite(ctx context.Context, key string, record []byte, version uint64, created int64) (uint64, error) {
	ttl, ok := lifetime(s.opts.IdleTimeout, s.opts.AbsoluteTimeout, created, s.opts.Now().UnixNano())
	if !ok {
		s.stats.expired.Add(1)
		if _, err := s.client.Delete(ctx, key); err != nil {
			return 0, fmt.Errorf("session: delete expired: %w", err)
		}
		return 0, nil
	}
	res, err := s.client.Put(ctx, key, record, &sdk.PutOptions{IfMatchVersion: version, TTL: ttl})
	if err != nil && !errors.Is(err, sdk.ErrConflict) { // Conflict: handled below
		return 0, fmt.Errorf("session: refresh: %w", err)
	}
	switch res.Status {
	case sdk.StatusSuccess:
		s.stats.refreshes.Add(1)
		return res.Version, nil
	case sdk.StatusConflict:
		return 0, nil
	}
	return 0, fmt.Errorf("session: refresh: %w", res.Err())
}

// decodeCookie returns the id in cookie value and whether it was signed with
// the newest key (index 0); ok is false for anything that does not verify.
func (s *Store) decodeCookie(name, value string) (id string, current, ok bool) {
	for i, c := range s.codecs {
		var raw []byte
		if err := c.Decode(name, value, &raw); err == nil {
			id = string(raw)
			return id, i == 0, validID(id)
		}
	}
	return "", false, false
}

func (s *Store) setCookie(w http.ResponseWriter, sess *sessions.Session) error {
	encoded, err := s.codecs[0].Encode(sess.Name(), []byte(sess.ID))
	if err != nil {
		return fmt.Errorf("session: encode cookie: %w", err)
	}
	http.SetCookie(w, sessions.NewCookie(sess.Name(), encoded, sess.Options))
	return nil
}

func (s *Store) expireCookie(w http.ResponseWriter, sess *sessions.Session) {
	o := s.cookie
	if sess.Options != nil {
		o = *sess.Options
	}
	o.MaxAge = -1
	http.SetCookie(w, sessions.NewCookie(sess.Name(), "", &o))
}

// newSession is an empty session carrying the store's cookie options.
func (s *Store) newSession(name string) *sessions.Session {
	sess := sessions.NewSession(s, name)
	o := s.cookie
	sess.Options = &o
	sess.IsNew = true
	return sess
}

package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"

	"github.com/gorilla/sessions"
	"github.com/zaris-io/zaris/sdk"
)

// Scope is the per-request state of a Store: the sessions the request
// loaded, with what was read, so that at the end of the request a changed
// session is saved, a session only read is refreshed, and an untouched one
// costs nothing (lazy loading). Middleware creates it with Store.Attach and
// calls Commit before the response is written; without middleware the Store
// keeps one per request on its own (as gorilla's registry does) and
// refreshes at load.
type Scope struct {
	store   *Store
	req     *http.Request
	managed bool // middleware commits: refresh is deferred to Commit

	mu      sync.Mutex // guards entries and the sessions' bookkeeping
	entries map[string]*entry
}

// entry is one session of a scope and what the store knows about it.
type entry struct {
	sess *sessions.Session
	err  error // load failure; such a session is never saved by Commit

	created   int64  // creation instant (Unix ns) of the stored record; 0 = not in the store (new)
	version   uint64 // version last read or written, for the conditional refresh
	record    []byte // the record as last read or written
	persisted []byte // its values payload; nil = never persisted
	refreshed bool   // TTL slid (or written) during this request
	reissue   bool   // cookie must be sent again (old signing key, or MaxAge > 0)
	deleted   bool
}

type scopeKey struct{ store *Store }
type currentScopeKey struct{}

// Attach returns r carrying a new managed Scope for this store, and the
// Scope. Loads through it are lazy and do not refresh; the caller must call
// Commit before the response is written (and may call it again after the
// handler: a second Commit only saves what changed since).
func (s *Store) Attach(r *http.Request) (*http.Request, *Scope) {
	sc := &Scope{store: s, managed: true, entries: map[string]*entry{}}
	ctx := context.WithValue(r.Context(), scopeKey{s}, sc)
	ctx = context.WithValue(ctx, currentScopeKey{}, sc)
	r = r.WithContext(ctx)
	sc.req = r
	return r, sc
}

type loadObserverKey struct{}

// ObserveLoads returns a context under which every session load through a
// request carrying it calls fn (after any observer already in ctx). The
// response cache uses it to refuse storing or sharing a response whose
// handler read a session — personalised content — whatever the order of the
// middleware.
func ObserveLoads(ctx context.Context, fn func()) context.Context {
	if prev, ok := ctx.Value(loadObserverKey{}).(func()); ok {
		next := fn
		fn = func() { prev(); next() }
	}
	return context.WithValue(ctx, loadObserverKey{}, fn)
}

func notifyLoad(ctx context.Context) {
	if fn, ok := ctx.Value(loadObserverKey{}).(func()); ok {
		fn()
	}
}

// ScopeFromContext returns the Scope most recently attached to ctx by any
// Store, or nil.
func ScopeFromContext(ctx context.Context) *Scope {
	sc, _ := ctx.Value(currentScopeKey{}).(*Scope)
	return sc
}

// scopeFor returns r's scope for this store, creating an unmanaged one and
// attaching it to *r in place when there is none (the technique of
// gorilla's GetRegistry, so that Save finds what New loaded).
func (s *Store) scopeFor(r *http.Request) *Scope {
	if sc, ok := r.Context().Value(scopeKey{s}).(*Scope); ok {
		return sc
	}
	sc := &Scope{store: s, entries: map[string]*entry{}}
	*r = *r.WithContext(context.WithValue(r.Context(), scopeKey{s}, sc))
	sc.req = r
	return sc
}

// Store returns the scope's store.
func (sc *Scope) Store() *Store { return sc.store }

// Session returns the store's default session (Options.Name) for the
// request, loading it on first use.
func (sc *Scope) Session() (*sessions.Session, error) { return sc.Get(sc.store.opts.Name) }

// Get returns session name for the request, loading it on first use. A
// missing, tampered, unknown or expired cookie yields a new empty session and
// a nil error; an error means the store could not be read.
func (sc *Scope) Get(name string) (*sessions.Session, error) {
	if !validCookieName(name) {
		return nil, fmt.Errorf("session: invalid session name %q", name)
	}
	notifyLoad(sc.req.Context())
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if e := sc.entries[name]; e != nil {
		sc.store.stats.reuse.Add(1)
		return e.sess, e.err
	}
	e := sc.store.load(sc.req, name, !sc.managed)
	sc.entries[name] = e
	return e.sess, e.err
}

// Commit ends the request for every session loaded through the scope:
// deleted when its Options.MaxAge < 0, saved when its values changed (or it
// is new and non-empty), refreshed when only read; a session never loaded
// costs nothing. Cookies go to w, so call it before the response header is
// written. Writes use the request's context without its cancellation: a
// client hanging up does not lose the handler's changes.
func (sc *Scope) Commit(w http.ResponseWriter) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	ctx := context.WithoutCancel(sc.req.Context())
	var errs []error
	for _, e := range sc.entries {
		if err := sc.store.commitEntry(ctx, w, e); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (sc *Scope) save(w http.ResponseWriter, sess *sessions.Session) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.store.saveEntry(sc.req.Context(), w, sc.entryForLocked(sess), nil)
}

func (sc *Scope) regenerate(w http.ResponseWriter, sess *sessions.Session) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.store.regenerateEntry(sc.req.Context(), w, sc.entryForLocked(sess))
}

// entryForLocked finds the bookkeeping of sess. A session object the scope
// did not load (built by hand, or loaded in another request) gets a blank
// entry: it is treated as new, so a fresh id is issued when it is written.
func (sc *Scope) entryForLocked(sess *sessions.Session) *entry {
	if e := sc.entries[sess.Name()]; e != nil && e.sess == sess {
		return e
	}
	e := &entry{sess: sess}
	sc.entries[sess.Name()] = e
	return e
}

// load reads session name for r. See Scope.Get for the outcomes.
func (s *Store) load(r *http.Request, name string, refreshNow bool) *entry {
	if s.tel == nil {
		e, _ := s.loadRun(r.Context(), r, name, refreshNow)
		return e
	}
	ctx, o := s.tel.begin(r.Context(), "load")
	e, outcome := s.loadRun(ctx, r, name, refreshNow)
	o.end(outcome)
	return e
}

// loadRun is load, with its outcome for telemetry.
func (s *Store) loadRun(ctx context.Context, r *http.Request, name string, refreshNow bool) (*entry, string) {
	e := &entry{sess: s.newSession(name)}
	c, err := r.Cookie(name)
	if err != nil || c.Value == "" {
		return e, outcomeNone
	}
	id, current, ok := s.decodeCookie(name, c.Value)
	if !ok {
		s.stats.rejected.Add(1)
		return e, outcomeRejected
	}
	key := s.key(id)
	res, err := s.client.Get(ctx, key)
	if err != nil {
		e.err = fmt.Errorf("session: load: %w", err)
		return e, outcomeError
	}
	switch res.Status {
	case sdk.StatusSuccess:
	case sdk.StatusNotFound:
		s.stats.unknown.Add(1) // never adopted: a new id is issued on write
		return e, outcomeUnknown
	default:
		e.err = fmt.Errorf("session: load: %w", res.Err())
		return e, outcomeError
	}
	created, payload, err := decodeRecord(res.Value)
	if err != nil {
		s.log.Warn("zaris session: not a session record; starting a new session", "key", key)
		s.stats.unknown.Add(1)
		return e, outcomeUnknown
	}
	if _, alive := lifetime(s.opts.IdleTimeout, s.opts.AbsoluteTimeout, created, s.opts.Now().UnixNano()); !alive {
		s.stats.expired.Add(1)
		if _, err := s.client.Delete(ctx, key); err != nil {
			s.log.Warn("zaris session: delete of an expired session failed", "err", err)
		}
		return e, outcomeExpired
	}
	if err := s.opts.Serializer.Deserialize(payload, e.sess); err != nil {
		e.sess.Values = map[interface{}]interface{}{}
		e.err = fmt.Errorf("session: decode values: %w", err)
		return e, outcomeError
	}
	e.sess.ID = id
	e.sess.IsNew = false
	e.created, e.version, e.record, e.persisted = created, res.Version, res.Value, payload
	e.reissue = !current || e.sess.Options.MaxAge > 0
	s.stats.loads.Add(1)
	if refreshNow {
		if err := s.refreshEntry(ctx, e); err != nil {
			s.log.Warn("zaris session: sliding refresh failed", "err", err)
		}
	}
	return e, outcomeFound
}

func (s *Store) refreshEntry(ctx context.Context, e *entry) error {
	return s.observed(ctx, "refresh", func(ctx context.Context) error { return s.refreshEntryRun(ctx, e) })
}

func (s *Store) refreshEntryRun(ctx context.Context, e *entry) error {
	e.refreshed = true
	v, err := s.rewrite(ctx, s.key(e.sess.ID), e.record, e.version, e.created)
	if v != 0 {
		e.version = v
	}
	return err
}

// commitEntry is Commit for one session.
func (s *Store) commitEntry(ctx context.Context, w http.ResponseWriter, e *entry) error {
	if e.err != nil {
		// The load failed: saving would replace the user's real session by
		// a new one. Leave it.
		return nil
	}
	sess := e.sess
	if sess.Options != nil && sess.Options.MaxAge < 0 {
		return s.deleteEntry(ctx, w, e)
	}
	changed, payload, err := s.changed(e)
	if err != nil {
		return err
	}
	if changed {
		return s.saveEntry(ctx, w, e, payload)
	}
	if e.created == 0 {
		return nil // new, empty, unmodified: never written
	}
	if !e.refreshed {
		if err := s.refreshEntry(ctx, e); err != nil {
			return err
		}
	}
	if e.reissue {
		e.reissue = false
		return s.setCookie(w, sess)
	}
	return nil
}

// changed reports whether the session's values differ from what was last
// read or written, and returns their encoding for reuse. With the canonical
// GobSerializer, bytes decide; with another serializer, whose bytes may
// follow map iteration order, unequal bytes are confirmed by decoding the
// persisted payload and comparing values deeply.
func (s *Store) changed(e *entry) (bool, []byte, error) {
	payload, err := s.opts.Serializer.Serialize(e.sess)
	if err != nil {
		return false, nil, fmt.Errorf("session: encode values: %w", err)
	}
	if e.persisted == nil {
		return len(e.sess.Values) > 0, payload, nil
	}
	if bytes.Equal(payload, e.persisted) {
		return false, payload, nil
	}
	if _, ok := s.opts.Serializer.(interface{ canonical() }); ok {
		return true, payload, nil // equal values would have given equal bytes
	}
	prev := &sessions.Session{Values: map[interface{}]interface{}{}}
	if err := s.opts.Serializer.Deserialize(e.persisted, prev); err != nil {
		return true, payload, nil
	}
	return !reflect.DeepEqual(prev.Values, e.sess.Values), payload, nil
}

// saveEntry writes e's session (payload = its encoded values, or nil to
// encode now) and sets the cookie.
func (s *Store) saveEntry(ctx context.Context, w http.ResponseWriter, e *entry, payload []byte) error {
	return s.observed(ctx, "save", func(ctx context.Context) error { return s.saveEntryRun(ctx, w, e, payload) })
}

func (s *Store) saveEntryRun(ctx context.Context, w http.ResponseWriter, e *entry, payload []byte) error {
	sess := e.sess
	if sess.Options == nil {
		o := s.cookie
		sess.Options = &o
	}
	if sess.Options.MaxAge < 0 {
		return s.deleteEntry(ctx, w, e)
	}
	if e.created == 0 && len(sess.Values) == 0 {
		return nil // new and empty: never written
	}
	if payload == nil {
		var err error
		if payload, err = s.opts.Serializer.Serialize(sess); err != nil {
			return fmt.Errorf("session: encode values: %w", err)
		}
	}
	now := s.opts.Now().UnixNano()
	if e.created == 0 {
		sess.ID = newID() // an id never comes from the client
		e.created = now
	}
	key := s.key(sess.ID)
	ttl, ok := lifetime(s.opts.IdleTimeout, s.opts.AbsoluteTimeout, e.created, now)
	if !ok {
		s.stats.expired.Add(1)
		if _, err := s.client.Delete(ctx, key); err != nil {
			return fmt.Errorf("session: delete expired: %w", err)
		}
		s.expireCookie(w, sess)
		s.forget(e)
		return ErrExpired
	}
	record := encodeRecord(e.created, payload)
	res, err := s.client.Put(ctx, key, record, &sdk.PutOptions{TTL: ttl})
	if err != nil {
		return fmt.Errorf("session: save: %w", err)
	}
	if !res.OK() {
		return fmt.Errorf("session: save: %w", res.Err())
	}
	s.stats.writes.Add(1)
	e.version, e.record, e.persisted = res.Version, record, payload
	e.refreshed, e.deleted, e.reissue = true, false, false
	sess.IsNew = false
	return s.setCookie(w, sess)
}

// deleteEntry removes e's session from the store and expires the cookie.
func (s *Store) deleteEntry(ctx context.Context, w http.ResponseWriter, e *entry) error {
	return s.observed(ctx, "delete", func(ctx context.Context) error { return s.deleteEntryRun(ctx, w, e) })
}

func (s *Store) deleteEntryRun(ctx context.Context, w http.ResponseWriter, e *entry) error {
	if e.deleted {
		return nil
	}
	sess := e.sess
	if e.created != 0 && sess.ID != "" {
		if _, err := s.client.Delete(ctx, s.key(sess.ID)); err != nil {
			return fmt.Errorf("session: delete: %w", err)
		}
		s.stats.deletes.Add(1)
	}
	s.expireCookie(w, sess)
	s.forget(e)
	e.deleted = true
	return nil
}

// forget turns e into a new, empty, unwritten session.
func (s *Store) forget(e *entry) {
	e.created, e.version, e.record, e.persisted = 0, 0, nil, nil
	e.refreshed, e.reissue = false, false
	e.sess.ID = ""
	e.sess.IsNew = true
	e.sess.Values = map[interface{}]interface{}{}
}

func (s *Store) regenerateEntry(ctx context.Context, w http.ResponseWriter, e *entry) error {
	return s.observed(ctx, "regenerate", func(ctx context.Context) error { return s.regenerateEntryRun(ctx, w, e) })
}

func (s *Store) regenerateEntryRun(ctx context.Context, w http.ResponseWriter, e *entry) error {
	sess := e.sess
	if sess.Options != nil && sess.Options.MaxAge < 0 {
		return s.deleteEntry(ctx, w, e)
	}
	oldID, oldCreated := sess.ID, e.created
	if e.created == 0 {
		e.created = s.opts.Now().UnixNano()
	}
	sess.ID = newID()
	if err := s.saveEntry(ctx, w, e, nil); err != nil {
		if !errors.Is(err, ErrExpired) {
			sess.ID, e.created = oldID, oldCreated
		}
		return err
	}
	s.stats.regenerated.Add(1)
	if oldCreated != 0 && oldID != "" {
		if _, err := s.client.Delete(ctx, s.key(oldID)); err != nil {
			return fmt.Errorf("session: delete the old id: %w", err)
		}
	}
	return nil
}

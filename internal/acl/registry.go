package acl

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Committer records an op where every node folds it (the cluster's raft
// log); it returns once the op is applied locally, or the refusal.
type Committer func(ctx context.Context, op Op) error

// Registry is a node's users: the current Set, the way changes are
// committed, the ACL LOG and the failed-AUTH limiter. Safe for concurrent use.
type Registry struct {
	cur    atomic.Pointer[Set]
	commit atomic.Pointer[Committer]
	mu     sync.Mutex // serialises local commits (no cluster)

	Log     *Log
	Limiter *Limiter
}

// NewRegistry starts with NewSet(token).
func NewRegistry(token string) *Registry {
	r := &Registry{Log: NewLog(DefaultLogLen), Limiter: NewLimiter(DefaultFailBurst, DefaultFailPerSecond)}
	r.cur.Store(NewSet(token))
	return r
}

// Users is the current set.
func (r *Registry) Users() *Set { return r.cur.Load() }

// Publish replaces the current set (the cluster FSM's fold).
func (r *Registry) Publish(s *Set) { r.cur.Store(s) }

// SetCommitter routes changes through c (nil: applied locally).
func (r *Registry) SetCommitter(c Committer) {
	if c == nil {
		r.commit.Store(nil)
		return
	}
	r.commit.Store(&c)
}

// Submit validates op against the current set (the refusal carries
// Redis's wording), then commits it with its passwords hashed. It returns
// what Apply returns on the current set (the users a DELUSER removed).
func (r *Registry) Submit(ctx context.Context, op Op) (int, error) {
	_, n, err := r.Users().Apply(op)
	if err != nil {
		return 0, err
	}
	op = Normalize(op)
	if c := r.commit.Load(); c != nil {
		return n, (*c)(ctx, op)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	next, n, err := r.Users().Apply(op)
	if err != nil {
		return 0, err
	}
	r.Publish(next)
	return n, nil
}

// Authenticate returns the user that name/pass open, or nil. name ""
// means "default".
func (r *Registry) Authenticate(name string, pass []byte) *User {
	if name == "" {
		name = "default"
	}
	u := r.Users().User(name)
	if u == nil || !u.CheckPassword(pass) {
		return nil
	}
	return u
}

// --- ACL LOG ---

// DefaultLogLen is acllog-max-len's default.
const DefaultLogLen = 128

// LogEntry is one ACL LOG entry: equal entries within a minute are
// folded into one with a count, as Redis does.
type LogEntry struct {
	Count      int
	Reason     string // "command", "key", "channel", "auth"
	Context    string // "toplevel", "multi", "lua"
	Object     string
	Username   string
	Created    time.Time
	Updated    time.Time
	ClientInfo string
}

// Log is the ACL LOG: newest first, bounded.
type Log struct {
	mu      sync.Mutex
	entries []*LogEntry
	max     int
}

// NewLog makes a log holding at most max entries.
func NewLog(max int) *Log { return &Log{max: max} }

// Add records a denial (or a failed AUTH).
func (l *Log) Add(reason, context, object, user, clientInfo string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range l.entries {
		if e.Reason == reason && e.Context == context && e.Object == object && e.Username == user &&
			now.Sub(e.Updated) < time.Minute {
			e.Count++
			e.Updated, e.ClientInfo = now, clientInfo
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = e
			return
		}
	}
	e := &LogEntry{Count: 1, Reason: reason, Context: context, Object: object, Username: user,
		Created: now, Updated: now, ClientInfo: clientInfo}
	l.entries = append([]*LogEntry{e}, l.entries...)
	if len(l.entries) > l.max {
		l.entries = l.entries[:l.max]
	}
}

// Entries returns up to n entries, newest first (n < 0: all).
func (l *Log) Entries(n int) []LogEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n < 0 || n > len(l.entries) {
		n = len(l.entries)
	}
	out := make([]LogEntry, n)
	for i := range out {
		out[i] = *l.entries[i]
	}
	return out
}

// Reset empties the log.
func (l *Log) Reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}

// --- failed-AUTH limiter ---

// Defaults of the failed-AUTH limiter: a remote host may fail this many
// times in a burst, then this many times per second.
const (
	DefaultFailBurst     = 20
	DefaultFailPerSecond = 2
	maxTrackedRemotes    = 10000
)

// Limiter bounds the rate of failed authentications per remote host
// (a token bucket each; a host that runs dry is refused until it refills).
type Limiter struct {
	mu      sync.Mutex
	burst   float64
	rate    float64
	buckets map[string]*bucket
	// Refused counts authentications refused because the host was over its rate.
	Refused atomic.Uint64
}

type bucket struct {
	tokens float64
	at     time.Time
}

// NewLimiter makes a limiter (burst failures, then perSecond).
func NewLimiter(burst, perSecond float64) *Limiter {
	return &Limiter{burst: burst, rate: perSecond, buckets: map[string]*bucket{}}
}

func (l *Limiter) level(host string, now time.Time) *bucket {
	b := l.buckets[host]
	if b == nil {
		if len(l.buckets) >= maxTrackedRemotes {
			for h, ob := range l.buckets { // drop the refilled ones
				if ob.tokens+now.Sub(ob.at).Seconds()*l.rate >= l.burst {
					delete(l.buckets, h)
				}
			}
		}
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[host] = b
		return b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	return b
}

// Allowed reports whether host may try to authenticate now.
func (l *Limiter) Allowed(host string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets[host] == nil {
		return true
	}
	if l.level(host, now).tokens < 1 {
		l.Refused.Add(1)
		return false
	}
	return true
}

// Failed records a failed authentication from host.
func (l *Limiter) Failed(host string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.level(host, now)
	b.tokens = max(0, b.tokens-1)
}

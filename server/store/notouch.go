package store

import (
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// Untouched is a segment seen by a client in CLIENT NO-TOUCH mode (Redis
// 7.2): its reads, and its writes that change a collection in place, leave
// the key's access stamp (OBJECT IDLETIME, the LRU eviction rank) as it
// was. A write that installs a new value stamps it, as Redis's new object
// carries a fresh LRU clock. The view is one pointer: held in an interface
// it costs no allocation.
type Untouched struct{ g *Segment }

// Untouched returns the segment's no-touch view.
func (g *Segment) Untouched() Untouched { return Untouched{g} }

// Get reads key without stamping its access.
func (u Untouched) Get(key string) kv.Result {
	g := u.g
	now := g.store.clock.NowNano()
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.getLocked(key, now, true)
}

// GetValue is Get's value alone (Segment.GetValue), without stamping.
func (u Untouched) GetValue(key string) ([]byte, kv.Status) { return u.g.getValue(key, true) }

// Exec runs cmd without stamping the key's access.
func (u Untouched) Exec(cmd kv.Cmd) kv.Reply {
	var r kv.Reply
	u.g.exec(&cmd, true, &r)
	return r
}

// Put is Segment.Put: a new value is a new access.
func (u Untouched) Put(key string, value []byte, opts *kv.PutOptions) kv.Result {
	return u.g.Put(key, value, opts)
}

// PutStatus is Segment.PutStatus.
func (u Untouched) PutStatus(key string, value []byte, opts *kv.PutOptions) kv.Status {
	return u.g.PutStatus(key, value, opts)
}

// Delete is Segment.Delete.
func (u Untouched) Delete(key string) kv.Result { return u.g.Delete(key) }

// Expire is Segment.Expire (a TTL change does not stamp the access).
func (u Untouched) Expire(key string, ttl time.Duration) kv.Result { return u.g.Expire(key, ttl) }

// Persist is Segment.Persist.
func (u Untouched) Persist(key string) kv.Result { return u.g.Persist(key) }

// TimeToLive is Segment.TimeToLive (it never stamps the access).
func (u Untouched) TimeToLive(key string) kv.Result { return u.g.TimeToLive(key) }

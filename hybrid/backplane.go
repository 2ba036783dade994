package hybrid

import (
	"context"
	"slices"
	"sync"
)

// InvalidationKind says what an Invalidation evicts.
type InvalidationKind uint8

const (
	// InvalidateKey evicts one key's L1 copy (after Set or Remove).
	InvalidateKey InvalidationKind = iota + 1
	// InvalidateTag records a tag invalidation (RemoveByTag; Tag "*" is
	// every entry) so that L1 copies created before At become misses.
	InvalidateTag
	// InvalidateAll evicts every L1 copy. A transport sends it to its own
	// subscribers when it may have lost messages (a gap in a journal, a
	// pub/sub subscription lost and made again), so no instance keeps
	// serving a copy it was never told about.
	InvalidateAll
	// InvalidateStoreKey says that the L2 key Key changed — written,
	// deleted, expired, evicted, by any writer — as the store itself
	// reports it (WatchBackplane). Key is the key as L2 stores it: an
	// entry's (KeyPrefix+"v:"+key) or a tag marker's (KeyPrefix+"t:"…).
	// Revision and Version identify the change. A cache evicts the entry
	// (unless the change is its own last write of it, which its copy
	// already holds) or reads the changed tag marker from L2.
	InvalidateStoreKey
)

func (k InvalidationKind) String() string {
	switch k {
	case InvalidateKey:
		return "key"
	case InvalidateTag:
		return "tag"
	case InvalidateAll:
		return "all"
	case InvalidateStoreKey:
		return "store-key"
	}
	return "unknown"
}

// Invalidation is one backplane message. Namespace is the publishing
// cache's KeyPrefix: a cache ignores other namespaces' messages, and its
// own (Source == its InstanceID). InvalidateAll with an empty Namespace
// applies to every cache. An InvalidateStoreKey is judged by its Key
// alone: a cache acts on the keys under its own KeyPrefix.
type Invalidation struct {
	Kind      InvalidationKind `msgpack:"k"`
	Source    string           `msgpack:"s"`
	Namespace string           `msgpack:"n"`
	Key       string           `msgpack:"key,omitempty"`
	Tag       string           `msgpack:"tag,omitempty"`
	// At is the tag invalidation's timestamp (Unix nanoseconds).
	At int64 `msgpack:"at,omitempty"`
	// SentAt is when the publishing cache sent it (Unix nanoseconds by
	// its clock; 0 = unknown): the receiver's backplane-lag measure.
	SentAt int64 `msgpack:"t,omitempty"`
	// Revision and Version identify the change behind an
	// InvalidateStoreKey: the segment revision of the change and the
	// key's item version after it (sdk.WatchEvent's; 0 = unknown).
	Revision uint64 `msgpack:"r,omitempty"`
	Version  uint64 `msgpack:"v,omitempty"`
}

// Backplane carries invalidations between the instances of a cache.
// PubSubBackplane rides the store's publish/subscribe, WatchBackplane
// follows the store's own changes (every writer's, not only the caches'),
// JournalBackplane serves any number of processes over plain KV, and
// LocalBackplane serves one process.
//
// Delivery is at-most-once per message and best effort; a transport that
// knows it lost messages delivers InvalidateAll. Subscribers receive their
// own messages too (caches filter on Source). A handler must not block:
// the transport may call it on its publishing or polling goroutine. The
// backplanes of this package call a message's handlers one after the
// other, in the order they subscribed.
type Backplane interface {
	Publish(ctx context.Context, inv Invalidation) error
	Subscribe(handler func(Invalidation)) (unsubscribe func())
}

// LocalBackplane fans invalidations out to the subscribers of one process,
// synchronously on the publisher's goroutine: when Publish returns, every
// subscriber has applied the message. It suits several caches in one
// process sharing one L2.
type LocalBackplane struct {
	handlers handlerSet
}

// NewLocalBackplane returns an empty in-process backplane.
func NewLocalBackplane() *LocalBackplane {
	return &LocalBackplane{}
}

// Publish delivers inv to every subscriber.
func (b *LocalBackplane) Publish(ctx context.Context, inv Invalidation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.handlers.deliver(inv)
	return nil
}

// Subscribe registers handler; the returned function removes it and is
// safe to call more than once.
func (b *LocalBackplane) Subscribe(handler func(Invalidation)) func() {
	return b.handlers.add(handler)
}

// handlerSet is a backplane's registered handlers (every backplane kind
// keeps one), called in the order they subscribed.
type handlerSet struct {
	mu   sync.Mutex // guards subs and next
	subs []subscription
	next uint64
}

type subscription struct {
	id      uint64
	handler func(Invalidation)
}

// add registers handler; the returned function removes it and is safe to
// call more than once.
func (s *handlerSet) add(handler func(Invalidation)) func() {
	s.mu.Lock()
	id := s.next
	s.next++
	s.subs = append(s.subs, subscription{id: id, handler: handler})
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.subs = slices.DeleteFunc(s.subs, func(x subscription) bool { return x.id == id })
		s.mu.Unlock()
	}
}

// deliver calls every handler registered now with inv, outside the lock (a
// handler may subscribe or unsubscribe).
func (s *handlerSet) deliver(inv Invalidation) {
	s.mu.Lock()
	handlers := make([]func(Invalidation), 0, len(s.subs))
	for _, x := range s.subs {
		handlers = append(handlers, x.handler)
	}
	s.mu.Unlock()
	for _, h := range handlers {
		h(inv)
	}
}

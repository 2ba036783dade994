package sdk

// Watch and pub/sub on a cluster (R-CLIENT-5, R-DS-6/7): one response stream
// per node concerned, merged into the one WatchStream or Subscription the
// caller holds.
//
// Watch. A key watch opens one stream, on the key's owner. A prefix watch
// opens one stream per owner (a prefix spans every segment). Snapshot
// records and events are kept only from the node that owns the key's
// segment in the table the watch was opened on, so a copy a node does not
// own never surfaces. Events of one key come in order (a key lives on one
// node); events of different owners interleave in arrival order. When the
// owner of a watched segment changes — for a prefix watch, of any segment —
// the watch ends with ErrWatchMoved: changes applied on the new owner before
// the client learned the new map cannot be replayed, and the gap-free
// promise holds only for a watch opened again with a snapshot.
//
// Pub/sub. The servers carry every message to every node (the cluster
// bus, server/bus): a subscription needs one stream, on one node, and a
// publish one call, on any node. A publish goes to the channel's home node
// (the owner of the channel name's segment, through the same placement
// function as a key); its count is that node's subscribers, as Redis
// Cluster's PUBLISH. A subscription holds one stream, on the home node of
// its first channel or pattern when it opens (spreading subscriptions over
// the nodes); it stays there while that node is an owner, and when the node
// leaves the owners the stream is closed and one is opened on the current
// home — never two at once, so no message is delivered twice. Messages are
// fire-and-forget: one published while the subscription moves is lost.

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/zaris-io/zaris/internal/wire"
)

// streamPart is one node's stream inside a merged stream.
type streamPart interface {
	Close() error
	Err() error
}

// fanIn merges the items of per-node streams into one channel. Each part
// has a forwarder goroutine; the merged stream ends (finish) when the
// consumer closes it, when a part ends on its own (its error is the merged
// stream's), or when the client decides so (ErrWatchMoved, client close).
type fanIn[T any] struct {
	out  chan T
	done <-chan struct{} // closed by the consumer's Close
	fail func(error)     // records why the merged stream ended

	mu    sync.Mutex // guards parts, ended
	parts map[*node]streamPart
	ended bool
	wg    sync.WaitGroup // the forwarders; out is closed after them
}

func newFanIn[T any](out chan T, done <-chan struct{}, fail func(error)) *fanIn[T] {
	return &fanIn[T]{out: out, done: done, fail: fail, parts: map[*node]streamPart{}}
}

// add forwards src, the items of n's part, into the merged stream (those
// keep accepts; keep nil accepts all). After finish it closes part instead.
func (f *fanIn[T]) add(n *node, part streamPart, src <-chan T, keep func(T) bool) {
	f.mu.Lock()
	if f.ended {
		f.mu.Unlock()
		part.Close()
		return
	}
	f.parts[n] = part
	f.wg.Add(1)
	f.mu.Unlock()
	go func() {
		defer f.wg.Done()
		for v := range src {
			if keep != nil && !keep(v) {
				continue
			}
			select {
			case f.out <- v:
			case <-f.done:
				return // the consumer closed; finish closes the parts
			}
		}
		f.mu.Lock()
		mine := f.parts[n] == part // else removed or finished: ending was asked for
		if mine {
			delete(f.parts, n)
		}
		f.mu.Unlock()
		if mine {
			err := part.Err()
			if err == nil {
				err = fmt.Errorf("zaris: node %s ended the stream", n.id)
			}
			f.finish(err)
		}
	}()
}

// has reports whether n has a part.
func (f *fanIn[T]) has(n *node) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.parts[n]
	return ok
}

// remove closes n's part without ending the merged stream.
func (f *fanIn[T]) remove(n *node) {
	f.mu.Lock()
	part := f.parts[n]
	delete(f.parts, n)
	f.mu.Unlock()
	if part != nil {
		part.Close()
	}
}

// finish ends the merged stream: why (nil after the consumer's Close) is
// recorded, every part is closed, and out is closed once the forwarders
// are gone. Safe to call more than once.
func (f *fanIn[T]) finish(why error) {
	f.mu.Lock()
	if f.ended {
		f.mu.Unlock()
		return
	}
	f.ended = true
	parts := f.parts
	f.parts = nil
	f.mu.Unlock()
	if why != nil {
		f.fail(why)
	}
	for _, p := range parts {
		p.Close()
	}
	go func() {
		f.wg.Wait()
		close(f.out)
	}()
}

// --- watch ---

// clusterWatch is a live watch of the cluster client.
type clusterWatch struct {
	key string        // a key watch; "" for a prefix watch
	t   *routingTable // the table it was opened on: whose owners it trusts
	fan *fanIn[WatchEvent]
}

// movedBy reports whether t changes an owner the watch depends on.
func (w *clusterWatch) movedBy(t *routingTable) bool {
	switch {
	case w.t == t:
		return false
	case w.key != "":
		return w.t.route(w.key) != t.route(w.key)
	}
	return !sameOwners(w.t, t)
}

func (b *clusterBackend) watch(ctx context.Context, req wire.WatchRequest) (*WatchStream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := b.withDeadline(ctx)
	defer cancel()
	var rs retryState
	for {
		t := b.table.Load()
		s, w, err := b.openWatch(ctx, t, req)
		if err != nil {
			if b.again(ctx, &rs, t.version, retryDecision(0, err, true)) {
				continue // opening a watch changes nothing: safe to repeat
			}
			return nil, err
		}
		b.installMu.Lock()
		moved := w.movedBy(b.table.Load())
		b.mu.Lock()
		closed := b.closed
		if !moved && !closed {
			b.watches[w] = struct{}{}
		}
		b.mu.Unlock()
		b.installMu.Unlock()
		switch {
		case closed:
			w.fan.finish(nil)
			return nil, ErrClosed
		case !moved:
			return s, nil
		}
		// The map changed while the watch opened: open it on the new owners.
		w.fan.finish(nil)
		if !b.again(ctx, &rs, t.version, retryRedirect) {
			return nil, ErrWatchMoved
		}
	}
}

// openWatch opens the streams of a watch on the owners in t and merges them.
func (b *clusterBackend) openWatch(ctx context.Context, t *routingTable, req wire.WatchRequest) (*WatchStream, *clusterWatch, error) {
	nodes := t.owners
	if req.Key != "" {
		n := t.route(req.Key)
		if n == nil {
			return nil, nil, errNoOwner
		}
		nodes = []*node{n}
	}
	if len(nodes) == 0 {
		return nil, nil, errNoOwner
	}
	parts := make([]*WatchStream, len(nodes))
	errs := make([]error, len(nodes))
	fanOut(len(nodes), func(i int) { parts[i], errs[i] = nodes[i].be.watch(ctx, req) })
	for i, err := range errs {
		if err != nil {
			for _, p := range parts {
				if p != nil {
					p.Close()
				}
			}
			return nil, nil, fmt.Errorf("zaris: watch on node %s: %w", nodes[i].id, err)
		}
	}
	s := &WatchStream{events: make(chan WatchEvent, 64), done: make(chan struct{})}
	w := &clusterWatch{key: req.Key, t: t}
	w.fan = newFanIn(s.events, s.done, s.fail)
	s.stop = func() {
		b.mu.Lock()
		delete(b.watches, w)
		b.mu.Unlock()
		w.fan.finish(nil)
	}
	if req.Snapshot {
		s.snapshot = []WatchRecord{}
	}
	for i, p := range parts {
		n := nodes[i]
		for _, r := range p.snapshot {
			if t.route(r.Key) == n {
				s.snapshot = append(s.snapshot, r)
			}
		}
		w.fan.add(n, p, p.events, func(ev WatchEvent) bool { return t.route(ev.Key) == n })
	}
	return s, w, nil
}

// --- pub/sub ---

// clusterSub is a live subscription of the cluster client: one stream per
// owner.
type clusterSub struct {
	b   *clusterBackend
	req wire.SubscribeRequest
	fan *fanIn[Message]

	mu      sync.Mutex // guards opening
	opening map[*node]bool
}

func (b *clusterBackend) subscribe(ctx context.Context, req wire.SubscribeRequest) (*Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := b.withDeadline(ctx)
	defer cancel()
	t := b.table.Load()
	if len(t.owners) == 0 {
		return nil, errNoOwner
	}
	cs := &clusterSub{b: b, req: req, opening: map[*node]bool{}}
	home := cs.home(t)
	p, err := home.be.subscribe(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("zaris: subscribing on node %s: %w", home.id, err)
	}
	s := &Subscription{messages: make(chan Message, 64), done: make(chan struct{})}
	cs.fan = newFanIn(s.messages, s.done, s.fail)
	s.stop = func() {
		b.mu.Lock()
		delete(b.subs, cs)
		b.mu.Unlock()
		cs.fan.finish(nil)
	}
	cs.fan.add(home, p, p.messages, nil)
	b.installMu.Lock()
	b.mu.Lock()
	closed := b.closed
	if !closed {
		b.subs[cs] = struct{}{}
	}
	b.mu.Unlock()
	if cur := b.table.Load(); cur != t && !closed {
		cs.retarget(cur)
	}
	b.installMu.Unlock()
	if closed {
		cs.fan.finish(nil)
		return nil, ErrClosed
	}
	return s, nil
}

// home is the node a subscription opens its stream on in t: the home of
// its first channel or pattern, else the first owner.
func (s *clusterSub) home(t *routingTable) *node {
	name := ""
	if len(s.req.Channels) > 0 {
		name = s.req.Channels[0]
	} else if len(s.req.Patterns) > 0 {
		name = s.req.Patterns[0]
	}
	if n := t.homeOf(name); n != nil && slices.Contains(t.owners, n) {
		return n
	}
	return t.owners[0]
}

// retarget keeps the subscription's one stream on an owner of t: while its
// node is an owner nothing changes; when it left, its stream is closed and
// one is opened on the current home. Called with installMu held.
func (s *clusterSub) retarget(t *routingTable) {
	kept := false
	for _, n := range s.fanNodes() {
		if slices.Contains(t.owners, n) && !kept {
			kept = true
			continue
		}
		s.fan.remove(n)
	}
	s.mu.Lock()
	opening := len(s.opening) > 0
	s.mu.Unlock()
	if kept || opening || len(t.owners) == 0 {
		return
	}
	n := s.home(t)
	s.mu.Lock()
	s.opening[n] = true
	s.mu.Unlock()
	s.b.goFunc(func() { s.openOn(n) })
}

func (s *clusterSub) fanNodes() []*node {
	s.fan.mu.Lock()
	defer s.fan.mu.Unlock()
	nodes := make([]*node, 0, len(s.fan.parts))
	for n := range s.fan.parts {
		nodes = append(nodes, n)
	}
	return nodes
}

// openOn subscribes on n, the subscription's new home, and adds its
// stream if n is still an owner and no other stream was opened meanwhile. A failure ends the subscription, as a lost
// connection does.
func (s *clusterSub) openOn(n *node) {
	b := s.b
	ctx, cancel := context.WithTimeout(b.ctx, b.dialTO+b.callTO)
	defer cancel()
	p, err := n.be.subscribe(ctx, s.req)
	s.mu.Lock()
	delete(s.opening, n)
	s.mu.Unlock()
	if err != nil {
		if b.ctx.Err() == nil {
			s.fan.finish(fmt.Errorf("zaris: subscribing on node %s: %w", n.id, err))
		}
		return
	}
	b.installMu.Lock()
	defer b.installMu.Unlock()
	if !slices.Contains(b.table.Load().owners, n) || len(s.fanNodes()) > 0 {
		p.Close() // it left again meanwhile, or another stream serves
		return
	}
	s.fan.add(n, p, p.messages, nil)
}

func (b *clusterBackend) publish(ctx context.Context, channel string, payload []byte) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	ctx, cancel := b.withDeadline(ctx)
	defer cancel()
	var rs retryState
	for {
		t := b.table.Load()
		var n int
		var err error
		if home := t.homeOf(channel); home == nil {
			err = errNoOwner
		} else {
			n, err = home.be.publish(ctx, channel, payload)
		}
		if !b.again(ctx, &rs, t.version, retryDecision(0, err, false)) {
			return n, err
		}
	}
}

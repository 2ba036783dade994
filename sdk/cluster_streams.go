package sdk

// Watch and pub/sub on a cluster (R-CLIENT-5, R-DS-6/7): one response stream
// per node concerned, merged into the one WatchStream or Subscription the
// caller holds.
//
// Watch. A key watch opens one stream, on the key's owner. A prefix watch
// opens one stream per owner (a prefix spans every segment). Snapshot
// records and events are kept only from the node that owns the key's
// segment in the table the watch was opened on, so a copy a node does not
// own never surfaces. Events of one segment come in revision order; events
// of different segments interleave in arrival order. When the owner of a
// watched segment changes (failover, migration) or its stream breaks, the
// segment resumes on the owner of the current map from the last change
// delivered (clusterWatch): no gap, no duplicate, no error; a WatchResync
// when that history is gone.
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
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zaris-io/zaris/internal/placement"
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
// stream's), or when the client decides so (client close).
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

// clusterWatch is a live watch of the cluster client. Per segment it keeps
// the position of the last change delivered (or where the events started)
// and the one part whose events of that segment it delivers: the stream
// opened on the segment's owner. When the owner changes (failover,
// migration) or that stream ends, the segment is handed to a stream on the
// owner of the current table, opened from that position: the new owner
// replays what followed from its op-log (replicas and migration targets
// hold the owner's revisions) and goes live under the segment lock, so
// nothing is missed and nothing delivered twice. A position that history
// no longer holds comes back as a WatchResync with the segment's records.
type clusterWatch struct {
	b    *clusterBackend
	req  wire.WatchRequest // the caller's request; parts opened later resume
	segs []uint16          // the watched segments
	out  chan WatchEvent
	done <-chan struct{} // closed by the consumer's Close
	fail func(error)
	kick chan struct{} // the map changed or a part ended: reconcile
	stop chan struct{} // closed by finish

	// mu guards what follows, and is held across the check and the send
	// of an event, so a segment's events leave in revision order even
	// while its source part changes.
	mu    sync.Mutex
	ended bool
	pos   map[uint16]wire.WatchPosition
	src   map[uint16]*watchPart
	parts map[*watchPart]struct{}
	wg    sync.WaitGroup // the forwarders and the reconciler; out closes after them
}

// watchPart is one node's stream inside a cluster watch.
type watchPart struct {
	n *node
	s *WatchStream
}

func (b *clusterBackend) watch(ctx context.Context, req wire.WatchRequest) (*WatchStream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx, bound := b.withDeadline(ctx)
	defer bound.release()
	req.Marks = true
	var rs retryState
	for {
		t := b.table.Load()
		var s *WatchStream
		var w *clusterWatch
		var err error
		if req.From != nil {
			s, w = b.resumeWatch(t, req) // every segment opens in the reconciler
		} else {
			s, w, err = b.openWatch(ctx, t, req)
		}
		if err != nil {
			if b.again(ctx, &rs, t.version, retryDecision(0, err, true)) {
				continue // opening a watch changes nothing: safe to repeat
			}
			return nil, err
		}
		b.installMu.Lock()
		b.mu.Lock()
		closed := b.closed
		if !closed {
			b.watches[w] = struct{}{}
		}
		b.mu.Unlock()
		moved := b.table.Load() != t
		b.installMu.Unlock()
		if closed {
			w.finish(nil)
			return nil, ErrClosed
		}
		w.start()
		if moved {
			w.poke() // the map changed while the watch opened: follow it
		}
		return s, nil
	}
}

// resumeWatch makes a watch that starts from the positions of req.From
// (a change-feed cursor): no stream is open yet; the reconciler opens one
// per owner from those positions.
func (b *clusterBackend) resumeWatch(t *routingTable, req wire.WatchRequest) (*WatchStream, *clusterWatch) {
	segs := watchedSegments(t, req)
	s := &WatchStream{events: make(chan WatchEvent, 64), done: make(chan struct{})}
	w := &clusterWatch{b: b, req: req, segs: segs, out: s.events, done: s.done, fail: s.fail,
		kick: make(chan struct{}, 1), stop: make(chan struct{}),
		pos: make(map[uint16]wire.WatchPosition, len(segs)), src: map[uint16]*watchPart{}, parts: map[*watchPart]struct{}{}}
	for _, sg := range segs {
		w.pos[sg] = wire.WatchPosition{Segment: sg}
	}
	for _, p := range req.From {
		if w.watches(p.Segment) {
			w.pos[p.Segment] = p
		}
	}
	w.req.From = nil
	s.stop = func() {
		b.mu.Lock()
		delete(b.watches, w)
		b.mu.Unlock()
		w.finish(nil)
	}
	s.marks = w.positions()
	return s, w
}

// positions copies the per-segment positions.
func (w *clusterWatch) positions() []wire.WatchPosition {
	out := make([]wire.WatchPosition, 0, len(w.pos))
	for _, p := range w.pos {
		out = append(out, p)
	}
	return out
}

// watchedSegments are the segments a request concerns in table t.
func watchedSegments(t *routingTable, req wire.WatchRequest) []uint16 {
	if req.Key != "" {
		return []uint16{uint16(placement.SegmentOf(req.Key, t.total))}
	}
	segs := make([]uint16, t.total)
	for i := range segs {
		segs[i] = uint16(i)
	}
	return segs
}

// openWatch opens the streams of a watch on the owners in t: snapshot
// records and start positions are taken from each segment's owner only.
func (b *clusterBackend) openWatch(ctx context.Context, t *routingTable, req wire.WatchRequest) (*WatchStream, *clusterWatch, error) {
	segs := watchedSegments(t, req)
	var nodes []*node
	for _, sg := range segs {
		n := t.seg[sg]
		if n == nil {
			if req.Key != "" {
				return nil, nil, errNoOwner
			}
			continue // no owner yet: resumed from the start once it has one
		}
		if !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
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
	w := &clusterWatch{b: b, req: req, segs: segs, out: s.events, done: s.done, fail: s.fail,
		kick: make(chan struct{}, 1), stop: make(chan struct{}),
		pos: make(map[uint16]wire.WatchPosition, len(segs)), src: map[uint16]*watchPart{}, parts: map[*watchPart]struct{}{}}
	for _, sg := range segs {
		w.pos[sg] = wire.WatchPosition{Segment: sg} // unowned: from the start
	}
	s.stop = func() {
		b.mu.Lock()
		delete(b.watches, w)
		b.mu.Unlock()
		w.finish(nil)
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
		wp := &watchPart{n: n, s: p}
		w.parts[wp] = struct{}{}
		for _, m := range p.marks {
			if int(m.Segment) < len(t.seg) && t.seg[m.Segment] == n && w.watches(m.Segment) {
				w.pos[m.Segment], w.src[m.Segment] = m, wp
			}
		}
	}
	s.marks = w.positions() // where the events start: a change feed's first cursor
	return s, w, nil
}

// watches reports whether segment sg is one of the watch's.
func (w *clusterWatch) watches(sg uint16) bool {
	if w.req.Key == "" {
		return int(sg) < len(w.segs)
	}
	return sg == w.segs[0]
}

// start runs the forwarders of the parts opened so far and the reconciler.
func (w *clusterWatch) start() {
	w.mu.Lock()
	for p := range w.parts {
		w.forward(p)
	}
	w.wg.Add(1)
	w.mu.Unlock()
	go w.reconcileLoop()
	w.poke() // a segment that had no owner at open is picked up at once
}

// poke asks the reconciler to compare the sources with the current table.
func (w *clusterWatch) poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// forward delivers p's events of the segments p is the source of. Called
// with mu held.
func (w *clusterWatch) forward(p *watchPart) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for ev := range p.s.events {
			if !w.deliver(p, ev) {
				return
			}
		}
		err := p.s.Err()
		w.mu.Lock()
		_, mine := w.parts[p]
		if mine {
			delete(w.parts, p)
			for sg, q := range w.src {
				if q == p {
					delete(w.src, sg) // orphaned: resumed on the owner
				}
			}
		}
		w.mu.Unlock()
		switch {
		case !mine: // closed on purpose
		case errors.Is(err, ErrWatchOverflow):
			w.finish(ErrWatchOverflow) // the consumer fell behind: events were lost
		default:
			w.poke() // a lost node or connection: resume its segments elsewhere
		}
	}()
}

// deliver sends ev if p is its segment's source and ev follows what was
// delivered; false once the watch ended.
func (w *clusterWatch) deliver(p *watchPart, ev WatchEvent) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return false
	}
	if w.src[ev.Segment] != p || ev.Revision <= w.pos[ev.Segment].Revision {
		return true
	}
	select {
	case w.out <- ev:
		w.pos[ev.Segment] = wire.WatchPosition{Segment: ev.Segment, Revision: ev.Revision, Key: ev.Key, Version: ev.Version}
		return true
	case <-w.done:
		return false
	}
}

func (w *clusterWatch) reconcileLoop() {
	defer w.wg.Done()
	b := w.b
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	var delay time.Duration
	for {
		select {
		case <-w.kick:
		case <-retry.C:
		case <-w.stop:
			return
		}
		t := b.table.Load()
		if w.reconcile(t) {
			delay = 0
			continue
		}
		// A segment without a reachable owner: fetch the map (a failover
		// names a new one) and try again, backing off.
		if delay == 0 {
			delay = 20 * time.Millisecond
		} else {
			delay = min(2*delay, 500*time.Millisecond)
		}
		go func() {
			ctx, cancel := context.WithTimeout(b.ctx, b.callTO)
			defer cancel()
			if b.refresh(ctx, t.version) == nil && b.table.Load() != t {
				w.poke()
			}
		}()
		retry.Reset(delay)
	}
}

// reconcile hands every segment whose source is not a stream on its owner
// in t to a stream opened there from the segment's position; false when
// one could not be placed (no owner, or the owner did not answer).
func (w *clusterWatch) reconcile(t *routingTable) bool {
	w.mu.Lock()
	if w.ended {
		w.mu.Unlock()
		return true
	}
	ok := true
	want := map[*node][]wire.WatchPosition{}
	for _, sg := range w.segs {
		var owner *node
		if int(sg) < len(t.seg) {
			owner = t.seg[sg]
		}
		p := w.src[sg]
		if p != nil && p.n == owner {
			continue
		}
		delete(w.src, sg) // stop taking the old source's events now
		if owner == nil {
			ok = false
			continue
		}
		want[owner] = append(want[owner], w.pos[sg])
	}
	var idle []*watchPart
	for p := range w.parts {
		if !w.sourceOfAny(p) {
			idle = append(idle, p)
			delete(w.parts, p)
		}
	}
	w.mu.Unlock()
	for _, p := range idle {
		p.s.Close()
	}
	for n, from := range want {
		req := w.req
		req.Snapshot, req.From = false, from
		ctx, cancel := context.WithTimeout(w.b.ctx, w.b.dialTO+w.b.callTO)
		ps, err := n.be.watch(ctx, req)
		cancel()
		if err != nil {
			ok = false
			continue
		}
		if !w.adopt(t, n, ps) {
			return true // ended meanwhile
		}
	}
	if ok && w.b.table.Load() != t {
		w.poke()
	}
	return ok
}

// sourceOfAny reports whether p is the source of a segment (mu held).
func (w *clusterWatch) sourceOfAny(p *watchPart) bool {
	for _, q := range w.src {
		if q == p {
			return true
		}
	}
	return false
}

// adopt makes ps, a stream resumed on n, the source of its segments:
// resynchronised segments first deliver their WatchResync event. False
// once the watch ended.
func (w *clusterWatch) adopt(t *routingTable, n *node, ps *WatchStream) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		ps.Close()
		return false
	}
	p := &watchPart{n: n, s: ps}
	marks := make(map[uint16]wire.WatchPosition, len(ps.marks))
	for _, m := range ps.marks {
		marks[m.Segment] = m
	}
	for _, rs := range ps.resyncs {
		m := marks[rs.segment] // the records are as of this position
		ev := WatchEvent{Kind: WatchResync, Segment: rs.segment, Records: rs.records,
			Key: m.Key, Version: m.Version, Revision: m.Revision, Epoch: m.Epoch}
		select {
		case w.out <- ev:
		case <-w.done:
			ps.Close()
			return false
		}
	}
	for _, m := range ps.marks {
		if w.watches(m.Segment) && w.src[m.Segment] == nil {
			w.pos[m.Segment], w.src[m.Segment] = m, p
		}
	}
	w.parts[p] = struct{}{}
	w.forward(p)
	return true
}

// finish ends the watch: why (nil after the consumer's Close) is recorded,
// every part is closed, and the events channel is closed once the
// forwarders are gone. Safe to call more than once.
func (w *clusterWatch) finish(why error) {
	w.mu.Lock()
	if w.ended {
		w.mu.Unlock()
		return
	}
	w.ended = true
	parts := w.parts
	w.parts = nil
	close(w.stop)
	w.mu.Unlock()
	if why != nil {
		w.fail(why)
	}
	for p := range parts {
		p.s.Close()
	}
	go func() {
		w.wg.Wait()
		close(w.out)
	}()
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
	ctx, bound := b.withDeadline(ctx)
	defer bound.release()
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
	ctx, bound := b.withDeadline(ctx)
	defer bound.release()
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

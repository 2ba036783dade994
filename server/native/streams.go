package native

import (
	"sync"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/store"
)

// Response streams: a watch or a subscription answers its request with a
// stream of frames carrying the request's id and FlagStream, written by one
// goroutine per stream (the pusher) under the connection's write lock. The
// reader goroutine only starts and ends them, so a slow stream never blocks
// request processing; a consumer that falls behind ends its own stream.

// maxStreamsPerConn bounds the streams one connection may hold open.
const maxStreamsPerConn = 1024

type streamSet struct {
	mu   sync.Mutex // guards m
	m    map[uint32]func()
	wg   sync.WaitGroup
	done bool
}

// add registers a stream's stop function; false when the connection is
// closing or holds too many streams.
func (s *streamSet) add(id uint32, stop func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || len(s.m) >= maxStreamsPerConn {
		return false
	}
	if s.m == nil {
		s.m = map[uint32]func(){}
	}
	if _, dup := s.m[id]; dup {
		return false
	}
	s.m[id] = stop
	s.wg.Add(1)
	return true
}

func (s *streamSet) stop(id uint32) bool {
	s.mu.Lock()
	stop, ok := s.m[id]
	s.mu.Unlock()
	if ok {
		stop()
	}
	return ok
}

func (s *streamSet) finished(id uint32) {
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
	s.wg.Done()
}

// closeAll stops every stream and waits for their pushers.
func (s *streamSet) closeAll() {
	s.mu.Lock()
	s.done = true
	stops := make([]func(), 0, len(s.m))
	for _, f := range s.m {
		stops = append(stops, f)
	}
	s.mu.Unlock()
	for _, f := range stops {
		f()
	}
	s.wg.Wait()
}

func (c *conn) streamItem(dst []byte, id uint32, op wire.Opcode, body func([]byte) []byte) []byte {
	dst, start := wire.BeginFrame(dst, id, op, wire.FlagResponse|wire.FlagStream)
	dst = body(dst)
	return wire.EndFrame(dst, start)
}

// endFrame is a stream's last frame: empty after a normal end, an error
// response when err is not nil.
func endFrame(id uint32, op wire.Opcode, err error) []byte {
	if err != nil {
		return appendError(nil, id, op, kv.StatusUnavailable, err.Error())
	}
	return wire.AppendFrame(nil, id, op, wire.FlagResponse, nil)
}

func (c *conn) watch(f wire.Frame) {
	var req wire.WatchRequest
	if err := wire.DecodeWatchRequest(f.Body, &req); err != nil {
		c.badBody(f, err)
		return
	}
	opts := store.WatchOptions{Key: req.Key, Prefix: req.Prefix,
		Snapshot: req.Snapshot, IncludeValues: req.IncludeValues, Buffer: int(req.Buffer), Marks: req.Marks}
	if req.From != nil {
		opts.From = make([]store.WatchPosition, len(req.From))
		for i, p := range req.From {
			opts.From[i] = store.WatchPosition(p)
		}
	}
	w, snap, err := c.srv.cfg.Store.Watch(opts)
	if err != nil {
		c.out = appendError(c.out, f.ID, f.Op, kv.StatusBadRequest, err.Error())
		return
	}
	id := f.ID
	if !c.streams.add(id, w.Close) {
		w.Close()
		c.out = appendError(c.out, id, f.Op, kv.StatusBadRequest, "too many streams or a duplicate stream id on this connection")
		return
	}
	// The snapshot goes out in this read batch, before any event.
	for i := range snap {
		r := &snap[i]
		it := wire.WatchItem{Kind: wire.WatchItemSnapshot, Key: r.Key(), Version: r.Version(), Revision: r.Revision,
			ExpiresAt: r.ExpiresAt(), KeyKind: uint8(r.Kind)}
		if req.IncludeValues && r.Kind == store.KindString {
			it.Value = r.Value()
		}
		c.out = c.streamItem(c.out, id, f.Op, func(b []byte) []byte { return wire.AppendWatchItem(b, &it) })
	}
	// A resumed watch: the segments whose history was gone, then where
	// each segment's events start (the client's per-segment position).
	for _, rs := range w.Resyncs() {
		it := wire.WatchItem{Kind: wire.WatchItemResync, Segment: rs.Segment}
		c.out = c.streamItem(c.out, id, f.Op, func(b []byte) []byte { return wire.AppendWatchItem(b, &it) })
		for i := range rs.Records {
			r := &rs.Records[i]
			it := wire.WatchItem{Kind: wire.WatchItemResyncRecord, Key: r.Key(), Version: r.Version(), Revision: r.Revision,
				ExpiresAt: r.ExpiresAt(), KeyKind: uint8(r.Kind), Segment: rs.Segment}
			if req.IncludeValues && r.Kind == store.KindString {
				it.Value = r.Value()
			}
			c.out = c.streamItem(c.out, id, f.Op, func(b []byte) []byte { return wire.AppendWatchItem(b, &it) })
		}
	}
	for _, m := range w.Marks() {
		if !req.Marks && req.From == nil {
			break // a client that predates marks would take them for records
		}
		it := wire.WatchItem{Kind: wire.WatchItemMark, Key: m.Key, Version: m.Version, Revision: m.Revision, Segment: m.Segment, Epoch: m.Epoch}
		c.out = c.streamItem(c.out, id, f.Op, func(b []byte) []byte { return wire.AppendWatchItem(b, &it) })
	}
	done := wire.WatchItem{Kind: wire.WatchItemSnapshotDone}
	c.out = c.streamItem(c.out, id, f.Op, func(b []byte) []byte { return wire.AppendWatchItem(b, &done) })
	// The pusher's first write takes the write lock after this batch is
	// flushed only if it is flushed first: flush now to keep the order.
	c.flush()
	go func() {
		defer c.streams.finished(id)
		defer c.guard("Watch pusher")
		var buf []byte
		for ev := range w.Events() {
			buf = buf[:0]
			buf = c.appendEvent(buf, id, f.Op, ev)
			for drained := false; !drained && len(buf) < 64<<10; { // coalesce what is already queued
				select {
				case ev, ok := <-w.Events():
					if !ok {
						drained = true
						break
					}
					buf = c.appendEvent(buf, id, f.Op, ev)
				default:
					drained = true
				}
			}
			if !c.write(buf) {
				w.Close()
			}
		}
		c.write(endFrame(id, f.Op, w.Err()))
	}()
}

func (c *conn) appendEvent(dst []byte, id uint32, op wire.Opcode, ev store.Event) []byte {
	it := wire.WatchItem{Kind: uint8(ev.Kind), Key: ev.Key, Value: ev.Value, Version: ev.Version, Revision: ev.Revision,
		ExpiresAt: ev.ExpiresAt, Command: uint16(ev.Command), KeyKind: uint8(ev.KeyKind), Segment: ev.Segment, Epoch: ev.Epoch}
	return c.streamItem(dst, id, op, func(b []byte) []byte { return wire.AppendWatchItem(b, &it) })
}

func (c *conn) subscribe(f wire.Frame) {
	var req wire.SubscribeRequest
	if err := wire.DecodeSubscribeRequest(f.Body, &req); err != nil {
		c.badBody(f, err)
		return
	}
	if len(req.Channels)+len(req.Patterns) == 0 {
		c.out = appendError(c.out, f.ID, f.Op, kv.StatusBadRequest, "subscribe to at least one channel or pattern")
		return
	}
	sub := c.srv.cfg.Store.PubSub().NewSubscription(int(req.Buffer))
	id := f.ID
	if !c.streams.add(id, sub.Close) {
		sub.Close()
		c.out = appendError(c.out, id, f.Op, kv.StatusBadRequest, "too many streams or a duplicate stream id on this connection")
		return
	}
	sub.Subscribe(req.Channels...)
	sub.PSubscribe(req.Patterns...)
	// An empty first item confirms the subscription is in place: a publish
	// sent after the client saw it is delivered.
	c.out = c.streamItem(c.out, id, f.Op, func(b []byte) []byte { return wire.AppendMessageItem(b, &wire.MessageItem{}) })
	c.flush()
	go func() {
		defer c.streams.finished(id)
		defer c.guard("Subscribe pusher")
		var buf []byte
		for m := range sub.Messages() {
			buf = buf[:0]
			it := wire.MessageItem{Channel: m.Channel, Pattern: m.Pattern, Payload: m.Payload}
			buf = c.streamItem(buf, id, f.Op, func(b []byte) []byte { return wire.AppendMessageItem(b, &it) })
			if !c.write(buf) {
				sub.Close()
			}
		}
		c.write(endFrame(id, f.Op, sub.Err()))
	}()
}

func (c *conn) endStream(f wire.Frame) kv.Reply {
	id, err := wire.DecodeEndStreamRequest(f.Body)
	if err != nil {
		return kv.BadRequest(err.Error())
	}
	if !c.streams.stop(id) {
		return kv.StatusReply(kv.StatusNotFound)
	}
	return kv.OKReply()
}

func (c *conn) publish(f wire.Frame) kv.Reply {
	channel, payload, err := wire.DecodePublishRequest(f.Body)
	if err != nil {
		return kv.BadRequest(err.Error())
	}
	// The payload aliases the read buffer and subscribers keep it: copy.
	n := c.srv.cfg.Store.PubSub().Publish(channel, append([]byte(nil), payload...))
	return kv.IntReply(int64(n))
}

func (c *conn) appendReply(id uint32, op wire.Opcode, r kv.Reply) {
	var start int
	c.out, start = wire.BeginFrame(c.out, id, op, wire.FlagResponse)
	c.out = wire.AppendReply(c.out, &r)
	c.out = wire.EndFrame(c.out, start)
}

package native

import (
	"sync"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
)

// RoutingSource gives the node's current client routing map and tells when
// it changes. The cluster layer implements it; a single node without one
// answers OpRoutingMap with a one-node map of its own.
type RoutingSource interface {
	// RoutingMap returns the current map (nil while the node has none).
	RoutingMap() *wire.RoutingMap
	// Changed returns a channel closed at the next change of the map.
	Changed() <-chan struct{}
}

// StaticRouting is a RoutingSource whose map changes only through Set.
// Single nodes, tests and tools use it.
type StaticRouting struct {
	mu      sync.Mutex // guards m, changed
	m       *wire.RoutingMap
	changed chan struct{}
}

// NewStaticRouting returns a source holding m.
func NewStaticRouting(m *wire.RoutingMap) *StaticRouting {
	return &StaticRouting{m: m, changed: make(chan struct{})}
}

func (s *StaticRouting) RoutingMap() *wire.RoutingMap {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m
}

func (s *StaticRouting) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Set replaces the map and wakes every waiter.
func (s *StaticRouting) Set(m *wire.RoutingMap) {
	s.mu.Lock()
	s.m = m
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// routingMap answers OpRoutingMap: the current map, and with FlagStream in
// the request a stream of maps, one per change (the push of R-CLIENT-3).
func (c *conn) routingMap(f wire.Frame) {
	src := c.srv.cfg.Routing
	if src == nil {
		c.out = appendError(c.out, f.ID, f.Op, kv.StatusBadRequest, "this node has no routing map")
		return
	}
	if !f.Flags.Has(wire.FlagStream) {
		m := src.RoutingMap()
		if m == nil {
			c.out = appendError(c.out, f.ID, f.Op, kv.StatusUnavailable, "no partition map yet")
			return
		}
		c.out = wire.AppendFrame(c.out, f.ID, f.Op, wire.FlagResponse, wire.AppendRoutingMap(nil, m))
		return
	}
	id := f.ID
	stop := make(chan struct{})
	var once sync.Once
	if !c.streams.add(id, func() { once.Do(func() { close(stop) }) }) {
		c.out = appendError(c.out, id, f.Op, kv.StatusBadRequest, "too many streams or a duplicate stream id on this connection")
		return
	}
	go func() {
		defer c.streams.finished(id)
		defer c.guard("RoutingMap pusher")
		var sent uint64
		for {
			changed := src.Changed()
			if m := src.RoutingMap(); m != nil && m.Version != sent {
				sent = m.Version
				frame := wire.AppendFrame(nil, id, f.Op, wire.FlagResponse|wire.FlagStream, wire.AppendRoutingMap(nil, m))
				if !c.write(frame) {
					return
				}
			}
			select {
			case <-changed:
			case <-stop:
				c.write(wire.AppendFrame(nil, id, f.Op, wire.FlagResponse, nil))
				return
			}
		}
	}()
}

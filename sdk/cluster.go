package sdk

// The cluster client (R-CLIENT-2..5). Connect asks the first reachable seed
// for the cluster's routing map (OpRoutingMap); a plain single node has none
// and keeps the one-connection remoteBackend. With a map, every operation
// goes straight to the owner of its key: one placement call, one index into
// the current routingTable, one write on that node's multiplexed connection.
//
// The table is kept honest three ways (R-CLIENT-3):
//   - push: one connection holds an OpRoutingMap stream (FlagStream); the
//     server sends every new map version; when the stream breaks it is
//     re-opened on the next node;
//   - poll: every DefaultMapPollInterval the map is fetched again, so a
//     missed push heals within one interval;
//   - react: an answer whose status says the map is wrong (retryDecision)
//     refreshes the map — single flight, checked again inside the flight —
//     and retries at once, within a bounded number of attempts and the
//     call's deadline. Only transient transport failures back off.
//
// A map is installed only if its version is strictly newer than the
// table's: a version never goes backwards, whichever way it arrived.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/wire"
)

// Cluster client defaults.
const (
	// DefaultMapPollInterval is how often a cluster client fetches the
	// routing map besides the pushed changes (WithMapPollInterval).
	DefaultMapPollInterval = 10 * time.Second
	// DefaultMaxAttempts bounds the attempts of one operation across
	// redirects and transient failures (WithMaxAttempts). With the backoff
	// capped at 500 ms, 32 attempts span about ten seconds — the default call
	// timeout — so a call rides through a failover within its deadline
	// (R-CLIENT-3, R-REP-3) instead of giving up after a fraction of a second.
	DefaultMaxAttempts = 32
)

var (
	// errNoRoutingMap: the node answered OpRoutingMap with BadRequest — a
	// plain single node, served over one connection.
	errNoRoutingMap = errors.New("zaris: the node has no routing map")
	// errNodeRetired: the node left the routing map; its connection was
	// closed after a grace period.
	errNodeRetired = errors.New("zaris: the node left the routing map")
	// errNoOwner: the key's segment has no owner in the client's table —
	// the map is wrong, like a Moved answer.
	errNoOwner = fmt.Errorf("%w: no owner in the routing map", ErrUnavailable)
)

// mapSource says how an installed map arrived.
type mapSource uint8

const (
	fromPush    mapSource = iota + 1 // a server's map stream
	fromPoll                         // the periodic fetch
	fromRefresh                      // the fetch after a redirect
)

// clusterBackend routes every operation to the owner of its key.
type clusterBackend struct {
	cs          ConnString
	tlsConfig   *tls.Config
	dialTO      time.Duration
	callTO      time.Duration
	poll        time.Duration // < 0: no polling
	maxAttempts int
	log         *slog.Logger
	observed    bool // the client has telemetry: count retries on the call's context
	// rf is the cluster's replication factor as the seed reported it at
	// connect (0 = not reported): whether a copy can take over the
	// partitions of an owner that refuses connections (onRefused).
	rf int

	// table is the current routing table; readers Load it and never lock.
	table atomic.Pointer[routingTable]

	// installMu serialises installs (version check, swap, retiring nodes,
	// telling the live watches and subscriptions). Never held during I/O.
	// Lock order: installMu before mu.
	installMu sync.Mutex

	flightMu sync.Mutex     // guards flight
	flight   *refreshFlight // the refresh in progress, if any

	pushing atomic.Pointer[node] // the node whose map stream is followed, once it answered

	ctx    context.Context // ends at close: background work
	cancel context.CancelFunc

	mu      sync.Mutex // guards closed, retired, watches, subs
	closed  bool
	retired map[*node]*time.Timer // nodes left by the map, closed after a grace period
	watches map[*clusterWatch]struct{}
	subs    map[*clusterSub]struct{}
	wg      sync.WaitGroup // the goroutines started by goFunc

	stats struct {
		pushed, polled, refreshed, stale atomic.Uint64
		redirects, retries               atomic.Uint64
		ownerChanges                     atomic.Uint64
	}
}

// refreshFlight is one fetch of the map that concurrent refreshes share.
type refreshFlight struct {
	done chan struct{}
	err  error // set before done is closed
}

// connectRemote bootstraps a remote client: it asks the seeds in order for
// the routing map, and builds a cluster client from the first map, or
// keeps the single-connection backend when the first seed reached has no
// map at all (a plain single node). A member that has no map yet
// (Unavailable: the cluster is forming) is passed over; while only such
// members answer, the seeds are asked again until the dial timeout.
func connectRemote(ctx context.Context, cs ConnString, o clientOptions) (backend, error) {
	seed, err := newRemote(cs)
	if err != nil {
		return nil, err
	}
	seed.observed = o.observed
	deadline := time.Now().Add(seed.dialTO)
	for {
		var errs []error
		forming := false
		for _, ep := range cs.Endpoints {
			c, err := seed.dial(ctx, ep)
			if err != nil {
				var he *HandshakeError
				if errors.As(err, &he) {
					return nil, err // a refusal is configuration, not reachability
				}
				errs = append(errs, err)
				continue
			}
			fctx, cancel := context.WithTimeout(ctx, seed.dialTO)
			m, err := fetchMap(fctx, c)
			cancel()
			switch {
			case err == nil:
				b, err := newCluster(ctx, seed, c, m, o)
				if err != nil {
					c.shutdown(ErrClosed)
					return nil, err
				}
				return b, nil
			case errors.Is(err, errNoRoutingMap):
				seed.adopt(c) // a plain single node: one connection, as always
				return seed, nil
			case errors.Is(err, ErrUnavailable):
				forming = true
			}
			c.shutdown(ErrClosed)
			errs = append(errs, err)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !forming || time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: %w", ErrUnreachable, errors.Join(errs...))
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return nil, ctx.Err()
		}
	}
}

func emptyBody(dst []byte) []byte { return dst }

// fetchMap asks c for its node's current routing map.
func fetchMap(ctx context.Context, c *rconn) (*wire.RoutingMap, error) {
	resp, err := c.roundTrip(ctx, wire.OpRoutingMap, emptyBody)
	if err != nil {
		return nil, err
	}
	if resp.flags.Has(wire.FlagError) {
		var e wire.ErrorResponse
		if err := wire.DecodeErrorResponse(resp.body, &e); err != nil {
			return nil, fmt.Errorf("zaris: undecodable error response: %w", err)
		}
		if e.Status == kv.StatusBadRequest {
			return nil, fmt.Errorf("%w: %s", errNoRoutingMap, e.Message)
		}
		return nil, fmt.Errorf("zaris: %s has no routing map: %w", c.endpoint, &e)
	}
	m := new(wire.RoutingMap)
	if err := wire.DecodeRoutingMap(resp.body, m); err != nil {
		return nil, fmt.Errorf("zaris: undecodable routing map from %s: %w", c.endpoint, err)
	}
	return m, nil
}

// fetchReplicationFactor asks c's node for the cluster's replication
// factor (OpInfo "replication_factor"); 0 when it does not say.
func fetchReplicationFactor(ctx context.Context, c *rconn) int {
	resp, err := c.roundTrip(ctx, wire.OpInfo, emptyBody)
	if err != nil || resp.flags.Has(wire.FlagError) {
		return 0
	}
	var info wire.InfoResponse
	if wire.DecodeInfoResponse(resp.body, &info) != nil {
		return 0
	}
	rf, err := strconv.Atoi(info.Fields["replication_factor"])
	if err != nil || rf < 1 {
		return 0
	}
	return rf
}

// newCluster builds the first table from m, hands the seed's connection c to
// the node it reached, dials the others and starts push and poll.
func newCluster(ctx context.Context, seed *remoteBackend, c *rconn, m *wire.RoutingMap, o clientOptions) (*clusterBackend, error) {
	b := &clusterBackend{cs: seed.cs, tlsConfig: seed.tlsConfig, dialTO: seed.dialTO, callTO: seed.callTO,
		poll: o.mapPoll, maxAttempts: o.maxAttempts, log: o.logger, observed: o.observed,
		retired: map[*node]*time.Timer{}, watches: map[*clusterWatch]struct{}{}, subs: map[*clusterSub]struct{}{}}
	if b.poll == 0 {
		b.poll = DefaultMapPollInterval
	}
	if b.maxAttempts <= 0 {
		b.maxAttempts = DefaultMaxAttempts
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	t, _, err := buildTable(m, c.endpoint, nil, b.newNode)
	if err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, b.dialTO)
	b.rf = fetchReplicationFactor(ictx, c)
	cancel()
	if n := t.byID[c.nodeID]; n != nil {
		n.be.adopt(c) // the seed reached a member: keep that connection
	} else {
		c.shutdown(ErrClosed)
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.table.Store(t)
	// Dial every node now, in parallel, so the first operations do not pay
	// for it; a node that cannot be reached is retried on use.
	var wg sync.WaitGroup
	for _, n := range t.nodes {
		wg.Go(func() { _, _ = n.be.conn(ctx) })
	}
	wg.Wait()
	b.goFunc(b.pushLoop)
	if b.poll > 0 {
		b.goFunc(b.pollLoop)
	}
	return b, nil
}

// newNode makes the node of a new member; its connection is dialled on
// first use.
func (b *clusterBackend) newNode(id, addr string) *node {
	cs := b.cs
	cs.Endpoints = []string{addr}
	return &node{id: id, addr: addr,
		be: &remoteBackend{cs: cs, tlsConfig: b.tlsConfig, dialTO: b.dialTO, callTO: b.callTO, observed: b.observed}}
}

// goFunc runs f on a goroutine that close waits for; false after close.
func (b *clusterBackend) goFunc(f func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
	return true
}

func (b *clusterBackend) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

func (b *clusterBackend) close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	var nodes []*node
	for n, timer := range b.retired {
		timer.Stop()
		nodes = append(nodes, n)
	}
	b.retired = nil
	watches, subs := b.watches, b.subs
	b.watches, b.subs = nil, nil
	b.mu.Unlock()
	b.cancel()
	for w := range watches {
		w.finish(ErrClosed)
	}
	for s := range subs {
		s.fan.finish(ErrClosed)
	}
	b.installMu.Lock() // no install is halfway: the table below is the last
	nodes = append(nodes, b.table.Load().nodes...)
	b.installMu.Unlock()
	for _, n := range nodes {
		n.be.closeWith(ErrClosed)
	}
	b.wg.Wait()
	return nil
}

// --- keeping the table honest ---

// install makes m the routing table if it is newer than the current one.
func (b *clusterBackend) install(m *wire.RoutingMap, from string, how mapSource) bool {
	b.installMu.Lock()
	defer b.installMu.Unlock()
	if b.isClosed() {
		return false
	}
	cur := b.table.Load()
	if m.Version <= cur.version {
		if m.Version < cur.version {
			b.stats.stale.Add(1)
		}
		return false // a version never goes backwards
	}
	t, retired, err := buildTable(m, from, cur, b.newNode)
	if err != nil {
		b.log.Warn("zaris: ignoring a routing map", "version", m.Version, "from", from, "err", err)
		return false
	}
	b.table.Store(t)
	if !sameOwners(cur, t) {
		b.stats.ownerChanges.Add(1)
	}
	switch how {
	case fromPush:
		b.stats.pushed.Add(1)
	case fromPoll:
		b.stats.polled.Add(1)
	case fromRefresh:
		b.stats.refreshed.Add(1)
	}
	b.mu.Lock()
	for _, n := range retired {
		if b.closed {
			n.be.closeWith(ErrClosed)
			continue
		}
		// Calls already on their way to it finish; new ones route by t.
		b.retired[n] = time.AfterFunc(b.callTO, func() {
			b.mu.Lock()
			delete(b.retired, n)
			b.mu.Unlock()
			n.be.closeWith(errNodeRetired)
		})
	}
	watches := make([]*clusterWatch, 0, len(b.watches))
	for w := range b.watches {
		watches = append(watches, w)
	}
	subs := make([]*clusterSub, 0, len(b.subs))
	for s := range b.subs {
		subs = append(subs, s)
	}
	b.mu.Unlock()
	for _, w := range watches {
		w.poke() // segments whose owner changed resume on the new one
	}
	for _, s := range subs {
		s.retarget(t)
	}
	return true
}

// refresh makes sure a map fetch ran after the caller saw version seen:
// single flight (concurrent callers share one fetch) and checked again
// inside the flight, so a burst of redirects costs one round trip.
func (b *clusterBackend) refresh(ctx context.Context, seen uint64) error {
	if b.table.Load().version > seen {
		return nil
	}
	b.flightMu.Lock()
	if b.table.Load().version > seen {
		b.flightMu.Unlock()
		return nil // another flight brought a newer map meanwhile
	}
	f := b.flight
	if f == nil {
		f = &refreshFlight{done: make(chan struct{})}
		if !b.goFunc(func() { b.fly(f) }) {
			b.flightMu.Unlock()
			return ErrClosed
		}
		b.flight = f
	}
	b.flightMu.Unlock()
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fly runs one refresh flight; its context is the client's, so a caller
// giving up does not cancel the others' fetch.
func (b *clusterBackend) fly(f *refreshFlight) {
	f.err = b.fetchAndInstall(fromRefresh)
	b.flightMu.Lock()
	b.flight = nil
	b.flightMu.Unlock()
	close(f.done)
}

// fetchAndInstall asks every member of the table for its map at once and
// installs the first one newer than the table's. Asking all at once, each
// within its own deadline, matters during a failover: a stopped node (a
// long pause, a dead host whose connection has not failed yet) would
// otherwise eat the whole budget before the others were asked. A member
// that answers with the same version is not the last word either: a node
// cut off from the cluster keeps answering the map it last heard, in which
// its ownership is already revoked. When nobody has a newer map, the
// newest one answered is installed (a no-op for the same version); when
// nobody answers, the seeds the client was given are asked.
// refreshGrace is how long a refresh that already has an answer waits for
// the members that have not answered yet.
const refreshGrace = 200 * time.Millisecond

func (b *clusterBackend) fetchAndInstall(how mapSource) error {
	ctx, cancel := context.WithTimeout(b.ctx, b.dialTO+b.callTO)
	defer cancel()
	t := b.table.Load()
	type answer struct {
		m    *wire.RoutingMap
		from string
		err  error
	}
	answers := make(chan answer, len(t.nodes))
	for _, n := range t.nodes {
		if !b.goFunc(func() {
			c, err := n.be.conn(ctx)
			if err != nil {
				answers <- answer{err: fmt.Errorf("%s: %w", n.id, err)}
				return
			}
			m, err := fetchMap(ctx, c)
			if err != nil {
				err = fmt.Errorf("%s: %w", n.id, err)
			}
			answers <- answer{m: m, from: n.addr, err: err}
		}) {
			return ErrClosed
		}
	}
	var (
		errs  []error
		best  answer
		grace <-chan time.Time // after a first answer, the stragglers get this long
	)
collect:
	for range t.nodes {
		var a answer
		select {
		case a = <-answers:
		case <-grace:
			// A member that has not answered by now is likely stopped or
			// cut off: waiting for its deadline would hold every other
			// refresh of this client back with it.
			break collect
		}
		switch {
		case a.err != nil:
			errs = append(errs, a.err)
		case a.m.Version > t.version:
			b.install(a.m, a.from, how)
			return nil // the others end with ctx
		case best.m == nil || a.m.Version > best.m.Version:
			best = a
		}
		if best.m != nil && grace == nil {
			grace = time.After(refreshGrace)
		}
	}
	if best.m != nil {
		b.install(best.m, best.from, how)
		return nil
	}
	if err := ctx.Err(); err != nil && b.ctx.Err() != nil {
		return err
	}
	// No member answered: ask the seeds the client was given.
	sctx, scancel := context.WithTimeout(b.ctx, b.dialTO+b.callTO)
	defer scancel()
	for _, ep := range b.cs.Endpoints {
		m, err := b.fetchFromSeed(sctx, ep)
		if err == nil {
			b.install(m, ep, how)
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("zaris: refreshing the routing map: %w", errors.Join(errs...))
}

func (b *clusterBackend) fetchFromSeed(ctx context.Context, ep string) (*wire.RoutingMap, error) {
	n := b.newNode("", ep)
	defer n.be.closeWith(ErrClosed)
	c, err := n.be.conn(ctx)
	if err != nil {
		return nil, err
	}
	return fetchMap(ctx, c)
}

// pushLoop follows the server's map stream, re-opening it on the next node
// when it breaks (at once if it had run a while, else after a backoff).
func (b *clusterBackend) pushLoop() {
	delay := minBackoff
	for i := 0; ; i++ {
		t := b.table.Load()
		n := t.nodes[i%len(t.nodes)]
		started := time.Now()
		b.followPush(n)
		if b.ctx.Err() != nil {
			return
		}
		if time.Since(started) > maxBackoff {
			delay = minBackoff
			continue
		}
		if !sleep(b.ctx, delay) {
			return
		}
		delay = min(2*delay, maxBackoff)
	}
}

// followPush installs every map n's stream delivers until it ends.
func (b *clusterBackend) followPush(n *node) {
	ctx, cancel := context.WithTimeout(b.ctx, b.dialTO)
	c, err := n.be.conn(ctx)
	cancel()
	if err != nil {
		return
	}
	id, frames, err := c.openStream(wire.OpRoutingMap, wire.FlagStream, emptyBody, 16)
	if err != nil {
		return
	}
	defer b.pushing.Store(nil)
	for {
		select {
		case f, ok := <-frames:
			if !ok || !f.flags.Has(wire.FlagStream) {
				return // the connection was lost, or the server ended the stream
			}
			m := new(wire.RoutingMap)
			if err := wire.DecodeRoutingMap(f.body, m); err != nil {
				b.log.Warn("zaris: undecodable pushed routing map", "node", n.id, "err", err)
				c.endStream(id)
				return
			}
			b.pushing.Store(n)
			b.install(m, n.addr, fromPush)
		case <-b.ctx.Done():
			c.endStream(id)
			return
		}
	}
}

func (b *clusterBackend) pollLoop() {
	tick := time.NewTicker(b.poll)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if err := b.fetchAndInstall(fromPoll); err != nil && b.ctx.Err() == nil {
				b.log.Warn("zaris: polling the routing map", "err", err)
			}
		case <-b.ctx.Done():
			return
		}
	}
}

// --- observability ---

// RoutingStats describes a client's routing (STYLE 12). Cluster is false
// for an embedded client and a client of a plain single node, whose other
// fields are zero.
type RoutingStats struct {
	Cluster       bool
	MapVersion    uint64
	TotalSegments int
	Nodes         []RoutingNodeStats
	// PushNode is the node whose map stream the client follows ("" while
	// no stream is established).
	PushNode string
	// Maps installed by each way: pushed by a server, found by the poll,
	// fetched after a redirect. StaleMaps counts maps refused because their
	// version was older than the table's.
	PushedMaps, PolledMaps, RefreshedMaps, StaleMaps uint64
	// Redirects counts answers that said the map was wrong; Retries every
	// attempt run again (redirects and transient failures).
	Redirects, Retries uint64
	// OwnerChanges counts the maps installed in which some segment has
	// another owner (or none) than in the map before: failovers, moves,
	// joins and removals. A consumer that must act when data changes
	// hands (hybrid.WatchBackplane drops its L1) compares it between two
	// looks.
	OwnerChanges uint64
}

// RoutingNodeStats is one node of the routing table.
type RoutingNodeStats struct {
	ID        string
	Addr      string
	Segments  int  // segments it owns
	Connected bool // its connection is up
}

// Routing reports the client's routing table and counters.
func (c *Client) Routing() RoutingStats {
	b, ok := c.be.(*clusterBackend)
	if !ok {
		return RoutingStats{}
	}
	t := b.table.Load()
	s := RoutingStats{Cluster: true, MapVersion: t.version, TotalSegments: t.total,
		PushedMaps: b.stats.pushed.Load(), PolledMaps: b.stats.polled.Load(), RefreshedMaps: b.stats.refreshed.Load(),
		StaleMaps: b.stats.stale.Load(), Redirects: b.stats.redirects.Load(), Retries: b.stats.retries.Load(),
		OwnerChanges: b.stats.ownerChanges.Load()}
	if n := b.pushing.Load(); n != nil {
		s.PushNode = n.id
	}
	for _, n := range t.nodes {
		c := n.be.live.Load()
		s.Nodes = append(s.Nodes, RoutingNodeStats{ID: n.id, Addr: n.addr, Segments: t.segmentsOf(n), Connected: c != nil && !c.broken()})
	}
	return s
}

// homeOf is the node a channel's messages are published on: the owner of
// the channel name's segment (the same placement as a key's).
func (t *routingTable) homeOf(channel string) *node {
	return t.seg[placement.SegmentOf(channel, t.total)]
}

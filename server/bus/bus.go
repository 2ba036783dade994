// Package bus carries pub/sub across the cluster (R-DS-7, R-RESP-3) on the
// peer port, under its own protocol byte (Proto).
//
// A message published on a node is delivered to that node's subscribers
// and queued once per other member on a persistent connection (a link);
// the receiving node delivers it to its own subscribers. So a PUBLISH costs
// one frame per node, whatever the number of subscribers, and a subscriber
// anywhere receives each message once. Delivery is fire-and-forget, as
// Redis's: a link out of reach for linkDropAfter (5 s) or too far behind
// drops what it cannot send (counted in Stats).
//
// The same links carry cluster settings (notify-keyspace-events): each is
// stamped by the node that set it, every link opens with the sender's
// settings, and the highest (stamp, origin) wins on every node — a node
// that joins or restarts learns the cluster's value from its first peer.
//
// They also carry client-side-caching invalidations (Invalidate, for
// CLIENT TRACKING in server/resp): the keys a node changed, to the members
// its filter names. What a link cannot queue, or drops while its member is
// unreachable, becomes a flush sent first when it can be; and the end of a
// member's link is reported to the receiver (OnLinkLost), whose clients
// may have missed what was in flight.
//
// PUBSUB CHANNELS / NUMSUB / NUMPAT ask every other member over a
// short-lived connection (Query) and merge the answers with the local one.
package bus

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/server/store"
)

// Proto is the bus's protocol byte on the peer port (see
// server/cluster/peer.go for the others).
const Proto byte = 12

// Peer is another member of the cluster.
type Peer struct {
	ID   string
	Addr string // host:port of its peer listener
}

// Config configures a Bus.
type Config struct {
	Self   string
	Broker *store.Broker
	// Peers lists the other members (self excluded).
	Peers func() []Peer
	// Dial opens a peer connection speaking Proto to p.
	Dial func(ctx context.Context, p Peer) (net.Conn, error)
	// OnSetting applies a cluster setting learnt from a peer (never called
	// for one set here through Set).
	OnSetting func(name, value string)
	// OnInvalidate receives a peer's client-side-caching invalidations
	// (Invalidate): the keys that changed, or flush when any key may have.
	OnInvalidate func(keys []string, flush bool)
	// OnLinkLost is called when a peer's link to this node ends (a
	// connection that carried messages, settings or invalidations, not a
	// query): whatever that peer had queued for this node is lost.
	OnLinkLost func()
	Log        *slog.Logger
	// Queue is the frames a link holds while it connects or falls behind
	// (default 16384); beyond it messages are dropped.
	Queue int
	// ResyncEvery, when positive, re-runs Sync on that period until Close:
	// the links also follow a member list that changed without a new map
	// reaching this node's Sync (the first map applied before the node
	// could read it), instead of waiting for the next map.
	ResyncEvery time.Duration
}

// Bus is a node's end of the cluster pub/sub.
type Bus struct {
	cfg Config

	mu       sync.Mutex // guards links, settings, closed
	links    map[string]*link
	settings map[string]setting
	closed   bool
	done     chan struct{} // closed by Close: ends the resync loop
	wg       sync.WaitGroup

	forwarded atomic.Uint64 // frames queued to links
	dropped   atomic.Uint64 // frames a link could not send
	received  atomic.Uint64 // messages delivered from peers
}

type setting struct {
	value  string
	stamp  uint64
	origin string
}

// newer reports whether (stamp, origin) wins over s.
func (s setting) olderThan(stamp uint64, origin string) bool {
	return stamp > s.stamp || stamp == s.stamp && origin > s.origin
}

// New builds a bus; Sync starts its links.
func New(cfg Config) *Bus {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 16384
	}
	b := &Bus{cfg: cfg, links: map[string]*link{}, settings: map[string]setting{}, done: make(chan struct{})}
	if cfg.ResyncEvery > 0 {
		b.wg.Add(1)
		go b.resyncLoop()
	}
	return b
}

func (b *Bus) resyncLoop() {
	defer b.wg.Done()
	t := time.NewTicker(b.cfg.ResyncEvery)
	defer t.Stop()
	for {
		select {
		case <-b.done:
			return
		case <-t.C:
			b.Sync()
		}
	}
}

// Stats are the bus's counters.
type Stats struct {
	Forwarded, Dropped, Received uint64
	Links                        int
}

// Stats returns the bus's counters.
func (b *Bus) Stats() Stats {
	b.mu.Lock()
	n := len(b.links)
	b.mu.Unlock()
	return Stats{Forwarded: b.forwarded.Load(), Dropped: b.dropped.Load(), Received: b.received.Load(), Links: n}
}

// Sync aligns the links to the current members: a link to each peer, none
// to a node that left (a peer whose address changed gets a new link).
func (b *Bus) Sync() {
	peers := b.cfg.Peers()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	want := make(map[string]Peer, len(peers))
	for _, p := range peers {
		if p.ID != b.cfg.Self {
			want[p.ID] = p
		}
	}
	for id, l := range b.links {
		if p, ok := want[id]; !ok || p.Addr != l.peer.Addr {
			close(l.stop)
			delete(b.links, id)
		}
	}
	for id, p := range want {
		if b.links[id] == nil {
			l := &link{b: b, peer: p, q: make(chan []byte, b.cfg.Queue), stop: make(chan struct{})}
			b.links[id] = l
			b.wg.Add(1)
			go l.run()
		}
	}
}

// Forward queues a message published here for every other member (the
// broker's forwarder). It never blocks.
func (b *Bus) Forward(channel string, payload []byte) {
	f := AppendFrame(nil, &Frame{Kind: KindPublish, Channel: channel, Payload: payload})
	b.broadcast(f)
}

func (b *Bus) broadcast(f []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.links {
		select {
		case l.q <- f:
			b.forwarded.Add(1)
		default:
			b.dropped.Add(1)
		}
	}
}

// Invalidate queues client-side-caching invalidations (keys that changed
// here, or flush) for the members to accepts (nil: every member). It never
// blocks. A link that cannot queue them owes its member a flush, queued
// before its next invalidation: a dropped invalidation must not leave a
// client's cached value stale for ever.
func (b *Bus) Invalidate(keys []string, flush bool, to func(peerID string) bool) {
	f := &Frame{Kind: KindInvalidate, Args: keys}
	if flush {
		f.Name, f.Args = "flush", nil
	}
	enc := AppendFrame(nil, f)
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, l := range b.links {
		if to != nil && !to(id) {
			continue
		}
		if l.owesFlush {
			select {
			case l.q <- flushFrame:
				l.owesFlush = false
				b.forwarded.Add(1)
			default:
				b.dropped.Add(1)
				continue
			}
		}
		select {
		case l.q <- enc:
			b.forwarded.Add(1)
		default:
			l.owesFlush = true
			b.dropped.Add(1)
		}
	}
}

var flushFrame = AppendFrame(nil, &Frame{Kind: KindInvalidate, Name: "flush"})

// Set records a cluster setting made on this node and sends it to every
// member.
func (b *Bus) Set(name, value string) {
	b.mu.Lock()
	cur := b.settings[name]
	stamp := max(uint64(time.Now().UnixNano()), cur.stamp+1)
	b.settings[name] = setting{value: value, stamp: stamp, origin: b.cfg.Self}
	b.mu.Unlock()
	b.broadcast(AppendFrame(nil, &Frame{Kind: KindSetting, Name: name, Value: value, Stamp: stamp, Origin: b.cfg.Self}))
}

// Setting returns a cluster setting's value as this node knows it.
func (b *Bus) Setting(name string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.settings[name]
	return s.value, ok
}

func (b *Bus) adopt(f *Frame) {
	b.mu.Lock()
	cur, ok := b.settings[f.Name]
	win := !ok || cur.olderThan(f.Stamp, f.Origin)
	if win {
		b.settings[f.Name] = setting{value: f.Value, stamp: f.Stamp, origin: f.Origin}
	}
	b.mu.Unlock()
	if win && (!ok || cur.value != f.Value) && b.cfg.OnSetting != nil {
		b.cfg.OnSetting(f.Name, f.Value)
	}
}

func (b *Bus) settingFrames() [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([][]byte, 0, len(b.settings))
	for name, s := range b.settings {
		out = append(out, AppendFrame(nil, &Frame{Kind: KindSetting, Name: name, Value: s.value, Stamp: s.stamp, Origin: s.origin}))
	}
	return out
}

// Serve handles one peer connection of protocol Proto (the peer mux's
// handler): published messages, settings, invalidations and queries, until
// it closes.
func (b *Bus) Serve(c net.Conn) {
	br := bufio.NewReaderSize(c, 64<<10)
	link := false // a peer's link, not a query: its end may have lost messages
	defer func() {
		if link && b.cfg.OnLinkLost != nil {
			b.cfg.OnLinkLost()
		}
	}()
	for {
		var f Frame
		if err := ReadFrame(br, &f); err != nil {
			return
		}
		switch f.Kind {
		case KindPublish:
			link = true
			b.received.Add(1)
			b.cfg.Broker.PublishLocal(f.Channel, f.Payload)
		case KindSetting:
			link = true
			b.adopt(&f)
		case KindInvalidate:
			link = true
			b.received.Add(1)
			if b.cfg.OnInvalidate != nil {
				b.cfg.OnInvalidate(f.Args, f.Name == "flush")
			}
		case KindQuery:
			reply := b.answer(&f)
			_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write(AppendFrame(nil, &reply)); err != nil {
				return
			}
		}
	}
}

// Local answers a query about this node's subscriptions.
func (b *Bus) Local(name string, args []string) Frame {
	return b.answer(&Frame{Kind: KindQuery, Name: name, Args: args})
}

func (b *Bus) answer(q *Frame) Frame {
	br := b.cfg.Broker
	r := Frame{Kind: KindReply}
	switch q.Name {
	case "channels":
		pattern := ""
		if len(q.Args) > 0 {
			pattern = q.Args[0]
		}
		r.Args = br.ActiveChannels(pattern)
	case "numsub":
		r.Ints = make([]int64, len(q.Args))
		for i, ch := range q.Args {
			r.Ints[i] = int64(br.NumSub(ch))
		}
	case "numpat":
		r.Args = br.ActivePatterns()
	}
	return r
}

// Query asks every other member the same question, in parallel, and
// returns the answers it got before ctx ended, and how many members did
// not answer.
func (b *Bus) Query(ctx context.Context, name string, args []string) ([]Frame, int) {
	peers := b.cfg.Peers()
	q := AppendFrame(nil, &Frame{Kind: KindQuery, Name: name, Args: args})
	replies := make([]*Frame, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		if p.ID == b.cfg.Self {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = b.ask(ctx, p, q)
		}()
	}
	wg.Wait()
	var out []Frame
	missing := 0
	for i, r := range replies {
		switch {
		case r != nil:
			out = append(out, *r)
		case peers[i].ID != b.cfg.Self:
			missing++
		}
	}
	return out, missing
}

func (b *Bus) ask(ctx context.Context, p Peer, q []byte) *Frame {
	c, err := b.cfg.Dial(ctx, p)
	if err != nil {
		return nil
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write(q); err != nil {
		return nil
	}
	var f Frame
	if err := ReadFrame(bufio.NewReader(c), &f); err != nil || f.Kind != KindReply {
		return nil
	}
	return &f
}

// Close stops every link; safe twice.
func (b *Bus) Close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.done)
		for id, l := range b.links {
			close(l.stop)
			delete(b.links, id)
		}
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// link is the persistent outgoing connection to one member.
type link struct {
	b    *Bus
	peer Peer
	q    chan []byte
	stop chan struct{}
	// owesFlush: an invalidation could not be queued (guarded by Bus.mu).
	owesFlush bool
}

const (
	linkDialTimeout  = 2 * time.Second
	linkWriteTimeout = 5 * time.Second
	linkBackoffMax   = 2 * time.Second
	// linkDropAfter: a link keeps its queue through failed dials for this
	// long after it was last connected (or created). A member that is only
	// slow to accept (a starved node, a link still opening at formation)
	// then gets its messages late rather than never; one that stays out of
	// reach loses them as before.
	linkDropAfter = 5 * time.Second
)

// shouldDrop reports whether a link that has been out of reach since
// downSince drops its queue now.
func shouldDrop(downSince, now time.Time) bool {
	return now.Sub(downSince) >= linkDropAfter
}

func (l *link) run() {
	defer l.b.wg.Done()
	backoff := 20 * time.Millisecond
	downSince := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), linkDialTimeout)
		go func() {
			select {
			case <-l.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		c, err := l.b.cfg.Dial(ctx, l.peer)
		cancel()
		if err == nil {
			backoff = 20 * time.Millisecond
			err = l.pump(c)
			_ = c.Close()
			downSince = time.Now()
		}
		select {
		case <-l.stop:
			return
		default:
		}
		// The peer has been unreachable for linkDropAfter: what waits for
		// it is dropped (pub/sub delivers to the subscribers connected when
		// it is published). A dropped invalidation becomes a flush, sent
		// first when the link is back.
		if shouldDrop(downSince, time.Now()) && l.drain() {
			l.b.oweFlush(l)
		}
		select {
		case <-l.stop:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, linkBackoffMax)
	}
}

// drain drops the queued frames and reports whether an invalidation was
// among them.
func (l *link) drain() (invalidation bool) {
	for {
		select {
		case f := <-l.q:
			l.b.dropped.Add(1)
			if len(f) > 4 && Kind(f[4]) == KindInvalidate {
				invalidation = true
			}
		default:
			return invalidation
		}
	}
}

// oweFlush queues a flush for the link's member, or remembers that it owes
// one when the queue is full.
func (b *Bus) oweFlush(l *link) {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case l.q <- flushFrame:
		l.owesFlush = false
	default:
		l.owesFlush = true
	}
}

// pump writes queued frames to c, each batch in one write, until the link
// stops or the connection fails. It opens with this node's settings.
func (l *link) pump(c net.Conn) error {
	gone := make(chan struct{})
	go func() { // the peer never writes on a link: a read returns when it closes
		var one [1]byte
		_, _ = c.Read(one[:])
		close(gone)
	}()
	bw := bufio.NewWriterSize(c, 64<<10)
	for _, f := range l.b.settingFrames() {
		_, _ = bw.Write(f)
	}
	for {
		_ = c.SetWriteDeadline(time.Now().Add(linkWriteTimeout))
		if err := bw.Flush(); err != nil {
			return err
		}
		select {
		case <-l.stop:
			return nil
		case <-gone:
			return net.ErrClosed
		case f := <-l.q:
			_, _ = bw.Write(f)
		}
	more:
		for bw.Buffered() < 64<<10 {
			select {
			case f := <-l.q:
				_, _ = bw.Write(f)
			default:
				break more
			}
		}
	}
}

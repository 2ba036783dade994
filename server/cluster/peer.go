package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"
)

// The peer port carries every node-to-node stream: raft, map fetches,
// replication (and migration later). The first byte of each connection names its
// protocol, so they share one port (and one TLS configuration).
const (
	PeerRaft     byte = 1 // hashicorp/raft's network transport
	PeerMapFetch byte = 2 // "send me your committed map" (cold start, drift repair)
	// PeerReplication carries one op-log shipping session from a
	// partition's active owner to one replica (server/replication).
	PeerReplication byte = 3
	// PeerPossession is the leader's query before a promotion: what does
	// this node hold of a partition (R-REP-5), and how do its copies keep
	// up (R-REP-7)?
	PeerPossession byte = 4
)

// peerHeaderTimeout bounds the wait for a new connection's protocol byte.
const peerHeaderTimeout = 5 * time.Second

// maxFetchedMap bounds a fetched map's encoding.
const maxFetchedMap = 16 << 20

// Dialer opens a peer connection (TLS-wrapped when the node speaks TLS).
type Dialer func(ctx context.Context, addr string) (net.Conn, error)

// PeerMux accepts connections on the peer listener and hands each to the
// handler of its first byte. Raft's connections go to its stream layer.
type PeerMux struct {
	ln  net.Listener
	log *slog.Logger
	dl  Dialer

	raftConns chan net.Conn
	handlers  map[byte]func(net.Conn) // set before Serve; read-only after

	mu     sync.Mutex // guards closed, conns
	closed bool
	conns  map[net.Conn]struct{}
	done   chan struct{}
	wg     sync.WaitGroup
}

// NewPeerMux wraps ln. Register handlers, then Serve.
func NewPeerMux(ln net.Listener, dial Dialer, log *slog.Logger) *PeerMux {
	if dial == nil {
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	return &PeerMux{ln: ln, log: log, dl: dial, raftConns: make(chan net.Conn),
		handlers: map[byte]func(net.Conn){}, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
}

// Handle registers the handler of protocol b. It must be called before Serve.
func (m *PeerMux) Handle(b byte, h func(net.Conn)) { m.handlers[b] = h }

// Serve accepts until Close; it runs in its own goroutine.
func (m *PeerMux) Serve() {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for {
			c, err := m.ln.Accept()
			if err != nil {
				select {
				case <-m.done:
					return
				default:
				}
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				m.log.Warn("peer listener failed", "err", err)
				return
			}
			if !m.track(c) {
				_ = c.Close()
				return
			}
			m.wg.Add(1)
			go func() {
				defer m.wg.Done()
				m.route(c)
			}()
		}
	}()
}

func (m *PeerMux) track(c net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.conns[c] = struct{}{}
	return true
}

func (m *PeerMux) untrack(c net.Conn) {
	m.mu.Lock()
	delete(m.conns, c)
	m.mu.Unlock()
}

func (m *PeerMux) route(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(peerHeaderTimeout))
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		m.untrack(c)
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if b[0] == PeerRaft {
		// Raft owns the connection from here; its Close untracks it, and
		// the mux's Close still closes it.
		select {
		case m.raftConns <- &trackedConn{Conn: c, m: m}:
		case <-m.done:
			m.untrack(c)
			_ = c.Close()
		}
		return
	}
	defer m.untrack(c)
	defer c.Close()
	h := m.handlers[b[0]]
	if h == nil {
		m.log.Info("peer connection with an unknown protocol byte; closed", "byte", b[0], "remote", c.RemoteAddr().String())
		return
	}
	h(c)
}

// trackedConn is a connection handed over to raft: closing it forgets it.
type trackedConn struct {
	net.Conn
	m    *PeerMux
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.m.untrack(c.Conn) })
	return c.Conn.Close()
}

// Close stops accepting and closes every connection; safe twice.
func (m *PeerMux) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	close(m.done)
	_ = m.ln.Close()
	for c := range m.conns {
		_ = c.Close()
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// Addr is the peer listener's address.
func (m *PeerMux) Addr() net.Addr { return m.ln.Addr() }

// Dial opens a connection to a peer speaking protocol proto.
func (m *PeerMux) Dial(ctx context.Context, addr string, proto byte) (net.Conn, error) {
	c, err := m.dl(ctx, addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetWriteDeadline(dl)
	}
	if _, err := c.Write([]byte{proto}); err != nil {
		_ = c.Close()
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Time{})
	return c, nil
}

// raftLayer is raft's StreamLayer over the mux.
type raftLayer struct {
	m         *PeerMux
	advertise net.Addr
}

var _ raft.StreamLayer = (*raftLayer)(nil)

func (l *raftLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.m.raftConns:
		return c, nil
	case <-l.m.done:
		return nil, net.ErrClosed
	}
}

// Close is a no-op: the mux owns the listener and closes it with the node.
func (l *raftLayer) Close() error { return nil }

func (l *raftLayer) Addr() net.Addr { return l.advertise }

func (l *raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return l.m.Dial(ctx, string(address), PeerRaft)
}

// advertiseAddr is a net.Addr for a host:port string.
type advertiseAddr string

func (a advertiseAddr) Network() string { return "tcp" }
func (a advertiseAddr) String() string  { return string(a) }

// serveMapFetch answers a PeerMapFetch connection with the node's map:
// a 4-byte big-endian length, then the msgpack map (length 0 = no map).
func serveMapFetch(c net.Conn, current func() *PartitionMap) {
	_ = c.SetWriteDeadline(time.Now().Add(peerHeaderTimeout))
	var body []byte
	if m := current(); m != nil {
		b, err := msgpack.Marshal(m)
		if err != nil {
			return
		}
		body = b
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
	_, _ = c.Write(append(hdr[:], body...))
}

// fetchMap asks the node at peer address addr for its committed map.
func (m *PeerMux) fetchMap(ctx context.Context, addr string) (*PartitionMap, error) {
	c, err := m.Dial(ctx, addr, PeerMapFetch)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetReadDeadline(dl)
	}
	var hdr [4]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 {
		return nil, nil
	}
	if n > maxFetchedMap {
		return nil, fmt.Errorf("cluster: fetched map of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c, body); err != nil {
		return nil, err
	}
	var pm PartitionMap
	if err := msgpack.Unmarshal(body, &pm); err != nil {
		return nil, fmt.Errorf("cluster: fetched map: %w", err)
	}
	return &pm, nil
}

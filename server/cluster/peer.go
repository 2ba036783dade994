package cluster

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/zaris-io/zaris/internal/mpsafe"
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

// A connection that knows which node it means names it (issue #8: a new
// node restarted on a dead node's host:port must not answer in its name —
// raft would count a blank node's votes and acknowledgements as the dead
// voter's, the leader would take its empty possession report for the old
// owner's):
//
//	dialer:   proto|peerNamed, len(id), id
//	acceptor: peerAccept                      it is this node: go on
//	          peerRefuse, len(self), self     another node: closed
//
// A connection whose first byte lacks peerNamed names no node (a map fetch
// from a node that does not know whom it asks, raft state written by an
// older run with plain host:port addresses) and is served as before.
const (
	peerNamed  byte = 0x80
	peerAccept byte = 0
	peerRefuse byte = 1
)

// ErrWrongPeer: the node answering at a peer address is not the node the
// dialer named (see WrongPeerError).
var ErrWrongPeer = errors.New("cluster: another node answers at this peer address")

// WrongPeerError is an identity dial refused by the node at Addr: it is
// Got, not Want.
type WrongPeerError struct {
	Addr      string
	Want, Got NodeID
}

func (e *WrongPeerError) Error() string {
	return fmt.Sprintf("cluster: peer %s is node %q, not %q", e.Addr, e.Got, e.Want)
}

func (e *WrongPeerError) Unwrap() error { return ErrWrongPeer }

// PeerTarget is n's peer address naming n: "id@host:port" (a bracketed
// IPv6 host stays bracketed). It is the raft server address of n and what
// Dial takes to check that n, and no other node, answers there.
func PeerTarget(n NodeInfo) string { return string(n.ID) + "@" + PeerAddr(n) }

// SplitPeerTarget splits a peer target into the node id and its host:port.
// A plain host:port names no node (id ""). Node ids never contain '@', and
// host:port never does.
func SplitPeerTarget(target string) (NodeID, string) {
	if id, addr, ok := strings.Cut(target, "@"); ok {
		return NodeID(id), addr
	}
	return "", target
}

// peerHeaderTimeout bounds the wait for a new connection's protocol byte.
const peerHeaderTimeout = 5 * time.Second

// maxFetchedMap bounds a fetched map's encoding.
const maxFetchedMap = 16 << 20

// Dialer opens a peer connection (TLS-wrapped when the node speaks TLS).
type Dialer func(ctx context.Context, addr string) (net.Conn, error)

// PeerMux accepts connections on the peer listener and hands each to the
// handler of its first byte. Raft's connections go to its stream layer. A
// connection naming another node than self is refused.
type PeerMux struct {
	ln   net.Listener
	self NodeID
	log  *slog.Logger
	dl   Dialer

	raftConns chan net.Conn
	handlers  map[byte]func(net.Conn) // set before Serve; read-only after

	mu     sync.Mutex // guards closed, conns, warned
	closed bool
	conns  map[net.Conn]struct{}
	warned map[string]bool // remote host + named id: a refusal logged at Warn once
	done   chan struct{}
	wg     sync.WaitGroup

	misdirected atomic.Uint64 // connections refused: they named another node

	// secret, when it holds a key, makes every connection authenticate
	// before its protocol byte (peerauth.go); refusals counts the
	// connections refused, by reason; refusedLogged remembers the
	// (remote host, reason) pairs already logged, so that a remote that
	// keeps trying fills no log.
	secret        *Secret
	refusals      map[string]*atomic.Uint64 // read-only after NewPeerMux
	refusedMu     sync.Mutex
	refusedLogged map[string]bool
}

// maxRefusedLogged bounds the remembered refused remotes: past it the
// memory starts again (a remote is then logged once more).
const maxRefusedLogged = 4096

// NewPeerMux wraps ln for node self. Register handlers, then Serve.
func NewPeerMux(ln net.Listener, self NodeID, dial Dialer, log *slog.Logger) *PeerMux {
	if dial == nil {
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	m := &PeerMux{ln: ln, self: self, log: log, dl: dial, raftConns: make(chan net.Conn),
		handlers: map[byte]func(net.Conn){}, conns: map[net.Conn]struct{}{}, warned: map[string]bool{},
		done: make(chan struct{}), refusals: map[string]*atomic.Uint64{}, refusedLogged: map[string]bool{}}
	for _, r := range RefuseReasons {
		m.refusals[r] = new(atomic.Uint64)
	}
	return m
}

// UseSecret makes every connection, accepted or dialed, authenticate with
// the keys s holds at the time (peerauth.go); s may be reloaded while the
// mux runs. nil (or a secret without key) leaves the port open. It must be
// called before Serve.
func (m *PeerMux) UseSecret(s *Secret) { m.secret = s }

// Refusals counts the connections refused by reason (RefuseReasons).
func (m *PeerMux) Refusals() map[string]uint64 {
	out := make(map[string]uint64, len(m.refusals))
	for r, n := range m.refusals {
		out[r] = n.Load()
	}
	return out
}

// CountRefusal counts one refusal of reason outside the peer port (gossip).
func (m *PeerMux) CountRefusal(reason string) {
	if n := m.refusals[reason]; n != nil {
		n.Add(1)
	}
}

// firstRefusal reports whether (remote host, what) is logged for the first
// time: refusals are logged once per remote.
func (m *PeerMux) firstRefusal(remote, what string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	key := host + " " + what
	m.refusedMu.Lock()
	defer m.refusedMu.Unlock()
	if m.refusedLogged[key] {
		return false
	}
	if len(m.refusedLogged) >= maxRefusedLogged {
		clear(m.refusedLogged)
	}
	m.refusedLogged[key] = true
	return true
}

// refuse counts and logs (once per remote host and reason) a connection
// refused before its protocol.
func (m *PeerMux) refuse(c net.Conn, reason string, peer NodeID, err error) {
	m.CountRefusal(reason)
	remote := c.RemoteAddr().String()
	if !m.firstRefusal(remote, reason) {
		return
	}
	msg := map[string]string{
		RefuseNoHandshake: "refused a peer connection that did not authenticate: this node requires the cluster secret " +
			"(the remote has no --cluster-secret-file, or is not a node of this cluster)",
		RefuseBadSecret: "refused a peer connection: the remote holds no key of this cluster's secret " +
			"(another cluster, a stale secret file, or an attacker)",
		RefuseMalformed: "refused a peer connection: malformed authentication",
		RefuseTLS:       "refused a peer connection: TLS handshake failed (a peer must present a certificate of the cluster CA)",
	}[reason]
	attrs := []any{"reason", reason, "remote", remote, "self", m.self}
	if peer != "" {
		attrs = append(attrs, "claimed_node", peer)
	}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	m.log.Warn(msg+"; further refusals of this remote are only counted (zaris_peer_auth_refused_total)", attrs...)
}

// Misdirected counts the connections refused because they named another
// node: a sign that some node still takes this address for a node that
// used to live here.
func (m *PeerMux) Misdirected() uint64 { return m.misdirected.Load() }

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
	_ = c.SetDeadline(time.Now().Add(peerHeaderTimeout))
	if tc, ok := c.(*tls.Conn); ok {
		// The certificate check happens here, before any protocol byte,
		// so that a refusal is counted and logged as such.
		if err := tc.Handshake(); err != nil {
			if !errors.Is(err, io.EOF) { // a bare TCP connect (a probe) is no refusal
				m.refuse(c, RefuseTLS, "", err)
			}
			m.untrack(c)
			_ = c.Close()
			return
		}
	}
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		m.untrack(c)
		_ = c.Close()
		return
	}
	peer, ok := m.authenticate(c, &b)
	if !ok {
		m.untrack(c)
		_ = c.Close()
		return
	}
	proto := b[0]
	if proto&peerNamed != 0 {
		proto &^= peerNamed
		if !m.admit(c) {
			m.untrack(c)
			_ = c.Close()
			return
		}
	}
	_ = c.SetDeadline(time.Time{})
	if proto == PeerRaft {
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
	h := m.handlers[proto]
	if h == nil {
		m.log.Info("peer connection with an unknown protocol byte; closed", "byte", b[0], "remote", c.RemoteAddr().String())
		return
	}
	if peer != "" {
		h(&authedConn{Conn: c, peer: peer})
		return
	}
	h(c)
}

// authenticate runs the acceptor's side of the peer authentication when
// the connection opens with it (first byte authHello) or this node
// requires it, and reads the protocol byte after it into b. It reports
// whether the connection goes on, and the node id the dialer proved the
// secret for ("" when the port is open).
func (m *PeerMux) authenticate(c net.Conn, b *[1]byte) (NodeID, bool) {
	keys := m.secret.Keys()
	switch {
	case b[0] == authHello && len(keys) == 0:
		// A node of a secured cluster dials this open one.
		if m.firstRefusal(c.RemoteAddr().String(), "offered-secret") {
			m.log.Warn("refused a peer connection that authenticates with a cluster secret: this node has no "+
				"--cluster-secret-file (give it the cluster's secret to join a secured cluster)",
				"remote", c.RemoteAddr().String(), "self", m.self)
		}
		_, _ = c.Write([]byte{authNoSecret})
		return "", false
	case b[0] == authHello:
		peer, reason, err := acceptAuth(c, keys, m.self)
		if err != nil {
			m.refuse(c, reason, peer, err)
			return "", false
		}
		if _, err := io.ReadFull(c, b[:]); err != nil {
			return "", false
		}
		return peer, true
	case len(keys) > 0:
		_, _ = c.Write([]byte{peerAuthRequired})
		m.refuse(c, RefuseNoHandshake, "", nil)
		return "", false
	}
	return "", true
}

// admit reads the node id a named connection is meant for (under the
// header deadline) and answers: peerAccept when it is this node, else
// peerRefuse and this node's id. It reports whether the connection goes on.
func (m *PeerMux) admit(c net.Conn) bool {
	want, err := readPeerID(c)
	if err != nil {
		return false
	}
	_ = c.SetWriteDeadline(time.Now().Add(peerHeaderTimeout))
	defer c.SetWriteDeadline(time.Time{})
	if want == m.self {
		_, err := c.Write([]byte{peerAccept})
		return err == nil
	}
	m.misdirected.Add(1)
	remote := c.RemoteAddr().String()
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	m.mu.Lock()
	first := !m.warned[host+" "+string(want)]
	m.warned[host+" "+string(want)] = true
	m.mu.Unlock()
	if first {
		m.log.Warn("refused a peer connection meant for another node: this node took over an address another node used "+
			"(or the sender's configuration is wrong); the sender must not count this node as that one",
			"want_node", want, "self", m.self, "remote", remote)
	}
	_, _ = c.Write(appendPeerID([]byte{peerRefuse}, m.self))
	return false
}

// appendPeerID appends id with its one-byte length (ids are at most 255
// bytes; ValidNodeID allows 64).
func appendPeerID(b []byte, id NodeID) []byte {
	return append(append(b, byte(len(id))), id...)
}

func readPeerID(r io.Reader) (NodeID, error) {
	var n [1]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "", err
	}
	id := make([]byte, n[0])
	if _, err := io.ReadFull(r, id); err != nil {
		return "", err
	}
	return NodeID(id), nil
}

// authedConn is a connection whose dialer proved the cluster secret as
// node peer (AuthenticatedPeer).
type authedConn struct {
	net.Conn
	peer NodeID
}

// AuthenticatedPeer is the node id the dialer of conn proved the cluster
// secret for, when conn came through a secured peer port: a handler that
// is told a sender id checks it against this one, so a node of the
// cluster cannot speak in another's name.
func AuthenticatedPeer(conn net.Conn) (NodeID, bool) {
	if a, ok := conn.(*authedConn); ok {
		return a.peer, true
	}
	return "", false
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

// Dial opens a connection speaking protocol proto to the peer target
// "id@host:port" (PeerTarget): only node id may answer, another node at
// that address refuses (*WrongPeerError). A plain "host:port" names no
// node and is not checked.
func (m *PeerMux) Dial(ctx context.Context, target string, proto byte) (net.Conn, error) {
	id, addr := SplitPeerTarget(target)
	return m.DialNode(ctx, addr, id, proto)
}

// DialNode opens a connection speaking protocol proto to node id at peer
// address addr (host:port). It returns once the node there accepted it as
// id; another node refuses it with a *WrongPeerError (errors.Is
// ErrWrongPeer). id "" names no node: the connection is not checked.
func (m *PeerMux) DialNode(ctx context.Context, addr string, id NodeID, proto byte) (net.Conn, error) {
	if proto&peerNamed != 0 || len(id) > 255 {
		return nil, fmt.Errorf("cluster: peer protocol %#x to node %q: invalid", proto, id)
	}
	c, err := m.dl(ctx, addr)
	if err != nil {
		return nil, err
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(peerHeaderTimeout)
	}
	_ = c.SetDeadline(dl)
	if keys := m.secret.Keys(); len(keys) > 0 {
		if _, err := dialAuth(c, keys, m.self); err != nil {
			_ = c.Close()
			m.dialRefused(addr, err)
			return nil, fmt.Errorf("cluster: peer %s (node %q): authentication: %w", addr, id, err)
		}
	}
	hdr := []byte{proto}
	if id != "" {
		hdr = appendPeerID([]byte{proto | peerNamed}, id)
	}
	if _, err := c.Write(hdr); err != nil {
		_ = c.Close()
		return nil, err
	}
	if id != "" {
		if err := readAdmission(c, addr, id); err != nil {
			_ = c.Close()
			m.dialRefused(addr, err)
			return nil, err
		}
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// dialRefused logs, once per peer address, a dial the peer refused for
// the cluster secret: the clear line on the refused side.
func (m *PeerMux) dialRefused(addr string, err error) {
	if !errors.Is(err, ErrPeerAuthRequired) && !errors.Is(err, ErrPeerNoSecret) && !errors.Is(err, ErrPeerBadSecret) {
		return
	}
	if m.firstRefusal(addr, "dial") {
		m.log.Error("a peer refused this node's connection: the cluster secrets differ", "peer", addr, "self", m.self, "err", err)
	}
}

// readAdmission reads the acceptor's answer to a named connection.
func readAdmission(c net.Conn, addr string, id NodeID) error {
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return fmt.Errorf("cluster: peer %s (node %q) closed the connection: %w", addr, id, err)
	}
	switch b[0] {
	case peerAccept:
		return nil
	case peerRefuse:
		got, _ := readPeerID(c)
		return &WrongPeerError{Addr: addr, Want: id, Got: got}
	case peerAuthRequired:
		return fmt.Errorf("cluster: peer %s (node %q): %w", addr, id, ErrPeerAuthRequired)
	}
	return fmt.Errorf("cluster: peer %s (node %q) answered %#x to a named connection", addr, id, b[0])
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

// Dial dials a raft server address: PeerTarget's "id@host:port", so only
// that voter answers, or a plain host:port from an older run's state.
func (l *raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return l.m.Dial(ctx, string(address), PeerRaft)
}

// advertiseAddr is a net.Addr for a peer target (raft's LocalAddr: the
// address other servers record for this one).
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

// fetchMap asks the node at peer target addr ("id@host:port", or a plain
// host:port when the node is not known) for its committed map.
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
	if err := mpsafe.Unmarshal(body, &pm); err != nil {
		return nil, fmt.Errorf("cluster: fetched map: %w", err)
	}
	return &pm, nil
}

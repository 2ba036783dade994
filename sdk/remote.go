package sdk

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
)

// Remote defaults.
const (
	DefaultDialTimeout = 5 * time.Second
	// DefaultCallTimeout bounds a call whose context has no deadline.
	DefaultCallTimeout = 10 * time.Second
	maxBackoff         = 5 * time.Second
	minBackoff         = 50 * time.Millisecond
)

// HandshakeError: the server refused the connection's handshake (wrong
// store name, bad or missing token, unsupported protocol version).
// errors.Is(err, ErrUnauthorized) holds for a token problem and
// errors.Is(err, ErrBadRequest) for the others.
type HandshakeError struct {
	Endpoint string
	Status   Status
	Message  string
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("zaris: %s refused the connection: %v: %s", e.Endpoint, e.Status, e.Message)
}

func (e *HandshakeError) Unwrap() error { return e.Status.Err() }

// ErrUnreachable wraps every failure to reach a server.
var ErrUnreachable = errors.New("zaris: server unreachable")

// errRefused marks an ErrUnreachable where every address of the server
// refused the connection (no process listens: the node is down, not slow).
// It wraps ErrUnavailable: a call that ends on it ends Unavailable.
var errRefused = fmt.Errorf("%w: every address refused the connection", ErrUnavailable)

// remoteBackend talks the native protocol to a server over one multiplexed
// connection, re-dialled with backoff when it breaks.
type remoteBackend struct {
	cs        ConnString
	tlsConfig *tls.Config
	dialTO    time.Duration
	callTO    time.Duration
	observed  bool // the client has telemetry: note the answering node on the call's context

	// live is the connection while it is healthy: the lock-free fast path
	// of conn. Written under mu.
	live atomic.Pointer[rconn]

	mu       sync.Mutex // guards cur, lastErr, retryAt, backoff, closed, closeErr
	cur      *rconn
	lastErr  error
	retryAt  time.Time
	backoff  time.Duration
	closed   bool
	closeErr error // what conn answers once closed: ErrClosed, or errNodeRetired
}

// newRemote returns a backend for cs without dialling.
func newRemote(cs ConnString) (*remoteBackend, error) {
	b := &remoteBackend{cs: cs, dialTO: cs.DialTimeout, callTO: cs.Timeout}
	if b.dialTO == 0 {
		b.dialTO = DefaultDialTimeout
	}
	if b.callTO == 0 {
		b.callTO = DefaultCallTimeout
	}
	if cs.TLS {
		tc, err := clientTLSConfig(cs)
		if err != nil {
			return nil, err
		}
		b.tlsConfig = tc
	}
	return b, nil
}

// adopt makes c, already handshaken, the backend's connection.
func (b *remoteBackend) adopt(c *rconn) {
	b.mu.Lock()
	b.cur = c
	b.live.Store(c)
	b.mu.Unlock()
}

func clientTLSConfig(cs ConnString) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: cs.ServerName}
	if cs.CAFile != "" {
		pem, err := os.ReadFile(cs.CAFile)
		if err != nil {
			return nil, fmt.Errorf("zaris: reading ca=%s: %w", cs.CAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("zaris: ca=%s holds no PEM certificate", cs.CAFile)
		}
		tc.RootCAs = pool
	}
	if cs.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cs.CertFile, cs.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("zaris: loading cert=%s key=%s: %w", cs.CertFile, cs.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// conn returns the live connection, dialling one if needed. While a redial
// is backing off it fails fast with the last dial error.
func (b *remoteBackend) conn(ctx context.Context) (*rconn, error) {
	if c := b.live.Load(); c != nil && !c.broken() {
		return c, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, b.closeErr
	}
	if b.cur != nil && !b.cur.broken() {
		return b.cur, nil
	}
	b.live.Store(nil)
	if b.lastErr != nil && time.Now().Before(b.retryAt) {
		return nil, b.lastErr
	}
	var errs []error
	refused := true
	for _, ep := range b.cs.Endpoints {
		c, err := b.dial(ctx, ep)
		if err == nil {
			b.cur, b.lastErr, b.backoff = c, nil, 0
			b.live.Store(c)
			return c, nil
		}
		var he *HandshakeError
		if errors.As(err, &he) {
			return nil, err // a refusal is configuration, not reachability: no retry
		}
		if callerDone(ctx) {
			// The dialling caller's own context ended: that says nothing
			// about the server. Recorded as the backend's last error it
			// would fail every other caller in the backoff window with a
			// cancellation that is not theirs (a Put lost to a refresh's
			// cancelled dial).
			return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
		}
		refused = refused && errors.Is(err, syscall.ECONNREFUSED)
		errs = append(errs, err)
	}
	b.backoff = min(max(2*b.backoff, minBackoff), maxBackoff)
	b.retryAt = time.Now().Add(b.backoff)
	if refused && len(errs) > 0 {
		// Every address answered "nobody listens here": the server is not
		// slow, it is not running. The call can end now.
		b.lastErr = fmt.Errorf("%w: %w: %w", ErrUnreachable, errRefused, errors.Join(errs...))
	} else {
		b.lastErr = fmt.Errorf("%w: %w", ErrUnreachable, errors.Join(errs...))
	}
	return nil, b.lastErr
}

// callerDone reports whether ctx has ended, its deadline included (a
// context derived from it can report the shared deadline a moment sooner).
func callerDone(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

func (b *remoteBackend) dial(ctx context.Context, ep string) (c *rconn, err error) {
	dctx, cancel := context.WithTimeout(ctx, b.dialTO)
	defer cancel()
	defer func() {
		if err != nil && !callerDone(ctx) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			// The dial timeout ran out, not the caller's context: that is a
			// server out of reach (retried), not an end of the call (%v
			// drops the context error from the chain).
			err = fmt.Errorf("%s: no connection within the dial timeout (%v): %v", ep, b.dialTO, err)
		}
	}()
	d := net.Dialer{KeepAlive: 15 * time.Second}
	nc, err := d.DialContext(dctx, "tcp", ep)
	if err != nil {
		return nil, err
	}
	if tcp, ok := nc.(*net.TCPConn); ok {
		_ = tcp.SetNoDelay(true)
	}
	if b.tlsConfig != nil {
		tc := b.tlsConfig.Clone()
		if tc.ServerName == "" {
			host, _, _ := net.SplitHostPort(ep)
			tc.ServerName = host
		}
		tlsConn := tls.Client(nc, tc)
		if err := tlsConn.HandshakeContext(dctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", ep, err)
		}
		nc = tlsConn
	}
	name := b.cs.clientName
	if name == "" {
		name = "zaris-go-sdk"
	}
	c, err = handshake(dctx, nc, ep, wire.HandshakeRequest{
		ProtocolVersion: wire.ProtocolVersion, Store: b.cs.Store, Token: b.cs.Token, User: b.cs.User, ClientName: name,
	})
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

func (b *remoteBackend) close() error {
	b.closeWith(ErrClosed)
	return nil
}

// closeWith closes the backend: conn answers why from now on, and the
// connection's waiting calls fail with it.
func (b *remoteBackend) closeWith(why error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed, b.closeErr = true, why
	c := b.cur
	b.cur = nil
	b.live.Store(nil)
	b.mu.Unlock()
	if c != nil {
		c.shutdown(why)
	}
}

// call sends one request and waits for its response within the context's
// deadline (or the default call timeout).
func (b *remoteBackend) call(ctx context.Context, op wire.Opcode, body func([]byte) []byte) (response, error) {
	if err := ctx.Err(); err != nil {
		return response{}, err
	}
	c, err := b.conn(ctx)
	if err != nil {
		return response{}, notSent(err)
	}
	if b.observed {
		noteNode(ctx, c)
	}
	ctx, bound := boundBy(ctx, b.callTO)
	defer bound.release()
	return c.roundTrip(ctx, op, body)
}

func (b *remoteBackend) result(ctx context.Context, op wire.Opcode, body func([]byte) []byte) (Result, error) {
	resp, err := b.call(ctx, op, body)
	if err != nil {
		return Result{}, err
	}
	if resp.flags.Has(wire.FlagError) {
		var e wire.ErrorResponse
		if err := wire.DecodeErrorResponse(resp.body, &e); err != nil {
			return Result{}, fmt.Errorf("zaris: undecodable error response: %w", err)
		}
		return Result{Status: e.Status, Detail: e.Message}, nil
	}
	var kr kv.Result
	if err := wire.DecodeResult(resp.body, &kr); err != nil {
		return Result{}, fmt.Errorf("zaris: undecodable %v response: %w", op, err)
	}
	r := resultOf(kr)
	if len(r.Value) == 0 && r.Value != nil {
		r.Value = []byte{}
	}
	return r, nil
}

func keyBody(key string) func([]byte) []byte {
	return func(dst []byte) []byte { return wire.AppendKeyRequest(dst, key) }
}

func (b *remoteBackend) get(ctx context.Context, key string) (Result, error) {
	return b.result(ctx, wire.OpGet, keyBody(key))
}

func (b *remoteBackend) put(ctx context.Context, key string, value []byte, opts *PutOptions) (Result, error) {
	if len(value) > b.maxValue() {
		return tooLarge(len(value), b.frameLimit()), nil // would not fit a frame
	}
	if value == nil {
		value = []byte{}
	}
	return b.result(ctx, wire.OpPut, func(dst []byte) []byte { return wire.AppendPutRequest(dst, key, value, opts.kv()) })
}

func (b *remoteBackend) maxValue() int {
	c := b.live.Load()
	max := wire.DefaultMaxFrameSize
	if c != nil && c.maxFrame > 0 {
		max = c.maxFrame
	}
	return max - 64<<10 // room for the header, key and options
}

// frameLimit names maxValue for a refusal's detail.
func (b *remoteBackend) frameLimit() string {
	return fmt.Sprintf("the %d bytes a frame of this server carries", b.maxValue())
}

func (b *remoteBackend) delete(ctx context.Context, key string) (Result, error) {
	return b.result(ctx, wire.OpDelete, keyBody(key))
}

func (b *remoteBackend) expire(ctx context.Context, key string, ttl time.Duration) (Result, error) {
	return b.result(ctx, wire.OpExpire, func(dst []byte) []byte { return wire.AppendExpireRequest(dst, key, ttl) })
}

func (b *remoteBackend) persist(ctx context.Context, key string) (Result, error) {
	return b.result(ctx, wire.OpPersist, keyBody(key))
}

func (b *remoteBackend) timeToLive(ctx context.Context, key string) (Result, error) {
	return b.result(ctx, wire.OpTTL, keyBody(key))
}

// batch sends the items as Batch frames no larger than the server's frame
// limit and stitches the per-item results back in caller order.
func (b *remoteBackend) batch(ctx context.Context, items []BatchItem) ([]ItemResult, error) {
	out := make([]ItemResult, len(items))
	if _, err := b.batchInto(ctx, items, nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// pick is the caller index of the j-th item of a selection (idx nil: every
// item, in order).
func pick(idx []int, j int) int {
	if idx == nil {
		return j
	}
	return idx[j]
}

// batchInto sends the selected items — items[idx[j]], or every item when
// idx is nil — in Batch frames no larger than the server's frame limit, and
// writes each answer at out[idx[j]], Index idx[j]. It returns how many
// selected items were answered before an error (the first ones).
func (b *remoteBackend) batchInto(ctx context.Context, items []BatchItem, idx []int, out []ItemResult) (int, error) {
	n := len(items)
	if idx != nil {
		n = len(idx)
	}
	limit := b.maxValue()
	for start := 0; start < n; {
		end, size := start, 0
		for end < n {
			it := &items[pick(idx, end)]
			sz := len(it.Key) + len(it.Value) + 64
			if end > start && size+sz > limit {
				break
			}
			size += sz
			end++
		}
		if err := b.batchChunk(ctx, items, idx, start, end, out); err != nil {
			return start, err
		}
		start = end
	}
	return n, nil
}

// batchChunk sends the selected items start..end-1 in one Batch frame.
func (b *remoteBackend) batchChunk(ctx context.Context, items []BatchItem, idx []int, start, end int, out []ItemResult) error {
	for j := start; j < end; j++ {
		i := pick(idx, j)
		out[i] = ItemResult{Index: i, Op: items[i].Op, Key: items[i].Key}
	}
	if first := pick(idx, start); end-start == 1 && len(items[first].Value) > b.maxValue() {
		out[first].Result = tooLarge(len(items[first].Value), b.frameLimit())
		return nil
	}
	resp, err := b.call(ctx, wire.OpBatch, func(dst []byte) []byte {
		dst = wire.AppendBatchRequestHeader(dst, end-start)
		for j := start; j < end; j++ {
			it := &items[pick(idx, j)]
			dst = wire.AppendBatchItem(dst, wire.BatchOp(it.Op), it.Key, it.Value, it.Options.kv())
		}
		return dst
	})
	if err != nil {
		return err
	}
	if resp.flags.Has(wire.FlagError) {
		var e wire.ErrorResponse
		if err := wire.DecodeErrorResponse(resp.body, &e); err != nil {
			return fmt.Errorf("zaris: undecodable error response: %w", err)
		}
		for j := start; j < end; j++ {
			out[pick(idx, j)].Result = Result{Status: e.Status, Detail: e.Message}
		}
		return nil
	}
	results, err := wire.DecodeBatchResult(resp.body, make([]kv.Result, 0, end-start))
	if err != nil {
		return fmt.Errorf("zaris: undecodable batch response: %w", err)
	}
	if len(results) != end-start {
		return fmt.Errorf("zaris: batch of %d items answered with %d results", end-start, len(results))
	}
	for k := range results {
		out[pick(idx, start+k)].Result = resultOf(results[k])
	}
	return nil
}

func (b *remoteBackend) exec(ctx context.Context, cmd kv.Cmd) (kv.Reply, error) {
	resp, err := b.call(ctx, wire.OpCommand, func(dst []byte) []byte { return wire.AppendCommandRequest(dst, &cmd) })
	if err != nil {
		return kv.Reply{}, err
	}
	if resp.flags.Has(wire.FlagError) {
		var e wire.ErrorResponse
		if err := wire.DecodeErrorResponse(resp.body, &e); err != nil {
			return kv.Reply{}, fmt.Errorf("zaris: undecodable error response: %w", err)
		}
		return kv.Reply{Status: e.Status, Message: e.Message}, nil
	}
	var r kv.Reply
	if err := wire.DecodeReply(resp.body, &r); err != nil {
		return kv.Reply{}, fmt.Errorf("zaris: undecodable %v reply: %w", cmd.Op, err)
	}
	return r, nil // resp.body is the caller's own copy: the reply may alias it
}

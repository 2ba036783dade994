package native_test

// The harness for the bad-input tests: a real server on a loopback port, raw
// clients that speak frames by hand with internal/wire, a healthy client
// that keeps checking its own writes in the background, and a capture of the
// server's slog output so a test can count what was logged about one
// connection.
//
// No test synchronises with time.Sleep: waits are read deadlines (the
// behaviour under test is often "nothing happens for a while") or polling
// with a deadline.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/native"
	"github.com/zaris-io/zaris/server/store"
)

const storeName = "default"

// ioWait bounds every client read or write that is expected to succeed.
var ioWait = testscale.D(5 * time.Second)

// ---------------------------------------------------------------- logs

// logSink collects the server's JSON log lines. slog's JSON handler writes
// each record with a single Write, so a line is never torn.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

type logRecord struct {
	Level  slog.Level
	Msg    string
	Remote string
	Line   string
}

func (s *logSink) records() []logRecord {
	s.mu.Lock()
	data := bytes.Clone(s.buf.Bytes())
	s.mu.Unlock()
	var out []logRecord
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var m struct {
			Level  string `json:"level"`
			Msg    string `json:"msg"`
			Remote string `json:"remote"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			panic(fmt.Sprintf("log line is not JSON: %q", line))
		}
		var lv slog.Level
		_ = lv.UnmarshalText([]byte(m.Level))
		out = append(out, logRecord{Level: lv, Msg: m.Msg, Remote: m.Remote, Line: line})
	}
	return out
}

// ---------------------------------------------------------------- server

type harness struct {
	t      testing.TB
	srv    *native.Server
	store  *store.Store
	addr   string
	logs   *logSink
	served chan error
	obs    *countingObserver
}

// newHarness starts a server with short timeouts (each test shortens the one
// it exercises further) and shuts it down at cleanup.
func newHarness(t testing.TB, mutate ...func(*native.Config)) *harness {
	t.Helper()
	st, err := store.New(store.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, store: st, logs: &logSink{}, served: make(chan error, 1), obs: &countingObserver{t: t}}
	cfg := native.Config{
		Store: st, StoreName: storeName, NodeID: "n1", Version: "test",
		HandshakeTimeout: 3 * time.Second,
		FrameTimeout:     3 * time.Second,
		WriteTimeout:     3 * time.Second,
		Logger:           slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Observer:         h.obs,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	h.srv, err = native.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = l.Addr().String()
	go func() { h.served <- h.srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown at cleanup: %v", err)
		}
		if err := <-h.served; !errors.Is(err, native.ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		_ = st.Close()
		if t.Failed() {
			h.logs.mu.Lock()
			t.Logf("server log:\n%s", h.logs.buf.String())
			h.logs.mu.Unlock()
		}
	})
	return h
}

// waitConns polls until the server holds exactly n connections.
func (h *harness) waitConns(n int) {
	h.t.Helper()
	waitFor(h.t, ioWait, fmt.Sprintf("%d open connections", n), func() bool { return h.srv.Connections() == n })
}

// logsAbout returns the records at Info or above about the client whose
// local address is remote.
func (h *harness) logsAbout(remote string) []logRecord {
	var out []logRecord
	for _, r := range h.logs.records() {
		if r.Remote == remote && r.Level >= slog.LevelInfo {
			out = append(out, r)
		}
	}
	return out
}

// expectLoggedOnce asserts that exactly one line at Info or above names
// remote and that it contains want. Call it once the connection is gone
// (waitConns): the server logs before it closes.
func (h *harness) expectLoggedOnce(remote, want string) {
	h.t.Helper()
	recs := h.logsAbout(remote)
	if len(recs) != 1 || !strings.Contains(recs[0].Line, want) {
		var lines []string
		for _, r := range recs {
			lines = append(lines, r.Line)
		}
		h.t.Fatalf("want exactly one log line about %s containing %q, got %d:\n%s", remote, want, len(recs), strings.Join(lines, "\n"))
	}
}

// countingObserver counts executed operations by opcode and status, and
// can hold the connection's reader inside dispatch (see hold).
type countingObserver struct {
	mu     sync.Mutex
	counts map[wire.Opcode]map[kv.Status]int
	times  []timedOp // every op's duration, in order
	hold   atomic.Pointer[holdPoint]
	panics atomic.Int64 // contained panics (native.PanicObserver)
	t      testing.TB
}

type holdPoint struct {
	op      wire.Opcode
	left    atomic.Int64  // ops of that opcode still to pass before the hold
	reached chan struct{} // closed when the reader is held
	release chan struct{}
	once    sync.Once
}

// free lets the held reader go on. Safe to call more than once.
func (hp *holdPoint) free() { hp.once.Do(func() { close(hp.release) }) }

// holdAt makes the nth executed op (1-based) of that opcode block its
// connection's reader — after the op ran and its response was buffered —
// until release is closed.
func (o *countingObserver) holdAt(op wire.Opcode, nth int) *holdPoint {
	hp := &holdPoint{op: op, reached: make(chan struct{}), release: make(chan struct{})}
	hp.left.Store(int64(nth))
	o.hold.Store(hp)
	o.t.Cleanup(hp.free) // a failing test must not leave the reader held
	return hp
}

// timedOp is one op as the observer was told of it.
type timedOp struct {
	op wire.Opcode
	d  time.Duration
}

func (o *countingObserver) Op(_ uint32, op wire.Opcode, st kv.Status, d time.Duration) {
	o.mu.Lock()
	o.times = append(o.times, timedOp{op, d})
	if o.counts == nil {
		o.counts = map[wire.Opcode]map[kv.Status]int{}
	}
	if o.counts[op] == nil {
		o.counts[op] = map[kv.Status]int{}
	}
	o.counts[op][st]++
	o.mu.Unlock()
	if hp := o.hold.Load(); hp != nil && hp.op == op && hp.left.Add(-1) == 0 {
		o.hold.CompareAndSwap(hp, nil)
		close(hp.reached)
		<-hp.release
	}
}

func (o *countingObserver) ConnOpened() {}
func (o *countingObserver) Panicked()   { o.panics.Add(1) }
func (o *countingObserver) ConnClosed() {}

// timed returns the durations observed so far, in order.
func (o *countingObserver) timed() []timedOp {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.times)
}

func (o *countingObserver) count(op wire.Opcode, st kv.Status) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.counts[op][st]
}

// ---------------------------------------------------------------- raw client

// rawClient speaks frames by hand. Its methods fail the test, so they are
// for the test goroutine only.
type rawClient struct {
	t  testing.TB
	nc net.Conn
	fr *wire.FrameReader
	id uint32
}

func (h *harness) dial() *rawClient {
	h.t.Helper()
	nc, err := net.DialTimeout("tcp", h.addr, ioWait)
	if err != nil {
		h.t.Fatal(err)
	}
	c := &rawClient{t: h.t, nc: nc, fr: wire.NewFrameReader(nc, 0)}
	h.t.Cleanup(func() { _ = nc.Close() })
	return c
}

// dialReady dials and completes a valid handshake.
func (h *harness) dialReady() *rawClient {
	h.t.Helper()
	c := h.dial()
	if resp := c.handshake(wire.HandshakeRequest{ProtocolVersion: wire.ProtocolVersion, Store: storeName, ClientName: "test"}); resp.Status != kv.StatusSuccess {
		h.t.Fatalf("handshake: %+v", resp)
	}
	return c
}

// addr is the client's local address: the "remote" the server logs.
func (c *rawClient) addr() string { return c.nc.LocalAddr().String() }

func (c *rawClient) nextID() uint32 { c.id++; return c.id }

func (c *rawClient) write(b []byte) {
	c.t.Helper()
	_ = c.nc.SetWriteDeadline(time.Now().Add(ioWait))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("client write: %v", err)
	}
}

// read returns the next response frame, its body copied.
func (c *rawClient) read() wire.Frame {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(ioWait))
	f, err := c.fr.Next()
	if err != nil {
		c.t.Fatalf("client read: %v", err)
	}
	if !f.Flags.Has(wire.FlagResponse) {
		c.t.Fatalf("frame %d %v without FlagResponse", f.ID, f.Op)
	}
	f.Body = bytes.Clone(f.Body)
	return f
}

func (c *rawClient) handshake(req wire.HandshakeRequest) wire.HandshakeResponse {
	c.t.Helper()
	id := c.nextID()
	c.write(wire.AppendFrame(nil, id, wire.OpHandshake, 0, wire.AppendHandshakeRequest(nil, req)))
	f := c.read()
	if f.ID != id || f.Op != wire.OpHandshake || f.Flags.Has(wire.FlagError) {
		c.t.Fatalf("handshake answered by %d %v %v", f.ID, f.Op, f.Flags)
	}
	var resp wire.HandshakeResponse
	if err := wire.DecodeHandshakeResponse(f.Body, &resp); err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// call sends one request and returns its response, checking id and opcode.
func (c *rawClient) call(op wire.Opcode, body []byte) wire.Frame {
	c.t.Helper()
	id := c.nextID()
	c.write(wire.AppendFrame(nil, id, op, 0, body))
	f := c.read()
	if f.ID != id || f.Op != op {
		c.t.Fatalf("request %d %v answered by %d %v", id, op, f.ID, f.Op)
	}
	return f
}

func (c *rawClient) put(key string, value []byte) kv.Result {
	c.t.Helper()
	return resultOf(c.t, c.call(wire.OpPut, wire.AppendPutRequest(nil, key, value, nil)))
}

func (c *rawClient) get(key string) kv.Result {
	c.t.Helper()
	return resultOf(c.t, c.call(wire.OpGet, wire.AppendKeyRequest(nil, key)))
}

// ping proves the connection is still in sync: a request right after the
// bad input is answered by its own id.
func (c *rawClient) ping() {
	c.t.Helper()
	body := []byte("still-in-sync")
	if f := c.call(wire.OpPing, body); f.Flags.Has(wire.FlagError) || !bytes.Equal(f.Body, body) {
		c.t.Fatalf("ping answered with %v %q", f.Flags, f.Body)
	}
}

func resultOf(t testing.TB, f wire.Frame) kv.Result {
	t.Helper()
	if f.Flags.Has(wire.FlagError) {
		t.Fatalf("%v %d: error response %v", f.Op, f.ID, errorOf(t, f))
	}
	var r kv.Result
	if err := wire.DecodeResult(f.Body, &r); err != nil {
		t.Fatal(err)
	}
	r.Value = bytes.Clone(r.Value)
	return r
}

// errorOf decodes an error response, failing unless f is one.
func errorOf(t testing.TB, f wire.Frame) *wire.ErrorResponse {
	t.Helper()
	if !f.Flags.Has(wire.FlagError) {
		t.Fatalf("%v %d: want an error response, got flags %v", f.Op, f.ID, f.Flags)
	}
	var e wire.ErrorResponse
	if err := wire.DecodeErrorResponse(f.Body, &e); err != nil {
		t.Fatal(err)
	}
	return &e
}

// expectClosed reads until the server closes the connection and returns
// the frames it sent first. The close must come within `within`.
func (c *rawClient) expectClosed(within time.Duration) []wire.Frame {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(within))
	var frames []wire.Frame
	for {
		f, err := c.fr.Next()
		if err == nil {
			f.Body = bytes.Clone(f.Body)
			frames = append(frames, f)
			continue
		}
		if !closedByPeer(err) {
			c.t.Fatalf("want the server to close the connection within %v, got %v (after %d frames)", within, err, len(frames))
		}
		return frames
	}
}

// expectOpen asserts that the server neither sends anything nor closes the
// connection for d.
func (c *rawClient) expectOpen(d time.Duration) {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	var b [1]byte
	n, err := c.nc.Read(b[:])
	var ne net.Error
	if n != 0 || !errors.As(err, &ne) || !ne.Timeout() {
		c.t.Fatalf("want the connection open and silent for %v, got %d bytes, %v", d, n, err)
	}
}

func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// ---------------------------------------------------------------- healthy client

// healthy is a well-behaved client running beside the bad one: it pipelines
// a Put and a Get of its own keys and checks every answer. Its acknowledged
// writes are checked against the store at the end.
type healthy struct {
	h     *harness
	ops   atomic.Int64
	stop  chan struct{}
	done  chan error
	mu    sync.Mutex
	acked map[string]string // key → last acknowledged value
}

func (h *harness) startHealthy() *healthy {
	h.t.Helper()
	return h.startHealthyAs(wire.HandshakeRequest{ProtocolVersion: wire.ProtocolVersion, Store: storeName, ClientName: "healthy"})
}

func (h *harness) startHealthyAs(req wire.HandshakeRequest) *healthy {
	h.t.Helper()
	c := h.dial()
	if resp := c.handshake(req); resp.Status != kv.StatusSuccess {
		h.t.Fatalf("healthy handshake: %+v", resp)
	}
	hc := &healthy{h: h, stop: make(chan struct{}), done: make(chan error, 1), acked: map[string]string{}}
	go func() { hc.done <- hc.run(c.nc) }()
	h.t.Cleanup(func() { hc.halt() })
	return hc
}

func (hc *healthy) run(nc net.Conn) error {
	fr := wire.NewFrameReader(bufio.NewReader(nc), 0)
	var buf []byte
	for i := 0; ; i++ {
		select {
		case <-hc.stop:
			return nil
		default:
		}
		key := fmt.Sprintf("healthy-%d", i%32)
		val := fmt.Sprintf("value-%d", i)
		buf = buf[:0]
		buf = wire.AppendFrame(buf, uint32(2*i+1), wire.OpPut, 0, wire.AppendPutRequest(nil, key, []byte(val), nil))
		buf = wire.AppendFrame(buf, uint32(2*i+2), wire.OpGet, 0, wire.AppendKeyRequest(nil, key))
		_ = nc.SetDeadline(time.Now().Add(ioWait))
		if _, err := nc.Write(buf); err != nil {
			return fmt.Errorf("healthy op %d: write: %w", i, err)
		}
		for j := range 2 {
			f, err := fr.Next()
			if err != nil {
				return fmt.Errorf("healthy op %d: read: %w", i, err)
			}
			if f.ID != uint32(2*i+1+j) || f.Flags.Has(wire.FlagError) {
				return fmt.Errorf("healthy op %d: got frame %d %v %v", i, f.ID, f.Op, f.Flags)
			}
			var r kv.Result
			if err := wire.DecodeResult(f.Body, &r); err != nil {
				return fmt.Errorf("healthy op %d: %w", i, err)
			}
			if !r.OK() || (j == 1 && string(r.Value) != val) {
				return fmt.Errorf("healthy op %d (%s): got %v %q, want %q", i, key, r.Status, r.Value, val)
			}
			if j == 0 {
				hc.mu.Lock()
				hc.acked[key] = val
				hc.mu.Unlock()
			}
		}
		hc.ops.Add(1)
	}
}

// progress waits until the healthy client completes n more round trips,
// failing at once if it stopped on a wrong answer.
func (hc *healthy) progress(n int64) {
	hc.h.t.Helper()
	target := hc.ops.Load() + n
	var failed error
	waitFor(hc.h.t, ioWait, fmt.Sprintf("healthy client reaching %d round trips", target), func() bool {
		select {
		case failed = <-hc.done:
			hc.done <- failed // keep it for halt
			return true
		default:
			return hc.ops.Load() >= target
		}
	})
	if failed != nil || hc.ops.Load() < target {
		hc.h.t.Fatalf("healthy client stopped: %v", failed)
	}
}

func (hc *healthy) halt() error {
	select {
	case <-hc.stop:
	default:
		close(hc.stop)
	}
	err := <-hc.done
	hc.done <- err
	return err
}

// finish stops the healthy client, fails on any wrong answer it saw and
// checks that every write it had acknowledged is in the store.
func (hc *healthy) finish() {
	hc.h.t.Helper()
	if err := hc.halt(); err != nil {
		hc.h.t.Fatalf("healthy client: %v", err)
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if len(hc.acked) == 0 {
		hc.h.t.Fatal("healthy client acknowledged nothing")
	}
	for k, v := range hc.acked {
		if r := hc.h.store.Get(k); !r.OK() || string(r.Value) != v {
			hc.h.t.Fatalf("acknowledged %s=%q, store has %v %q", k, v, r.Status, r.Value)
		}
	}
}

// ---------------------------------------------------------------- helpers

// waitFor polls cond until it holds or within passes.
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	within = testscale.D(within)
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		runtimeYield()
	}
}

// runtimeYield lets other goroutines run between two polls without turning
// the poll into a sleep-based synchronisation: the condition, not the pause,
// decides.
func runtimeYield() { <-time.After(time.Millisecond) }

func frame(id uint32, op wire.Opcode, body []byte) []byte {
	return wire.AppendFrame(nil, id, op, 0, body)
}

package evloop

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// echo is a line-echo connection for the loop: "leave\n" moves it to its
// own goroutine (which then echoes with blocking reads), "bye\n" ends it.
type echo struct {
	t       *testing.T
	m       *Member
	nc      net.Conn
	rd      RawReader
	wr      RawWriter
	buf     []byte
	expire  atomic.Bool
	dropped chan struct{}
	leftOn  chan struct{} // closed when the connection serves on its own goroutine
}

// readLines reads once without waiting and returns the complete lines
// buffered; false when the read failed.
func (e *echo) readLines() ([]string, bool) {
	raw, _ := e.nc.(*Conn).SyscallConn()
	var b [4096]byte
	n, err := e.rd.Try(raw, b[:])
	if err != nil {
		return nil, false
	}
	e.buf = append(e.buf, b[:n]...)
	var lines []string
	for i := bytes.IndexByte(e.buf, '\n'); i >= 0; i = bytes.IndexByte(e.buf, '\n') {
		lines = append(lines, string(e.buf[:i]))
		e.buf = e.buf[i+1:]
	}
	return lines, true
}

func (e *echo) Ready() bool {
	raw, _ := e.nc.(*Conn).SyscallConn()
	lines, ok := e.readLines()
	if !ok {
		return false
	}
	for _, line := range lines {
		switch line {
		case "bye":
			return false
		case "leave":
			e.m.Leave()
			_, err := e.nc.Write([]byte("left\n")) // blocking is allowed now
			return err == nil
		}
		if _, err := e.wr.Try(raw, []byte(line+"\n")); err != nil {
			return false
		}
	}
	return true
}

func (e *echo) ServeLeft(alive bool) {
	close(e.leftOn)
	defer e.nc.Close()
	if !alive {
		return
	}
	r := bufio.NewReader(e.nc)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if _, err := e.nc.Write([]byte("own:" + line)); err != nil {
			return
		}
	}
}

func (e *echo) Drop() {
	_ = e.nc.Close()
	close(e.dropped)
}

func (e *echo) Expired(time.Time) bool { return e.expire.Load() }

type rig struct {
	t     *testing.T
	loop  *Loop
	ln    net.Listener
	mu    sync.Mutex
	conns []*echo
}

func newRig(t *testing.T) *rig {
	t.Helper()
	loops, err := Start(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, loop: loops[0], ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	return r
}

// dial connects a client and registers the server side on the loop.
func (r *rig) dial() (net.Conn, *bufio.Reader, *echo) {
	c, nc := r.connect()
	e := &echo{t: r.t, nc: nc, dropped: make(chan struct{}), leftOn: make(chan struct{})}
	e.m = r.register(nc, e)
	return c, bufio.NewReader(c), e
}

// connect dials the rig's listener: the client's end, and the server's
// wrapped for a loop.
func (r *rig) connect() (client, server net.Conn) {
	r.t.Helper()
	c, err := net.Dial("tcp", r.ln.Addr().String())
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = c.Close() })
	sc, err := r.ln.Accept()
	if err != nil {
		r.t.Fatal(err)
	}
	nc, ok := Wrap(sc)
	if !ok {
		r.t.Fatal("a TCP connection wraps")
	}
	return c, nc
}

// register puts h, serving nc, on the loop.
func (r *rig) register(nc net.Conn, h Handler) *Member {
	r.t.Helper()
	m := r.loop.NewMember(nc, h)
	if !m.Register() {
		r.t.Fatal("register")
	}
	return m
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, send, want string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(send)); err != nil {
		t.Fatal(err)
	}
	got, err := r.ReadString('\n')
	if err != nil || got != want {
		t.Fatalf("sent %q: got %q, %v; want %q", send, got, err, want)
	}
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not happen", what)
	}
}

// The loop serves its connections in turn; one that leaves goes on on
// the goroutine that ran the loop while a new goroutine serves the others.
func TestLoopServesAndLeaves(t *testing.T) {
	r := newRig(t)
	a, ar, ae := r.dial()
	b, br, _ := r.dial()
	roundTrip(t, a, ar, "one\n", "one\n")
	roundTrip(t, b, br, "two\n", "two\n")
	roundTrip(t, a, ar, "leave\n", "left\n")
	waitClosed(t, ae.leftOn, "a serves on its own goroutine")
	if ae.m.OnLoop() {
		t.Fatal("a left the loop")
	}
	roundTrip(t, a, ar, "three\n", "own:three\n") // a's own goroutine, the socket handed back
	roundTrip(t, b, br, "four\n", "four\n")       // the loop's next runner serves b
	r.loop.Stop()                                 // b still registered: Stop only ends the loop
}

// Abort from another goroutine shuts the socket down; the loop reads its
// end and drops the connection — it never closes the descriptor under the
// loop. Expired connections are dropped by the sweep.
func TestLoopAbortAndSweep(t *testing.T) {
	r := newRig(t)
	a, ar, ae := r.dial()
	roundTrip(t, a, ar, "x\n", "x\n")
	if !ae.m.Abort(true) {
		t.Fatal("Abort of a polled socket reports true")
	}
	waitClosed(t, ae.dropped, "the aborted connection dropped")
	if ae.m.Abort(true) {
		t.Fatal("Abort of a dropped connection reports false: the caller closes it")
	}
	_ = a.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := ar.ReadString('\n'); err == nil {
		t.Fatal("the client sees the end of the stream")
	}

	_, _, be := r.dial()
	be.expire.Store(true)
	waitClosed(t, be.dropped, "the expired connection swept") // within SweepEvery of the next wake

	c, cr, ce := r.dial()
	roundTrip(t, c, cr, "y\n", "y\n")
	_, _ = c.Write([]byte("bye\n"))
	waitClosed(t, ce.dropped, "the connection that said bye dropped")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := cr.ReadString('\n'); err == nil || !strings.Contains(err.Error(), "EOF") {
		t.Fatalf("after bye: %v, want EOF", err)
	}
	r.loop.Stop()
	r.loop.Stop() // twice: no-op
}

// A registration on a stopped loop fails and hands the socket back: the
// caller serves it as an ordinary connection.
func TestRegisterOnStoppedLoop(t *testing.T) {
	r := newRig(t)
	r.loop.Stop()
	c, err := net.Dial("tcp", r.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, err := r.ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	nc, _ := Wrap(sc)
	e := &echo{t: t, nc: nc, dropped: make(chan struct{}), leftOn: make(chan struct{})}
	e.m = r.loop.NewMember(nc, e)
	if e.m.Register() {
		t.Fatal("registered on a stopped loop")
	}
	go e.ServeLeft(true)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("z\n")); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != "own:z\n" {
		t.Fatalf("got %q, %v", got, err)
	}
}

// roundEcho is a Flusher: its Ready keeps the echoes, its Flush writes
// them. "wait\n" makes Ready wait for the test (its loop is then busy, so
// what other connections send meanwhile is served in one later round),
// "leave\n" leaves the loop, "fail\n" makes the next Flush fail.
type roundEcho struct {
	echo
	out       []byte
	flushes   atomic.Int32
	release   chan struct{}
	fail      bool
	leaveNext bool // the next Flush leaves the loop first
}

func (e *roundEcho) Ready() bool {
	lines, ok := e.readLines()
	if !ok {
		return false
	}
	for _, line := range lines {
		switch line {
		case "wait":
			<-e.release
		case "fail":
			e.fail = true
			continue
		case "leave-in-flush":
			e.leaveNext = true
			continue
		case "leave":
			e.m.Leave()
			_, err := e.nc.Write([]byte("left\n"))
			return err == nil
		}
		e.out = append(e.out, line+"\n"...)
	}
	return true
}

func (e *roundEcho) Flush() bool {
	e.flushes.Add(1)
	if e.fail {
		return false
	}
	if e.leaveNext {
		e.m.Leave()
		_, err := e.nc.Write(append(e.out, "flush-left\n"...))
		return err == nil
	}
	raw, _ := e.nc.(*Conn).SyscallConn()
	_, err := e.wr.Try(raw, e.out)
	e.out = e.out[:0]
	return err == nil
}

func (r *rig) dialRound() (net.Conn, *bufio.Reader, *roundEcho) {
	c, nc := r.connect()
	e := &roundEcho{echo: echo{t: r.t, nc: nc, dropped: make(chan struct{}), leftOn: make(chan struct{})}, release: make(chan struct{})}
	e.m = r.register(nc, e)
	return c, bufio.NewReader(c), e
}

// oneRound has first and then second send while the holder keeps the loop
// busy, so that the loop's next round serves both, first first.
func oneRound(t *testing.T, hold net.Conn, holder *roundEcho, first net.Conn, firstLine string, second net.Conn, secondLine string) {
	t.Helper()
	if _, err := hold.Write([]byte("wait\n")); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		c    net.Conn
		line string
	}{{first, firstLine}, {second, secondLine}} {
		_ = w.c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := w.c.Write([]byte(w.line)); err != nil {
			t.Fatal(err)
		}
	}
	holder.release <- struct{}{}
}

// alreadyWritten reads want from c, which must be there already: were the
// reply left to the next runner, only that runner's next round (its sweep,
// SweepEvery later) would write it.
func alreadyWritten(t *testing.T, c net.Conn, r *bufio.Reader, want string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(SweepEvery / 2))
	if got, err := r.ReadString('\n'); err != nil || got != want {
		t.Fatalf("a reply of the round a connection left in: %q, %v; want %q", got, err, want)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
}

// TestLoopFlushesARoundTogether: a Flusher's replies are written by the
// loop at the end of the round that read them (D81); a failed Flush drops
// the connection; and a connection that leaves the loop first writes the
// replies its round's other connections left — the new runner would never
// flush them, and their clients would wait for replies already computed.
func TestLoopFlushesARoundTogether(t *testing.T) {
	r := newRig(t)
	hold, _, holder := r.dialRound()
	a, ar, ae := r.dialRound()
	b, br, _ := r.dialRound()

	roundTrip(t, a, ar, "x\n", "x\n")
	if ae.flushes.Load() == 0 {
		t.Fatal("the reply left without a Flush")
	}

	// b leaves in the round that also served a, after a's reply was kept
	// for the round's end; Leave wrote it before b wrote "left".
	oneRound(t, hold, holder, a, "before-leave\n", b, "leave\n")
	if got, err := br.ReadString('\n'); err != nil || got != "left\n" {
		t.Fatalf("b: %q, %v", got, err)
	}
	alreadyWritten(t, a, ar, "before-leave\n")
	roundTrip(t, a, ar, "after\n", "after\n") // the new runner serves a

	roundTrip(t, b, br, "mine\n", "own:mine\n")

	// A connection whose Flush leaves the loop, first in its round: the
	// runner Leave starts writes the round's rest.
	c, cr, _ := r.dialRound()
	oneRound(t, hold, holder, c, "leave-in-flush\n", a, "behind\n")
	if got, err := cr.ReadString('\n'); err != nil || got != "flush-left\n" {
		t.Fatalf("c: %q, %v", got, err)
	}
	alreadyWritten(t, a, ar, "behind\n")
	roundTrip(t, c, cr, "mine\n", "own:mine\n")

	if _, err := a.Write([]byte("fail\nlost\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ae.dropped:
	case <-time.After(5 * time.Second):
		t.Fatal("a connection whose Flush failed was not dropped")
	}
}

// TestBusyLoopYields: a loop kept busy by a client that never pauses
// still lets the scheduler switch every yieldEvery. The failure it
// prevents: a runner that never yields is preempted by the runtime's
// monitor every 10 ms — a signal, its P taken while it sits in a system
// call, the monitor polling every 20 µs again — thousands of context
// switches a second under a pipelined load (issue #17).
func TestBusyLoopYields(t *testing.T) {
	r := newRig(t)
	c, cr, _ := r.dial()
	roundTrip(t, c, cr, "warm\n", "warm\n")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the client: lines out, replies drained, no pause
		defer close(done)
		go func() { _, _ = io.Copy(io.Discard, cr) }()
		line := []byte(strings.Repeat("x", 64) + "\n")
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.Write(line); err != nil {
				return
			}
		}
	}()
	defer func() { close(stop); <-done }()
	before := r.loop.yields.Load()
	deadline := time.Now().Add(30 * time.Second)
	for r.loop.yields.Load() < before+3 {
		if time.Now().After(deadline) {
			t.Fatalf("a busy loop yielded %d times in 30 s", r.loop.yields.Load()-before)
		}
		time.Sleep(time.Millisecond) // poll interval
	}
}

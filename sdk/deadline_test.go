package sdk_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/sdk"
)

// muteProxy forwards a client's connections to a real server; while muted
// it drops what the server sends back (the server still applies the
// requests): a server that stopped answering, on real sockets.
type muteProxy struct {
	addr  string
	muted atomic.Bool
}

func startMuteProxy(t *testing.T, target string) *muteProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &muteProxy{addr: l.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(out, in); out.Close() }()
			go func() {
				defer wg.Done()
				buf := make([]byte, 64<<10)
				for {
					n, err := out.Read(buf)
					if n > 0 && !p.muted.Load() {
						if _, werr := in.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						in.Close()
						return
					}
				}
			}()
		}
	}()
	return p
}

// TestDefaultCallTimeoutExpiresEachCallAtItsOwnDeadline: a call whose
// context has no deadline ends with context.DeadlineExceeded after the
// connection string's timeout when the server stops answering — each call
// at its own deadline, counted from its own start (the connection's expiry
// timer, not a timer per call) — and the connection serves the next call
// once answers flow again.
func TestDefaultCallTimeoutExpiresEachCallAtItsOwnDeadline(t *testing.T) {
	ts := startServer(t)
	p := startMuteProxy(t, ts.addr)
	const timeout = 300 * time.Millisecond
	c, err := sdk.Connect(context.Background(), "zaris://"+p.addr+"/default?timeout=300ms")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Put(context.Background(), "k", []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	p.muted.Store(true)

	type outcome struct {
		err     error
		elapsed time.Duration
	}
	call := func() <-chan outcome {
		ch := make(chan outcome, 1)
		start := time.Now()
		go func() {
			_, err := c.Get(context.Background(), "k")
			ch <- outcome{err, time.Since(start)}
		}()
		return ch
	}
	first := call()
	// The second call starts once the first has waited a while, so its
	// deadline is later than the one the expiry timer was armed for.
	time.Sleep(timeout / 2) // spacing the starts, not synchronisation
	second := call()
	for i, ch := range []<-chan outcome{first, second} {
		o := <-ch
		if !errors.Is(o.err, context.DeadlineExceeded) {
			t.Fatalf("call %d: err = %v, want context.DeadlineExceeded", i+1, o.err)
		}
		if o.elapsed < timeout {
			t.Fatalf("call %d ended after %v, before its timeout %v", i+1, o.elapsed, timeout)
		}
		if o.elapsed > timeout+5*time.Second {
			t.Fatalf("call %d ended after %v, long past its timeout %v", i+1, o.elapsed, timeout)
		}
	}

	p.muted.Store(false)
	r, err := c.Get(context.Background(), "k")
	if err != nil || string(r.Value) != "v" {
		t.Fatalf("after the timed-out calls: %+v %v", r, err)
	}
}

// TestCallerCancellationEndsAWaitUnderTheDefaultTimeout: a caller's
// context without a deadline still ends the wait when it is cancelled.
func TestCallerCancellationEndsAWaitUnderTheDefaultTimeout(t *testing.T) {
	ts := startServer(t)
	p := startMuteProxy(t, ts.addr)
	c, err := sdk.Connect(context.Background(), "zaris://"+p.addr+"/default?timeout=1m")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p.muted.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Put(ctx, "k", []byte("v"), nil)
		done <- err
	}()
	// Once the server holds the write, the call waits for the answer the
	// proxy drops.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if r := ts.store.Get("k"); r.Status == sdk.StatusSuccess {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the write never reached the server")
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled call kept waiting for the one-minute timeout")
	}
}

package sdk

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// silentServer accepts connections and never answers the handshake: every
// dial to it waits until its context ends.
func silentServer(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return ln
}

// A dial that failed because its own caller's context ended says nothing
// about the server: the next caller dials for itself instead of inheriting
// that cancellation for the backoff window. (Under load a Put failed with
// "server unreachable: dial …: operation was canceled" — another caller's
// cancelled dial recorded as the backend's last error, and a cancellation
// is final for the retry rules.)
func TestCancelledDialDoesNotFailTheNextCaller(t *testing.T) {
	ln := silentServer(t)
	b, err := newRemote(ConnString{Endpoints: []string{ln.Addr().String()}, Store: "default", DialTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.close() })

	cancelled, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }() // ends the first caller's dial mid-handshake
	if _, err := b.conn(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("first caller: %v, want its own cancellation", err)
	}

	ctx, stop := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer stop()
	_, err = b.conn(ctx)
	if errors.Is(err, context.Canceled) {
		t.Fatalf("second caller got the first caller's cancellation: %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second caller: %v, want its own deadline (it dialled itself)", err)
	}
}

// A dial timeout is the server out of reach, not the end of the caller's
// call: the error is ErrUnreachable without a context error in its chain
// (a context error is final for the retry rules, and the call would end
// long before its own deadline).
func TestDialTimeoutIsUnreachableNotTheCallersDeadline(t *testing.T) {
	ln := silentServer(t)
	b, err := newRemote(ConnString{Endpoints: []string{ln.Addr().String()}, Store: "default", DialTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = b.conn(ctx)
	if !errors.Is(err, ErrUnreachable) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Fatalf("dial timeout: %v; want ErrUnreachable without a context error", err)
	}
	if got := retryDecision(0, err, true); got != retryTransient {
		t.Fatalf("a read after a dial timeout: retry %v, want transient", got)
	}
}

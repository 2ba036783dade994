package sdk

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/native"
	"github.com/zaris-io/zaris/server/store"
)

// writeCounter counts the writes a connection makes.
type writeCounter struct {
	net.Conn
	writes atomic.Int64
}

func (w *writeCounter) Write(b []byte) (int, error) {
	w.writes.Add(1)
	return w.Conn.Write(b)
}

// TestConcurrentCallsShareWrites: requests of callers waiting on one
// connection at the same time go out together, not a write each — the
// writer yields once when others wait, so the callers just answered can
// append theirs first. 64 callers × 50 Gets on a real server: every call
// answered, in well under one write a call (one each without the yield:
// the writer woke for every request).
func TestConcurrentCallsShareWrites(t *testing.T) {
	st, err := store.New(store.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := native.New(native.Config{Store: st, StoreName: "default"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	st.Put("k", []byte("v"), nil)

	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	wc := &writeCounter{Conn: nc}
	c, err := handshake(context.Background(), wc, ln.Addr().String(), wire.HandshakeRequest{ProtocolVersion: wire.ProtocolVersion, Store: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.shutdown(ErrClosed)
	handshakeWrites := wc.writes.Load()

	const callers, each = 64, 50
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range callers {
		wg.Go(func() {
			for range each {
				resp, err := c.roundTrip(context.Background(), wire.OpGet, func(dst []byte) []byte { return wire.AppendKeyRequest(dst, "k") })
				if err != nil || resp.flags.Has(wire.FlagError) {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d calls failed", n)
	}
	writes := wc.writes.Load() - handshakeWrites
	t.Logf("%d calls in %d writes", callers*each, writes)
	if writes*2 > callers*each {
		t.Fatalf("%d calls took %d writes: concurrent requests are not sharing writes", callers*each, writes)
	}
}

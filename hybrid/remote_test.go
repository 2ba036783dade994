package hybrid_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/hybrid"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/native"
	"github.com/zaris-io/zaris/server/store"
)

// startServer runs a real native-protocol server on a loopback port and
// returns its connection string: L2 over TCP, exactly as in production.
func startServer(t testing.TB) string {
	t.Helper()
	st, err := store.New(store.DefaultConfig())
	require.NoError(t, err)
	srv, err := native.New(native.Config{Store: st, StoreName: "l2", NodeID: "n1", Version: "test"})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
		_ = st.Close()
	})
	return "zaris://" + l.Addr().String() + "/l2"
}

func remoteInstance(t *testing.T, conn string) *instance {
	t.Helper()
	ctx := context.Background()
	l2, err := sdk.Connect(ctx, conn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l2.Close() })
	bp, err := hybrid.NewJournalBackplane(ctx, l2, hybrid.JournalOptions{PollInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = bp.Close() })
	l1 := connect(t, nil, nil)
	h := hybrid.New(l1, l2, hybrid.Options{Backplane: bp})
	t.Cleanup(func() { _ = h.Close() })
	return &instance{h: h, l1: l1, l2: l2}
}

// The whole read path, tags and the journal backplane against a server
// over TCP, through nothing but the public SDK.
func TestAgainstRealServer(t *testing.T) {
	conn := startServer(t)
	a, b := remoteInstance(t, conn), remoteInstance(t, conn)
	ctx := context.Background()

	var calls atomic.Int64
	slow := func(context.Context) (string, error) {
		calls.Add(1)
		<-time.After(20 * time.Millisecond) // a slow database
		return "loaded", nil
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := hybrid.GetOrCreate(ctx, a.h, "k", slow, nil, "catalog")
			assert.NoError(t, err)
			assert.Equal(t, "loaded", v)
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(1), calls.Load())
	assert.True(t, rawL2(t, a, "k").OK(), "in the server")

	v, err := hybrid.GetOrCreate(ctx, b.h, "k", slow, nil, "catalog")
	require.NoError(t, err)
	assert.Equal(t, "loaded", v)
	assert.Equal(t, uint64(1), b.h.Stats().L2Hits)

	require.NoError(t, a.h.Set(ctx, "k", "set-by-a", nil, "catalog"))
	eventually(t, "b sees the Set through the journal", func() bool {
		v, ok, err := hybrid.TryGet[string](ctx, b.h, "k", nil)
		return err == nil && ok && v == "set-by-a"
	})

	require.NoError(t, a.h.RemoveByTag(ctx, "catalog"))
	eventually(t, "b's copy is invalidated", func() bool {
		_, ok, err := hybrid.TryGet[string](ctx, b.h, "k", nil)
		return err == nil && !ok
	})

	require.NoError(t, b.h.Set(ctx, "gone", 1, nil))
	require.NoError(t, b.h.Remove(ctx, "gone"))
	assert.Equal(t, sdk.StatusNotFound, rawL2(t, b, "gone").Status)
}

// BenchmarkL2HitRemote: L1 disabled, L2 a server on loopback TCP.
func BenchmarkL2HitRemote(b *testing.B) {
	conn := startServer(b)
	ctx := context.Background()
	l2, err := sdk.Connect(ctx, conn)
	require.NoError(b, err)
	b.Cleanup(func() { _ = l2.Close() })
	l1 := connect(b, nil, nil)
	h := hybrid.New(l1, l2, hybrid.Options{Flags: hybrid.DisableLocalCache})
	b.Cleanup(func() { _ = h.Close() })
	_, err = hybrid.GetOrCreate(ctx, h, benchKey, loadProduct, nil)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		v, err := hybrid.GetOrCreate(ctx, h, benchKey, loadProduct, nil)
		sink(b, v, err)
	}
}

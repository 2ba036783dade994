// Package testenv is test support shared by the packages built on the SDK:
// a client on a fresh private store, embedded or behind a real
// native-protocol server on a loopback port, so one suite runs against both
// backends without each package writing its own server harness.
//
// Only tests import it.
package testenv

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/native"
	"github.com/zaris-io/zaris/server/store"
)

var seq atomic.Int64

// Client opens a client on a fresh, private store named after prefix (cfg
// nil = the default store configuration): embedded, or with remote set,
// behind its own server over TCP. Everything is closed at cleanup.
func Client(t testing.TB, remote bool, prefix string, cfg *store.Config) *sdk.Client {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("%s-test-%d", prefix, seq.Add(1))
	if !remote {
		var opts []sdk.Option
		if cfg != nil {
			opts = append(opts, sdk.WithEmbeddedConfig(*cfg))
		}
		c, err := sdk.Connect(ctx, "zaris://inproc/"+name, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	sc := store.DefaultConfig()
	if cfg != nil {
		sc = *cfg
	}
	st, err := store.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	addr := Serve(t, st, name)
	c, err := sdk.Connect(ctx, "zaris://"+addr+"/"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		st.Close() // after the server's cleanup (registered first, runs last)
	})
	return c
}

// Serve runs a native-protocol server for st, named storeName, on a loopback
// port and returns its address; it is shut down at cleanup.
func Serve(t testing.TB, st *store.Store, storeName string, mutate ...func(*native.Config)) string {
	t.Helper()
	cfg := native.Config{Store: st, StoreName: storeName, NodeID: "n1", Version: "test", Logger: slog.New(slog.DiscardHandler)}
	for _, m := range mutate {
		m(&cfg)
	}
	srv, err := native.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	})
	return l.Addr().String()
}

// Eventually polls cond until it holds, failing t with what when within
// (scaled by ZARIS_TEST_TIME_SCALE) passes first: a poll with a deadline,
// never a sleep as synchronisation.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testscale.Eventually(t, within, time.Millisecond, what, cond)
}

// Scaled is d scaled by ZARIS_TEST_TIME_SCALE: every test deadline goes
// through it (internal/testscale).
func Scaled(d time.Duration) time.Duration { return testscale.D(d) }

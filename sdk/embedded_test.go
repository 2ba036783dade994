package sdk

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zaris-io/zaris/server/store"
)

func TestInprocSameNameSharesDifferentNamesIsolate(t *testing.T) {
	ctx := context.Background()
	a, err := Connect(ctx, "zaris://inproc/shared")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Connect(ctx, "zaris://inproc/shared")
	other, _ := Connect(ctx, "zaris://inproc/other")
	defer other.Close()
	a.Put(ctx, "k", []byte("from a"), nil)
	if r, _ := b.Get(ctx, "k"); string(r.Value) != "from a" {
		t.Fatalf("same name not shared: %+v", r)
	}
	if r, _ := other.Get(ctx, "k"); r.Status != StatusNotFound {
		t.Fatalf("different name not isolated: %+v", r)
	}
	// The store lives while one client is open...
	a.Close()
	if r, _ := b.Get(ctx, "k"); string(r.Value) != "from a" {
		t.Fatalf("store dropped while a client was open: %+v", r)
	}
	// ...and is released with the last one.
	b.Close()
	c, _ := Connect(ctx, "zaris://inproc/shared")
	defer c.Close()
	if r, _ := c.Get(ctx, "k"); r.Status != StatusNotFound {
		t.Fatalf("store survived its last client: %+v", r)
	}
}

func TestEmbeddedSweeperRuns(t *testing.T) {
	ctx := context.Background()
	cfg := store.DefaultConfig()
	cfg.SweepInterval = 5 * time.Millisecond
	c, err := Connect(ctx, "zaris://inproc/sweeper", WithEmbeddedConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 100 {
		c.Put(ctx, string(rune('a'+i%26))+time.Now().String(), []byte("v"), &PutOptions{TTL: 10 * time.Millisecond})
	}
	st := c.be.(*embeddedBackend).st
	deadline := time.Now().Add(5 * time.Second)
	for st.Stats().Items != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("sweeper never removed expired keys: %+v", st.Stats())
		}
		time.Sleep(2 * time.Millisecond)
	}
	if st.Stats().Expired == 0 {
		t.Fatal("items gone but no expiry counted")
	}
}

func TestEmbeddedConfigIsValidated(t *testing.T) {
	cfg := store.DefaultConfig()
	cfg.MaxMemoryBytes = 0
	_, err := Connect(context.Background(), "zaris://inproc/badcfg", WithEmbeddedConfig(cfg))
	if !errors.Is(err, store.ErrInvalidConfig) {
		t.Fatalf("err = %v", err)
	}
}

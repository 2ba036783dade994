// Command hybrid demonstrates the two-tier cache (R-SDK-2): two application
// instances, each with its own in-process L1, share one L2 and a pub/sub
// backplane over it (invalidations ride the store's publish/subscribe). By
// default L2 is an embedded store standing in for the cluster; pass
// -l2 zaris://host:7861/<store> to use a real server.
//
//	go run ./examples/hybrid
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/hybrid"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/store"
)

type Product struct {
	ID    int
	Name  string
	Price float64
}

// database is the slow source of truth the cache protects.
type database struct {
	loads atomic.Int64
	down  atomic.Bool
}

func (db *database) loadProduct(ctx context.Context, id int) (Product, error) {
	db.loads.Add(1)
	select {
	case <-time.After(100 * time.Millisecond): // a slow query
	case <-ctx.Done():
		return Product{}, ctx.Err()
	}
	if db.down.Load() {
		return Product{}, errors.New("database unavailable")
	}
	return Product{ID: id, Name: fmt.Sprintf("product %d", id), Price: 9.99}, nil
}

func main() {
	l2conn := flag.String("l2", "zaris://inproc/demo-l2", "L2 connection string (the cluster)")
	flag.Parse()
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

	db := &database{}
	opts := hybrid.Options{
		Expiration:           2 * time.Second,
		LocalCacheExpiration: time.Minute, // clamped to Expiration
		FailSafeMaxDuration:  time.Hour,
		FactoryHardTimeout:   5 * time.Second,
		Logger:               logger,
	}
	a := newInstance(ctx, "a", *l2conn, opts)
	defer a.close()
	b := newInstance(ctx, "b", *l2conn, opts)
	defer b.close()

	// 1. Stampede: 20 concurrent requests for a cold key, one database load.
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := hybrid.GetOrCreateWithState(ctx, a.cache, "product:1", 1, db.loadProduct, nil, "catalog"); err != nil {
				log.Fatal(err)
			}
		}()
	}
	wg.Wait()
	fmt.Printf("20 concurrent requests → %d database load(s)\n", db.loads.Load())

	// 2. Instance b finds the value in L2, then serves it from its L1.
	p, _ := hybrid.GetOrCreateWithState(ctx, b.cache, "product:1", 1, db.loadProduct, nil, "catalog")
	fmt.Printf("b read %q via L2; loads still %d\n", p.Name, db.loads.Load())

	// 3. A Set on a reaches b's L1 through the backplane.
	if err := a.cache.Set(ctx, "product:1", Product{ID: 1, Name: "renamed", Price: 12}, nil, "catalog"); err != nil {
		log.Fatal(err)
	}
	waitFor(func() bool {
		p, _, _ := hybrid.TryGet[Product](ctx, b.cache, "product:1", nil)
		return p.Name == "renamed"
	})
	fmt.Println("b sees a's Set: the backplane evicted b's L1 copy")

	// 4. RemoveByTag: O(1), lazy; the next read reloads.
	if err := a.cache.RemoveByTag(ctx, "catalog"); err != nil {
		log.Fatal(err)
	}
	p, _ = hybrid.GetOrCreateWithState(ctx, a.cache, "product:1", 1, db.loadProduct, nil, "catalog")
	fmt.Printf("after RemoveByTag(catalog): %q, loads %d\n", p.Name, db.loads.Load())

	// 5. Fail-safe: the entry expires, the database goes down, the stale
	// value is served instead of the error.
	time.Sleep(2100 * time.Millisecond) // let the 2 s entry expire
	db.down.Store(true)
	p, err := hybrid.GetOrCreateWithState(ctx, a.cache, "product:1", 1, db.loadProduct, nil, "catalog")
	fmt.Printf("database down: got %q, err %v, fail-safe activations %d\n", p.Name, err, a.cache.Stats().FailSafeServed)
}

type instance struct {
	l1, l2 *sdk.Client
	bp     *hybrid.PubSubBackplane
	cache  *hybrid.Cache
}

func newInstance(ctx context.Context, name, l2conn string, opts hybrid.Options) *instance {
	cfg := store.DefaultConfig()
	cfg.MaxMemoryBytes = 64 << 20 // this instance's L1 budget
	l1, err := sdk.Connect(ctx, "zaris://inproc/demo-l1-"+name, sdk.WithEmbeddedConfig(cfg))
	if err != nil {
		log.Fatal(err)
	}
	l2, err := sdk.Connect(ctx, l2conn)
	if err != nil {
		log.Fatal(err)
	}
	// One channel for the fleet; a store without pub/sub would take
	// hybrid.NewJournalBackplane(ctx, l2, hybrid.JournalOptions{}) instead.
	bp, err := hybrid.NewPubSubBackplane(ctx, l2, hybrid.PubSubOptions{Logger: opts.Logger})
	if err != nil {
		log.Fatal(err)
	}
	opts.Backplane = bp
	opts.InstanceID = name
	return &instance{l1: l1, l2: l2, bp: bp, cache: hybrid.New(l1, l2, opts)}
}

func (i *instance) close() {
	_ = i.cache.Close()
	_ = i.bp.Close()
	_ = i.l1.Close()
	_ = i.l2.Close()
}

func waitFor(cond func() bool) {
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			log.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

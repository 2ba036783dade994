package hybrid_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zaris-io/zaris/hybrid"
	"github.com/zaris-io/zaris/sdk"
)

type Product struct {
	ID   int
	Name string
}

// The README's hybrid-cache snippet (internal/readmetest checks it): an
// in-process L1 in front of a shared L2, one factory call per cold key,
// tag invalidation.
func ExampleNew() {
	ctx := context.Background()
	l1, err := sdk.Connect(ctx, "zaris://inproc/products-l1") // this process's tier
	if err != nil {
		log.Fatal(err)
	}
	defer l1.Close()
	l2, err := sdk.Connect(ctx, "zaris://inproc/products-l2") // in production: the cluster
	if err != nil {
		log.Fatal(err)
	}
	defer l2.Close()

	hc := hybrid.New(l1, l2, hybrid.Options{Expiration: 10 * time.Minute, LocalCacheExpiration: time.Minute})
	defer hc.Close()

	loads := 0
	load := func(ctx context.Context) (Product, error) { // the slow database call
		loads++
		return Product{ID: 7, Name: "lamp"}, nil
	}
	for range 3 {
		p, err := hybrid.GetOrCreate(ctx, hc, "product:7", load, nil, "catalog")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(p.Name, "loads:", loads)
	}

	hc.RemoveByTag(ctx, "catalog") // O(1): every entry tagged "catalog" is now a miss
	hybrid.GetOrCreate(ctx, hc, "product:7", load, nil, "catalog")
	fmt.Println("after RemoveByTag, loads:", loads)
	// Output:
	// lamp loads: 1
	// lamp loads: 1
	// lamp loads: 1
	// after RemoveByTag, loads: 2
}

package cache_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zaris-io/zaris/cache"
	"github.com/zaris-io/zaris/sdk"
)

// The README's distributed-cache snippet (internal/readmetest checks it):
// the IDistributedCache-style API over any Zaris store, with sliding and
// absolute expiration.
func ExampleNew() {
	ctx := context.Background()
	c, err := sdk.Connect(ctx, "zaris://inproc/cache-example") // or the cluster
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	dc := cache.New(c, cache.Options{KeyPrefix: "app:"})
	err = dc.Set(ctx, "report:7", []byte(`{"total":42}`), cache.EntryOptions{
		SlidingExpiration:               10 * time.Minute, // every Get pushes it out again…
		AbsoluteExpirationRelativeToNow: time.Hour,        // …but never past an hour
	})
	if err != nil {
		log.Fatal(err)
	}

	v, err := dc.Get(ctx, "report:7")
	fmt.Println(string(v), err)
	miss, err := dc.Get(ctx, "report:8") // a miss is (nil, nil)
	fmt.Println(miss == nil, err)
	dc.Remove(ctx, "report:7")
	// Output:
	// {"total":42} <nil>
	// true <nil>
}

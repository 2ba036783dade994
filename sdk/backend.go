package sdk

import (
	"context"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
)

// backend is what a topology implements: the embedded store or the remote
// cluster. The Client validates arguments and owns serialization; a backend
// only moves operations.
type backend interface {
	get(ctx context.Context, key string) (Result, error)
	put(ctx context.Context, key string, value []byte, opts *PutOptions) (Result, error)
	delete(ctx context.Context, key string) (Result, error)
	expire(ctx context.Context, key string, ttl time.Duration) (Result, error)
	persist(ctx context.Context, key string) (Result, error)
	timeToLive(ctx context.Context, key string) (Result, error)
	// batch answers items[i] in results[i] (Index, Op and Key filled).
	batch(ctx context.Context, items []BatchItem) ([]ItemResult, error)
	// exec runs a data-structure command (R-DS).
	exec(ctx context.Context, cmd kv.Cmd) (kv.Reply, error)
	// watch opens a watch (R-DS-6); subscribe and publish are pub/sub (R-DS-7).
	watch(ctx context.Context, req wire.WatchRequest) (*WatchStream, error)
	subscribe(ctx context.Context, req wire.SubscribeRequest) (*Subscription, error)
	publish(ctx context.Context, channel string, payload []byte) (int, error)
	close() error
}

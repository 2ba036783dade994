package resp_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Replies longer than a connection's own room are built in rooms the
// connections borrow from one pool (kv.LargeOut) and return once encoded:
// many connections pipelining long ranges at once each get exactly their
// own elements — a room handed to another connection before its reply was
// written would show here as another list's elements or empty ones.
func TestLongRepliesOnManyConnectionsStayTheirOwn(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	setup := newClient(t, n)
	const lists = 8
	want := make([][]string, lists)
	for i := range lists {
		for j := range 300 + 37*i { // 300 … 559 elements: past the 256 a connection keeps
			want[i] = append(want[i], fmt.Sprintf("l%d:%d", i, j))
		}
		args := make([]any, len(want[i]))
		for j, v := range want[i] {
			args[j] = v
		}
		require.NoError(t, setup.RPush(ctx, fmt.Sprint("list", i), args...).Err())
	}
	var wg sync.WaitGroup
	for i := range lists {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newClient(t, n, func(o *redis.Options) { o.PoolSize = 1 })
			key := fmt.Sprint("list", i)
			for range 40 {
				pipe := c.Pipelined
				if i%2 == 1 {
					pipe = c.TxPipelined // MULTI moves the connection off the loop: rooms used in parallel
				}
				cmds, err := pipe(ctx, func(p redis.Pipeliner) error {
					for range 4 {
						p.LRange(ctx, key, 0, -1)
						p.LLen(ctx, key)
					}
					return nil
				})
				if err != nil {
					t.Errorf("%s: %v", key, err)
					return
				}
				for k := 0; k < len(cmds); k += 2 {
					got := cmds[k].(*redis.StringSliceCmd).Val()
					if len(got) != len(want[i]) {
						t.Errorf("%s: %d elements, want %d", key, len(got), len(want[i]))
						return
					}
					for j := range got {
						if got[j] != want[i][j] {
							t.Errorf("%s[%d] = %q, want %q", key, j, got[j], want[i][j])
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
}

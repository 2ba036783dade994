package resp_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// One connection's array replies are built in one reply room (D68): a
// pipeline of range reads, each reply written before the next command
// reuses the room, gets every reply whole — including one larger than the
// room and the nested ones of the scans.
func TestPipelinedArrayRepliesShareTheRoom(t *testing.T) {
	n := startNode(t)
	c := newClient(t, n)
	ctx := context.Background()
	var members []string
	for i := range 300 {
		members = append(members, fmt.Sprintf("m%03d", i))
	}
	for i, m := range members {
		require.NoError(t, c.RPush(ctx, "l", m).Err())
		require.NoError(t, c.HSet(ctx, "h", m, i).Err())
		require.NoError(t, c.SAdd(ctx, "s", m).Err())
		require.NoError(t, c.ZAdd(ctx, "z", redis.Z{Score: float64(i), Member: m}).Err())
	}
	for range 3 {
		p := c.Pipeline()
		first := p.LRange(ctx, "l", 0, 9)
		all := p.LRange(ctx, "l", 0, -1) // 300: larger than the room
		hall := p.HGetAll(ctx, "h")
		keys := p.HKeys(ctx, "h")
		smem := p.SMembers(ctx, "s")
		zr := p.ZRangeWithScores(ctx, "z", 0, 4)
		zrev := p.ZRevRange(ctx, "z", 0, 2)
		sscan := p.SScan(ctx, "s", 0, "", 10)
		hmget := p.HMGet(ctx, "h", "m001", "nofield", "m299")
		last := p.LRange(ctx, "l", -3, -1)
		_, err := p.Exec(ctx)
		require.NoError(t, err)

		require.Equal(t, members[:10], first.Val())
		require.Equal(t, members, all.Val())
		require.Len(t, hall.Val(), 300)
		require.Equal(t, "299", hall.Val()["m299"])
		got := slices.Clone(keys.Val())
		slices.Sort(got)
		require.Equal(t, members, got)
		got = slices.Clone(smem.Val())
		slices.Sort(got)
		require.Equal(t, members, got)
		require.Equal(t, []redis.Z{{Score: 0, Member: "m000"}, {Score: 1, Member: "m001"}, {Score: 2, Member: "m002"},
			{Score: 3, Member: "m003"}, {Score: 4, Member: "m004"}}, zr.Val())
		require.Equal(t, []string{"m299", "m298", "m297"}, zrev.Val())
		page, _ := sscan.Val()
		require.NotEmpty(t, page)
		for _, m := range page {
			require.Contains(t, members, m)
		}
		require.Equal(t, []any{"1", nil, "299"}, hmget.Val())
		require.Equal(t, members[297:], last.Val())
	}
}

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

package resp_test

import (
	"context"
	"fmt"
	"slices"
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

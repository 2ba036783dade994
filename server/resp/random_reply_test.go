package resp_test

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// ZRANDMEMBER with a negative count on both sides of the store's inline
// limit (1024 draws: one rank lookup each; above it the front end streams
// from a snapshot), over RESP2 and RESP3: that many draws, each a real
// member with its own score (#17: a small negative count no longer copies
// the whole set).
func TestZRandMemberNegativeCountsAnswerRealMembers(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	for _, proto := range []int{2, 3} {
		rdb := redis.NewClient(&redis.Options{Addr: n.RESPAddr().String(), Protocol: proto})
		t.Cleanup(func() { _ = rdb.Close() })
		key := fmt.Sprint("z", proto)
		zs := make([]redis.Z, 3000)
		for i := range zs {
			zs[i] = redis.Z{Score: float64(i), Member: fmt.Sprint("m", i)}
		}
		require.NoError(t, rdb.ZAdd(ctx, key, zs...).Err())
		for _, count := range []int{-1, -7, -1024, -1025, -5000} {
			got, err := rdb.ZRandMemberWithScores(ctx, key, count).Result()
			require.NoError(t, err)
			require.Len(t, got, -count, "RESP%d ZRANDMEMBER %d WITHSCORES", proto, count)
			for _, z := range got {
				require.Equal(t, fmt.Sprint("m", int(z.Score)), z.Member, "RESP%d ZRANDMEMBER %d: a member with another's score", proto, count)
			}
			members, err := rdb.ZRandMember(ctx, key, count).Result()
			require.NoError(t, err)
			require.Len(t, members, -count)
		}
	}
}

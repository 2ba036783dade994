package resp_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// suite runs the supported commands through a real go-redis client. Keys
// share the hash tag of p so multi-key commands are legal on a cluster.
// cmdable is what both redis.Client and redis.ClusterClient offer.
type cmdable interface {
	redis.Cmdable
	Do(ctx context.Context, args ...any) *redis.Cmd
}

func suite(t *testing.T, rdb cmdable, p string) {
	ctx := ctxT(t)
	k := func(s string) string { return p + s }

	t.Run("strings", func(t *testing.T) {
		require.Equal(t, "OK", rdb.Set(ctx, k("s"), "v1", 0).Val())
		require.Equal(t, "v1", rdb.Get(ctx, k("s")).Val())
		_, err := rdb.Get(ctx, k("missing")).Result()
		require.ErrorIs(t, err, redis.Nil)

		ok, err := rdb.SetNX(ctx, k("s"), "x", 0).Result()
		require.NoError(t, err)
		require.False(t, ok)
		ok, err = rdb.SetNX(ctx, k("nx"), "x", time.Minute).Result()
		require.NoError(t, err)
		require.True(t, ok)
		require.InDelta(t, 60, rdb.TTL(ctx, k("nx")).Val().Seconds(), 1)

		ok, err = rdb.SetXX(ctx, k("absent"), "x", 0).Result()
		require.NoError(t, err)
		require.False(t, ok)
		ok, err = rdb.SetXX(ctx, k("s"), "v2", 0).Result()
		require.NoError(t, err)
		require.True(t, ok)

		old, err := rdb.SetArgs(ctx, k("s"), "v3", redis.SetArgs{Get: true}).Result()
		require.NoError(t, err)
		require.Equal(t, "v2", old)
		_, err = rdb.SetArgs(ctx, k("fresh"), "v", redis.SetArgs{Get: true}).Result()
		require.ErrorIs(t, err, redis.Nil)

		// KEEPTTL keeps, a plain SET clears, EX/PX/EXAT set the TTL.
		require.NoError(t, rdb.Set(ctx, k("ttl"), "a", time.Hour).Err())
		require.NoError(t, rdb.SetArgs(ctx, k("ttl"), "b", redis.SetArgs{KeepTTL: true}).Err())
		require.InDelta(t, 3600, rdb.TTL(ctx, k("ttl")).Val().Seconds(), 2)
		require.NoError(t, rdb.Set(ctx, k("ttl"), "c", 0).Err())
		require.Equal(t, time.Duration(-1), rdb.TTL(ctx, k("ttl")).Val())
		require.NoError(t, rdb.SetArgs(ctx, k("ttl"), "d", redis.SetArgs{ExpireAt: time.Now().Add(time.Hour)}).Err())
		require.InDelta(t, 3600, rdb.TTL(ctx, k("ttl")).Val().Seconds(), 2)
		require.NoError(t, rdb.SetArgs(ctx, k("ttl"), "e", redis.SetArgs{ExpireAt: time.Now().Add(-time.Hour)}).Err())
		require.Zero(t, rdb.Exists(ctx, k("ttl")).Val(), "an EXAT in the past leaves no key")
		require.NoError(t, rdb.Set(ctx, k("px"), "a", 1500*time.Millisecond).Err())
		require.InDelta(t, 1500, rdb.PTTL(ctx, k("px")).Val().Milliseconds(), 100)

		require.NoError(t, rdb.MSet(ctx, k("m1"), "1", k("m2"), "2").Err())
		require.Equal(t, []any{"1", "2", nil}, rdb.MGet(ctx, k("m1"), k("m2"), k("m3")).Val())
		ok, err = rdb.MSetNX(ctx, k("m3"), "3", k("m1"), "x").Result()
		require.NoError(t, err)
		require.False(t, ok)
		require.Zero(t, rdb.Exists(ctx, k("m3")).Val(), "MSETNX wrote nothing")
		ok, err = rdb.MSetNX(ctx, k("m3"), "3", k("m4"), "4").Result()
		require.NoError(t, err)
		require.True(t, ok)

		require.Equal(t, "3", rdb.GetSet(ctx, k("m3"), "33").Val())
		require.Equal(t, "33", rdb.GetDel(ctx, k("m3")).Val())
		require.Zero(t, rdb.Exists(ctx, k("m3")).Val())
		require.Equal(t, "4", rdb.GetEx(ctx, k("m4"), time.Minute).Val())
		require.InDelta(t, 60, rdb.TTL(ctx, k("m4")).Val().Seconds(), 1)
		require.Equal(t, "4", rdb.Do(ctx, "GETEX", k("m4"), "PERSIST").Val())
		require.Equal(t, time.Duration(-1), rdb.TTL(ctx, k("m4")).Val())

		require.NoError(t, rdb.SetEx(ctx, k("ex"), "v", 10*time.Second).Err())
		require.InDelta(t, 10, rdb.TTL(ctx, k("ex")).Val().Seconds(), 1)
		require.NoError(t, rdb.Do(ctx, "PSETEX", k("pex"), 5000, "v").Err())
		require.InDelta(t, 5000, rdb.PTTL(ctx, k("pex")).Val().Milliseconds(), 100)

		require.Equal(t, int64(5), rdb.Append(ctx, k("ap"), "hello").Val())
		require.Equal(t, int64(11), rdb.Append(ctx, k("ap"), " world").Val())
		require.Equal(t, int64(11), rdb.StrLen(ctx, k("ap")).Val())
		require.Equal(t, "world", rdb.GetRange(ctx, k("ap"), 6, -1).Val())
		require.Equal(t, int64(11), rdb.SetRange(ctx, k("ap"), 0, "J").Val())
		require.Equal(t, "Jello world", rdb.Get(ctx, k("ap")).Val())

		require.Equal(t, int64(1), rdb.Incr(ctx, k("n")).Val())
		require.Equal(t, int64(11), rdb.IncrBy(ctx, k("n"), 10).Val())
		require.Equal(t, int64(10), rdb.Decr(ctx, k("n")).Val())
		require.Equal(t, int64(5), rdb.DecrBy(ctx, k("n"), 5).Val())
		require.Equal(t, 6.5, rdb.IncrByFloat(ctx, k("n"), 1.5).Val())
		require.ErrorContains(t, rdb.Incr(ctx, k("ap")).Err(), "ERR value is not an integer or out of range")

		// Binary-safe keys and values.
		bin := "a\r\nb\x00c\r\n"
		require.NoError(t, rdb.Set(ctx, k(bin), bin, 0).Err())
		require.Equal(t, bin, rdb.Get(ctx, k(bin)).Val())
		big := strings.Repeat("x", 1<<20)
		require.NoError(t, rdb.Set(ctx, k("big"), big, 0).Err())
		require.Equal(t, big, rdb.Get(ctx, k("big")).Val())
	})

	t.Run("keys", func(t *testing.T) {
		require.NoError(t, rdb.MSet(ctx, k("a"), "1", k("b"), "2", k("c"), "3").Err())
		require.Equal(t, int64(3), rdb.Exists(ctx, k("a"), k("b"), k("a")).Val())
		require.Equal(t, int64(2), rdb.Del(ctx, k("a"), k("b"), k("zz")).Val())
		require.Equal(t, int64(1), rdb.Unlink(ctx, k("c")).Val())
		require.Equal(t, int64(0), rdb.Exists(ctx, k("c")).Val())

		require.NoError(t, rdb.Set(ctx, k("t"), "v", 0).Err())
		require.NoError(t, rdb.HSet(ctx, k("th"), "f", "v").Err())
		require.Equal(t, "string", rdb.Type(ctx, k("t")).Val())
		require.Equal(t, "hash", rdb.Type(ctx, k("th")).Val())
		require.Equal(t, "none", rdb.Type(ctx, k("nothing")).Val())
		require.Equal(t, int64(2), rdb.Touch(ctx, k("t"), k("th"), k("nothing")).Val())

		require.True(t, rdb.Expire(ctx, k("t"), time.Minute).Val())
		require.InDelta(t, 60, rdb.TTL(ctx, k("t")).Val().Seconds(), 1)
		require.False(t, rdb.ExpireNX(ctx, k("t"), time.Hour).Val(), "NX: already has a TTL")
		require.True(t, rdb.ExpireGT(ctx, k("t"), time.Hour).Val())
		require.False(t, rdb.ExpireLT(ctx, k("t"), 2*time.Hour).Val())
		require.True(t, rdb.ExpireXX(ctx, k("t"), 30*time.Second).Val())
		require.True(t, rdb.PExpire(ctx, k("t"), 20*time.Second).Val())
		require.InDelta(t, 20000, rdb.PTTL(ctx, k("t")).Val().Milliseconds(), 200)
		at := time.Now().Add(time.Hour).Truncate(time.Second)
		require.True(t, rdb.ExpireAt(ctx, k("t"), at).Val())
		require.InDelta(t, at.Unix(), rdb.ExpireTime(ctx, k("t")).Val().Seconds(), 1)
		require.True(t, rdb.PExpireAt(ctx, k("t"), at).Val())
		require.InDelta(t, at.UnixMilli(), rdb.PExpireTime(ctx, k("t")).Val().Milliseconds(), 50)
		require.True(t, rdb.Persist(ctx, k("t")).Val())
		require.False(t, rdb.Persist(ctx, k("t")).Val())
		require.Equal(t, time.Duration(-1), rdb.TTL(ctx, k("t")).Val())
		require.Equal(t, time.Duration(-2), rdb.TTL(ctx, k("nothing")).Val())
		require.False(t, rdb.Expire(ctx, k("nothing"), time.Minute).Val())
		require.True(t, rdb.Expire(ctx, k("t"), -time.Second).Val(), "a TTL in the past deletes")
		require.Zero(t, rdb.Exists(ctx, k("t")).Val())

		require.NoError(t, rdb.Set(ctx, k("r1"), "v", time.Hour).Err())
		require.NoError(t, rdb.Rename(ctx, k("r1"), k("r2")).Err())
		require.Equal(t, "v", rdb.Get(ctx, k("r2")).Val())
		require.InDelta(t, 3600, rdb.TTL(ctx, k("r2")).Val().Seconds(), 2)
		require.Zero(t, rdb.Exists(ctx, k("r1")).Val())
		require.ErrorContains(t, rdb.Rename(ctx, k("r1"), k("r3")).Err(), "ERR no such key")
		require.NoError(t, rdb.Set(ctx, k("r3"), "w", 0).Err())
		require.False(t, rdb.RenameNX(ctx, k("r2"), k("r3")).Val())
		require.True(t, rdb.RenameNX(ctx, k("r2"), k("r4")).Val())
		require.NoError(t, rdb.RPush(ctx, k("rl"), "a", "b", "c").Err())
		require.NoError(t, rdb.Rename(ctx, k("rl"), k("rl2")).Err())
		require.Equal(t, []string{"a", "b", "c"}, rdb.LRange(ctx, k("rl2"), 0, -1).Val())
		require.NoError(t, rdb.ZAdd(ctx, k("rz"), redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 1, Member: "a"}).Err())
		require.NoError(t, rdb.Rename(ctx, k("rz"), k("rz2")).Err())
		require.Equal(t, []redis.Z{{Score: 1, Member: "a"}, {Score: 2, Member: "b"}}, rdb.ZRangeWithScores(ctx, k("rz2"), 0, -1).Val())

		require.Equal(t, "embstr", rdb.ObjectEncoding(ctx, k("r3")).Val())
		require.NoError(t, rdb.Set(ctx, k("int"), "12345", 0).Err())
		require.Equal(t, "int", rdb.ObjectEncoding(ctx, k("int")).Val())
		require.Equal(t, "listpack", rdb.ObjectEncoding(ctx, k("th")).Val(), "a small hash is a listpack in Redis 7.0")
	})

	t.Run("hashes", func(t *testing.T) {
		require.Equal(t, int64(2), rdb.HSet(ctx, k("h"), "a", "1", "b", "2").Val())
		require.Equal(t, int64(1), rdb.HSet(ctx, k("h"), "a", "10", "c", "3").Val())
		require.True(t, rdb.HMSet(ctx, k("h"), "d", "4").Val())
		require.Equal(t, "10", rdb.HGet(ctx, k("h"), "a").Val())
		_, err := rdb.HGet(ctx, k("h"), "zz").Result()
		require.ErrorIs(t, err, redis.Nil)
		require.Equal(t, map[string]string{"a": "10", "b": "2", "c": "3", "d": "4"}, rdb.HGetAll(ctx, k("h")).Val())
		require.Empty(t, rdb.HGetAll(ctx, k("nohash")).Val())
		require.Equal(t, []any{"10", nil, "2"}, rdb.HMGet(ctx, k("h"), "a", "zz", "b").Val())
		require.False(t, rdb.HSetNX(ctx, k("h"), "a", "x").Val())
		require.True(t, rdb.HSetNX(ctx, k("h"), "e", "5").Val())
		require.Equal(t, int64(15), rdb.HIncrBy(ctx, k("h"), "a", 5).Val())
		require.Equal(t, 2.5, rdb.HIncrByFloat(ctx, k("h"), "f", 2.5).Val())
		require.Equal(t, int64(6), rdb.HLen(ctx, k("h")).Val())
		require.True(t, rdb.HExists(ctx, k("h"), "b").Val())
		keys := rdb.HKeys(ctx, k("h")).Val()
		sort.Strings(keys)
		require.Equal(t, []string{"a", "b", "c", "d", "e", "f"}, keys)
		require.Len(t, rdb.HVals(ctx, k("h")).Val(), 6)
		require.Equal(t, int64(2), rdb.HDel(ctx, k("h"), "a", "b", "zz").Val())
		require.NoError(t, rdb.HSet(ctx, k("h"), "txt", "abc").Err())
		require.EqualError(t, rdb.HIncrBy(ctx, k("h"), "txt", 1).Err(), "ERR hash value is not an integer")
		require.NoError(t, rdb.Set(ctx, k("str"), "v", 0).Err())
		err = rdb.HGet(ctx, k("str"), "a").Err()
		require.EqualError(t, err, "WRONGTYPE Operation against a key holding the wrong kind of value")
		require.ErrorContains(t, rdb.Do(ctx, "HSET", k("h"), "only-field").Err(), "ERR wrong number of arguments for 'hset' command")
	})

	t.Run("lists", func(t *testing.T) {
		require.Equal(t, int64(2), rdb.RPush(ctx, k("l"), "b", "c").Val())
		require.Equal(t, int64(4), rdb.LPush(ctx, k("l"), "a", "z").Val())
		require.Equal(t, []string{"z", "a", "b", "c"}, rdb.LRange(ctx, k("l"), 0, -1).Val())
		require.Equal(t, int64(4), rdb.LLen(ctx, k("l")).Val())
		require.Equal(t, "b", rdb.LIndex(ctx, k("l"), -2).Val())
		require.Equal(t, "z", rdb.LIndex(ctx, k("l"), 0).Val())
		require.ErrorIs(t, rdb.LIndex(ctx, k("l"), 99).Err(), redis.Nil)
		require.NoError(t, rdb.LSet(ctx, k("l"), 1, "y").Err())
		require.ErrorContains(t, rdb.LSet(ctx, k("l"), 99, "y").Err(), "ERR index out of range")
		require.ErrorContains(t, rdb.LSet(ctx, k("nolist"), 0, "y").Err(), "ERR no such key")
		require.Equal(t, "z", rdb.LPop(ctx, k("l")).Val())
		require.Equal(t, "c", rdb.RPop(ctx, k("l")).Val())
		require.Equal(t, []string{"y", "b"}, rdb.LPopCount(ctx, k("l"), 5).Val())
		require.Zero(t, rdb.Exists(ctx, k("l")).Val(), "an emptied list is deleted")
		require.ErrorIs(t, rdb.LPop(ctx, k("l")).Err(), redis.Nil)
		require.ErrorIs(t, rdb.LPopCount(ctx, k("l"), 2).Err(), redis.Nil)
		require.ErrorIs(t, rdb.RPopCount(ctx, k("l"), 2).Err(), redis.Nil)
		require.NoError(t, rdb.RPush(ctx, k("l"), "x", "y", "x", "z", "x").Err())
		require.Equal(t, int64(2), rdb.LRem(ctx, k("l"), 2, "x").Val())
		require.NoError(t, rdb.LTrim(ctx, k("l"), 0, 1).Err())
		require.Equal(t, []string{"y", "z"}, rdb.LRange(ctx, k("l"), 0, -1).Val())
	})

	t.Run("sets", func(t *testing.T) {
		require.Equal(t, int64(3), rdb.SAdd(ctx, k("s1"), "a", "b", "c").Val())
		require.Equal(t, int64(0), rdb.SAdd(ctx, k("s1"), "a").Val())
		require.NoError(t, rdb.SAdd(ctx, k("s2"), "b", "c", "d").Err())
		m := rdb.SMembers(ctx, k("s1")).Val()
		sort.Strings(m)
		require.Equal(t, []string{"a", "b", "c"}, m)
		require.True(t, rdb.SIsMember(ctx, k("s1"), "a").Val())
		require.False(t, rdb.SIsMember(ctx, k("s1"), "z").Val())
		require.Equal(t, int64(3), rdb.SCard(ctx, k("s1")).Val())
		inter := rdb.SInter(ctx, k("s1"), k("s2")).Val()
		sort.Strings(inter)
		require.Equal(t, []string{"b", "c"}, inter)
		union := rdb.SUnion(ctx, k("s1"), k("s2"), k("nosuch")).Val()
		sort.Strings(union)
		require.Equal(t, []string{"a", "b", "c", "d"}, union)
		require.Equal(t, int64(1), rdb.SRem(ctx, k("s1"), "a", "z").Val())
	})

	t.Run("sorted sets", func(t *testing.T) {
		z := k("z")
		require.Equal(t, int64(3), rdb.ZAdd(ctx, z, redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 3, Member: "c"}).Val())
		require.Equal(t, int64(1), rdb.ZAddArgs(ctx, z, redis.ZAddArgs{Ch: true, Members: []redis.Z{{Score: 5, Member: "a"}}}).Val())
		require.Equal(t, int64(0), rdb.ZAddNX(ctx, z, redis.Z{Score: 9, Member: "a"}).Val())
		require.Equal(t, 6.0, rdb.ZAddArgsIncr(ctx, z, redis.ZAddArgs{Members: []redis.Z{{Score: 1, Member: "a"}}}).Val())
		require.Equal(t, 6.0, rdb.ZScore(ctx, z, "a").Val())
		require.ErrorIs(t, rdb.ZScore(ctx, z, "zz").Err(), redis.Nil)
		require.Equal(t, 4.5, rdb.ZIncrBy(ctx, z, 2.5, "b").Val())
		require.Equal(t, int64(3), rdb.ZCard(ctx, z).Val())
		require.Equal(t, int64(0), rdb.ZRank(ctx, z, "c").Val())
		require.Equal(t, int64(0), rdb.ZRevRank(ctx, z, "a").Val())
		require.ErrorIs(t, rdb.ZRank(ctx, z, "zz").Err(), redis.Nil)
		require.Equal(t, []string{"c", "b", "a"}, rdb.ZRange(ctx, z, 0, -1).Val())
		require.Equal(t, []redis.Z{{Score: 3, Member: "c"}, {Score: 4.5, Member: "b"}}, rdb.ZRangeWithScores(ctx, z, 0, 1).Val())
		require.Equal(t, []string{"a", "b", "c"}, rdb.ZRevRange(ctx, z, 0, -1).Val())
		require.Equal(t, []redis.Z{{Score: 6, Member: "a"}}, rdb.ZRevRangeWithScores(ctx, z, 0, 0).Val())
		require.Equal(t, []string{"b", "a"}, rdb.ZRangeByScore(ctx, z, &redis.ZRangeBy{Min: "(3", Max: "+inf"}).Val())
		require.Equal(t, []redis.Z{{Score: 4.5, Member: "b"}}, rdb.ZRangeByScoreWithScores(ctx, z, &redis.ZRangeBy{Min: "-inf", Max: "+inf", Offset: 1, Count: 1}).Val())
		require.Equal(t, []string{"a", "b"}, rdb.ZRevRangeByScore(ctx, z, &redis.ZRangeBy{Min: "4", Max: "10"}).Val())
		require.Equal(t, []string{"a", "b"}, rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: z, Start: "+inf", Stop: "4", ByScore: true, Rev: true}).Val())
		require.Equal(t, []string{"b"}, rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: z, Start: "-inf", Stop: "+inf", ByScore: true, Offset: 1, Count: 1}).Val())
		require.Equal(t, []redis.Z{{Score: 6, Member: "a"}, {Score: 4.5, Member: "b"}}, rdb.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: z, Start: 0, Stop: 1, Rev: true}).Val())
		require.Equal(t, int64(2), rdb.ZCount(ctx, z, "4", "+inf").Val())
		require.Equal(t, int64(1), rdb.ZRem(ctx, z, "c", "zz").Val())
		require.ErrorContains(t, rdb.Do(ctx, "ZADD", z, "nx", "xx", "1", "a").Err(), "ERR XX and NX options at the same time are not compatible")
		require.EqualError(t, rdb.Do(ctx, "ZADD", z, "1").Err(), "ERR wrong number of arguments for 'zadd' command")
		require.EqualError(t, rdb.Do(ctx, "ZADD", z, "1", "a", "2").Err(), "ERR syntax error")
		require.ErrorContains(t, rdb.Do(ctx, "ZADD", z, "x", "a").Err(), "ERR value is not a valid float")
		require.ErrorContains(t, rdb.Do(ctx, "ZRANGE", z, "0", "1", "LIMIT", "0", "1").Err(), "LIMIT is only supported in combination with either BYSCORE or BYLEX")
	})

	t.Run("streams", func(t *testing.T) {
		st := k("st")
		id1, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: st, ID: "1-1", Values: []string{"f", "v1"}}).Result()
		require.NoError(t, err)
		require.Equal(t, "1-1", id1)
		id2 := rdb.XAdd(ctx, &redis.XAddArgs{Stream: st, Values: map[string]any{"f": "v2"}}).Val()
		require.NotEmpty(t, id2)
		require.EqualError(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: st, ID: "1-1", Values: []string{"f", "x"}}).Err(),
			"ERR The ID specified in XADD is equal or smaller than the target stream top item")
		require.ErrorIs(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: k("nost"), NoMkStream: true, Values: []string{"f", "x"}}).Err(), redis.Nil)
		require.Equal(t, int64(2), rdb.XLen(ctx, st).Val())
		msgs := rdb.XRange(ctx, st, "-", "+").Val()
		require.Len(t, msgs, 2)
		require.Equal(t, redis.XMessage{ID: "1-1", Values: map[string]any{"f": "v1"}}, msgs[0])
		require.Equal(t, id2, rdb.XRevRangeN(ctx, st, "+", "-", 1).Val()[0].ID)
		streams := rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{st, "0"}, Count: 1, Block: -1}).Val()
		require.Equal(t, []redis.XStream{{Stream: st, Messages: []redis.XMessage{{ID: "1-1", Values: map[string]any{"f": "v1"}}}}}, streams)
		require.ErrorIs(t, rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{st, id2}, Block: -1}).Err(), redis.Nil)

		require.Equal(t, "OK", rdb.XGroupCreate(ctx, st, "g", "0").Val())
		require.EqualError(t, rdb.XGroupCreate(ctx, st, "g", "0").Err(), "BUSYGROUP Consumer Group name already exists")
		require.NoError(t, rdb.XGroupCreateMkStream(ctx, k("st2"), "g", "$").Err())
		got := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c1", Streams: []string{st, ">"}, Count: 1, Block: -1}).Val()
		require.Len(t, got, 1)
		require.Equal(t, "1-1", got[0].Messages[0].ID)
		pend := rdb.XPending(ctx, st, "g").Val()
		require.Equal(t, int64(1), pend.Count)
		require.Equal(t, map[string]int64{"c1": 1}, pend.Consumers)
		ext := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: st, Group: "g", Start: "-", End: "+", Count: 10}).Val()
		require.Len(t, ext, 1)
		require.Equal(t, "c1", ext[0].Consumer)
		claimed := rdb.XClaim(ctx, &redis.XClaimArgs{Stream: st, Group: "g", Consumer: "c2", MinIdle: 0, Messages: []string{"1-1"}}).Val()
		require.Len(t, claimed, 1)
		auto, next, err := rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: st, Group: "g", Consumer: "c1", Start: "0", Count: 10}).Result()
		require.NoError(t, err)
		require.Equal(t, "0-0", next)
		require.Len(t, auto, 1)
		require.Equal(t, int64(1), rdb.XAck(ctx, st, "g", "1-1").Val())
		require.Equal(t, int64(1), rdb.XDel(ctx, st, "1-1").Val())
		require.Equal(t, int64(1), rdb.XTrimMaxLen(ctx, st, 0).Val())
		require.Equal(t, int64(0), rdb.XLen(ctx, st).Val())
		require.EqualError(t, rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "nog", Consumer: "c", Streams: []string{st, ">"}, Block: -1}).Err(),
			"NOGROUP No such key '"+st+"' or consumer group 'nog' in XREADGROUP with GROUP option")
		require.Equal(t, int64(1), rdb.XGroupCreateConsumer(ctx, st, "g", "c3").Val())
		require.Equal(t, int64(0), rdb.XGroupDelConsumer(ctx, st, "g", "c3").Val())
		require.NoError(t, rdb.XGroupSetID(ctx, st, "g", "0").Err())
		require.Equal(t, int64(1), rdb.XGroupDestroy(ctx, st, "g").Val())
		require.Equal(t, "stream", rdb.Type(ctx, st).Val())
	})

	t.Run("errors", func(t *testing.T) {
		require.EqualError(t, rdb.Do(ctx, "NOSUCHCMD", k("a"), "b").Err(), "ERR unknown command 'NOSUCHCMD', with args beginning with: '"+k("a")+"' 'b' ")
		require.EqualError(t, rdb.Do(ctx, "GET").Err(), "ERR wrong number of arguments for 'get' command")
		require.EqualError(t, rdb.Do(ctx, "SET", k("a"), "b", "NX", "XX").Err(), "ERR syntax error")
		require.EqualError(t, rdb.Do(ctx, "SET", k("a"), "b", "EX", "0").Err(), "ERR invalid expire time in 'set' command")
		require.EqualError(t, rdb.Do(ctx, "SET", k("a"), "b", "EX", "x").Err(), "ERR value is not an integer or out of range")
		require.NoError(t, rdb.LPush(ctx, k("list"), "x").Err())
		require.EqualError(t, rdb.Get(ctx, k("list")).Err(), "WRONGTYPE Operation against a key holding the wrong kind of value")
		require.EqualError(t, rdb.Do(ctx, "SET", k("list"), "v", "GET").Err(), "WRONGTYPE Operation against a key holding the wrong kind of value")
		require.Equal(t, "OK", rdb.Set(ctx, k("list"), "v", 0).Val(), "SET overwrites any type")
	})
}

func TestGoRedisRESP3(t *testing.T) {
	n := startNode(t)
	rdb := newClient(t, n) // go-redis v9 negotiates RESP3 with HELLO 3
	suite(t, rdb, "{p3}")
}

func TestGoRedisRESP2(t *testing.T) {
	n := startNode(t)
	rdb := newClient(t, n, func(o *redis.Options) { o.Protocol = 2 })
	suite(t, rdb, "{p2}")
}

var _ = context.Background
var _ = fmt.Sprint
var _ = sort.Strings
var _ = strconv.Itoa

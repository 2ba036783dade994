package resp_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/testscale"
)

// Blocking sorted-set pops (BZPOPMIN, BZPOPMAX, BZMPOP) through go-redis:
// served at once when a member is there, woken by another client's ZADD,
// one member to one waiter, a null reply at the timeout (issue #13 item 5).
func TestBlockingZSetPops(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	rdb := newClient(t, n)
	other := newClient(t, n)
	wait := testscale.D(5 * time.Second)

	require.NoError(t, rdb.ZAdd(ctx, "{bz}1", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}).Err())
	got, err := rdb.BZPopMin(ctx, time.Second, "{bz}0", "{bz}1").Result()
	require.NoError(t, err)
	require.Equal(t, &redis.ZWithKey{Key: "{bz}1", Z: redis.Z{Score: 1, Member: "a"}}, got)
	got, err = rdb.BZPopMax(ctx, time.Second, "{bz}1").Result()
	require.NoError(t, err)
	require.Equal(t, &redis.ZWithKey{Key: "{bz}1", Z: redis.Z{Score: 2, Member: "b"}}, got)
	require.Zero(t, rdb.Exists(ctx, "{bz}1").Val(), "the emptied set is deleted")

	// Blocks until another client adds; the highest member is taken.
	done := make(chan *redis.ZWithKey, 1)
	go func() {
		v, _ := rdb.BZPopMax(ctx, 0, "{bz}0", "{bz}2").Result()
		done <- v
	}()
	select {
	case v := <-done:
		t.Fatalf("BZPOPMAX returned %v before anything was added", v)
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, other.ZAdd(ctx, "{bz}2", redis.Z{Score: 5, Member: "x"}, redis.Z{Score: 7, Member: "y"}).Err())
	select {
	case v := <-done:
		require.Equal(t, &redis.ZWithKey{Key: "{bz}2", Z: redis.Z{Score: 7, Member: "y"}}, v)
	case <-time.After(wait):
		t.Fatal("BZPOPMAX was not woken by ZADD")
	}
	require.Equal(t, []string{"x"}, other.ZRange(ctx, "{bz}2", 0, -1).Val())

	// BZMPOP … COUNT: woken with up to COUNT members of the first non-empty key.
	type mpop struct {
		key string
		zs  []redis.Z
	}
	mdone := make(chan mpop, 1)
	go func() {
		k, zs, _ := rdb.BZMPop(ctx, 0, "min", 2, "{bz}3", "{bz}4").Result()
		mdone <- mpop{k, zs}
	}()
	select {
	case v := <-mdone:
		t.Fatalf("BZMPOP returned %v before anything was added", v)
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, other.ZAdd(ctx, "{bz}4", redis.Z{Score: 3, Member: "c"}, redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}).Err())
	select {
	case v := <-mdone:
		require.Equal(t, mpop{"{bz}4", []redis.Z{{Score: 1, Member: "a"}, {Score: 2, Member: "b"}}}, v)
	case <-time.After(wait):
		t.Fatal("BZMPOP was not woken by ZADD")
	}

	// Two waiters, one member: exactly one is served; the next member
	// serves the other.
	third := newClient(t, n)
	both := make(chan *redis.ZWithKey, 2)
	for _, c := range []*redis.Client{rdb, third} {
		go func() {
			v, _ := c.BZPopMin(ctx, 0, "{bz}5").Result()
			both <- v
		}()
	}
	require.NoError(t, other.ZAdd(ctx, "{bz}5", redis.Z{Score: 1, Member: "only"}).Err())
	select {
	case v := <-both:
		require.Equal(t, "only", v.Member)
	case <-time.After(wait):
		t.Fatal("no BZPOPMIN was woken")
	}
	select {
	case v := <-both:
		t.Fatalf("a second waiter got %v from a one-member set", v)
	case <-time.After(200 * time.Millisecond):
	}
	require.NoError(t, other.ZAdd(ctx, "{bz}5", redis.Z{Score: 2, Member: "next"}).Err())
	select {
	case v := <-both:
		require.Equal(t, "next", v.Member)
	case <-time.After(wait):
		t.Fatal("the second BZPOPMIN was not woken")
	}

	// Timeouts answer a null reply.
	start := time.Now()
	require.ErrorIs(t, rdb.BZPopMin(ctx, 300*time.Millisecond, "{bz}empty").Err(), redis.Nil)
	require.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)
	require.ErrorIs(t, rdb.BZMPop(ctx, 200*time.Millisecond, "max", 1, "{bz}empty").Err(), redis.Nil)

	// Inside MULTI a blocking pop on nothing answers at once, as Redis.
	cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.BZPopMin(ctx, 0, "{bz}empty")
		return nil
	})
	require.ErrorIs(t, err, redis.Nil)
	require.Len(t, cmds, 1)

	// Errors, and keys of several slots served on one node.
	require.NoError(t, rdb.Set(ctx, "{bz}str", "v", 0).Err())
	require.EqualError(t, rdb.BZPopMin(ctx, 0, "{bz}str").Err(), "WRONGTYPE Operation against a key holding the wrong kind of value")
	require.EqualError(t, rdb.Do(ctx, "BZPOPMAX", "{bz}1", "-1").Err(), "ERR timeout is negative")
	require.NoError(t, rdb.ZAdd(ctx, "{y}z", redis.Z{Score: 4, Member: "q"}).Err())
	got, err = rdb.BZPopMin(ctx, 0, "{x}z", "{y}z").Result()
	require.NoError(t, err)
	require.Equal(t, "{y}z", got.Key)
}

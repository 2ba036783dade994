package resp_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
)

// blockedOn waits until a client of n is blocked in command name (CLIENT
// LIST shows it as its current command while it waits).
func blockedOn(t *testing.T, rdb *redis.Client, name string) {
	t.Helper()
	testscale.Eventually(t, 5*time.Second, 5*time.Millisecond, "a client blocked in "+name, func() bool {
		return strings.Contains(rdb.ClientList(ctxT(t)).Val(), "cmd="+name+" ")
	})
}

// BLMOVE, BRPOPLPUSH and BLMPOP wait for a push from another client, over
// keys of one slot and of several, and time out with a null reply
// (go-redis against a real node).
func TestCollectionsBlockingWakeUp(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	rdb, other, watcher := newClient(t, n), newClient(t, n), newClient(t, n)

	// Served at once when there is an element.
	require.NoError(t, rdb.RPush(ctx, "src", "a").Err())
	require.Equal(t, "a", rdb.BLMove(ctx, "src", "dst", "LEFT", "RIGHT", time.Second).Val())
	require.Equal(t, []string{"a"}, rdb.LRange(ctx, "dst", 0, -1).Val())

	for _, tc := range []struct {
		name     string
		src, dst string
		run      func() (string, error)
	}{
		{"blmove", "{q}src", "{q}dst", func() (string, error) {
			return rdb.BLMove(ctx, "{q}src", "{q}dst", "RIGHT", "LEFT", 0).Result()
		}},
		{"blmove", "q1", "q2", func() (string, error) { // two slots, one node
			return rdb.BLMove(ctx, "q1", "q2", "LEFT", "LEFT", 0).Result()
		}},
		{"brpoplpush", "r1", "r2", func() (string, error) { return rdb.BRPopLPush(ctx, "r1", "r2", 0).Result() }},
	} {
		got := make(chan string, 1)
		go func() {
			v, err := tc.run()
			if err != nil {
				v = "error: " + err.Error()
			}
			got <- v
		}()
		blockedOn(t, watcher, tc.name)
		select {
		case v := <-got:
			t.Fatalf("%s returned %q before anything was pushed", tc.name, v)
		default:
		}
		require.NoError(t, other.LPush(ctx, tc.src, "pushed").Err())
		select {
		case v := <-got:
			require.Equal(t, "pushed", v, tc.name)
		case <-time.After(testscale.D(5 * time.Second)):
			t.Fatalf("%s was not woken by the push", tc.name)
		}
		require.Equal(t, []string{"pushed"}, other.LRange(ctx, tc.dst, 0, -1).Val(), tc.name)
		require.Zero(t, other.Exists(ctx, tc.src).Val(), tc.name)
	}

	// BLMPOP over keys of several slots: woken by a push on the second.
	got := make(chan []string, 1)
	go func() {
		key, vals, err := rdb.BLMPop(ctx, 0, "right", 5, "m1", "m2").Result()
		if err != nil {
			got <- []string{"error: " + err.Error()}
			return
		}
		got <- append([]string{key}, vals...)
	}()
	blockedOn(t, watcher, "blmpop")
	require.NoError(t, other.RPush(ctx, "m2", "a", "b", "c").Err())
	select {
	case v := <-got:
		require.Equal(t, []string{"m2", "c", "b", "a"}, v)
	case <-time.After(testscale.D(5 * time.Second)):
		t.Fatal("BLMPOP was not woken by the push")
	}

	// Timeouts (fractional seconds; go-redis's typed helpers round below
	// 1 s up): a null reply after the time asked.
	for _, c := range [][]any{
		{"BLMOVE", "none", "d", "LEFT", "LEFT", "0.2"}, {"BRPOPLPUSH", "none", "d", "0.2"},
		{"BLMPOP", "0.2", "2", "none", "none2", "LEFT"},
	} {
		start := time.Now()
		require.ErrorIs(t, rdb.Do(ctx, c...).Err(), redis.Nil, "%v", c)
		took := time.Since(start)
		require.GreaterOrEqual(t, took, 200*time.Millisecond, "%v", c)
		require.Less(t, took, testscale.D(900*time.Millisecond), "%v waited past its timeout", c)
	}
	require.Zero(t, rdb.Exists(ctx, "d").Val())

	// A blocked move into a key that became a string answers WRONGTYPE.
	errc := make(chan error, 1)
	go func() { errc <- rdb.BLMove(ctx, "w1", "w2", "LEFT", "LEFT", 0).Err() }()
	blockedOn(t, watcher, "blmove")
	require.NoError(t, other.Set(ctx, "w2", "str", 0).Err())
	require.NoError(t, other.RPush(ctx, "w1", "x").Err())
	select {
	case err := <-errc:
		require.EqualError(t, err, "WRONGTYPE Operation against a key holding the wrong kind of value")
	case <-time.After(testscale.D(5 * time.Second)):
		t.Fatal("BLMOVE was not woken")
	}
	require.Equal(t, []string{"x"}, other.LRange(ctx, "w1", 0, -1).Val(), "the refused move changed nothing")
}

// --max-item-bytes: a move or a store that would grow its destination past
// the cap is refused and changes nothing (neither the source nor the
// destination).
func TestCollectionsItemCap(t *testing.T) {
	n := startNode(t, func(c *server.Config) { c.MaxItemBytes = 1024 })
	rdb := newClient(t, n)
	ctx := ctxT(t)
	const oom = "OOM value exceeds the maximum item size of 1024 bytes"
	b600 := strings.Repeat("v", 600)

	require.NoError(t, rdb.RPush(ctx, "src", b600).Err())
	require.NoError(t, rdb.RPush(ctx, "dst", strings.Repeat("w", 600)).Err())
	require.EqualError(t, rdb.LMove(ctx, "src", "dst", "LEFT", "LEFT").Err(), oom)
	require.EqualError(t, rdb.RPopLPush(ctx, "src", "dst").Err(), oom)
	require.EqualError(t, rdb.BLMove(ctx, "src", "dst", "LEFT", "LEFT", time.Second).Err(), oom)
	require.Equal(t, int64(1), rdb.LLen(ctx, "src").Val())
	require.Equal(t, int64(1), rdb.LLen(ctx, "dst").Val())
	require.EqualError(t, rdb.LInsert(ctx, "dst", "BEFORE", strings.Repeat("w", 600), b600).Err(), oom)
	require.EqualError(t, rdb.LPushX(ctx, "dst", b600).Err(), oom)
	require.EqualError(t, rdb.RPushX(ctx, "dst", b600).Err(), oom)
	require.Equal(t, int64(1), rdb.LLen(ctx, "dst").Val())

	require.NoError(t, rdb.SAdd(ctx, "s1", b600).Err())
	require.NoError(t, rdb.SAdd(ctx, "s2", strings.Repeat("w", 600)).Err())
	require.EqualError(t, rdb.SMove(ctx, "s1", "s2", b600).Err(), oom)
	require.Equal(t, []string{b600}, rdb.SMembers(ctx, "s1").Val())
	require.EqualError(t, rdb.SUnionStore(ctx, "u", "s1", "s2").Err(), oom)
	require.Zero(t, rdb.Exists(ctx, "u").Val())
	require.NoError(t, rdb.Set(ctx, "u", "keep", 0).Err())
	require.EqualError(t, rdb.SUnionStore(ctx, "u", "s1", "s2").Err(), oom)
	require.Equal(t, "keep", rdb.Get(ctx, "u").Val(), "a refused store leaves the destination")
	require.Equal(t, int64(1), rdb.SInterStore(ctx, "u", "s1", "s1").Val(), "what fits is stored")
}

// SSCAN and HSCAN over collections Redis keeps as hash tables: a full
// iteration, whatever COUNT, returns every member exactly once, MATCH
// filters, and the cursor ends at 0; the union equals Redis's.
func TestCollectionsScanIteratesEveryMember(t *testing.T) {
	redisAddr := startRedis(t, false)
	n := startNode(t)
	ctx := ctxT(t)
	zr := newClient(t, n)
	rr := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { _ = rr.Close() })
	for _, c := range []*redis.Client{zr, rr} {
		for i := 0; i < 2000; i += 500 {
			var members []any
			var pairs []any
			for j := i; j < i+500; j++ {
				members = append(members, "m"+strconv.Itoa(j))
				pairs = append(pairs, "f"+strconv.Itoa(j), strings.Repeat("v", j%100))
			}
			require.NoError(t, c.SAdd(ctx, "set", members...).Err())
			require.NoError(t, c.HSet(ctx, "hash", pairs...).Err())
		}
	}
	iterate := func(c *redis.Client, hash bool, match string, count int64) (map[string]int, int) {
		seen := map[string]int{}
		calls := 0
		var cursor uint64
		for {
			var keys []string
			var err error
			if hash {
				keys, cursor, err = c.HScan(ctx, "hash", cursor, match, count).Result()
			} else {
				keys, cursor, err = c.SScan(ctx, "set", cursor, match, count).Result()
			}
			require.NoError(t, err)
			calls++
			step := 1
			if hash {
				step = 2
			}
			for i := 0; i < len(keys); i += step {
				seen[keys[i]]++
				if hash {
					require.Equal(t, strings.Repeat("v", mustAtoi(t, keys[i][1:])%100), keys[i+1])
				}
			}
			if cursor == 0 {
				return seen, calls
			}
			require.Less(t, calls, 10000, "the iteration does not end")
		}
	}
	for _, hash := range []bool{false, true} {
		for _, tc := range []struct {
			match string
			count int64
		}{{"", 0}, {"", 1}, {"", 7}, {"*1*", 10}, {"", 100000}} {
			got, calls := iterate(zr, hash, tc.match, tc.count)
			want, _ := iterate(rr, hash, tc.match, tc.count)
			for m, times := range got {
				if times != 1 {
					t.Fatalf("%q returned %d times (hash=%v %+v)", m, times, hash, tc)
				}
			}
			require.Equal(t, len(want), len(got), "hash=%v %+v", hash, tc)
			for m := range want {
				if got[m] != 1 {
					t.Fatalf("%q: Redis returns it, Zaris does not (hash=%v %+v)", m, hash, tc)
				}
			}
			// A call examines COUNT members (10 by default), as Redis's
			// does: a page costs O(COUNT), so COUNT 1 means 2000 calls.
			count := tc.count
			if count == 0 {
				count = 10
			}
			require.LessOrEqual(t, calls, int(2000/count)+2, "calls of a full iteration (hash=%v %+v)", hash, tc)
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// Random choices: SPOP removes what it returns; positive counts are
// distinct members, negative ones may repeat; a count whose reply would be
// enormous is refused with an error instead of allocated (Redis 7.0 tries
// to build it and runs out of memory).
func TestCollectionsRandomCounts(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	rdb := newClient(t, n)
	var members []any
	all := map[string]bool{}
	for i := range 50 {
		members = append(members, fmt.Sprint("x", i))
		all[fmt.Sprint("x", i)] = true
	}
	require.NoError(t, rdb.SAdd(ctx, "s", members...).Err())
	popped := rdb.SPopN(ctx, "s", 20).Val()
	require.Len(t, popped, 20)
	seen := map[string]bool{}
	for _, m := range popped {
		require.True(t, all[m])
		require.False(t, seen[m], "SPOP returned %q twice", m)
		seen[m] = true
		require.False(t, rdb.SIsMember(ctx, "s", m).Val(), "a popped member is still there")
	}
	require.Equal(t, int64(30), rdb.SCard(ctx, "s").Val())
	distinct := rdb.SRandMemberN(ctx, "s", 25).Val()
	require.Len(t, distinct, 25)
	rep := rdb.SRandMemberN(ctx, "s", -1000).Val()
	require.Len(t, rep, 1000)
	counts := map[string]int{}
	for _, m := range rep {
		require.True(t, rdb.SIsMember(ctx, "s", m).Val())
		counts[m]++
	}
	require.Greater(t, len(counts), 20, "1000 picks of 30 members reach most of them")
	require.NoError(t, rdb.HSet(ctx, "h", "a", "1", "b", "2").Err())
	pairs := rdb.HRandFieldWithValues(ctx, "h", -10).Val()
	require.Len(t, pairs, 10)
	for _, p := range pairs {
		require.Equal(t, map[string]string{"a": "1", "b": "2"}[p.Key], p.Value)
	}
	for _, c := range [][]any{
		{"SRANDMEMBER", "s", "-9223372036854775807"}, {"SRANDMEMBER", "s", "-2000000"},
		{"HRANDFIELD", "h", "-9223372036854775807"}, {"HRANDFIELD", "h", "-4611686018427387903", "WITHVALUES"},
	} {
		require.EqualError(t, rdb.Do(ctx, c...).Err(),
			"ERR value is out of range, the reply would hold more than 1048576 elements or 512 MB", "%v", c)
	}
	require.Equal(t, "PONG", rdb.Ping(ctx).Val())
}

// On a replica, SPOP, LMOVE, SMOVE, LMPOP and the set stores converge: the
// random choice is logged as the SREM of the members chosen, a move as a
// pop and a push, a store as a delete and an SADD.
func TestCollectionsReplicaConverges(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	// Best effort: under load a sync wait may time out; convergence is
	// what is checked, polled below.
	c, owner, replicas, tag := syncCluster(t, 3, 2, server.WriteQuorumBestEffort)
	replica := replicas[0]
	rc := newClient(t, owner)
	ctx := ctxT(t)
	k := func(s string) string { return tag + s }
	var members []any
	for i := range 100 {
		members = append(members, "m"+strconv.Itoa(i))
	}
	require.NoError(t, rc.SAdd(ctx, k("s"), members...).Err())
	require.NoError(t, rc.SAdd(ctx, k("t"), "m1", "m2", "zz").Err())
	require.NoError(t, rc.RPush(ctx, k("l"), "a", "b", "c", "d").Err())
	require.NoError(t, rc.Set(ctx, k("str"), "v", 0).Err())
	for range 5 {
		require.NoError(t, rc.SPop(ctx, k("s")).Err())
	}
	require.Len(t, rc.SPopN(ctx, k("s"), 10).Val(), 10)
	require.NoError(t, rc.LMove(ctx, k("l"), k("l2"), "LEFT", "RIGHT").Err())
	require.NoError(t, rc.LMove(ctx, k("l"), k("l"), "LEFT", "RIGHT").Err())
	require.NoError(t, rc.RPopLPush(ctx, k("l2"), k("l3")).Err())
	require.NoError(t, rc.LMPop(ctx, "left", 2, k("none"), k("l")).Err())
	require.NoError(t, rc.SMove(ctx, k("t"), k("s"), "zz").Err())
	require.NoError(t, rc.SInterStore(ctx, k("inter"), k("s"), k("t")).Err())
	require.NoError(t, rc.SUnionStore(ctx, k("str"), k("s"), k("t")).Err())
	require.NoError(t, rc.SDiffStore(ctx, k("t"), k("t"), k("s")).Err())
	require.NoError(t, rc.LInsert(ctx, k("l3"), "BEFORE", "a", "z").Err())
	require.NoError(t, rc.LPushX(ctx, k("l3"), "y").Err())
	seg := owner.Store().SegmentFor(k("s")).ID()
	c.Eventually(10*time.Second, "the replica applied the owner's writes", func() bool { return replicated(owner, replica, k("s")) })
	require.Equal(t, owner.Store().Segment(seg).Digest(), replica.Store().Segment(seg).Digest(),
		"the replica's copy differs from its owner's")
	require.Equal(t, int64(86), rc.SCard(ctx, k("s")).Val())
}

// In a multi-node cluster a move between keys of two nodes is CROSSSLOT,
// as in Redis Cluster, and changes nothing; keys of one node are served.
func TestCollectionsCrossNode(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	cl := clustertest.Start(t, 3, clustertest.Options{})
	ctx := ctxT(t)
	first := "ck:0"
	owner := cl.Owner(first)
	var same, foreign string
	for i := 1; same == "" || foreign == ""; i++ {
		k := fmt.Sprint("ck:", i)
		switch {
		case placement.Slot(k) == placement.Slot(first):
		case cl.Owner(k) == owner && same == "":
			same = k
		case cl.Owner(k) != owner && foreign == "":
			foreign = k
		}
	}
	c := newClient(t, owner)
	require.NoError(t, c.RPush(ctx, first, "a", "b").Err())
	require.NoError(t, c.SAdd(ctx, first+"s", "m").Err())
	cross := "CROSSSLOT Keys in request don't hash to the same slot"
	require.Equal(t, "a", c.LMove(ctx, first, same, "LEFT", "LEFT").Val())
	require.EqualError(t, c.LMove(ctx, first, foreign, "LEFT", "LEFT").Err(), cross)
	require.EqualError(t, c.BLMove(ctx, first, foreign, "LEFT", "LEFT", 0).Err(), cross)
	require.EqualError(t, c.LMPop(ctx, "left", 1, foreign, first).Err(), cross)
	require.EqualError(t, c.SInterCard(ctx, 0, first+"s", foreign).Err(), cross)
	require.EqualError(t, c.SUnionStore(ctx, foreign, first+"s").Err(), cross)
	require.Equal(t, []string{"b"}, c.LRange(ctx, first, 0, -1).Val(), "a refused move changed nothing")
}

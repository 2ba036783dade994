package resp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server/resp"
)

func TestBlockingListPops(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	rdb := newClient(t, n)
	other := newClient(t, n)

	// Served at once when an element is there.
	require.NoError(t, rdb.RPush(ctx, "{b}1", "x").Err())
	require.Equal(t, []string{"{b}1", "x"}, rdb.BLPop(ctx, time.Second, "{b}0", "{b}1").Val())

	// Blocks until another client pushes.
	done := make(chan []string, 1)
	go func() { done <- rdb.BRPop(ctx, 0, "{b}0", "{b}1").Val() }()
	time.Sleep(100 * time.Millisecond)
	select {
	case v := <-done:
		t.Fatalf("BRPOP returned %v before anything was pushed", v)
	default:
	}
	require.NoError(t, other.LPush(ctx, "{b}1", "a", "b").Err())
	select {
	case v := <-done:
		require.Equal(t, []string{"{b}1", "a"}, v)
	case <-time.After(5 * time.Second):
		t.Fatal("BRPOP was not woken by the push")
	}

	// Times out with a null reply.
	start := time.Now()
	require.ErrorIs(t, rdb.BLPop(ctx, 300*time.Millisecond, "{b}empty").Err(), redis.Nil)
	require.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)

	// Errors.
	require.NoError(t, rdb.Set(ctx, "{b}str", "v", 0).Err())
	require.EqualError(t, rdb.BLPop(ctx, 0, "{b}str").Err(), "WRONGTYPE Operation against a key holding the wrong kind of value")
	require.EqualError(t, rdb.Do(ctx, "BLPOP", "{b}1", "-1").Err(), "ERR timeout is negative")
	require.EqualError(t, rdb.Do(ctx, "BLPOP", "{b}1", "x").Err(), "ERR timeout is not a float or out of range")
	// Keys of several slots, all on this node: served (issue #13 item 4).
	require.NoError(t, rdb.RPush(ctx, "{y}cross", "x").Err())
	require.Equal(t, []string{"{y}cross", "x"}, rdb.BLPop(ctx, 0, "{x}cross", "{y}cross").Val())
}

func TestBlockingStreamReads(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	rdb := newClient(t, n)
	other := newClient(t, n)
	require.NoError(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "1-0", Values: []string{"old", "1"}}).Err())

	// XREAD BLOCK with $ returns only what arrives after the call.
	done := make(chan []redis.XStream, 1)
	go func() { done <- rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{"s", "$"}, Block: 0}).Val() }()
	// When the XREAD registers is not observable from here: add entries
	// until one wakes it (an entry added before it registered is not
	// "after the call", and must not be returned).
	deadline := time.Now().Add(testscale.D(5 * time.Second))
	var woken []redis.XStream
	for seq := 0; woken == nil; seq++ {
		id := fmt.Sprintf("2-%d", seq)
		require.NoError(t, other.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: id, Values: []string{"new", id}}).Err())
		select {
		case woken = <-done:
		case <-time.After(20 * time.Millisecond):
			require.False(t, time.Now().After(deadline), "XREAD BLOCK was not woken")
		}
	}
	require.Len(t, woken, 1)
	require.Len(t, woken[0].Messages, 1)
	m := woken[0].Messages[0]
	require.Equal(t, map[string]any{"new": m.ID}, m.Values, "only an entry added after the call")
	require.ErrorIs(t, rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{"s", "$"}, Block: 200 * time.Millisecond}).Err(), redis.Nil)

	// XREADGROUP BLOCK >.
	require.NoError(t, rdb.XGroupCreate(ctx, "s", "g", "$").Err())
	got := make(chan []redis.XStream, 1)
	go func() {
		got <- rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"s", ">"}, Block: 0}).Val()
	}()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, other.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "3-0", Values: []string{"k", "v"}}).Err())
	select {
	case v := <-got:
		require.Len(t, v, 1)
		require.Equal(t, "3-0", v[0].Messages[0].ID)
	case <-time.After(5 * time.Second):
		t.Fatal("XREADGROUP BLOCK was not woken")
	}
	// History (id 0) answers at once, even empty of new entries.
	hist := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"s", "0"}, Block: 0}).Val()
	require.Equal(t, "3-0", hist[0].Messages[0].ID)

	r := dialRaw(t, n.RESPAddr().String())
	require.Equal(t, "-ERR syntax error\r\n", r.do("XREAD", "COUNT", "1", "s", "0"))
	require.Equal(t, "-ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.\r\n", r.do("XREAD", "STREAMS", "s", "t", "0"))
	require.Equal(t, "-ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.\r\n", r.do("XREAD", "STREAMS", "s", ">"))
	require.Equal(t, "-ERR Missing GROUP option for XREADGROUP\r\n", r.do("XREADGROUP", "COUNT", "1", "NOACK", "STREAMS", "s", ">"))
	require.Equal(t, "*-1\r\n", r.do("XREAD", "STREAMS", "{a}s", "{b}s", "0", "0"), "keys of several slots on this node are served")
}

// A blocked client that disconnects, or a node that stops, ends the wait.
func TestBlockedClientGoesAway(t *testing.T) {
	n, rs := startCustom(t, resp.Config{})
	r := dialRaw(t, n.RESPAddr().String())
	r.send(cmd("BLPOP", "never", "0"))
	waitFor(t, 5*time.Second, "the client to block", func() bool { return rs.Connections() == 1 })
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, r.nc.Close())
	waitFor(t, 5*time.Second, "the blocked connection to be dropped", func() bool { return rs.Connections() == 0 })

	r = dialRaw(t, n.RESPAddr().String())
	r.send(cmd("BLPOP", "never", "0"))
	time.Sleep(100 * time.Millisecond)
	stopped := make(chan error, 1)
	go func() { stopped <- n.Stop(context.Background()) }()
	require.Equal(t, "*-1\r\n", r.reply(), "a stopping node answers the blocked command with a null")
	r.expectClosed(5 * time.Second)
	require.NoError(t, <-stopped)
}

// TestClientUnblock: CLIENT UNBLOCK ends a blocking command's wait as a
// timeout (a null reply) or with the UNBLOCKED error, answers 1 for a
// waiting client and 0 for one that is not waiting; the unblocked
// connection goes on serving.
func TestClientUnblock(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	blocked := newClient(t, n, func(o *redis.Options) { o.PoolSize = 1 })
	admin := newClient(t, n)
	id := blocked.ClientID(ctx).Val()
	require.Positive(t, id)
	require.Equal(t, int64(0), admin.ClientUnblock(ctx, id).Val(), "not waiting")

	for _, tc := range []struct {
		errorReason bool
		want        string
	}{{false, redis.Nil.Error()}, {true, "UNBLOCKED client unblocked via CLIENT UNBLOCK"}} {
		done := make(chan error, 1)
		go func() { done <- blocked.BLPop(ctx, 0, "{u}empty").Err() }()
		// The BLPOP starts waiting at a moment not observable from here:
		// unblock until it takes.
		deadline := time.Now().Add(testscale.D(5 * time.Second))
		for {
			var n int64
			if tc.errorReason {
				n = admin.ClientUnblockWithError(ctx, id).Val()
			} else {
				n = admin.ClientUnblock(ctx, id).Val()
			}
			if n == 1 {
				break
			}
			require.False(t, time.Now().After(deadline), "the client never waited")
			time.Sleep(5 * time.Millisecond)
		}
		select {
		case err := <-done:
			require.EqualError(t, err, tc.want)
		case <-time.After(testscale.D(5 * time.Second)):
			t.Fatal("CLIENT UNBLOCK answered 1 but the BLPOP still waits")
		}
		require.Equal(t, id, blocked.ClientID(ctx).Val(), "the same connection serves on")
	}
	require.Equal(t, int64(0), admin.ClientUnblock(ctx, id).Val(), "no longer waiting")
}

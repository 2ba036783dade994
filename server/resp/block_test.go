package resp_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
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

// A client blocked on a key that a transaction pushed to, deleted and SET
// stays blocked, as in Redis (its tcl suite's "LPUSH + DEL + SET should not
// awake blocked client"): the wake-up found a string, which is not an
// answer. The command waits on two keys and the second is fed afterwards,
// so its serving retry always finds the first key a string.
func TestBlockedClientIgnoresAKeyThatBecameAString(t *testing.T) {
	n := startNode(t)
	addr := n.RESPAddr().String()
	info := newClient(t, n)
	for _, tc := range []struct {
		name, feed, want string
		block            []string
		push             func(key string) []string
	}{
		{name: "BLPOP", block: []string{"BLPOP", "{w}a", "{w}b", "0"},
			push: func(k string) []string { return []string{"LPUSH", k, "x"} },
			want: "*2\r\n$4\r\n{w}b\r\n$1\r\nx\r\n"},
		{name: "BLMPOP", block: []string{"BLMPOP", "0", "2", "{w}a", "{w}b", "LEFT"},
			push: func(k string) []string { return []string{"LPUSH", k, "x"} },
			want: "*2\r\n$4\r\n{w}b\r\n*1\r\n$1\r\nx\r\n"},
		{name: "BZPOPMIN", block: []string{"BZPOPMIN", "{w}a", "{w}b", "0"},
			push: func(k string) []string { return []string{"ZADD", k, "1", "x"} },
			want: "*3\r\n$4\r\n{w}b\r\n$1\r\nx\r\n$1\r\n1\r\n"},
		{name: "BZMPOP", block: []string{"BZMPOP", "0", "2", "{w}a", "{w}b", "MIN"},
			push: func(k string) []string { return []string{"ZADD", k, "1", "x"} },
			want: "*2\r\n$4\r\n{w}b\r\n*1\r\n*2\r\n$1\r\nx\r\n$1\r\n1\r\n"},
		{name: "XREAD", block: []string{"XREAD", "BLOCK", "0", "STREAMS", "{w}a", "{w}b", "$", "$"},
			push: func(k string) []string { return []string{"XADD", k, "1-1", "f", "v"} },
			want: "*1\r\n*2\r\n$4\r\n{w}b\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := dialRaw(t, addr)
			require.Equal(t, ":0\r\n", w.do("DEL", "{w}a", "{w}b"))
			blocked := dialRaw(t, addr)
			blocked.send(cmd(tc.block...))
			require.Eventually(t, func() bool { return clientsInfo(t, info, "blocked_clients") == 1 }, 10*time.Second, 5*time.Millisecond)
			require.Equal(t, "+OK\r\n", w.do("MULTI"))
			require.Equal(t, "+QUEUED\r\n", w.do(tc.push("{w}a")...))
			require.Equal(t, "+QUEUED\r\n", w.do("DEL", "{w}a"))
			require.Equal(t, "+QUEUED\r\n", w.do("SET", "{w}a", "foo"))
			require.Equal(t, "*3\r\n:1\r\n:1\r\n+OK\r\n", strings.Replace(w.do("EXEC"), "$3\r\n1-1\r\n", ":1\r\n", 1))
			w.do(tc.push("{w}b")...)
			require.Equal(t, tc.want, blocked.reply())
			require.Equal(t, "$3\r\nfoo\r\n", w.do("GET", "{w}a"))
			w.do("DEL", "{w}a", "{w}b")
		})
	}
}

// Clients blocked on a key are served in the order they blocked (Redis's
// rule; the tcl suite's "BLMPOP with multiple blocked clients"): one
// transaction feeds two lists, and each client, in turn, takes what the
// ones before it left.
func TestBlockedClientsAreServedInTheOrderTheyBlocked(t *testing.T) {
	n := startNode(t)
	addr := n.RESPAddr().String()
	info := newClient(t, n)
	var rds []*rawConn
	for i, c := range [][]string{
		{"BLMPOP", "0", "2", "{q}1", "{q}2", "LEFT", "COUNT", "1"},
		{"BLMPOP", "0", "2", "{q}1", "{q}2", "RIGHT", "COUNT", "10"},
		{"BLMPOP", "0", "2", "{q}1", "{q}2", "LEFT", "COUNT", "10"},
		{"BLMPOP", "0", "2", "{q}1", "{q}2", "RIGHT", "COUNT", "1"},
	} {
		rd := dialRaw(t, addr)
		rd.send(cmd(c...))
		require.Eventually(t, func() bool { return clientsInfo(t, info, "blocked_clients") == int64(i+1) }, 10*time.Second, time.Millisecond)
		rds = append(rds, rd)
	}
	w := dialRaw(t, addr)
	require.Equal(t, "+OK\r\n", w.do("MULTI"))
	w.do("LPUSH", "{q}1", "a", "b", "c", "d", "e")
	w.do("LPUSH", "{q}2", "1", "2", "3", "4", "5")
	require.Equal(t, "*2\r\n:5\r\n:5\r\n", w.do("EXEC"))
	list := func(key string, elems ...string) string {
		s := fmt.Sprintf("*2\r\n$%d\r\n%s\r\n*%d\r\n", len(key), key, len(elems))
		for _, e := range elems {
			s += fmt.Sprintf("$%d\r\n%s\r\n", len(e), e)
		}
		return s
	}
	require.Equal(t, list("{q}1", "e"), rds[0].reply())
	require.Equal(t, list("{q}1", "a", "b", "c", "d"), rds[1].reply())
	require.Equal(t, list("{q}2", "5", "4", "3", "2", "1"), rds[2].reply())
	require.Equal(t, int64(1), clientsInfo(t, info, "blocked_clients"))
	w.do("LPUSH", "{q}2", "1", "2", "3")
	require.Equal(t, list("{q}2", "1"), rds[3].reply())

	// One element at a time: BLPOP clients get them in blocking order.
	var pops []*rawConn
	for i := range 5 {
		rd := dialRaw(t, addr)
		rd.send(cmd("BLPOP", "{q}3", "0"))
		require.Eventually(t, func() bool { return clientsInfo(t, info, "blocked_clients") == int64(i+1) }, 10*time.Second, time.Millisecond)
		pops = append(pops, rd)
	}
	for i, rd := range pops {
		v := strconv.Itoa(i)
		require.Equal(t, ":1\r\n", w.do("RPUSH", "{q}3", v))
		require.Equal(t, "*2\r\n$4\r\n{q}3\r\n$1\r\n"+v+"\r\n", rd.reply())
	}
}

// A blocked XREADGROUP whose stream goes away (deleted, replaced by
// another type, flushed) or whose group is destroyed ends with Redis 7.0's
// errors (its tcl suite's "Blocking XREADGROUP: key deleted" and the
// following tests); a plain XREAD keeps waiting.
func TestBlockedGroupReadEndsWhenItsStreamGoes(t *testing.T) {
	n := startNode(t)
	addr := n.RESPAddr().String()
	info := newClient(t, n)
	gone := "-UNBLOCKED the stream key no longer exists\r\n"
	for _, tc := range []struct {
		name   string
		change [][]string
		want   string
	}{
		{"DEL", [][]string{{"DEL", "s"}}, gone},
		{"SET", [][]string{{"SET", "s", "v"}}, gone},
		{"MULTI DEL SADD", [][]string{{"MULTI"}, {"DEL", "s"}, {"SADD", "s", "e1"}, {"EXEC"}}, gone},
		{"FLUSHALL", [][]string{{"FLUSHALL"}}, gone},
		{"XGROUP DESTROY", [][]string{{"XGROUP", "DESTROY", "s", "g"}},
			"-NOGROUP the consumer group this client was blocked on no longer exists\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := dialRaw(t, addr)
			w.do("DEL", "s")
			require.Equal(t, "$5\r\n666-0\r\n", w.do("XADD", "s", "666", "f", "v"))
			require.Equal(t, "+OK\r\n", w.do("XGROUP", "CREATE", "s", "g", "$"))
			rd := dialRaw(t, addr)
			rd.send(cmd("XREADGROUP", "GROUP", "g", "Alice", "BLOCK", "0", "STREAMS", "s", ">"))
			require.Eventually(t, func() bool { return clientsInfo(t, info, "blocked_clients") == 1 }, 10*time.Second, time.Millisecond)
			for _, c := range tc.change {
				w.do(c...)
			}
			require.Equal(t, tc.want, rd.reply())
			require.Eventually(t, func() bool { return clientsInfo(t, info, "blocked_clients") == 0 }, 10*time.Second, time.Millisecond)
		})
	}
}

// Two clients that block back to back keep their order (the tcl suite's
// "BRPOPLPUSH with multiple blocked clients"): the first try of a blocking
// command runs on the event loop, in the order the loop read the commands,
// and takes the client's place there. When both moved to goroutines of
// their own first, the second now and then took the first place, was
// served the element, and the first blocked for good.
func TestClientsBlockingBackToBackKeepTheirOrder(t *testing.T) {
	requireLoops(t)
	n := startNode(t, oneLoop)
	addr := n.RESPAddr().String()
	info := newClient(t, n)
	r := dialRaw(t, addr)
	for range 20 {
		a, b := dialRaw(t, addr), dialRaw(t, addr)
		require.Equal(t, "+PONG\r\n", a.do("PING"))
		require.Equal(t, "+PONG\r\n", b.do("PING"))
		r.do("DEL", "{o}list", "{o}t1", "{o}t2")
		require.Equal(t, "+OK\r\n", r.do("SET", "{o}t1", "nolist"))
		a.send(cmd("BRPOPLPUSH", "{o}list", "{o}t1", "0"))
		b.send(cmd("BRPOPLPUSH", "{o}list", "{o}t2", "0"))
		require.Eventually(t, func() bool { return clientsInfo(t, info, "blocked_clients") == 2 }, 10*time.Second, time.Millisecond)
		require.Equal(t, ":1\r\n", r.do("LPUSH", "{o}list", "foo"))
		require.Equal(t, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", a.reply())
		require.Equal(t, "$3\r\nfoo\r\n", b.reply())
		require.Equal(t, "*1\r\n$3\r\nfoo\r\n", r.do("LRANGE", "{o}t2", "0", "-1"))
		_ = a.nc.Close()
		_ = b.nc.Close()
	}
}

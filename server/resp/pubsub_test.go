package resp_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func receive(t *testing.T, ch <-chan *redis.Message) *redis.Message {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message received")
		return nil
	}
}

func TestPubSub(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+string(rune('0'+proto)), func(t *testing.T) {
			n := startNode(t)
			ctx := ctxT(t)
			pub := newClient(t, n, func(o *redis.Options) { o.Protocol = proto })
			subc := newClient(t, n, func(o *redis.Options) { o.Protocol = proto })

			ps := subc.Subscribe(ctx, "news", "sport")
			defer ps.Close()
			_, err := ps.Receive(ctx) // the first confirmation
			require.NoError(t, err)
			require.NoError(t, ps.PSubscribe(ctx, "wea*"))
			ch := ps.Channel()
			waitFor(t, 5*time.Second, "the subscriptions", func() bool {
				return pub.PubSubNumSub(ctx, "news").Val()["news"] == 1 && pub.PubSubNumPat(ctx).Val() == 1
			})

			require.Equal(t, int64(1), pub.Publish(ctx, "news", "hello").Val())
			m := receive(t, ch)
			require.Equal(t, "news", m.Channel)
			require.Equal(t, "hello", m.Payload)
			require.Equal(t, int64(1), pub.Publish(ctx, "weather", "rain\r\nbinary").Val())
			m = receive(t, ch)
			require.Equal(t, "weather", m.Channel)
			require.Equal(t, "wea*", m.Pattern)
			require.Equal(t, "rain\r\nbinary", m.Payload)
			require.Equal(t, int64(0), pub.Publish(ctx, "nobody", "x").Val())

			require.ElementsMatch(t, []string{"news", "sport"}, pub.PubSubChannels(ctx, "*").Val())
			require.Equal(t, []string{"news"}, pub.PubSubChannels(ctx, "n*").Val())
			require.NoError(t, ps.Unsubscribe(ctx, "news"))
			waitFor(t, 5*time.Second, "the unsubscription", func() bool { return pub.PubSubNumSub(ctx, "news").Val()["news"] == 0 })
			require.Equal(t, int64(1), pub.Publish(ctx, "sport", "goal").Val())
			require.Equal(t, "goal", receive(t, ch).Payload)
		})
	}
}

func TestSubscribedModeRESP2(t *testing.T) {
	n := startNode(t)
	r := dialRaw(t, n.RESPAddr().String())
	require.Equal(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n", r.do("SUBSCRIBE", "a", "b")+r.reply())
	require.Equal(t, "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n", r.do("GET", "k"))
	require.Equal(t, "*2\r\n$4\r\npong\r\n$0\r\n\r\n", r.do("PING"))
	other := dialRaw(t, n.RESPAddr().String())
	require.Equal(t, ":1\r\n", other.do("PUBLISH", "a", "hi"))
	require.Equal(t, "*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$2\r\nhi\r\n", r.reply())
	require.Equal(t, "*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:0\r\n", r.do("UNSUBSCRIBE")+r.reply())
	require.Equal(t, "$-1\r\n", r.do("GET", "k"), "out of subscribed mode")
	require.Equal(t, "*3\r\n$12\r\npunsubscribe\r\n$-1\r\n:0\r\n", r.do("PUNSUBSCRIBE"))

	// RESP3: pushes, and any command is allowed.
	r3 := dialRaw(t, n.RESPAddr().String())
	r3.do("HELLO", "3")
	require.Equal(t, ">3\r\n$10\r\npsubscribe\r\n$2\r\nc*\r\n:1\r\n", r3.do("PSUBSCRIBE", "c*"))
	require.Equal(t, "_\r\n", r3.do("GET", "k"))
	require.Equal(t, ":1\r\n", other.do("PUBLISH", "cx", "yo"))
	require.Equal(t, ">4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\ncx\r\n$2\r\nyo\r\n", r3.reply())
}

func TestKeyspaceNotifications(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	rdb := newClient(t, n)
	require.NoError(t, rdb.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err())
	ps := rdb.PSubscribe(ctx, "__key*@0__:*")
	defer ps.Close()
	_, err := ps.Receive(ctx)
	require.NoError(t, err)
	ch := ps.Channel()
	expect := func(channel, payload string) {
		t.Helper()
		m := receive(t, ch)
		require.Equal(t, channel, m.Channel)
		require.Equal(t, payload, m.Payload)
	}

	require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())
	expect("__keyspace@0__:k", "set")
	expect("__keyevent@0__:set", "k")
	require.NoError(t, rdb.HSet(ctx, "h", "f", "v").Err())
	expect("__keyspace@0__:h", "hset")
	expect("__keyevent@0__:hset", "h")
	require.NoError(t, rdb.LPush(ctx, "l", "x").Err())
	expect("__keyspace@0__:l", "lpush")
	expect("__keyevent@0__:lpush", "l")
	require.NoError(t, rdb.Expire(ctx, "k", time.Hour).Err())
	expect("__keyspace@0__:k", "expire")
	expect("__keyevent@0__:expire", "k")
	require.NoError(t, rdb.Del(ctx, "h").Err())
	expect("__keyspace@0__:h", "del")
	expect("__keyevent@0__:del", "h")
	// Expiry by the store's sweeper is published too; a SET with a TTL
	// notifies "expire" after "set", as Redis does.
	require.NoError(t, rdb.Set(ctx, "short", "v", 100*time.Millisecond).Err())
	expect("__keyspace@0__:short", "set")
	expect("__keyevent@0__:set", "short")
	expect("__keyspace@0__:short", "expire")
	expect("__keyevent@0__:expire", "short")
	expect("__keyspace@0__:short", "expired")
	expect("__keyevent@0__:expired", "short")

	// Only the classes asked for: E and generic commands.
	require.NoError(t, rdb.ConfigSet(ctx, "notify-keyspace-events", "Eg").Err())
	require.NoError(t, rdb.Set(ctx, "quiet", "v", 0).Err())
	require.NoError(t, rdb.Del(ctx, "quiet").Err())
	expect("__keyevent@0__:del", "quiet")
	require.NoError(t, rdb.ConfigSet(ctx, "notify-keyspace-events", "").Err())
	require.NoError(t, rdb.Del(ctx, "l").Err())
	select {
	case m := <-ch:
		t.Fatalf("notifications are off, got %v", m)
	case <-time.After(200 * time.Millisecond):
	}
}

// Pub/sub confirmations and messages are pushes, delivered whatever CLIENT
// REPLY says, in RESP2 and RESP3 alike, byte for byte as redis-server
// (the tcl suite's "PubSub messages with CLIENT REPLY OFF" hung waiting for
// the unsubscribe confirmations).
func TestPubSubPushesIgnoreClientReplyOff(t *testing.T) {
	redisAddr := startRedis(t, false)
	n := startNode(t)
	for _, proto := range []string{"2", "3"} {
		var got [2]string
		for i, addr := range []string{redisAddr, n.RESPAddr().String()} {
			sub, pub := dialRaw(t, addr), dialRaw(t, addr)
			sub.do("HELLO", proto)
			sub.send(cmd("CLIENT", "REPLY", "OFF") + cmd("SUBSCRIBE", "channel") + cmd("PSUBSCRIBE", "ch*"))
			for _, want := range []string{"subscribe", "psubscribe"} { // the confirmations arrive
				r := sub.reply()
				require.Contains(t, r, want)
				got[i] += r
			}
			require.Equal(t, ":2\r\n", pub.do("PUBLISH", "channel", "hello"))
			got[i] += sub.reply() + sub.reply() // read before the unsubscribe: Zaris's forwarder may lag the PUBLISH's reply
			sub.send(cmd("UNSUBSCRIBE", "channel") + cmd("PUNSUBSCRIBE", "ch*") + cmd("CLIENT", "REPLY", "ON") + cmd("PING"))
			for {
				r := sub.reply()
				got[i] += r
				if r == "+PONG\r\n" {
					break
				}
			}
		}
		require.Equal(t, got[0], got[1], "RESP%s", proto)
		require.Contains(t, got[1], "punsubscribe", "RESP%s", proto)
	}
}

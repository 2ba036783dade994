package resp_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/rdb"
	"github.com/zaris-io/zaris/server/resp"
)

// dumpShape is one value written to both servers by the same commands.
type dumpShape struct {
	name  string
	kind  string
	write func(ctx context.Context, c *redis.Client, key string)
}

func dumpShapes() []dumpShape {
	str := func(v string) func(context.Context, *redis.Client, string) {
		return func(ctx context.Context, c *redis.Client, key string) { c.Set(ctx, key, v, 0) }
	}
	list := func(n, size int) func(context.Context, *redis.Client, string) {
		return func(ctx context.Context, c *redis.Client, key string) {
			for i := range n {
				c.RPush(ctx, key, fmt.Sprintf("%d:%s", i, strings.Repeat("e", size)))
			}
		}
	}
	set := func(n int, format string) func(context.Context, *redis.Client, string) {
		return func(ctx context.Context, c *redis.Client, key string) {
			for i := range n {
				c.SAdd(ctx, key, fmt.Sprintf(format, i))
			}
		}
	}
	zset := func(n int) func(context.Context, *redis.Client, string) {
		return func(ctx context.Context, c *redis.Client, key string) {
			for i := range n {
				c.ZAdd(ctx, key, redis.Z{Score: float64(i%7) - 2.5 + float64(i)/3, Member: fmt.Sprintf("m%d", i)})
			}
			c.Do(ctx, "ZADD", key, "+inf", "top", "-inf", "bottom", "0", "zero")
		}
	}
	hash := func(n, size int) func(context.Context, *redis.Client, string) {
		return func(ctx context.Context, c *redis.Client, key string) {
			for i := range n {
				c.HSet(ctx, key, fmt.Sprintf("f%d", n-i), strings.Repeat("v", size)+fmt.Sprint(i))
			}
		}
	}
	return []dumpShape{
		{"short string", "string", str("hello")},
		{"empty string", "string", str("")},
		{"small int", "string", str("127")},
		{"int16", "string", str("-32768")},
		{"int32", "string", str("2147483647")},
		{"past int32", "string", str("2147483648")},
		{"leading zero", "string", str("007")},
		{"long compressible string", "string", str(strings.Repeat("abcdefgh", 200))},
		{"small list", "list", list(5, 3)},
		{"big list", "list", list(1000, 100)},
		{"list with a huge element", "list", func(ctx context.Context, c *redis.Client, key string) {
			c.RPush(ctx, key, "a", strings.Repeat("x", 10000), "b")
		}},
		{"int set", "set", set(50, "%d")},
		{"small set", "set", set(5, "s%d")},
		{"big set", "set", set(1000, "member-%d")},
		{"small zset", "zset", zset(5)},
		{"big zset", "zset", zset(200)},
		{"small hash", "hash", hash(6, 4)},
		{"big hash", "hash", hash(1000, 70)},
		{"stream with groups", "stream", func(ctx context.Context, c *redis.Client, key string) {
			for i := range 300 {
				values := []any{"f", i, "g", "x"}
				if i%7 == 0 {
					values = []any{"other", i}
				}
				c.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: fmt.Sprintf("%d-%d", 1000+i/3, i%3), Values: values})
			}
			c.XDel(ctx, key, "1000-1", "1010-2")
			c.XGroupCreate(ctx, key, "g1", "0")
			c.XGroupCreate(ctx, key, "g2", "1050-0")
			c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g1", Consumer: "alice", Streams: []string{key, ">"}, Count: 10})
			c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g1", Consumer: "bob", Streams: []string{key, ">"}, Count: 5})
			c.XAck(ctx, key, "g1", "1000-0", "1001-0")
		}},
		{"empty stream with a group", "stream", func(ctx context.Context, c *redis.Client, key string) {
			c.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: "5-5", Values: []any{"f", "v"}})
			c.XDel(ctx, key, "5-5")
			c.XGroupCreate(ctx, key, "g", "$")
		}},
	}
}

// contentOf reads key's whole value in a comparable form: lists and small
// hashes in their order, sets sorted.
func contentOf(t *testing.T, ctx context.Context, c *redis.Client, key, kind string) any {
	t.Helper()
	switch kind {
	case "string":
		v, err := c.Get(ctx, key).Result()
		require.NoError(t, err)
		return v
	case "list":
		v, err := c.LRange(ctx, key, 0, -1).Result()
		require.NoError(t, err)
		return v
	case "set":
		v, err := c.SMembers(ctx, key).Result()
		require.NoError(t, err)
		slices.Sort(v)
		return v
	case "zset":
		v, err := c.ZRangeWithScores(ctx, key, 0, -1).Result()
		require.NoError(t, err)
		return v
	case "stream":
		// Entries, then per group what does not depend on the clock: the
		// group's counters and its pending summary.
		entries, err := c.Do(ctx, "XRANGE", key, "-", "+").Slice()
		require.NoError(t, err)
		info, err := c.Do(ctx, "XINFO", "STREAM", key).Slice()
		require.NoError(t, err)
		counters := map[any]any{}
		for i := 0; i+1 < len(info); i += 2 {
			switch info[i] {
			case "length", "last-generated-id", "max-deleted-entry-id", "entries-added", "recorded-first-entry-id", "groups":
				counters[info[i]] = info[i+1]
			}
		}
		groups, err := c.Do(ctx, "XINFO", "GROUPS", key).Slice()
		require.NoError(t, err)
		var pending []any
		for _, g := range groups {
			name := g.([]any)[1]
			p, err := c.Do(ctx, "XPENDING", key, name).Slice()
			require.NoError(t, err)
			pending = append(pending, p)
		}
		return []any{entries, counters, groups, pending}
	case "hash":
		v, err := c.Do(ctx, "HGETALL", key).Slice()
		require.NoError(t, err)
		if len(v) > 2*512 { // a hashtable answers in no particular order
			m := map[any]any{}
			for i := 0; i+1 < len(v); i += 2 {
				m[v[i]] = v[i+1]
			}
			return m
		}
		return v
	}
	t.Fatalf("kind %s", kind)
	return nil
}

// TestDumpRestoreWithRedis moves every kind of value both ways between a
// real redis-server and a Zaris node with DUMP and RESTORE: Redis's
// payloads (listpacks, quicklists, intsets, LZF-compressed strings) restore
// on Zaris, Zaris's on Redis, each to the content the commands wrote; a
// short string dumps to Redis's bytes.
func TestDumpRestoreWithRedis(t *testing.T) {
	ctx := context.Background()
	// RESP2: HGETALL in the hash's order (RESP3's map has none in go-redis).
	rd := redis.NewClient(&redis.Options{Addr: startRedis(t, false), Protocol: 2})
	t.Cleanup(func() { _ = rd.Close() })
	z := newClient(t, startNode(t), func(o *redis.Options) { o.Protocol = 2 })
	for i, s := range dumpShapes() {
		t.Run(s.name, func(t *testing.T) {
			key := fmt.Sprintf("orig%d", i)
			s.write(ctx, rd, key)
			s.write(ctx, z, key)
			want := contentOf(t, ctx, rd, key, s.kind)
			require.Equal(t, want, contentOf(t, ctx, z, key, s.kind), "the two servers hold the same value")

			fromRedis, err := rd.Dump(ctx, key).Result()
			require.NoError(t, err)
			require.NoError(t, z.Restore(ctx, "fromredis"+key, 0, fromRedis).Err())
			require.Equal(t, want, contentOf(t, ctx, z, "fromredis"+key, s.kind), "Redis's payload restored on Zaris")
			require.Equal(t, s.kind, z.Type(ctx, "fromredis"+key).Val())

			fromZaris, err := z.Dump(ctx, key).Result()
			require.NoError(t, err)
			require.NoError(t, rd.Restore(ctx, "fromzaris"+key, 0, fromZaris).Err())
			require.Equal(t, want, contentOf(t, ctx, rd, "fromzaris"+key, s.kind), "Zaris's payload restored on Redis")
			require.NoError(t, z.Restore(ctx, "fromzaris"+key, 0, fromZaris).Err())
			require.Equal(t, want, contentOf(t, ctx, z, "fromzaris"+key, s.kind), "Zaris's payload restored on Zaris")

			if s.kind == "string" && len(want.(string)) <= 20 {
				require.Equal(t, []byte(fromRedis), []byte(fromZaris), "a short string dumps as Redis dumps it")
			}
		})
	}
}

// TestRestoreOptionsAndErrors: RESTORE's TTL, REPLACE, ABSTTL and IDLETIME,
// a TTL already past, and the refusals — answered as Redis answers them.
func TestRestoreOptionsAndErrors(t *testing.T) {
	ctx := context.Background()
	rd := redis.NewClient(&redis.Options{Addr: startRedis(t, false)})
	t.Cleanup(func() { _ = rd.Close() })
	z := newClient(t, startNode(t))
	for _, c := range []*redis.Client{rd, z} {
		c.Set(ctx, "src", "value", 0)
		c.RPush(ctx, "list", "a", "b")
		c.Set(ctx, "busy", "old", 0)
	}
	payload := z.Dump(ctx, "src").Val()
	listPayload := z.Dump(ctx, "list").Val()
	past := time.Now().Add(-time.Hour).UnixMilli()

	// The same replies from both servers, row by row.
	rows := [][]any{
		{"RESTORE", "busy", "0", payload},
		{"RESTORE", "busy", "0", "garbage"},
		{"RESTORE", "new", "0", "garbage"},
		{"RESTORE", "new", "-1", payload},
		{"RESTORE", "new", "x", payload},
		{"RESTORE", "new", "0", payload, "BOGUS"},
		{"RESTORE", "new", "0", payload, "IDLETIME", "-1"},
		{"RESTORE", "new", "0", payload, "IDLETIME", "x"},
		{"RESTORE", "new", "0", payload, "FREQ", "256"},
		{"RESTORE", "new", "0", payload, "FREQ", "-1"},
		{"RESTORE", "new", "0", payload, "IDLETIME", "1", "FREQ", "1"},
		{"RESTORE", "new", "0", payload, "FREQ", "1", "IDLETIME", "1"},
		{"RESTORE", "new", "0", payload, "IDLETIME"},
		{"RESTORE", "new", "0", payload[:len(payload)-1] + "x"},
		{"RESTORE", "new", "0", "\x00\x05hello\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x00"}, // RDB version 13
		{"RESTORE", "new", "0", "\x00\x05hel\x0a\x00\x00\x00\x00\x00\x00\x00\x00\x00"},   // CRC 0: checked all the same
		{"RESTORE", "new", "0", string(rdb.Seal([]byte("\x00\x20hel"), rdb.Version))},    // a string longer than the payload
		{"RESTORE", "new", "0", string(rdb.Seal([]byte{15, 0}, rdb.Version))},            // a stream cut short
		{"RESTORE", "new", "0", string(rdb.Seal([]byte{2, 0}, rdb.Version))},             // an empty set
		{"RESTORE", "new", "0", payload}, {"GET", "new"}, {"TTL", "new"},
		{"RESTORE", "busy", "0", listPayload, "REPLACE"}, {"TYPE", "busy"}, {"LRANGE", "busy", "0", "-1"},
		{"RESTORE", "busy", fmt.Sprint(past), payload, "REPLACE", "ABSTTL"}, {"EXISTS", "busy"},
		{"RESTORE", "gone", fmt.Sprint(past), payload, "ABSTTL"}, {"EXISTS", "gone"},
		{"DUMP", "nosuchkey"},
	}
	for _, row := range rows {
		want, wantErr := rd.Do(ctx, row...).Result()
		got, gotErr := z.Do(ctx, row...).Result()
		require.Equal(t, fmt.Sprint(wantErr), fmt.Sprint(gotErr), "%q", row)
		require.Equal(t, want, got, "%q", row)
	}

	require.NoError(t, z.Do(ctx, "RESTORE", "ttl", "5000", payload).Err())
	pttl := z.PTTL(ctx, "ttl").Val()
	require.True(t, pttl > 0 && pttl <= 5*time.Second, "PTTL %v", pttl)
	at := time.Now().Add(time.Hour).UnixMilli()
	require.NoError(t, z.Do(ctx, "RESTORE", "abs", at, payload, "ABSTTL").Err())
	require.Equal(t, at, z.Do(ctx, "PEXPIRETIME", "abs").Val())

	require.NoError(t, z.Do(ctx, "RESTORE", "idle", "0", payload, "IDLETIME", "1000").Err())
	idle := z.ObjectIdleTime(ctx, "idle").Val()
	require.True(t, idle >= 1000*time.Second && idle < 1010*time.Second, "OBJECT IDLETIME %v", idle)
	require.NoError(t, z.Do(ctx, "RESTORE", "idlest", "0", payload, "IDLETIME", "9223372036854775807").Err())
	idle = z.ObjectIdleTime(ctx, "idlest").Val()
	require.True(t, idle >= 1<<30/1000*time.Second, "OBJECT IDLETIME %v: an IDLETIME past the stamp's range is its longest", idle)
	require.NoError(t, z.Do(ctx, "RESTORE", "freq", "0", payload, "FREQ", "100").Err())
	require.Equal(t, "value", z.Get(ctx, "freq").Val())

}

// TestRestoreIsNotifiedAsRestore: a RESTORE publishes Redis's "restore"
// keyspace event, not the "set" of the put it makes.
func TestRestoreIsNotifiedAsRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	z := newClient(t, startNode(t))
	require.NoError(t, z.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err())
	sub := z.PSubscribe(ctx, "__keyevent@0__:*")
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(ctx)
	require.NoError(t, err)
	z.HSet(ctx, "h", "f", "v")
	payload := z.Dump(ctx, "h").Val()
	require.NoError(t, z.Restore(ctx, "copy", 0, payload).Err())
	for {
		m, err := sub.ReceiveMessage(ctx)
		require.NoError(t, err)
		if m.Payload == "copy" {
			require.Equal(t, "__keyevent@0__:restore", m.Channel)
			return
		}
	}
}

// TestMigrateFromRedisIntoZaris: redis-server's own MIGRATE (SELECT, then
// RESTORE … REPLACE per key) moves keys of every kind into a Zaris node.
func TestMigrateFromRedisIntoZaris(t *testing.T) {
	ctx := context.Background()
	rd := redis.NewClient(&redis.Options{Addr: startRedis(t, false), Protocol: 2})
	t.Cleanup(func() { _ = rd.Close() })
	n := startNode(t)
	z := newClient(t, n, func(o *redis.Options) { o.Protocol = 2 })
	keys, want := writeShapes(t, ctx, rd, "k")
	z.Set(ctx, "k0", "already here", 0)
	addr := n.RESPAddr().(*net.TCPAddr)
	args := append([]any{"MIGRATE", addr.IP.String(), addr.Port, "", 0, 5000, "REPLACE", "KEYS"}, keys...)
	require.Equal(t, "OK", rd.Do(ctx, args...).Val())
	require.Zero(t, rd.Exists(ctx, keys[0].(string)).Val(), "MIGRATE deletes what it moved")
	requireShapes(t, ctx, z, "k", want)
}

// writeShapes writes every dumpShape under prefix0, prefix1, … with a TTL
// of an hour and returns the keys and their content.
func writeShapes(t *testing.T, ctx context.Context, c *redis.Client, prefix string) ([]any, map[string]any) {
	t.Helper()
	var keys []any
	want := map[string]any{}
	for i, s := range dumpShapes() {
		key := fmt.Sprintf("%s%d", prefix, i)
		s.write(ctx, c, key)
		c.Expire(ctx, key, time.Hour)
		keys = append(keys, key)
		want[key] = contentOf(t, ctx, c, key, s.kind)
	}
	return keys, want
}

// requireShapes checks that c holds writeShapes' keys with their content
// and (about) their hour of TTL.
func requireShapes(t *testing.T, ctx context.Context, c *redis.Client, prefix string, want map[string]any) {
	t.Helper()
	for i, s := range dumpShapes() {
		key := fmt.Sprintf("%s%d", prefix, i)
		require.Equal(t, want[key], contentOf(t, ctx, c, key, s.kind), key)
		ttl := c.TTL(ctx, key).Val()
		require.True(t, ttl > 59*time.Minute && ttl <= time.Hour, "%s: TTL %v", key, ttl)
	}
}

// TestRestoreHostilePayloads: payloads with a valid CRC whose lengths claim
// gigabytes or run past their end are refused as a bad data format without
// allocating what they claim, and the node goes on answering.
func TestRestoreHostilePayloads(t *testing.T) {
	ctx := context.Background()
	z := newClient(t, startNode(t))
	huge := []byte{0x81, 0x3f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff} // a 64-bit length of 2^62−1
	for name, object := range map[string][]byte{
		"string of 2^62 bytes":     append([]byte{0}, huge...),
		"list of 2^62 elements":    append([]byte{1}, huge...),
		"zset of 2^62 members":     append([]byte{5}, huge...),
		"hash of 2^62 pairs":       append([]byte{4}, huge...),
		"LZF claiming 4 GiB":       {0, 0xC3, 0x02, 0x80, 0xff, 0xff, 0xff, 0xff, 0x01, 'a'},
		"listpack past its end":    {16, 0x0a, 0xff, 0xff, 0x00, 0x00, 0x02, 0x00, 0x81, 'a', 0x02, 0xff},
		"intset of 2^30 ints":      {11, 0x10, 8, 0, 0, 0, 0, 0, 0, 0x40, 1, 0, 0, 0, 0, 0, 0, 0},
		"quicklist of 2^62 nodes":  append([]byte{18}, huge...),
		"a module value":           {7, 0x01},
		"an empty set":             {2, 0},
		"string cut short":         {0, 0x05, 'a', 'b'},
		"set with a trailing byte": {2, 1, 1, 'a', 'x'},
		"unknown type 200":         {200},
	} {
		payload := rdb.Seal(slices.Clone(object), rdb.Version)
		err := z.Restore(ctx, "hostile", 0, string(payload)).Err()
		require.EqualError(t, err, "ERR Bad data format", name)
		require.Zero(t, z.Exists(ctx, "hostile").Val(), name)
	}
	require.Equal(t, "PONG", z.Ping(ctx).Val())
}

// TestMigrateFromZaris: MIGRATE on a Zaris node moves keys of every kind
// to a redis-server and to another Zaris node with their TTLs, and
// answers as redis-server's MIGRATE does — row by row, from both sources to
// the same target — for NOKEY, COPY, REPLACE, a busy key, a refused
// connection, a wrong password and bad options.
func TestMigrateFromZaris(t *testing.T) {
	ctx := context.Background()
	proto2 := func(o *redis.Options) { o.Protocol = 2 }
	source := newClient(t, startNode(t), proto2)
	targetNode := startNode(t)
	zTarget := newClient(t, targetNode, proto2)
	targetAddr := startRedis(t, false)
	rTarget := redis.NewClient(&redis.Options{Addr: targetAddr, Protocol: 2})
	t.Cleanup(func() { _ = rTarget.Close() })
	host, port, err := net.SplitHostPort(targetAddr)
	require.NoError(t, err)

	for _, dest := range []struct {
		name       string
		host, port string
		client     *redis.Client
	}{
		{"to redis-server", host, port, rTarget},
		{"to Zaris", targetNode.RESPAddr().(*net.TCPAddr).IP.String(), fmt.Sprint(targetNode.RESPAddr().(*net.TCPAddr).Port), zTarget},
	} {
		t.Run(dest.name, func(t *testing.T) {
			keys, want := writeShapes(t, ctx, source, "mig")
			args := append([]any{"MIGRATE", dest.host, dest.port, "", 0, 5000, "KEYS"}, keys...)
			require.Equal(t, "OK", source.Do(ctx, args...).Val())
			require.Zero(t, source.Do(ctx, append([]any{"EXISTS"}, keys...)...).Val(), "moved, not copied")
			requireShapes(t, ctx, dest.client, "mig", want)
			for _, key := range keys {
				dest.client.Del(ctx, key.(string))
			}
		})
	}

	// The same rows from redis-server and from Zaris, to the redis-server
	// target: the same replies, the same keys left on both sides.
	rSource := redis.NewClient(&redis.Options{Addr: startRedis(t, false), Protocol: 2})
	t.Cleanup(func() { _ = rSource.Close() })
	require.NoError(t, rTarget.ConfigSet(ctx, "requirepass", "secret").Err())
	t.Cleanup(func() { rTarget.Do(ctx, "AUTH", "secret"); rTarget.ConfigSet(ctx, "requirepass", "") })
	require.NoError(t, rTarget.Do(ctx, "AUTH", "secret").Err())
	refused := func() string { // a port nothing listens on
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	}()
	for i, src := range []*redis.Client{rSource, source} {
		p := fmt.Sprintf("s%d:", i) // each source its own target keys
		src.Set(ctx, p+"a", "1", 0)
		src.Set(ctx, p+"b", "2", 0)
		src.Set(ctx, p+"busy", "mine", 0)
		rTarget.Set(ctx, p+"busy", "theirs", 0)
	}
	// "@x" is key x of the source the row runs on.
	rows := [][]any{
		{"MIGRATE", host, port, "@none", 0, 1000, "AUTH", "secret"},
		{"MIGRATE", host, port, "@a", 0, 1000, "AUTH", "wrong"},
		{"MIGRATE", host, port, "@a", 0, 1000, "AUTH2", "default", "secret", "COPY"},
		{"MIGRATE", host, port, "@a", 0, 1000, "AUTH", "secret", "COPY"},
		{"MIGRATE", host, port, "@a", 0, 1000, "AUTH", "secret", "REPLACE"},
		{"MIGRATE", host, port, "@busy", 0, 1000, "AUTH", "secret"},
		{"MIGRATE", host, port, "@b", 0, 1000, "AUTH", "secret", "KEYS", "@a"},
		{"MIGRATE", host, port, "", 0, 1000, "AUTH", "secret", "KEYS", "@b", "@x"},
		{"MIGRATE", host, port, "@b", 0, 1000, "BOGUS"},
		{"MIGRATE", host, port, "@b", "x", 1000},
		{"MIGRATE", host, port, "@b", 0, "x"},
		{"MIGRATE", "127.0.0.1", refused, "@busy", 0, 1000},
	}
	keysOf := func(row []any, prefix string) []any {
		out := slices.Clone(row)
		for i, a := range out {
			if s, ok := a.(string); ok && strings.HasPrefix(s, "@") {
				out[i] = prefix + s[1:]
			}
		}
		return out
	}
	for _, row := range rows {
		want, wantErr := rSource.Do(ctx, keysOf(row, "s0:")...).Result()
		got, gotErr := source.Do(ctx, keysOf(row, "s1:")...).Result()
		require.Equal(t, fmt.Sprint(wantErr), fmt.Sprint(gotErr), "%q", row)
		require.Equal(t, want, got, "%q", row)
	}
	for _, name := range []string{"a", "b", "busy"} {
		require.Equal(t, rSource.Exists(ctx, "s0:"+name).Val(), source.Exists(ctx, "s1:"+name).Val(), "source keeps %s", name)
		require.Equal(t, rTarget.Get(ctx, "s0:"+name).Val(), rTarget.Get(ctx, "s1:"+name).Val(), "target holds %s", name)
	}

	// Not under a transaction's or a script's locks (Redis would block the
	// whole server instead).
	tx := source.TxPipeline()
	mig := tx.Do(ctx, "MIGRATE", host, port, "s1:busy", 0, 1000, "AUTH", "secret", "REPLACE")
	_, _ = tx.Exec(ctx)
	require.EqualError(t, mig.Err(), "ERR MIGRATE is not allowed in a transaction or a script")
	err = source.Eval(ctx, "return redis.call('MIGRATE', ARGV[1], ARGV[2], KEYS[1], 0, 1000, 'AUTH', 'secret')", []string{"s1:busy"}, host, port).Err()
	require.ErrorContains(t, err, "MIGRATE is not allowed in a transaction or a script")
	require.Equal(t, "mine", source.Get(ctx, "s1:busy").Val())
}

// TestMigrateKeepsAWriteMadeWhileItMoves: a key written on the source
// while the target has its RESTORE but has not answered is not deleted
// when the target accepts: the newer value stays (the target holds the
// older one). A key nobody wrote is moved. The target is a TCP server that
// answers when the test says.
func TestMigrateKeepsAWriteMadeWhileItMoves(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	source := newClient(t, startNode(t))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	// target serves one connection: once the RESTORE is in, it says so on
	// received and answers OK to SELECT and RESTORE when answer closes.
	target := func() (received, answer chan struct{}) {
		received, answer = make(chan struct{}), make(chan struct{})
		go func() {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
			var got []byte
			buf := make([]byte, 4096)
			for !strings.Contains(string(got), "RESTORE") || !strings.HasSuffix(string(got), "\r\n") {
				n, err := nc.Read(buf)
				if err != nil {
					return
				}
				got = append(got, buf[:n]...)
			}
			close(received)
			<-answer
			_, _ = nc.Write([]byte("+OK\r\n+OK\r\n"))
		}()
		return received, answer
	}
	migrate := func(key string) chan error {
		done := make(chan error, 1)
		go func() { done <- source.Migrate(ctx, "127.0.0.1", port, key, 0, 10*time.Second).Err() }()
		return done
	}

	source.Set(ctx, "moving", "v1", 0)
	received, answer := target()
	done := migrate("moving")
	<-received
	require.NoError(t, source.Set(ctx, "moving", "v2", 0).Err())
	close(answer)
	require.NoError(t, <-done)
	require.Equal(t, "v2", source.Get(ctx, "moving").Val(), "the write made while the key moved is kept")

	source.Set(ctx, "untouched", "v1", 0)
	_, answer = target()
	close(answer)
	require.NoError(t, <-migrate("untouched"))
	require.Zero(t, source.Exists(ctx, "untouched").Val(), "a key nobody wrote is moved")
}

// TestFunctionDumpRestoreWithRedis: FUNCTION DUMP payloads move libraries
// both ways between redis-server and Zaris, and FUNCTION RESTORE answers
// as Redis does under each policy, row by row.
func TestFunctionDumpRestoreWithRedis(t *testing.T) {
	ctx := context.Background()
	rd := redis.NewClient(&redis.Options{Addr: startRedis(t, false), Protocol: 2})
	t.Cleanup(func() { _ = rd.Close() })
	z := newClient(t, startNode(t), func(o *redis.Options) { o.Protocol = 2 })
	libA := "#!lua name=liba\nredis.register_function('fa', function() return 'a' end)"
	libB := "#!lua name=libb\nredis.register_function('fb', function(keys, args) return args[1] end)"
	libA2 := "#!lua name=liba\nredis.register_function('fa', function() return 'a2' end)"
	libC := "#!lua name=libc\nredis.register_function('fb', function() return 'c' end)" // fb clashes with libb's
	libBad := "#!lua name=libbad\nlocal unused = 1"                                     // registers no function
	// A release candidate's function (RDB_OPCODE_FUNCTION: name, engine,
	// no description, body), which Redis 7.0 loads as a library.
	body := "redis.register_function('fpre', function() return 'pre' end)"
	preGA := string(rdb.Seal(append([]byte{246, 3, 'p', 'r', 'e', 3, 'L', 'U', 'A', 0, byte(len(body))}, body...), rdb.Version))

	// A payload of each library set, made by Redis.
	payload := func(libs ...string) string {
		t.Helper()
		require.NoError(t, rd.FunctionFlush(ctx).Err())
		for _, l := range libs {
			require.NoError(t, rd.FunctionLoad(ctx, l).Err())
		}
		p, err := rd.FunctionDump(ctx).Result()
		require.NoError(t, err)
		return p
	}
	ab, a2, c := payload(libA, libB), payload(libA2), payload(libC)

	for _, srv := range []*redis.Client{rd, z} {
		require.NoError(t, srv.FunctionFlush(ctx).Err())
	}
	rows := [][]any{
		{"FUNCTION", "RESTORE", ab}, {"FCALL", "fb", 0, "x"},
		{"FUNCTION", "RESTORE", a2}, // APPEND by default: liba exists (one library: Redis names the first of its hash order)
		{"FUNCTION", "RESTORE", a2, "APPEND"},
		{"FUNCTION", "RESTORE", a2, "REPLACE"}, {"FCALL", "fa", 0},
		{"FUNCTION", "RESTORE", c, "REPLACE"}, // fb belongs to libb
		{"FUNCTION", "RESTORE", c, "FLUSH"}, {"FCALL", "fb", 0}, {"FCALL", "fa", 0},
		{"FUNCTION", "RESTORE", ab, "BOGUS"},
		{"FUNCTION", "RESTORE", ab, "APPEND", "x"},
		{"FUNCTION", "RESTORE", "garbage"},
		{"FUNCTION", "RESTORE", string(rdb.Seal([]byte{246, 1, 'x'}, rdb.Version))},
		{"FUNCTION", "RESTORE", preGA}, {"FCALL", "fpre", 0},
		{"FUNCTION", "RESTORE", string(rdb.Seal([]byte{0, 1, 'x'}, rdb.Version))},
		{"FUNCTION", "RESTORE", string(rdb.DumpFunctions([][]byte{[]byte(libBad)}))},
		{"FUNCTION", "RESTORE", string(rdb.DumpFunctions([][]byte{[]byte(libB), []byte(libB)})), "FLUSH"},
		{"FCALL", "fb", 0}, // the refused FLUSH kept what was loaded
	}
	for _, row := range rows {
		want, wantErr := rd.Do(ctx, row...).Result()
		got, gotErr := z.Do(ctx, row...).Result()
		require.Equal(t, fmt.Sprint(wantErr), fmt.Sprint(gotErr), "%q", row)
		require.Equal(t, want, got, "%q", row)
	}

	// Zaris's dump loads on Redis.
	require.NoError(t, z.Do(ctx, "FUNCTION", "RESTORE", ab, "FLUSH").Err())
	fromZaris, err := z.FunctionDump(ctx).Result()
	require.NoError(t, err)
	require.NoError(t, rd.Do(ctx, "FUNCTION", "RESTORE", fromZaris, "FLUSH").Err())
	require.Equal(t, "x", rd.FCall(ctx, "fb", nil, "x").Val())
	require.Equal(t, "a", rd.FCall(ctx, "fa", nil).Val())
}

// TestLolwut: LOLWUT answers the version line (no drawing here); a VERSION
// that is not a number is refused as Redis refuses it.
func TestLolwut(t *testing.T) {
	ctx := context.Background()
	rd := redis.NewClient(&redis.Options{Addr: startRedis(t, false)})
	t.Cleanup(func() { _ = rd.Close() })
	z := newClient(t, startNode(t))
	require.Equal(t, "Redis ver. "+resp.RedisVersion+"\n", z.Do(ctx, "LOLWUT").Val())
	require.Equal(t, "Redis ver. "+resp.RedisVersion+"\n", z.Do(ctx, "LOLWUT", "VERSION", "-9223372036854775808").Val())
	for _, v := range []string{"x", "18446744073709551615", "1.5"} {
		want := rd.Do(ctx, "LOLWUT", "VERSION", v).Err()
		require.Error(t, want)
		require.EqualError(t, z.Do(ctx, "LOLWUT", "VERSION", v).Err(), want.Error(), v)
	}
}

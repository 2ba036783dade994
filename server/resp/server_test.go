package resp_test

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/metrics"
)

func TestConnectionCommands(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	rdb := newClient(t, n, func(o *redis.Options) { o.ClientName = "suite" })

	require.Equal(t, "PONG", rdb.Ping(ctx).Val())
	require.Equal(t, "hi", rdb.Echo(ctx, "hi").Val())
	require.Equal(t, "suite", rdb.ClientGetName(ctx).Val(), "HELLO ... SETNAME from go-redis")
	info := rdb.ClientInfo(ctx).Val()
	require.Equal(t, 3, info.Resp, "go-redis v9 negotiated RESP3 with HELLO 3")
	require.Equal(t, "suite", info.Name)
	require.Equal(t, "go-redis", info.LibName[:8], "CLIENT SETINFO LIB-NAME")
	id := rdb.ClientID(ctx).Val()
	require.Positive(t, id)
	require.Equal(t, id, info.ID)
	list := rdb.ClientList(ctx).Val()
	require.Contains(t, list, "id="+strconv.FormatInt(id, 10)+" ")
	require.Contains(t, list, "name=suite")

	require.NoError(t, rdb.Do(ctx, "SELECT", "0").Err())
	require.EqualError(t, rdb.Do(ctx, "SELECT", "1").Err(), "ERR SELECT is not allowed in cluster mode")
	require.EqualError(t, rdb.Do(ctx, "SELECT", "x").Err(), "ERR value is not an integer or out of range")

	tm := rdb.Time(ctx).Val()
	require.WithinDuration(t, time.Now(), tm, 2*time.Second)

	require.NoError(t, rdb.MSet(ctx, "{x}a", "1", "{x}b", "2").Err())
	require.Equal(t, int64(2), rdb.DBSize(ctx).Val())
	require.Equal(t, "OK", rdb.FlushAll(ctx).Val())
	require.Equal(t, int64(0), rdb.DBSize(ctx).Val())
	require.Equal(t, "OK", rdb.FlushDBAsync(ctx).Val())

	// CONFIG GET/SET.
	cfg := rdb.ConfigGet(ctx, "maxmemory*").Val()
	require.Equal(t, strconv.Itoa(64<<20), cfg["maxmemory"])
	require.Equal(t, "allkeys-lru", cfg["maxmemory-policy"])
	require.NoError(t, rdb.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err())
	require.Equal(t, "AKE", rdb.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"])
	require.NoError(t, rdb.ConfigSet(ctx, "notify-keyspace-events", "Exg").Err())
	require.Equal(t, "gxE", rdb.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"])
	require.ErrorContains(t, rdb.ConfigSet(ctx, "notify-keyspace-events", "Q").Err(), "Invalid event class character")
	require.EqualError(t, rdb.ConfigSet(ctx, "databases", "1").Err(),
		"ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config")
	require.EqualError(t, rdb.ConfigSet(ctx, "nope", "1").Err(), "ERR Unknown option or number of arguments for CONFIG SET - 'nope'")
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())

	// Unknown subcommand, HELP.
	require.EqualError(t, rdb.Do(ctx, "CLIENT", "FOO").Err(), "ERR unknown subcommand 'FOO'. Try CLIENT HELP.")
	require.EqualError(t, rdb.Do(ctx, "CLIENT", "SETNAME").Err(), "ERR wrong number of arguments for 'client|setname' command")
	require.EqualError(t, rdb.Do(ctx, "CLIENT", "SETNAME", "a b").Err(), "ERR Client names cannot contain spaces, newlines or special characters.")
	help, err := rdb.Do(ctx, "CLIENT", "HELP").StringSlice()
	require.NoError(t, err)
	require.Contains(t, help[0], "CLIENT <subcommand>")
}

func TestInfo(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	rdb := newClient(t, n)
	for i := 0; i < 10; i++ {
		require.NoError(t, rdb.Set(ctx, fmt.Sprint("k", i), "v", 0).Err())
	}
	require.NoError(t, rdb.Set(ctx, "ttl", "v", time.Hour).Err())
	rdb.Get(ctx, "k1")
	rdb.Get(ctx, "missing")

	all := rdb.Info(ctx).Val()
	for _, sec := range []string{"# Server", "# Clients", "# Memory", "# Stats", "# Replication", "# Cluster", "# Keyspace"} {
		require.Contains(t, all, sec)
	}
	fields := parseInfo(all)
	require.Equal(t, "7.0.0", fields["redis_version"])
	require.Equal(t, "cluster", fields["redis_mode"])
	require.Equal(t, "resp-test", fields["zaris_node_id"])
	require.Equal(t, strconv.Itoa(n.RESPAddr().(*net.TCPAddr).Port), fields["tcp_port"])
	require.Equal(t, "1", fields["connected_clients"])
	require.Equal(t, "1", fields["cluster_enabled"])
	require.Equal(t, "db0:keys=11,expires=1", "db0:"+strings.Join(strings.Split(fields["db0"], ",")[:2], ","))
	require.Equal(t, "1", fields["keyspace_hits"])
	require.Equal(t, "1", fields["keyspace_misses"])
	require.Equal(t, strconv.Itoa(64<<20), fields["maxmemory"])
	used, _ := strconv.Atoi(fields["used_memory"])
	require.Positive(t, used)
	// The process, not only the data (issue 16).
	rss, _ := strconv.Atoi(fields["used_memory_rss"])
	require.Greater(t, rss, used)
	for _, f := range []string{"zaris_oplog_memory", "zaris_go_heap", "zaris_go_runtime_memory", "zaris_go_memory_limit"} {
		v, err := strconv.Atoi(fields[f])
		require.NoError(t, err, f)
		require.Positive(t, v, f)
	}
	require.Equal(t, "0", fields["zaris_maxmemory_rss"], "the test node has no RSS bound")
	require.Contains(t, fields, "zaris_index_memory")
	cmds, _ := strconv.Atoi(fields["total_commands_processed"])
	require.GreaterOrEqual(t, cmds, 13)

	only := rdb.Info(ctx, "keyspace").Val()
	require.NotContains(t, only, "# Server")
	require.Contains(t, only, "# Keyspace")
	two := rdb.Info(ctx, "server", "clients").Val()
	require.Contains(t, two, "# Server")
	require.Contains(t, two, "# Clients")
	require.NotContains(t, two, "# Memory")
}

func parseInfo(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out
}

func TestCommandIntrospection(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	rdb := newClient(t, n)
	infos, err := rdb.Command(ctx).Result()
	require.NoError(t, err, "go-redis parses the COMMAND reply")
	get := infos["get"]
	require.NotNil(t, get)
	require.Equal(t, int8(2), get.Arity)
	require.True(t, get.ReadOnly)
	require.Equal(t, int8(1), get.FirstKeyPos)
	mset := infos["mset"]
	require.Equal(t, int8(-1), mset.LastKeyPos)
	require.Equal(t, int8(2), mset.StepCount)
	require.Contains(t, infos["set"].Flags, "write")
	count := rdb.Do(ctx, "COMMAND", "COUNT").Val().(int64)
	require.Equal(t, int64(len(infos)), count)

	keys, err := rdb.CommandGetKeys(ctx, "MSET", "a", "1", "b", "2").Result()
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, keys)
	require.EqualError(t, rdb.CommandGetKeys(ctx, "PING", "x").Err(), "ERR The command has no key arguments")
	require.EqualError(t, rdb.CommandGetKeys(ctx, "NOPE", "x").Err(), "ERR Invalid command specified")

	docs, err := rdb.Do(ctx, "COMMAND", "DOCS", "get", "client").Result()
	require.NoError(t, err)
	m := docs.(map[any]any)
	require.Contains(t, m, "get")
	require.Equal(t, "Returns the string value of a key.", m["get"].(map[any]any)["summary"])

	list, err := rdb.CommandList(ctx, &redis.FilterBy{Pattern: "z*"}).Result()
	require.NoError(t, err)
	require.Contains(t, list, "zadd")
	for _, name := range list {
		require.True(t, strings.HasPrefix(name, "z"), name)
	}
	// The pattern matches without case, as Redis's does.
	list, err = rdb.CommandList(ctx, &redis.FilterBy{Pattern: "*GETR*"}).Result()
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"getrange", "client|getredir"}, list)
}

// SCAN: a real incremental cursor; every key present for the whole
// iteration comes back exactly once, however the pages fall, even when the
// iteration hops between connections and keys come and go meanwhile.
func TestScanCursor(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	rdb := newClient(t, n, func(o *redis.Options) { o.PoolSize = 4 })
	const keys = 3000
	pipe := rdb.Pipeline()
	for i := 0; i < keys; i++ {
		pipe.Set(ctx, fmt.Sprintf("key:%d", i), "v", 0)
	}
	pipe.HSet(ctx, "h:1", "f", "v")
	pipe.HSet(ctx, "h:2", "f", "v")
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)

	for _, count := range []int64{1, 7, 100, 5000} {
		seen := map[string]int{}
		var cursor uint64
		calls := 0
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Add(1)
		go func() { // churn: keys created and deleted during the iteration
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				rdb.Set(ctx, fmt.Sprintf("churn:%d", i%50), "v", 0)
				rdb.Del(ctx, fmt.Sprintf("churn:%d", (i+25)%50))
			}
		}()
		for {
			ks, next, err := rdb.Scan(ctx, cursor, "", count).Result()
			require.NoError(t, err)
			calls++
			for _, k := range ks {
				seen[k]++
			}
			cursor = next
			if cursor == 0 {
				break
			}
		}
		close(stop)
		wg.Wait()
		for i := 0; i < keys; i++ {
			require.Equal(t, 1, seen[fmt.Sprintf("key:%d", i)], "COUNT %d: key:%d", count, i)
		}
		if count == 1 {
			require.Greater(t, calls, keys/2, "COUNT bounds the keys examined per call")
		}
	}

	// MATCH and TYPE filter.
	var got []string
	iter := rdb.ScanType(ctx, 0, "h:*", 50, "hash").Iterator()
	for iter.Next(ctx) {
		got = append(got, iter.Val())
	}
	require.NoError(t, iter.Err())
	sort.Strings(got)
	require.Equal(t, []string{"h:1", "h:2"}, got)
	matched := 0
	iter = rdb.Scan(ctx, 0, "key:1??", 100).Iterator()
	for iter.Next(ctx) {
		matched++
	}
	require.Equal(t, 100, matched)

	require.EqualError(t, rdb.Do(ctx, "SCAN", "abc").Err(), "ERR invalid cursor")
	require.EqualError(t, rdb.Do(ctx, "SCAN", "0", "COUNT", "0").Err(), "ERR syntax error")

	// KEYS.
	require.Len(t, rdb.Keys(ctx, "key:*").Val(), keys)
	require.Equal(t, []string{"key:42"}, rdb.Keys(ctx, "key:42").Val())
	require.Equal(t, []string{"h:1", "h:2"}, rdb.Keys(ctx, "h:[0-9]").Val())
	require.Empty(t, rdb.Keys(ctx, "nomatch*").Val())

	// RANDOMKEY.
	k, err := rdb.RandomKey(ctx).Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), rdb.Exists(ctx, k).Val())
	require.NoError(t, rdb.FlushAll(ctx).Err())
	require.ErrorIs(t, rdb.RandomKey(ctx).Err(), redis.Nil)
}

func TestAuth(t *testing.T) {
	const token = "s3cret-token"
	n := startNode(t, func(c *server.Config) { c.Token = token })
	ctx := ctxT(t)

	// go-redis authenticates in HELLO 3 AUTH default <token>.
	good := newClient(t, n, func(o *redis.Options) { o.Password = token })
	require.Equal(t, "PONG", good.Ping(ctx).Val())
	require.NoError(t, good.Set(ctx, "k", "v", 0).Err())
	// RESP2 clients authenticate with AUTH after HELLO fails... go-redis
	// sends HELLO 2 AUTH too.
	good2 := newClient(t, n, func(o *redis.Options) { o.Password, o.Protocol = token, 2 })
	require.Equal(t, "v", good2.Get(ctx, "k").Val())

	bad := newClient(t, n, func(o *redis.Options) { o.Password = "wrong" })
	require.ErrorContains(t, bad.Ping(ctx).Err(), "WRONGPASS invalid username-password pair or user is disabled.")
	none := newClient(t, n, func(o *redis.Options) { o.Protocol = 2 })
	require.EqualError(t, none.Get(ctx, "k").Err(), "NOAUTH Authentication required.")

	r := dialRaw(t, n.RESPAddr().String())
	require.Equal(t, "-NOAUTH Authentication required.\r\n", r.do("GET", "k"))
	require.Equal(t, "-ERR unknown command 'NOPE', with args beginning with: \r\n", r.do("NOPE"), "unknown before NOAUTH, as in Redis")
	require.Equal(t, "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n", r.do("HELLO", "3"))
	require.Equal(t, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", r.do("AUTH", "nope"))
	require.Equal(t, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", r.do("AUTH", "alice", token))
	require.Equal(t, "-ERR Protocol error: unauthenticated multibulk length\r\n", r.do("AUTH", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"))
	r.expectClosed(5 * time.Second)

	r = dialRaw(t, n.RESPAddr().String())
	require.Equal(t, "+OK\r\n", r.do("AUTH", token))
	require.Equal(t, "$1\r\nv\r\n", r.do("GET", "k"))
	require.Equal(t, "+RESET\r\n", r.do("RESET"))
	require.Equal(t, "-NOAUTH Authentication required.\r\n", r.do("GET", "k"), "RESET deauthenticates")
	require.Equal(t, "+OK\r\n", r.do("AUTH", "default", token))
	require.Equal(t, "$1\r\nv\r\n", r.do("GET", "k"))

	var failures float64
	mfs, err := n.Metrics().Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == metrics.MetricAuthFailures {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetValue() == "resp" {
						failures = m.GetCounter().GetValue()
					}
				}
			}
		}
	}
	require.GreaterOrEqual(t, failures, 3.0)

	// Without a token, AUTH <password> is Redis's configuration error and
	// AUTH default <anything> succeeds.
	open := startNode(t)
	r = dialRaw(t, open.RESPAddr().String())
	require.Equal(t, "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n", r.do("AUTH", "x"))
	require.Equal(t, "+OK\r\n", r.do("AUTH", "default", "x"))
}

// TestClientTypeFilters: CLIENT LIST and CLIENT KILL with TYPE see a
// subscribed client as pubsub and the others as normal (Redis's
// getClientType); master and replica name no client here; an unknown type
// is refused.
func TestClientTypeFilters(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	admin := newClient(t, n)
	plain := newClient(t, n, func(o *redis.Options) { o.ClientName = "plain" })
	plainID := plain.ClientID(ctx).Val()
	require.Positive(t, plainID)
	// A raw connection: go-redis's PubSub would reconnect and subscribe
	// again once killed, and the last KILL below would find it again.
	sub := dialRaw(t, n.RESPAddr().String())
	require.Equal(t, "+OK\r\n", sub.do("CLIENT", "SETNAME", "listener"))
	require.Equal(t, "*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n", sub.do("SUBSCRIBE", "news"))

	require.Contains(t, admin.ClientList(ctx).Val(), "name=listener")
	pubsubOnly := admin.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").String()
	require.Contains(t, pubsubOnly, "name=listener")
	require.NotContains(t, pubsubOnly, "name=plain")
	normalOnly := admin.Do(ctx, "CLIENT", "LIST", "TYPE", "normal").String()
	require.Contains(t, normalOnly, "name=plain")
	require.NotContains(t, normalOnly, "name=listener")
	require.Empty(t, admin.Do(ctx, "CLIENT", "LIST", "TYPE", "replica").Val())
	require.EqualError(t, admin.ClientKillByFilter(ctx, "TYPE", "test").Err(), "ERR Unknown client type 'test'")
	require.Equal(t, int64(0), admin.ClientKillByFilter(ctx, "TYPE", "master").Val())

	require.Equal(t, int64(1), admin.ClientKillByFilter(ctx, "TYPE", "pubsub").Val(), "the subscribed client only")
	require.Contains(t, admin.ClientList(ctx).Val(), "id="+strconv.FormatInt(plainID, 10)+" ", "a normal client survives TYPE pubsub")
	sub.expectClosed(10 * time.Second)
	require.Equal(t, int64(0), admin.ClientKillByFilter(ctx, "TYPE", "pubsub").Val(), "none left")
}

// TestClientKillLeavesTheListsAtOnce: a client CLIENT KILL answered for is
// gone from CLIENT LIST, INFO's connected_clients and a second KILL in the
// very next command, as Redis frees it before replying — go-redis's "kill
// myself" spec listed it once more while its close was still under way.
func TestClientKillLeavesTheListsAtOnce(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	admin := newClient(t, n)
	victim := dialRaw(t, n.RESPAddr().String())
	require.Equal(t, "+OK\r\n", victim.do("CLIENT", "SETNAME", "victim"))
	id := strings.Trim(victim.do("CLIENT", "ID")[1:], "\r\n")
	require.Contains(t, admin.ClientList(ctx).Val(), "name=victim")

	// One connection, so each command runs after the KILL's reply.
	pipe := admin.Pipeline()
	kill := pipe.ClientKillByFilter(ctx, "ID", id)
	list := pipe.ClientList(ctx)
	info := pipe.Info(ctx, "clients")
	again := pipe.ClientKillByFilter(ctx, "ID", id)
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), kill.Val())
	require.NotContains(t, list.Val(), "name=victim")
	listed := strings.Count(list.Val(), "\n")
	require.Equal(t, strconv.Itoa(listed), infoField(info.Val(), "connected_clients"), "connected_clients counts the clients CLIENT LIST shows")
	require.Equal(t, int64(0), again.Val(), "a killed client is not killed twice")
	victim.expectClosed(10 * time.Second)
}

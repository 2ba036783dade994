package resp_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/push"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
)

// rueidisClient is rueidis with its client-side cache (CLIENT TRACKING ON
// OPTIN on every connection, CLIENT CACHING YES before each DoCache).
func rueidisClient(t *testing.T, addrs ...string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, ConnWriteTimeout: testscale.D(10 * time.Second)})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// cachedGet reads key through rueidis's cache: the value and whether it
// was served from the cache.
func cachedGet(t *testing.T, c rueidis.Client, key string) (string, bool) {
	t.Helper()
	r := c.DoCache(context.Background(), c.B().Get().Key(key).Cache(), time.Hour)
	v, err := r.ToString()
	if rueidis.IsRedisNil(err) {
		v, err = "(nil)", nil
	}
	require.NoError(t, err)
	return v, r.IsCacheHit()
}

// expectInvalidated: the cached value of key is served from the cache
// until the write, then the new value is read again — within the
// deadline, the invalidation being asynchronous.
func expectInvalidated(t *testing.T, c rueidis.Client, key, want string) {
	t.Helper()
	testscale.Eventually(t, 10*time.Second, 5*time.Millisecond, "rueidis sees "+key+" = "+want, func() bool {
		v, _ := cachedGet(t, c, key)
		return v == want
	})
	// Cached again, and a hit.
	testscale.Eventually(t, 10*time.Second, 5*time.Millisecond, key+" cached again", func() bool {
		v, hit := cachedGet(t, c, key)
		return v == want && hit
	})
}

// cacheAndHit reads key until rueidis serves it from its cache.
func cacheAndHit(t *testing.T, c rueidis.Client, key, want string) {
	t.Helper()
	testscale.Eventually(t, 10*time.Second, 5*time.Millisecond, key+" cached", func() bool {
		v, hit := cachedGet(t, c, key)
		return v == want && hit
	})
}

// TestRueidisCacheOnOneNode: rueidis's client-side cache on a lone node —
// a cached value stays a hit while nothing changes and is invalidated by
// another client's write, a delete and an expiry.
func TestRueidisCacheOnOneNode(t *testing.T) {
	n := startNode(t)
	rc := rueidisClient(t, n.RESPAddr().String())
	w := newClient(t, n)
	ctx := ctxT(t)
	require.NoError(t, w.Set(ctx, "k", "v1", 0).Err())
	cacheAndHit(t, rc, "k", "v1")
	for range 20 {
		v, hit := cachedGet(t, rc, "k")
		require.Equal(t, "v1", v)
		require.True(t, hit, "nothing changed: served from the cache")
	}
	require.NoError(t, w.Set(ctx, "k", "v2", 0).Err())
	expectInvalidated(t, rc, "k", "v2")
	require.NoError(t, w.Del(ctx, "k").Err())
	expectInvalidated(t, rc, "k", "(nil)")
	require.NoError(t, w.Set(ctx, "k", "v3", 150*time.Millisecond).Err())
	// Expiry: the store's sweeper removes the key, and the node tells.
	testscale.Eventually(t, 10*time.Second, 5*time.Millisecond, "k cached with its value", func() bool {
		v, _ := cachedGet(t, rc, "k")
		return v == "v3"
	})
	expectInvalidated(t, rc, "k", "(nil)")
}

// TestRueidisCacheAcrossCluster is issue #14 item 6's acceptance: rueidis's
// client-side cache against a real 3-node cluster sees another client's
// write invalidate its cached value — written with go-redis's cluster
// client, with the native SDK, and over HTTP.
func TestRueidisCacheAcrossCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	cl := clustertest.Start(t, 3, clustertest.Options{})
	nodes := cl.Running()
	var addrs []string
	for _, nd := range nodes {
		addrs = append(addrs, nd.RESPAddr().String())
	}
	rc := rueidisClient(t, addrs...)
	gr := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, DialTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = gr.Close() })
	ctx := ctxT(t)
	sc, err := sdk.Connect(ctx, cl.ConnString())
	require.NoError(t, err)
	t.Cleanup(func() { _ = sc.Close() })

	// Keys on every node: each owner invalidates its own keys.
	keys := []string{"acc:a", "acc:b", "acc:c", "acc:d", "acc:e", "acc:f"}
	// Right after formation partitions still move to their owners: a
	// write may be refused for a moment (TRYAGAIN, 421) and is retried.
	retry := func(what string, write func() error) {
		t.Helper()
		testscale.Eventually(t, 30*time.Second, 20*time.Millisecond, what, func() bool { return write() == nil })
	}
	for _, k := range keys {
		retry("SET "+k, func() error { return gr.Set(ctx, k, "v0", 0).Err() })
		cacheAndHit(t, rc, k, "v0")
	}
	for i, k := range keys {
		want := fmt.Sprint("go-redis-", i)
		retry("SET "+k, func() error { return gr.Set(ctx, k, want, 0).Err() })
		expectInvalidated(t, rc, k, want)
	}
	for i, k := range keys {
		want := fmt.Sprint("sdk-", i)
		retry("Put "+k, func() error { _, err := sc.Put(ctx, k, []byte(want), nil); return err })
		expectInvalidated(t, rc, k, want)
	}
	for i, k := range keys {
		want := fmt.Sprint("http-", i)
		// HTTP answers 421 on a node that does not own the key: the owner's.
		retry("PUT "+k, func() error {
			for _, nd := range nodes {
				if ownsKey(nd, k) {
					return httpPut(nd, k, want)
				}
			}
			return fmt.Errorf("no owner of %s", k)
		})
		expectInvalidated(t, rc, k, want)
	}
}

func ownsKey(nd *server.Node, key string) bool {
	st := nd.Store()
	return st.Segment(placement.SegmentOf(key, st.Segments())).Owned()
}

func httpPut(nd *server.Node, key, value string) error {
	req, err := http.NewRequest(http.MethodPut, "http://"+nd.HTTPAddr().String()+"/v1/keys/"+key, bytes.NewReader([]byte(value)))
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_ = res.Body.Close()
	if res.StatusCode >= 300 {
		return fmt.Errorf("PUT %s over HTTP: %s", key, res.Status)
	}
	return nil
}

// rawResp3 is a RESP3 connection that sorts pushes from replies.
type rawResp3 struct {
	*rawConn
	pushes []string
}

func dialResp3(t *testing.T, addr string) *rawResp3 {
	r := &rawResp3{rawConn: dialRaw(t, addr)}
	require.True(t, strings.HasPrefix(r.do("HELLO", "3"), "%7"))
	return r
}

// call sends a command and returns its reply; pushes read meanwhile are
// kept.
func (r *rawResp3) call(args ...string) string {
	r.t.Helper()
	r.send(cmd(args...))
	for {
		f := r.reply()
		if strings.HasPrefix(f, ">") {
			r.pushes = append(r.pushes, f)
			continue
		}
		return f
	}
}

// waitPush reads pushes (pinging) until one contains want.
func (r *rawResp3) waitPush(want string, within time.Duration) {
	r.t.Helper()
	defer func() {
		if r.t.Failed() {
			r.t.Logf("pushes received meanwhile: %q", r.pushes)
		}
	}()
	testscale.Eventually(r.t, within, 5*time.Millisecond, "a push with "+want, func() bool {
		r.call("PING")
		for i, p := range r.pushes {
			if strings.Contains(p, want) {
				r.pushes = append(r.pushes[:i], r.pushes[i+1:]...)
				return true
			}
		}
		return false
	})
}

func invalidation(keys ...string) string {
	s := fmt.Sprintf(">2\r\n$10\r\ninvalidate\r\n*%d\r\n", len(keys))
	for _, k := range keys {
		s += fmt.Sprintf("$%d\r\n%s\r\n", len(k), k)
	}
	return s
}

// TestTrackingBCASTAcrossNodes: a BCAST client on node 1 is told of the
// writes to its prefix made on the other nodes (their owners send the keys
// over the cluster bus), and of none outside its prefix; when a member
// stops, the client gets a null invalidation (the member's bus link ended,
// and its partitions change hands), so no stale value outlives it.
func TestTrackingBCASTAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	cl := clustertest.Start(t, 3, clustertest.Options{})
	nodes := cl.Running()
	var addrs []string
	for _, nd := range nodes {
		addrs = append(addrs, nd.RESPAddr().String())
	}
	gr := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, DialTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = gr.Close() })
	ctx := ctxT(t)

	bc := dialResp3(t, addrs[0])
	require.Equal(t, "+OK\r\n", bc.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:"))
	// A key owned by each other node.
	for _, nd := range nodes[1:] {
		key := ""
		for i := 0; key == ""; i++ {
			if k := fmt.Sprint("user:", i); ownsKey(nd, k) {
				key = k
			}
		}
		// The owner learns node 1's interest over the bus a moment after
		// CLIENT TRACKING ON: write until the invalidation arrives.
		testscale.Eventually(t, 20*time.Second, 20*time.Millisecond, "invalidation of "+key+" from its owner "+nd.Config().NodeID, func() bool {
			// Errors are retried: a partition may still be settling.
			_ = gr.Set(ctx, key, "v", 0).Err()
			_ = gr.Set(ctx, "other:"+key, "v", 0).Err()
			bc.call("PING")
			for _, p := range bc.pushes {
				if p == invalidation(key) {
					return true
				}
			}
			return false
		})
		for _, p := range bc.pushes {
			require.NotContains(t, p, "other:", "outside the prefix")
		}
		bc.pushes = nil
	}

	// A member stops: its link to node 1 ends, node 1's tracking clients
	// get a null invalidation.
	require.NoError(t, nodes[2].Stop(context.Background()))
	bc.waitPush(">2\r\n$10\r\ninvalidate\r\n_\r\n", testscale.D(20*time.Second))
}

// TestTrackingPushesWithGoRedis: go-redis's RESP3 push handler receives
// the node's "invalidate" pushes — a key, a FLUSHALL's null — and a
// REDIRECT to a RESP2 go-redis subscriber of __redis__:invalidate receives
// them as messages.
func TestTrackingPushesWithGoRedis(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	var mu sync.Mutex
	var got []any
	tc := newClient(t, n, func(o *redis.Options) { o.Protocol = 3; o.PoolSize = 1 })
	require.NoError(t, tc.RegisterPushNotificationHandler("invalidate", pushFunc(func(_ context.Context, _ push.NotificationHandlerContext, m []any) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, m[1])
		return nil
	}), false))
	conn := tc.Conn()
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.Do(ctx, "CLIENT", "TRACKING", "ON").Err())
	require.Equal(t, redis.Nil, conn.Get(ctx, "gk").Err())
	w := newClient(t, n)
	require.NoError(t, w.Set(ctx, "gk", "v", 0).Err())
	received := func(want string) {
		testscale.Eventually(t, 10*time.Second, 5*time.Millisecond, "push "+want, func() bool {
			require.NoError(t, conn.Ping(ctx).Err()) // pushes are read with replies
			mu.Lock()
			defer mu.Unlock()
			return fmt.Sprint(got) == want
		})
	}
	received("[[gk]]")
	require.Equal(t, "v", conn.Get(ctx, "gk").Val())
	require.NoError(t, w.FlushAll(ctx).Err())
	received("[[gk] <nil>]")

	// RESP2 through REDIRECT: the subscriber gets "message" on
	// __redis__:invalidate.
	sub := newClient(t, n, func(o *redis.Options) { o.Protocol = 2 })
	ps := sub.Subscribe(ctx, "__redis__:invalidate")
	t.Cleanup(func() { _ = ps.Close() })
	_, err := ps.Receive(ctx)
	require.NoError(t, err)
	subID := clientIDOf(t, sub, ctx)
	r2 := newClient(t, n, func(o *redis.Options) { o.PoolSize = 1 })
	c2 := r2.Conn()
	t.Cleanup(func() { _ = c2.Close() })
	require.NoError(t, c2.Do(ctx, "CLIENT", "TRACKING", "ON", "REDIRECT", subID).Err())
	require.Equal(t, subID, c2.Do(ctx, "CLIENT", "GETREDIR").Val())
	require.Equal(t, redis.Nil, c2.Get(ctx, "rk").Err())
	require.NoError(t, w.Set(ctx, "rk", "v", 0).Err())
	rctx, cancel := context.WithTimeout(ctx, testscale.D(10*time.Second))
	defer cancel()
	m, err := ps.ReceiveMessage(rctx)
	require.NoError(t, err)
	require.Equal(t, "__redis__:invalidate", m.Channel)
	require.Equal(t, []string{"rk"}, m.PayloadSlice)
}

// clientIDOf finds the id of the subscriber's connection (CLIENT LIST:
// the one with sub=1).
func clientIDOf(t *testing.T, c *redis.Client, ctx context.Context) int64 {
	t.Helper()
	list, err := c.ClientList(ctx).Result()
	require.NoError(t, err)
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, " sub=1 ") {
			var id int64
			_, err := fmt.Sscanf(line, "id=%d", &id)
			require.NoError(t, err)
			return id
		}
	}
	t.Fatalf("no subscriber in %q", list)
	return 0
}

type pushFunc func(context.Context, push.NotificationHandlerContext, []any) error

func (f pushFunc) HandlePushNotification(ctx context.Context, hc push.NotificationHandlerContext, m []any) error {
	return f(ctx, hc, m)
}

// TestTrackingTableBound: past tracking-table-max-keys the node evicts
// keys from its table and tells their clients, as Redis does; INFO and
// CLIENT LIST show the tracking state.
func TestTrackingTableBound(t *testing.T) {
	n := startNode(t)
	a := dialResp3(t, n.RESPAddr().String())
	admin := dialRaw(t, n.RESPAddr().String())
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "tracking-table-max-keys", "3"))
	require.Equal(t, "*2\r\n$23\r\ntracking-table-max-keys\r\n$1\r\n3\r\n", admin.do("CONFIG", "GET", "tracking-table-max-keys"))
	require.Equal(t, "+OK\r\n", a.call("CLIENT", "TRACKING", "ON"))
	for i := range 10 {
		a.call("GET", fmt.Sprint("tb:", i))
	}
	info := admin.do("INFO", "everything")
	require.Contains(t, info, "tracking_clients:1\r\n")
	require.Contains(t, info, "tracking_total_keys:3\r\n", "the table holds its bound")
	// 7 keys were evicted: their invalidations arrive.
	evicted := map[string]bool{}
	testscale.Eventually(t, 10*time.Second, 5*time.Millisecond, "7 evictions told", func() bool {
		a.call("PING")
		for _, p := range a.pushes {
			v, _ := parseRESP(p)
			for _, k := range v.([]any)[1].([]any) {
				evicted[k.(string)] = true
			}
		}
		a.pushes = nil
		return len(evicted) == 7
	})
	// Lowering the bound evicts at once.
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "tracking-table-max-keys", "1"))
	require.Contains(t, admin.do("INFO", "stats"), "tracking_total_keys:1\r\n")
	list := admin.do("CLIENT", "LIST")
	require.Regexp(t, `flags=t .* redir=0 `, list)
	b := dialResp3(t, n.RESPAddr().String())
	require.Equal(t, "+OK\r\n", b.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p1", "PREFIX", "p2"))
	require.Contains(t, admin.do("INFO", "stats"), "tracking_total_prefixes:2\r\n")
	require.Regexp(t, `flags=tB .* redir=0 `, admin.do("CLIENT", "LIST"))
	require.Equal(t, "+RESET\r\n", b.call("RESET"))
	require.Contains(t, admin.do("INFO", "clients"), "tracking_clients:1\r\n")
}

// TestTrackingPrefixOverlapOneReply: Redis 7.0 answers an overlap among new
// prefixes after the first with an error and then OK (two replies); Zaris
// answers the error alone and leaves tracking off.
func TestTrackingPrefixOverlapOneReply(t *testing.T) {
	n := startNode(t)
	a := dialRaw(t, n.RESPAddr().String())
	require.Equal(t, "-ERR Prefix 'b' overlaps with another provided prefix 'bc'. Prefixes for a single client must not overlap.\r\n",
		a.do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "b", "PREFIX", "bc"))
	require.Equal(t, ":-1\r\n", a.do("CLIENT", "GETREDIR"))
	require.Equal(t, "+PONG\r\n", a.do("PING"), "one reply per command")
}

// TestTrackingNoLoopOwnWritesNeverComeBack: a NOLOOP client reading and
// writing its own keys over and over never gets an invalidation for them.
// The store may tell the tracker of a write before the command that made it
// has returned; the client's window over its segment is open from the
// command's start (failed once in an idle make test: an invalidation for
// the client's own SET in TestClientTrackingLikeRedis).
func TestTrackingNoLoopOwnWritesNeverComeBack(t *testing.T) {
	n := startNode(t)
	c := dialResp3(t, n.RESPAddr().String())
	require.Equal(t, "+OK\r\n", c.call("CLIENT", "TRACKING", "ON", "NOLOOP"))
	other := dialResp3(t, n.RESPAddr().String())
	for i := range 2000 {
		k := fmt.Sprint("own:", i%16)
		c.call("GET", k)
		require.Equal(t, "+OK\r\n", c.call("SET", k, fmt.Sprint(i)))
	}
	c.call("PING")
	require.Empty(t, c.pushes, "invalidations of the client's own writes")
	// Another client's write still reaches it.
	c.call("GET", "own:0")
	require.Equal(t, "+OK\r\n", other.call("SET", "own:0", "theirs"))
	c.waitPush(invalidation("own:0"), 10*time.Second)
}

// A pipelined NOLOOP client runs ahead of the invalidator by hundreds of
// writes: its own changes must still be recognised when the invalidator
// catches up (at 64 kept windows they came back, in make test-stress).
func TestTrackingNoLoopPipelinedOwnWritesNeverComeBack(t *testing.T) {
	n := startNode(t)
	c := dialResp3(t, n.RESPAddr().String())
	require.Equal(t, "+OK\r\n", c.call("CLIENT", "TRACKING", "ON", "NOLOOP"))
	for round := range 5 {
		var batch strings.Builder
		const pairs = 1000
		for i := range pairs {
			k := fmt.Sprint("pipe:", i%16)
			batch.WriteString(cmd("GET", k))
			batch.WriteString(cmd("SET", k, fmt.Sprint(round, ":", i)))
		}
		c.send(batch.String())
		for i := 0; i < 2*pairs; {
			f := c.reply()
			if strings.HasPrefix(f, ">") {
				c.pushes = append(c.pushes, f)
				continue
			}
			if i%2 == 1 {
				require.Equal(t, "+OK\r\n", f)
			}
			i++
		}
	}
	c.call("PING")
	require.Empty(t, c.pushes, "invalidations of the client's own pipelined writes")
}

package resp_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
)

// transferScript moves ARGV[1] from KEYS[1] to KEYS[2] with a read, a
// pause of Lua work and a write: without the segments' locks, concurrent
// transfers would lose updates.
const transferScript = `
local a = tonumber(redis.call('get', KEYS[1]) or '0')
local b = tonumber(redis.call('get', KEYS[2]) or '0')
local x = 0
for i = 1, 200 do x = x + i end
redis.call('set', KEYS[1], a - ARGV[1])
redis.call('set', KEYS[2], b + ARGV[1])
return a + b`

const sumScript = "local s = 0 for _, k in ipairs(KEYS) do s = s + tonumber(redis.call('get', k) or '0') end return s"

// On a lone node a script's keys may be in any slots: concurrent
// transfers between keys of different slots (and a counter incremented by
// read-then-write) end exact, and every script sees the total unchanged.
func TestScriptAtomicAcrossSlots(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	rc := newClient(t, n, func(o *redis.Options) { o.PoolSize = 16 })
	keys := []string{"acct:a", "acct:b", "acct:c", "acct:d"}
	require.NotEqual(t, placement.Slot(keys[0]), placement.Slot(keys[1]))
	require.NoError(t, rc.Set(ctx, keys[0], 1000, 0).Err())
	const workers, rounds = 8, 60
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				from, to := keys[(w+i)%len(keys)], keys[(w+i+1+w%3)%len(keys)]
				if from == to {
					to = keys[(w+i+2)%len(keys)]
				}
				err := rc.Eval(ctx, transferScript, []string{from, to}, 1).Err()
				if err == nil {
					// Every script sees the four balances summing to the total.
					var total int
					total, err = rc.Eval(ctx, sumScript, keys).Int()
					if err == nil && total != 1000 {
						err = fmt.Errorf("a script saw a torn total %d", total)
					}
				}
				if err == nil {
					err = rc.Eval(ctx, "local v = tonumber(redis.call('get', KEYS[1]) or '0') redis.call('set', KEYS[1], v + 1) return v", []string{"counter"}).Err()
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	sum := 0
	for _, k := range keys {
		v, err := rc.Get(ctx, k).Int()
		require.NoError(t, err)
		sum += v
	}
	require.Equal(t, 1000, sum, "transfers under the segments' locks conserve the total")
	require.Equal(t, strconv.Itoa(workers*rounds), rc.Get(ctx, "counter").Val(), "no lost increment")
	// A keyless script holds every segment: it may touch any key.
	require.Equal(t, int64(1000), rc.Eval(ctx, "local s = 0 for _, k in ipairs(ARGV) do s = s + tonumber(redis.call('get', k)) end return s", nil,
		keys[0], keys[1], keys[2], keys[3]).Val())
	// A declared key's segment is held; another segment is not.
	other := ""
	for i := 0; other == ""; i++ {
		if k := fmt.Sprint("undeclared:", i); placement.SegmentOf(k, placement.DefaultSegments) != placement.SegmentOf("decl", placement.DefaultSegments) {
			other = k
		}
	}
	err := rc.Eval(ctx, "return redis.call('get', ARGV[1])", []string{"decl"}, other).Err()
	require.ErrorContains(t, err, "ERR Script attempted to access keys that do not hash to the same slot script: ")
}

// In a three-node cluster: a script's keys must be one slot's (hash tags)
// as in Redis Cluster; go-redis's ClusterClient routes EVAL, EVALSHA and
// FCALL to the keys' owner; a key of another node is refused with Redis
// Cluster's errors.
func TestScriptOnThreeNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	cl := clustertest.Start(t, 3, clustertest.Options{})
	ctx := ctxT(t)
	cc := newClusterClient(t, cl.Nodes()[0].RESPAddr().String())
	for u := range 5 {
		a, b := fmt.Sprintf("{user%d}:a", u), fmt.Sprintf("{user%d}:b", u)
		require.NoError(t, cc.Set(ctx, a, 100, 0).Err())
		for range 10 {
			require.NoError(t, cc.Eval(ctx, transferScript, []string{a, b}, 7).Err())
		}
		require.Equal(t, "30", cc.Get(ctx, a).Val())
		require.Equal(t, "70", cc.Get(ctx, b).Val())
	}
	sha, err := cc.ScriptLoad(ctx, "return redis.call('get', KEYS[1])").Result()
	require.NoError(t, err)
	require.Equal(t, "70", cc.EvalSha(ctx, sha, []string{"{user1}:b"}).Val(), "SCRIPT LOAD reached every node")

	for _, nd := range cl.Nodes() {
		require.Equal(t, "lib", newClient(t, nd).FunctionLoad(ctx, "#!lua name=lib\nredis.register_function('incr2', function(keys) redis.call('incr', keys[1]) return redis.call('incr', keys[1]) end)").Val())
	}
	for i := range 20 {
		require.Equal(t, int64(2), cc.FCall(ctx, "incr2", []string{fmt.Sprint("fk", i)}).Val())
	}

	k1 := "cross:1"
	owner := cl.Owner(k1)
	k2 := ""
	for i := 0; k2 == ""; i++ {
		if k := fmt.Sprint("cross:other:", i); cl.Owner(k) != owner {
			k2 = k
		}
	}
	raw := dialRaw(t, owner.RESPAddr().String())
	require.Equal(t, "-CROSSSLOT Keys in request don't hash to the same slot\r\n", raw.do("EVAL", "return 1", "2", k1, k2))
	reply := raw.do("EVAL", "return redis.call('get', ARGV[1])", "1", k1, k2)
	require.True(t, strings.HasPrefix(reply, "-ERR Script attempted to access a non local key in a cluster node script: "), reply)
	require.Equal(t, "-ERR Script attempted to access a non local key in a cluster node\r\n",
		raw.do("EVAL", "return redis.pcall('get', ARGV[1])", "1", k1, k2))
	moved := dialRaw(t, cl.NonOwner(k1).RESPAddr().String()).do("EVAL", "return 1", "1", k1)
	require.True(t, strings.HasPrefix(moved, "-MOVED "+strconv.Itoa(int(placement.Slot(k1)))+" "), moved)
}

// BenchmarkEvalSHA measures EVALSHA through go-redis on a lone node
// (pooled Lua states) next to a plain INCRBY, and the same on a
// redis-server when one is installed (side by side, same client): a
// one-key read-modify-write script and a keyless one, parallel clients.
func BenchmarkEvalSHA(b *testing.B) {
	cfg := testConfig()
	n, err := server.NewNode(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = n.Stop(context.Background()) }()
	addrs := map[string]string{"zaris": n.RESPAddr().String()}
	if bin, err := exec.LookPath("redis-server"); err == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", b.TempDir())
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		addrs["redis"] = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	ctx := context.Background()
	for _, target := range []string{"zaris", "redis"} {
		addr, ok := addrs[target]
		if !ok {
			continue
		}
		rc := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
		defer rc.Close()
		testscale.Eventually(b, 10*time.Second, 10*time.Millisecond, target+" answers", func() bool { return rc.Ping(ctx).Err() == nil })
		for _, bc := range []struct {
			name, script string
			keys         int
		}{
			{"incrby_plain", "", 1},
			{"evalsha_incrby_1key", "return redis.call('incrby', KEYS[1], ARGV[1])", 1},
			{"evalsha_keyless", "return ARGV[1]", 0},
		} {
			sha := ""
			if bc.script != "" {
				if sha, err = rc.ScriptLoad(ctx, bc.script).Result(); err != nil {
					b.Fatal(err)
				}
			}
			b.Run(target+"/"+bc.name, func(b *testing.B) {
				var id atomic.Int64
				b.RunParallel(func(pb *testing.PB) {
					key := []string{fmt.Sprint("bench:", id.Add(1))}
					if bc.keys == 0 {
						key = nil
					}
					for pb.Next() {
						var err error
						if sha == "" {
							err = rc.IncrBy(ctx, key[0], 1).Err()
						} else {
							err = rc.EvalSha(ctx, sha, key, 1).Err()
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// A bug (panic) in a command a script calls is contained like one in a
// plain command: counted, answered -ERR internal error inside the script
// (redis.pcall returns it), the segment locks released, the node serving.
func TestScriptCommandPanicContained(t *testing.T) {
	n := startNode(t)
	n.Store().InjectFault(func(key string) {
		if key == "boom" {
			panic("injected bug")
		}
	})
	ctx := ctxT(t)
	rc := newClient(t, n)
	before := panicCount(t, n, "resp")
	err := rc.Eval(ctx, "return redis.call('set', KEYS[1], 'v')", []string{"boom"}).Err()
	require.ErrorContains(t, err, "ERR internal error script: ")
	require.Equal(t, "ERR internal error", rc.Eval(ctx, "return redis.pcall('set', KEYS[1], 'v')['err']", []string{"boom"}).Val())
	require.Equal(t, before+2, panicCount(t, n, "resp"))
	require.NoError(t, rc.Set(ctx, "{boom}neighbour", "ok", 0).Err(), "the segment lock was released")
	require.Equal(t, int64(0), rc.Exists(ctx, "boom").Val())
}

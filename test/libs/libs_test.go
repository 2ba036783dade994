package libs_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server/clustertest"
)

// target is a Zaris deployment the libraries run against.
type target struct {
	name    string
	addrs   []string // RESP addresses
	cluster bool
}

// targets starts a lone node and a three-node cluster (both real nodes,
// RESP on kernel-chosen ports).
func targets(t *testing.T) []target {
	t.Helper()
	out := []target{{name: "node", addrs: clustertest.Start(t, 1, clustertest.Options{NoHTTP: true}).RESPEndpoints()}}
	if !testing.Short() {
		out = append(out, target{name: "cluster3", cluster: true, addrs: clustertest.Start(t, 3, clustertest.Options{NoHTTP: true}).RESPEndpoints()})
	}
	return out
}

func (tg target) client(t *testing.T) redis.UniversalClient {
	t.Helper()
	var c redis.UniversalClient
	if tg.cluster {
		// TRYAGAIN (a segment moving while the new cluster settles) is
		// retried with backoff: allow enough tries for a loaded machine.
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: tg.addrs, DialTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, MaxRedirects: 30})
	} else {
		c = redis.NewClient(&redis.Options{Addr: tg.addrs[0], DialTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second})
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Minute))
	t.Cleanup(cancel)
	return ctx
}

func TestLibraries(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			t.Run("redis_rate", func(t *testing.T) { testRedisRate(t, tg) })
			t.Run("redsync", func(t *testing.T) { testRedsync(t, tg) })
			t.Run("pipelines", func(t *testing.T) { testPipelines(t, tg) })
			t.Run("asynq", func(t *testing.T) { testAsynq(t, tg) })
		})
	}
}

// go-redis's rate limiter (GCRA in a Lua script): a burst of exactly the
// limit is allowed, the next request is refused with a retry time, and
// concurrent callers share one budget.
func testRedisRate(t *testing.T, tg target) {
	ctx := ctxT(t)
	rdb := tg.client(t)
	limiter := redis_rate.NewLimiter(rdb)
	// One token per 6 minutes: nothing refills while the test runs, however
	// slow the machine.
	limit := redis_rate.Limit{Rate: 10, Burst: 10, Period: time.Hour}
	for i := range 10 {
		res, err := limiter.Allow(ctx, "rate:seq", limit)
		require.NoError(t, err)
		require.Equal(t, 1, res.Allowed, "request %d", i)
		require.Equal(t, 9-i, res.Remaining)
	}
	res, err := limiter.Allow(ctx, "rate:seq", limit)
	require.NoError(t, err)
	require.Equal(t, 0, res.Allowed)
	require.Greater(t, res.RetryAfter, time.Duration(0))
	// AllowN and AllowAtMost take several at once.
	res, err = limiter.AllowN(ctx, "rate:n", limit, 4)
	require.NoError(t, err)
	require.Equal(t, 4, res.Allowed)
	res, err = limiter.AllowAtMost(ctx, "rate:n", limit, 100)
	require.NoError(t, err)
	require.Equal(t, 6, res.Allowed)
	require.NoError(t, limiter.Reset(ctx, "rate:n"))
	res, err = limiter.Allow(ctx, "rate:n", limit)
	require.NoError(t, err)
	require.Equal(t, 1, res.Allowed, "Reset gave the budget back")

	// 16 goroutines × 10 tries against one budget of 50: exactly 50 pass.
	budget := redis_rate.Limit{Rate: 50, Burst: 50, Period: time.Hour}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				res, err := limiter.Allow(ctx, "rate:shared", budget)
				if err != nil {
					errs <- err
					return
				}
				allowed.Add(int64(res.Allowed))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(50), allowed.Load())
}

// Redlock (redsync): goroutines increment a counter with a plain GET and
// SET under the lock — the count ends exact only if the lock excludes;
// Extend and Unlock answer as the library expects, a lock held by another
// is not taken, and an expired one is.
func testRedsync(t *testing.T, tg target) {
	ctx := ctxT(t)
	rdb := tg.client(t)
	rs := redsync.New(goredis.NewPool(rdb))
	counter := "redsync:counter:" + tg.name
	const workers, rounds = 6, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Tries for as long as the test's context allows: on a loaded
			// machine a holder may keep the lock for long.
			m := rs.NewMutex("redsync:lock", redsync.WithExpiry(30*time.Second), redsync.WithTries(1<<30),
				redsync.WithRetryDelay(5*time.Millisecond))
			for i := range rounds {
				if err := m.LockContext(ctx); err != nil {
					errs <- fmt.Errorf("worker %d round %d: lock: %w", w, i, err)
					return
				}
				v, err := rdb.Get(ctx, counter).Int()
				if err != nil && !errors.Is(err, redis.Nil) {
					errs <- err
					return
				}
				if err := rdb.Set(ctx, counter, v+1, 0).Err(); err != nil {
					errs <- err
					return
				}
				if ok, err := m.UnlockContext(ctx); !ok || err != nil {
					errs <- fmt.Errorf("unlock: %v %w", ok, err)
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
	require.Equal(t, strconv.Itoa(workers*rounds), rdb.Get(ctx, counter).Val(), "every increment under the lock counted once")

	holder := rs.NewMutex("redsync:held", redsync.WithExpiry(2*time.Second))
	require.NoError(t, holder.LockContext(ctx))
	other := rs.NewMutex("redsync:held", redsync.WithTries(1))
	require.Error(t, other.LockContext(ctx), "a held lock is not taken")
	before := time.Now()
	ok, err := holder.ExtendContext(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, holder.Until().After(before.Add(time.Second)), "Extend moved the expiry")
	ttl := rdb.PTTL(ctx, "redsync:held").Val()
	require.Greater(t, ttl, time.Second)
	ok, err = holder.UnlockContext(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = holder.UnlockContext(ctx)
	require.False(t, ok, "unlocking twice finds nothing of ours")
	require.Error(t, err)
	require.NoError(t, other.LockContext(ctx), "released: the other takes it")
	ok, err = holder.ExtendContext(ctx)
	require.False(t, ok, "the old holder cannot extend another's lock")
	require.Error(t, err)
	// An expired lock is free.
	short := rs.NewMutex("redsync:short", redsync.WithExpiry(300*time.Millisecond))
	require.NoError(t, short.LockContext(ctx))
	late := rs.NewMutex("redsync:short", redsync.WithTries(1))
	testscale.Eventually(t, testscale.D(10*time.Second), 20*time.Millisecond, "the expired lock is free", func() bool {
		return late.LockContext(ctx) == nil
	})
}

// go-redis pipelines (one round trip, replies in order, errors per
// command) and TxPipeline (MULTI/EXEC: atomic, a WATCH conflict aborts).
func testPipelines(t *testing.T, tg target) {
	ctx := ctxT(t)
	rdb := tg.client(t)
	pipe := rdb.Pipeline()
	var incrs []*redis.IntCmd
	for i := range 50 {
		pipe.Set(ctx, fmt.Sprint("pipe:", i), i, 0)
		incrs = append(incrs, pipe.Incr(ctx, fmt.Sprint("pipe:", i)))
	}
	bad := pipe.LPush(ctx, "pipe:0", "x")
	_, err := pipe.Exec(ctx)
	require.Error(t, err, "the WRONGTYPE of one command is reported")
	for i, c := range incrs {
		require.Equal(t, int64(i+1), c.Val())
	}
	require.ErrorContains(t, bad.Err(), "WRONGTYPE")

	tag := "{tx}"
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, tag+"a", 1, 0)
		p.IncrBy(ctx, tag+"a", 41)
		p.RPush(ctx, tag+"l", "x", "y")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "42", rdb.Get(ctx, tag+"a").Val())
	require.Equal(t, int64(2), rdb.LLen(ctx, tag+"l").Val())

	// WATCH: a change by another client between WATCH and EXEC aborts.
	err = rdb.Watch(ctx, func(tx *redis.Tx) error {
		v, err := tx.Get(ctx, tag+"a").Int()
		if err != nil {
			return err
		}
		require.NoError(t, rdb.Set(ctx, tag+"a", 0, 0).Err())
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, tag+"a", v+1, 0)
			return nil
		})
		return err
	}, tag+"a")
	require.ErrorIs(t, err, redis.TxFailedErr)
	require.Equal(t, "0", rdb.Get(ctx, tag+"a").Val())
}

// asynq: a task is enqueued and processed, a failing one is retried until
// it succeeds, a scheduled one runs no earlier than its time.
func testAsynq(t *testing.T, tg target) {
	ctx := ctxT(t)
	rdb := tg.client(t)
	for _, c := range []string{"rpoplpush", "zremrangebyrank", "zremrangebyscore"} {
		if info, err := rdb.Do(ctx, "COMMAND", "INFO", c).Slice(); err != nil || len(info) != 1 || info[0] == nil {
			t.Skipf("asynq needs %s, not served by this build (the collections and sorted-set branches add it)", c)
		}
	}
	var opt asynq.RedisConnOpt = asynq.RedisClientOpt{Addr: tg.addrs[0]}
	if tg.cluster {
		opt = asynq.RedisClusterClientOpt{Addrs: tg.addrs, MaxRedirects: 30}
	}
	client := asynq.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })

	type done struct {
		id      string
		at      time.Time
		attempt int
	}
	results := make(chan done, 16)
	var failures sync.Map // task id → attempts failed so far
	mux := asynq.NewServeMux()
	mux.HandleFunc("email:send", func(ctx context.Context, task *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		results <- done{id: id, at: time.Now()}
		return nil
	})
	mux.HandleFunc("flaky", func(ctx context.Context, task *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		retried, _ := asynq.GetRetryCount(ctx)
		if retried < 2 {
			failures.Store(id, retried+1)
			return fmt.Errorf("flaky failure %d", retried+1)
		}
		results <- done{id: id, at: time.Now(), attempt: retried}
		return nil
	})
	srv := asynq.NewServer(opt, asynq.Config{
		Concurrency:              4,
		TaskCheckInterval:        50 * time.Millisecond,
		DelayedTaskCheckInterval: 100 * time.Millisecond,
		RetryDelayFunc:           func(int, error, *asynq.Task) time.Duration { return 100 * time.Millisecond },
		LogLevel:                 asynq.WarnLevel,
	})
	require.NoError(t, srv.Start(mux))
	t.Cleanup(srv.Shutdown)

	wait := func(what string) done {
		t.Helper()
		select {
		case d := <-results:
			return d
		case <-time.After(testscale.D(60 * time.Second)):
			t.Fatalf("asynq: %s was not processed", what)
			return done{}
		}
	}
	info, err := client.EnqueueContext(ctx, asynq.NewTask("email:send", []byte(`{"to":"a@b"}`)))
	require.NoError(t, err)
	require.Equal(t, info.ID, wait("the enqueued task").id)

	info, err = client.EnqueueContext(ctx, asynq.NewTask("flaky", nil), asynq.MaxRetry(5))
	require.NoError(t, err)
	d := wait("the retried task")
	require.Equal(t, info.ID, d.id)
	require.Equal(t, 2, d.attempt, "succeeded on its third run")
	n, _ := failures.Load(info.ID)
	require.Equal(t, 2, n)

	info, err = client.EnqueueContext(ctx, asynq.NewTask("email:send", []byte("later")), asynq.ProcessIn(1500*time.Millisecond))
	require.NoError(t, err)
	require.Equal(t, asynq.TaskStateScheduled, info.State)
	d = wait("the scheduled task")
	require.Equal(t, info.ID, d.id)
	// asynq keeps a scheduled time in whole Unix seconds (a ZSET score).
	require.False(t, d.at.Before(info.NextProcessAt.Truncate(time.Second)), "run at %v, scheduled for %v", d.at, info.NextProcessAt)

	// The queue's keys, read back: nothing left pending, active, scheduled
	// or to retry; five runs processed, two of them failed (the retries).
	p := "asynq:{default}:"
	testscale.Eventually(t, testscale.D(30*time.Second), 50*time.Millisecond, "the default queue drained", func() bool {
		return rdb.LLen(ctx, p+"pending").Val() == 0 && rdb.LLen(ctx, p+"active").Val() == 0 &&
			rdb.ZCard(ctx, p+"scheduled").Val() == 0 && rdb.ZCard(ctx, p+"retry").Val() == 0
	})
	processed, err := rdb.Get(ctx, p+"processed").Int()
	require.NoError(t, err)
	require.Equal(t, 5, processed)
	failed, err := rdb.Get(ctx, p+"failed").Int()
	require.NoError(t, err)
	require.Equal(t, 2, failed)
}

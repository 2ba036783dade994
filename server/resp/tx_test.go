package resp_test

import (
	"github.com/zaris-io/zaris/internal/testscale"

	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestTxQueueAndExec(t *testing.T) {
	n := startNode(t)
	c := dialRaw(t, n.RESPAddr().String())

	require.Equal(t, "-ERR EXEC without MULTI\r\n", c.do("EXEC"))
	require.Equal(t, "-ERR DISCARD without MULTI\r\n", c.do("DISCARD"))

	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "-ERR MULTI calls can not be nested\r\n", c.do("MULTI"))
	require.Equal(t, "-ERR WATCH inside MULTI is not allowed\r\n", c.do("WATCH", "{t}a"))
	require.Equal(t, "+QUEUED\r\n", c.do("SET", "{t}a", "1"))
	require.Equal(t, "+QUEUED\r\n", c.do("INCR", "{t}a"))
	require.Equal(t, "+QUEUED\r\n", c.do("LPUSH", "{t}a", "x"))
	require.Equal(t, "+QUEUED\r\n", c.do("GET", "{t}a"))
	require.Equal(t, "+QUEUED\r\n", c.do("SET", "{t}a", "1", "BOGUS")) // a syntax error shows at EXEC
	require.Equal(t, "+QUEUED\r\n", c.do("PING"))
	require.Equal(t, "+QUEUED\r\n", c.do("RENAME", "{t}a", "{t}b"))
	require.Equal(t, "+QUEUED\r\n", c.do("BLPOP", "{t}list", "0")) // does not block inside EXEC
	require.Equal(t, "+QUEUED\r\n", c.do("MGET", "{t}a", "{t}b"))
	require.Equal(t, "*9\r\n+OK\r\n:2\r\n"+
		"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"+
		"$1\r\n2\r\n-ERR syntax error\r\n+PONG\r\n+OK\r\n*-1\r\n*2\r\n$-1\r\n$1\r\n2\r\n", c.do("EXEC"))
	require.Equal(t, "-ERR EXEC without MULTI\r\n", c.do("EXEC"))

	// An empty transaction, and one of keyless commands only.
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "*0\r\n", c.do("EXEC"))
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", c.do("ECHO", "hi"))
	require.Equal(t, "*1\r\n$2\r\nhi\r\n", c.do("EXEC"))

	// DISCARD drops the queue.
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", c.do("SET", "{t}d", "1"))
	require.Equal(t, "+OK\r\n", c.do("DISCARD"))
	require.Equal(t, "$-1\r\n", c.do("GET", "{t}d"))

	// RESET ends a transaction too.
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "+RESET\r\n", c.do("RESET"))
	require.Equal(t, "-ERR EXEC without MULTI\r\n", c.do("EXEC"))
}

func TestTxExecAbort(t *testing.T) {
	n := startNode(t)
	c := dialRaw(t, n.RESPAddr().String())
	abort := "-EXECABORT Transaction discarded because of previous errors.\r\n"

	for _, bad := range []struct {
		args []string
		err  string
	}{
		{[]string{"SET", "{t}a"}, "-ERR wrong number of arguments for 'set' command\r\n"},
		{[]string{"NOSUCH", "x"}, "-ERR unknown command 'NOSUCH', with args beginning with: 'x' \r\n"},
		{[]string{"DBSIZE"}, "-ERR Command not allowed inside a transaction\r\n"},
		{[]string{"SUBSCRIBE", "ch"}, "-ERR Command not allowed inside a transaction\r\n"},
		{[]string{"SCAN", "0"}, "-ERR Command not allowed inside a transaction\r\n"},
		{[]string{"HELLO", "3"}, "-ERR Command not allowed inside a transaction\r\n"},
	} {
		require.Equal(t, "+OK\r\n", c.do("MULTI"))
		require.Equal(t, "+QUEUED\r\n", c.do("SET", "{t}a", "changed"))
		require.Equal(t, bad.err, c.do(bad.args...), "%v", bad.args)
		require.Equal(t, "+QUEUED\r\n", c.do("SET", "{t}c", "changed"))
		require.Equal(t, abort, c.do("EXEC"), "%v", bad.args)
		require.Equal(t, "$-1\r\n", c.do("GET", "{t}a"), "nothing of an aborted transaction runs")
		require.Equal(t, "$-1\r\n", c.do("GET", "{t}c"))
	}
	// The connection is usable afterwards.
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", c.do("SET", "b", "1"))
	require.Equal(t, "*1\r\n+OK\r\n", c.do("EXEC"))
}

// On a lone node a transaction's keys may span slots (issue #13 item 4):
// WATCH and the queued commands name keys of several segments, EXEC holds
// all their locks; a watched key of another slot still aborts EXEC.
func TestTxAcrossSlotsOnOneNode(t *testing.T) {
	n := startNode(t)
	c := dialRaw(t, n.RESPAddr().String())
	other := dialRaw(t, n.RESPAddr().String())
	require.Equal(t, "+OK\r\n", c.do("WATCH", "a", "b"))
	require.Equal(t, "+OK\r\n", c.do("WATCH", "{t}a"))
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", c.do("MSET", "a", "1", "b", "2"))
	require.Equal(t, "+QUEUED\r\n", c.do("INCR", "{t}a"))
	require.Equal(t, "*2\r\n+OK\r\n:1\r\n", c.do("EXEC"))
	require.Equal(t, "*2\r\n$1\r\n1\r\n$1\r\n2\r\n", other.do("MGET", "a", "b"))

	require.Equal(t, "+OK\r\n", c.do("WATCH", "a", "b"))
	require.Equal(t, "+OK\r\n", other.do("SET", "b", "changed"))
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", c.do("SET", "a", "lost"))
	require.Equal(t, "*-1\r\n", c.do("EXEC"), "a watched key of another slot changed")
	require.Equal(t, "$1\r\n1\r\n", other.do("GET", "a"))
}

func TestTxWatchGoRedis(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			n := startNode(t)
			rdb := newClient(t, n, func(o *redis.Options) { o.Protocol = proto })
			other := newClient(t, n)
			ctx := ctxT(t)
			key := "{w}k"

			// TxPipelined: the replies of the queued commands.
			cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, key, "10", 0)
				p.IncrBy(ctx, key, 5)
				p.HSet(ctx, "{w}h", "f", "v")
				p.HGetAll(ctx, "{w}h")
				return nil
			})
			require.NoError(t, err)
			require.Len(t, cmds, 4)
			require.Equal(t, int64(15), cmds[1].(*redis.IntCmd).Val())
			require.Equal(t, map[string]string{"f": "v"}, cmds[3].(*redis.MapStringStringCmd).Val())

			// A run-time error is one element; the rest ran.
			cmds, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.LPush(ctx, key, "x")
				p.Incr(ctx, key)
				return nil
			})
			require.Error(t, err)
			require.ErrorContains(t, cmds[0].Err(), "WRONGTYPE")
			require.Equal(t, int64(16), cmds[1].(*redis.IntCmd).Val())

			// WATCH: a write by another client in between fails the EXEC.
			watchThen := func(between func()) error {
				return rdb.Watch(ctx, func(tx *redis.Tx) error {
					v, err := tx.Get(ctx, key).Int()
					if err != nil && !errors.Is(err, redis.Nil) {
						return err
					}
					between()
					_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Set(ctx, key, v+1, 0)
						return nil
					})
					return err
				}, key)
			}
			require.NoError(t, watchThen(func() {}))
			require.Equal(t, "17", other.Get(ctx, key).Val())
			require.ErrorIs(t, watchThen(func() { other.Set(ctx, key, "100", 0) }), redis.TxFailedErr)
			require.Equal(t, "100", other.Get(ctx, key).Val(), "the failed transaction wrote nothing")
			// The same value rewritten is still a change (the version moves).
			require.ErrorIs(t, watchThen(func() { other.Set(ctx, key, "100", 0) }), redis.TxFailedErr)
			// A TTL change, a delete.
			require.ErrorIs(t, watchThen(func() { other.Expire(ctx, key, time.Hour) }), redis.TxFailedErr)
			require.ErrorIs(t, watchThen(func() { other.Del(ctx, key) }), redis.TxFailedErr)
			// An expiry.
			require.NoError(t, other.Set(ctx, key, "1", 50*time.Millisecond).Err())
			require.ErrorIs(t, watchThen(func() {
				require.Eventually(t, func() bool { return other.Exists(ctx, key).Val() == 0 }, testscale.D(5*time.Second), time.Millisecond)
			}), redis.TxFailedErr)
			// A missing key created meanwhile.
			require.ErrorIs(t, watchThen(func() { other.Set(ctx, key, "5", 0) }), redis.TxFailedErr)
			// A write of another key of the slot does not matter.
			require.NoError(t, watchThen(func() { other.Set(ctx, "{w}other", "5", 0) }))
			require.Equal(t, "6", other.Get(ctx, key).Val())
			// UNWATCH forgets.
			require.NoError(t, rdb.Watch(ctx, func(tx *redis.Tx) error {
				other.Set(ctx, key, "50", 0)
				require.NoError(t, tx.Unwatch(ctx).Err())
				_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Incr(ctx, key)
					return nil
				})
				return err
			}, key))
			require.Equal(t, "51", other.Get(ctx, key).Val())
		})
	}
}

func TestTxNullArrayRESP3(t *testing.T) {
	n := startNode(t)
	c := dialRaw(t, n.RESPAddr().String())
	other := newClient(t, n)
	c.do("HELLO", "3")
	require.Equal(t, "+OK\r\n", c.do("WATCH", "{x}k"))
	require.NoError(t, other.Set(ctxT(t), "{x}k", "v", 0).Err())
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", c.do("GET", "{x}k"))
	require.Equal(t, "_\r\n", c.do("EXEC"))
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", c.do("HSET", "{x}h", "f", "1"))
	require.Equal(t, "+QUEUED\r\n", c.do("HGETALL", "{x}h"))
	require.Equal(t, "*2\r\n:1\r\n%1\r\n$1\r\nf\r\n$1\r\n1\r\n", c.do("EXEC"))
}

// TestTxConcurrentTransfer: the canonical optimistic update. Clients move
// money between two accounts of one slot with WATCH/MULTI/EXEC and retry on
// TxFailedErr; the total never changes, and a reader's MULTI GET a GET b
// never sees a transfer half done.
func TestTxConcurrentTransfer(t *testing.T) {
	n := startNode(t)
	ctx := ctxT(t)
	a, b := "{acct}a", "{acct}b"
	setup := newClient(t, n)
	require.NoError(t, setup.MSet(ctx, a, 1000, b, 1000).Err())

	const workers, transfers = 8, 50
	var wg sync.WaitGroup
	var retries sync.Map
	errs := make(chan error, workers+1)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rdb := redis.NewClient(&redis.Options{Addr: n.RESPAddr().String(), PoolSize: 2})
			defer rdb.Close()
			from, to := a, b
			if w%2 == 1 {
				from, to = b, a
			}
			for i := 0; i < transfers; i++ {
				for attempt := 0; ; attempt++ {
					err := rdb.Watch(ctx, func(tx *redis.Tx) error {
						bal, err := tx.Get(ctx, from).Int()
						if err != nil {
							return err
						}
						amount := 1 + i%7
						if bal < amount {
							amount = 0
						}
						_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
							p.Set(ctx, from, bal-amount, 0)
							p.IncrBy(ctx, to, int64(amount))
							return nil
						})
						return err
					}, from)
					if err == nil {
						break
					}
					if !errors.Is(err, redis.TxFailedErr) || attempt > 10000 {
						errs <- err
						return
					}
					retries.Store(w, attempt+1)
				}
			}
		}(w)
	}
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() { // a reader: each snapshot of both balances sums to 2000
		defer rwg.Done()
		rdb := redis.NewClient(&redis.Options{Addr: n.RESPAddr().String()})
		defer rdb.Close()
		for {
			select {
			case <-stop:
				return
			default:
			}
			cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Get(ctx, a)
				p.Get(ctx, b)
				return nil
			})
			if err != nil {
				errs <- err
				return
			}
			x, _ := cmds[0].(*redis.StringCmd).Int()
			y, _ := cmds[1].(*redis.StringCmd).Int()
			if x+y != 2000 {
				errs <- errors.New("torn read: " + strconv.Itoa(x) + "+" + strconv.Itoa(y))
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	rwg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	x, err := setup.Get(ctx, a).Int()
	require.NoError(t, err)
	y, err := setup.Get(ctx, b).Int()
	require.NoError(t, err)
	require.Equal(t, 2000, x+y)
	n2 := 0
	retries.Range(func(_, _ any) bool { n2++; return true })
	t.Logf("balances %d + %d; workers that had to retry: %d", x, y, n2)
}

// TestTxAtomicIncrements: a transaction incrementing two keys, racing a
// transaction reading both, never lets the reader see one incremented
// without the other.
func TestTxAtomicIncrements(t *testing.T) {
	n := startNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := newClient(t, n)
	r := newClient(t, n)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 300; i++ {
			_, err := w.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Incr(ctx, "{p}x")
				p.Incr(ctx, "{p}y")
				return nil
			})
			if err != nil {
				return
			}
		}
	}()
	for {
		select {
		case <-done:
			require.Equal(t, "300", r.Get(ctx, "{p}x").Val())
			require.Equal(t, "300", r.Get(ctx, "{p}y").Val())
			return
		default:
		}
		cmds, err := r.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Get(ctx, "{p}x")
			p.Get(ctx, "{p}y")
			return nil
		})
		if errors.Is(err, redis.Nil) {
			continue
		}
		require.NoError(t, err)
		require.Equal(t, cmds[0].(*redis.StringCmd).Val(), cmds[1].(*redis.StringCmd).Val())
	}
}

// The slow log, the latency monitor and CONFIG GET may be queued: they
// touch no key (the tcl suite resets the slow log inside MULTI).
func TestTxQueuesServerDiagnostics(t *testing.T) {
	n := startNode(t)
	c := dialRaw(t, n.RESPAddr().String())
	require.Equal(t, "+OK\r\n", c.do("CONFIG", "SET", "slowlog-log-slower-than", "0"))
	require.Equal(t, "+OK\r\n", c.do("SET", "k", "v"))
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", c.do("LPUSH", "l", "foo"))
	for _, q := range [][]string{{"SLOWLOG", "RESET"}, {"SLOWLOG", "LEN"}, {"LATENCY", "RESET"}, {"LATENCY", "LATEST"},
		{"LATENCY", "HISTOGRAM", "nosuch"}, {"CONFIG", "GET", "slowlog-log-slower-than"}} {
		require.Equal(t, "+QUEUED\r\n", c.do(q...), "%q", q)
	}
	// SLOWLOG LEN counts the RESET itself, logged after it ran (as Redis).
	require.Equal(t, "*7\r\n:1\r\n+OK\r\n:1\r\n:0\r\n*0\r\n*0\r\n*2\r\n$23\r\nslowlog-log-slower-than\r\n$1\r\n0\r\n", c.do("EXEC"))
}

package sdk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/native"
	"github.com/zaris-io/zaris/server/store"
)

// dsMaxElems is the collection element cap of the suite's stores, small so
// that ItemTooLarge is reachable on both backends.
const dsMaxElems = 64

func dsStoreConfig() store.Config {
	cfg := store.DefaultConfig()
	cfg.MaxCollectionElements = dsMaxElems
	return cfg
}

var dsSeq atomic.Int64

func TestDataStructuresEmbedded(t *testing.T) {
	runDSSuite(t, func(t *testing.T) *sdk.Client {
		name := fmt.Sprintf("zaris://inproc/ds-%d", dsSeq.Add(1))
		c, err := sdk.Connect(context.Background(), name, sdk.WithEmbeddedConfig(dsStoreConfig()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	})
}

func TestDataStructuresRemote(t *testing.T) {
	st, err := store.New(dsStoreConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ts := startServer(t, func(c *native.Config) { c.Store = st })
	runDSSuite(t, func(t *testing.T) *sdk.Client {
		c, err := sdk.Connect(context.Background(), "zaris://"+ts.addr+"/default")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	})
}

// --- assertion helpers: each returns a function that takes a method's
// results directly, e.g. expect(t, "HLEN", 2)(c.Hashes().Len(ctx, k)). ---

func expect[T any](t *testing.T, what string, want T) func(T, error) {
	t.Helper()
	return func(got T, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s = %#v, want %#v", what, got, want)
		}
	}
}

func expect2[A, B any](t *testing.T, what string, wantA A, wantB B) func(A, B, error) {
	t.Helper()
	return func(a A, b B, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !reflect.DeepEqual(a, wantA) || !reflect.DeepEqual(b, wantB) {
			t.Fatalf("%s = %#v, %#v, want %#v, %#v", what, a, b, wantA, wantB)
		}
	}
}

// refused checks that err is a *CommandError for op carrying target's status.
func refused(t *testing.T, what string, err error, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
	var ce *sdk.CommandError
	if !errors.As(err, &ce) || ce.Status.Err() != target {
		t.Fatalf("%s: %v is not a *CommandError with status %v", what, err, target)
	}
}

func noErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func b(s string) []byte { return []byte(s) }

func bs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// dsKey is a key private to the running test: the remote suite shares one
// store between subtests.
func dsKey(t *testing.T, name string) string { return t.Name() + ":" + name }

// dsTagged is a key private to the test that shares a hash tag (and so a
// segment) with every other dsTagged key of the test.
func dsTagged(t *testing.T, name string) string { return "{" + t.Name() + "}" + name }

func keyType(t *testing.T, c *sdk.Client, key string) string {
	t.Helper()
	r, err := c.Do(context.Background(), sdk.NewCmd(sdk.CmdType, key))
	if err != nil || !r.OK() {
		t.Fatalf("TYPE %s: %+v %v", key, r, err)
	}
	return string(r.Bulk)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testscale.Eventually(t, within, time.Millisecond, what, cond)
}

// runDSSuite is the behaviour of the typed data-structure surfaces, written
// once and run against every backend.
func runDSSuite(t *testing.T, connect func(t *testing.T) *sdk.Client) {
	ctx := context.Background()

	t.Run("Hashes", func(t *testing.T) {
		c := connect(t)
		h, k := c.Hashes(), dsKey(t, "h")
		expect(t, "HLEN of a missing key", 0)(h.Len(ctx, k))
		expect2(t, "HGET of a missing key", []byte(nil), false)(h.Get(ctx, k, "a"))
		expect(t, "HGETALL of a missing key", map[string][]byte{})(h.GetAll(ctx, k))
		expect(t, "HKEYS of a missing key", []string{})(h.Keys(ctx, k))
		expect(t, "HMGET of a missing key", [][]byte{nil})(h.MGet(ctx, k, "a"))
		expect(t, "HDEL of a missing key", 0)(h.Del(ctx, k, "a"))

		expect(t, "HSET", 2)(h.Set(ctx, k, map[string][]byte{"a": b("1"), "b": b("2")}))
		expect(t, "HSET one new, one overwritten", 1)(h.Set(ctx, k, map[string][]byte{"a": b("10"), "e": {}}))
		expect2(t, "HGET", b("10"), true)(h.Get(ctx, k, "a"))
		expect2(t, "HGET of an empty value", []byte{}, true)(h.Get(ctx, k, "e"))
		expect2(t, "HGET of a missing field", []byte(nil), false)(h.Get(ctx, k, "zz"))
		expect(t, "SetField new", true)(h.SetField(ctx, k, "c", b("3")))
		expect(t, "SetField existing", false)(h.SetField(ctx, k, "c", b("33")))
		expect(t, "HSETNX existing", false)(h.SetNX(ctx, k, "a", b("x")))
		expect(t, "HSETNX new", true)(h.SetNX(ctx, k, "d", b("4")))
		expect(t, "HLEN", 5)(h.Len(ctx, k))
		expect(t, "HEXISTS", true)(h.Exists(ctx, k, "d"))
		expect(t, "HEXISTS of a missing field", false)(h.Exists(ctx, k, "zz"))
		expect(t, "HMGET", [][]byte{b("10"), nil, {}})(h.MGet(ctx, k, "a", "zz", "e"))
		expect(t, "HGETALL", map[string][]byte{"a": b("10"), "b": b("2"), "c": b("33"), "d": b("4"), "e": {}})(h.GetAll(ctx, k))
		keys, err := h.Keys(ctx, k)
		slices.Sort(keys)
		expect(t, "HKEYS", []string{"a", "b", "c", "d", "e"})(keys, err)
		vals, err := h.Values(ctx, k)
		slices.SortFunc(vals, bytes.Compare)
		expect(t, "HVALS", [][]byte{{}, b("10"), b("2"), b("33"), b("4")})(vals, err)

		expect(t, "HINCRBY", int64(15))(h.IncrBy(ctx, k, "a", 5))
		expect(t, "HINCRBY of a new field", int64(-3))(h.IncrBy(ctx, k, "n", -3))
		expect(t, "HINCRBYFLOAT", 1.5)(h.IncrByFloat(ctx, k, "f", 1.5))
		expect(t, "HINCRBYFLOAT again", 1.75)(h.IncrByFloat(ctx, k, "f", 0.25))
		expect2(t, "a float field reads as text", b("1.75"), true)(h.Get(ctx, k, "f"))

		expect(t, "HDEL", 2)(h.Del(ctx, k, "a", "b", "nope"))
		expect(t, "HDEL the rest", 5)(h.Del(ctx, k, "c", "d", "e", "n", "f"))
		if typ := keyType(t, c, k); typ != "none" {
			t.Fatalf("an emptied hash still exists as a %s", typ)
		}
	})

	t.Run("Lists", func(t *testing.T) {
		c := connect(t)
		l, k := c.Lists(), dsKey(t, "l")
		expect(t, "LLEN of a missing key", 0)(l.Len(ctx, k))
		expect2(t, "LPOP of a missing key", []byte(nil), false)(l.LPop(ctx, k))
		expect2(t, "RPOP of a missing key", []byte(nil), false)(l.RPop(ctx, k))
		expect(t, "LPOP count of a missing key", [][]byte(nil))(l.LPopCount(ctx, k, 2))
		expect(t, "LRANGE of a missing key", [][]byte{})(l.Range(ctx, k, 0, -1))
		expect2(t, "LINDEX of a missing key", []byte(nil), false)(l.Index(ctx, k, 0))
		expect(t, "LREM of a missing key", 0)(l.Rem(ctx, k, 0, b("a")))
		noErr(t, "LTRIM of a missing key", l.Trim(ctx, k, 0, 1))

		expect(t, "LPUSH", 2)(l.LPush(ctx, k, b("a"), b("b")))
		expect(t, "RPUSH", 5)(l.RPush(ctx, k, b("c"), b("d"), b("b")))
		expect(t, "LRANGE", bs("b", "a", "c", "d", "b"))(l.Range(ctx, k, 0, -1))
		expect(t, "LRANGE clamps", bs("c", "d", "b"))(l.Range(ctx, k, 2, 100))
		expect(t, "LRANGE empty", [][]byte{})(l.Range(ctx, k, 3, 1))
		expect2(t, "LINDEX -1", b("b"), true)(l.Index(ctx, k, -1))
		expect2(t, "LINDEX 1", b("a"), true)(l.Index(ctx, k, 1))
		expect2(t, "LINDEX out of range", []byte(nil), false)(l.Index(ctx, k, 9))
		expect(t, "LREM all", 2)(l.Rem(ctx, k, 0, b("b")))
		noErr(t, "LSET", l.Set(ctx, k, 1, b("C")))
		noErr(t, "LSET -1", l.Set(ctx, k, -1, b("D")))
		expect(t, "after LREM and LSET", bs("a", "C", "D"))(l.Range(ctx, k, 0, -1))
		expect(t, "RPUSH more", 5)(l.RPush(ctx, k, b("e"), b("f")))
		noErr(t, "LTRIM", l.Trim(ctx, k, 1, -2))
		expect(t, "after LTRIM", bs("C", "D", "e"))(l.Range(ctx, k, 0, -1))
		expect2(t, "LPOP", b("C"), true)(l.LPop(ctx, k))
		expect2(t, "RPOP", b("e"), true)(l.RPop(ctx, k))
		expect(t, "RPUSH again", 4)(l.RPush(ctx, k, b("x"), b("y"), b("z")))
		expect(t, "LPOP count", bs("D", "x"))(l.LPopCount(ctx, k, 2))
		expect(t, "RPOP count past the end", bs("z", "y"))(l.RPopCount(ctx, k, 5))
		expect(t, "LLEN", 0)(l.Len(ctx, k))
		if typ := keyType(t, c, k); typ != "none" {
			t.Fatalf("an emptied list still exists as a %s", typ)
		}

		expect(t, "RPUSH with repeats", 6)(l.RPush(ctx, k, b("a"), b("b"), b("a"), b("b"), b("a"), []byte{}))
		expect(t, "LREM from the tail", 2)(l.Rem(ctx, k, -2, b("a")))
		expect(t, "LREM from the head", 1)(l.Rem(ctx, k, 1, b("b")))
		expect(t, "after LREMs", [][]byte{b("a"), b("b"), {}})(l.Range(ctx, k, 0, -1))
		expect2(t, "an empty element pops as empty, not missing", []byte{}, true)(l.RPop(ctx, k))
		expect(t, "RPOP count 0", [][]byte{})(l.RPopCount(ctx, k, 0))
	})

	t.Run("Sets", func(t *testing.T) {
		c := connect(t)
		s := c.Sets()
		k1, k2, k3 := dsTagged(t, "1"), dsTagged(t, "2"), dsTagged(t, "missing")
		expect(t, "SCARD of a missing key", 0)(s.Card(ctx, k1))
		expect(t, "SMEMBERS of a missing key", []string{})(s.Members(ctx, k1))
		expect(t, "SISMEMBER of a missing key", false)(s.IsMember(ctx, k1, "a"))
		expect(t, "SREM of a missing key", 0)(s.Rem(ctx, k1, "a"))

		expect(t, "SADD", 3)(s.Add(ctx, k1, "c", "a", "b", "a"))
		expect(t, "SADD again", 0)(s.Add(ctx, k1, "a"))
		expect(t, "SADD other", 3)(s.Add(ctx, k2, "b", "c", "d"))
		expect(t, "SISMEMBER", true)(s.IsMember(ctx, k1, "a"))
		expect(t, "SISMEMBER of a non-member", false)(s.IsMember(ctx, k1, "d"))
		expect(t, "SCARD", 3)(s.Card(ctx, k1))
		expect(t, "SMEMBERS (sorted)", []string{"a", "b", "c"})(s.Members(ctx, k1))
		expect(t, "SINTER", []string{"b", "c"})(s.Inter(ctx, k1, k2))
		expect(t, "SINTER with a missing set", []string{})(s.Inter(ctx, k1, k2, k3))
		expect(t, "SINTER of one set", []string{"a", "b", "c"})(s.Inter(ctx, k1))
		expect(t, "SUNION", []string{"a", "b", "c", "d"})(s.Union(ctx, k1, k2))
		expect(t, "SUNION with a missing set", []string{"b", "c", "d"})(s.Union(ctx, k3, k2))
		expect(t, "SREM", 1)(s.Rem(ctx, k1, "a", "z"))
		expect(t, "after SREM", []string{"b", "c"})(s.Members(ctx, k1))
		expect(t, "SREM the rest", 2)(s.Rem(ctx, k1, "b", "c"))
		if typ := keyType(t, c, k1); typ != "none" {
			t.Fatalf("an emptied set still exists as a %s", typ)
		}
		_, err := s.Inter(ctx)
		refused(t, "SINTER of no keys", err, sdk.ErrBadRequest)
		_, err = s.Union(ctx)
		refused(t, "SUNION of no keys", err, sdk.ErrBadRequest)
	})

	t.Run("SortedSets", func(t *testing.T) {
		c := connect(t)
		z, k := c.SortedSets(), dsKey(t, "z")
		m := func(member string, score float64) sdk.Member { return sdk.Member{Member: member, Score: score} }
		expect(t, "ZCARD of a missing key", 0)(z.Card(ctx, k))
		expect2(t, "ZSCORE of a missing key", 0.0, false)(z.Score(ctx, k, "a"))
		expect2(t, "ZRANK of a missing key", 0, false)(z.Rank(ctx, k, "a"))
		expect(t, "ZRANGE of a missing key", []sdk.Member{})(z.Range(ctx, k, 0, -1))
		expect(t, "ZRANGEBYSCORE of a missing key", []sdk.Member{})(z.RangeByScore(ctx, k, sdk.NegInfScore, sdk.PosInfScore, sdk.RangeLimit{}))
		expect(t, "ZCOUNT of a missing key", 0)(z.Count(ctx, k, sdk.NegInfScore, sdk.PosInfScore))
		expect(t, "ZREM of a missing key", 0)(z.Rem(ctx, k, "a"))

		expect(t, "ZADD", 3)(z.Add(ctx, k, m("a", 1), m("b", 2), m("c", 3)))
		expect(t, "ZADD XX CH", 1)(z.AddWithOptions(ctx, k, sdk.ZAddOptions{XX: true, CH: true}, m("a", 5), m("nope", 9)))
		expect2(t, "XX did not add", 0.0, false)(z.Score(ctx, k, "nope"))
		expect(t, "ZADD GT with a lower score", 0)(z.AddWithOptions(ctx, k, sdk.ZAddOptions{GT: true, CH: true}, m("c", 1)))
		expect(t, "ZADD NX", 1)(z.AddWithOptions(ctx, k, sdk.ZAddOptions{NX: true}, m("a", 100), m("d", 4)))
		expect(t, "ZADD LT CH", 1)(z.AddWithOptions(ctx, k, sdk.ZAddOptions{LT: true, CH: true}, m("d", 3.5), m("c", 9)))
		expect(t, "ZADD that only re-scores", 0)(z.Add(ctx, k, m("d", 4)))
		expect2(t, "ZSCORE", 5.0, true)(z.Score(ctx, k, "a"))
		expect2(t, "ZSCORE of a missing member", 0.0, false)(z.Score(ctx, k, "zz"))
		expect(t, "ZINCRBY", 2.5)(z.IncrBy(ctx, k, "b", 0.5))
		expect(t, "ZCARD", 4)(z.Card(ctx, k))
		expect(t, "ZRANGE", []sdk.Member{m("b", 2.5), m("c", 3), m("d", 4), m("a", 5)})(z.Range(ctx, k, 0, -1))
		expect(t, "ZREVRANGE", []sdk.Member{m("a", 5), m("d", 4)})(z.RevRange(ctx, k, 0, 1))
		expect(t, "ZRANGE negative", []sdk.Member{m("a", 5)})(z.Range(ctx, k, -1, -1))
		expect2(t, "ZRANK", 3, true)(z.Rank(ctx, k, "a"))
		expect2(t, "ZREVRANK", 0, true)(z.RevRank(ctx, k, "a"))
		expect2(t, "ZRANK of the first", 0, true)(z.Rank(ctx, k, "b"))
		expect2(t, "ZREVRANK of a missing member", 0, false)(z.RevRank(ctx, k, "zz"))
		expect(t, "ZRANGEBYSCORE exclusive min", []sdk.Member{m("c", 3), m("d", 4), m("a", 5)})(
			z.RangeByScore(ctx, k, sdk.ExclusiveScore(2.5), sdk.PosInfScore, sdk.RangeLimit{}))
		expect(t, "ZRANGEBYSCORE LIMIT", []sdk.Member{m("c", 3), m("d", 4)})(
			z.RangeByScore(ctx, k, sdk.NegInfScore, sdk.PosInfScore, sdk.RangeLimit{Offset: 1, Count: 2}))
		expect(t, "ZRANGEBYSCORE offset only", []sdk.Member{m("d", 4), m("a", 5)})(
			z.RangeByScore(ctx, k, sdk.NegInfScore, sdk.PosInfScore, sdk.RangeLimit{Offset: 2}))
		expect(t, "ZRANGEBYSCORE exclusive max", []sdk.Member{m("b", 2.5), m("c", 3)})(
			z.RangeByScore(ctx, k, sdk.InclusiveScore(2.5), sdk.ExclusiveScore(4), sdk.RangeLimit{}))
		expect(t, "ZREVRANGEBYSCORE", []sdk.Member{m("a", 5), m("d", 4), m("c", 3)})(
			z.RevRangeByScore(ctx, k, sdk.InclusiveScore(3), sdk.InclusiveScore(5), sdk.RangeLimit{}))
		expect(t, "ZREVRANGEBYSCORE LIMIT", []sdk.Member{m("a", 5)})(
			z.RevRangeByScore(ctx, k, sdk.ExclusiveScore(3), sdk.PosInfScore, sdk.RangeLimit{Count: 1}))
		expect(t, "ZCOUNT", 3)(z.Count(ctx, k, sdk.InclusiveScore(3), sdk.InclusiveScore(5)))
		expect(t, "ZCOUNT exclusive", 2)(z.Count(ctx, k, sdk.ExclusiveScore(3), sdk.InclusiveScore(5)))
		expect(t, "ZADD infinite scores", 2)(z.Add(ctx, k, m("top", math.Inf(1)), m("bottom", math.Inf(-1))))
		expect2(t, "ZSCORE +Inf", math.Inf(1), true)(z.Score(ctx, k, "top"))
		expect(t, "ZRANGE ends", []sdk.Member{m("bottom", math.Inf(-1))})(z.Range(ctx, k, 0, 0))
		expect(t, "ZREM", 3)(z.Rem(ctx, k, "a", "top", "bottom", "zz"))
		expect(t, "ZREM the rest", 3)(z.Rem(ctx, k, "b", "c", "d"))
		if typ := keyType(t, c, k); typ != "none" {
			t.Fatalf("an emptied sorted set still exists as a %s", typ)
		}
		expect(t, "ties order by member", 3)(z.Add(ctx, k, m("y", 1), m("x", 1), m("z", 0)))
		expect(t, "tie order", []sdk.Member{m("z", 0), m("x", 1), m("y", 1)})(z.Range(ctx, k, 0, -1))
	})

	t.Run("Counters", func(t *testing.T) {
		c := connect(t)
		n, k, f := c.Counters(), dsKey(t, "n"), dsKey(t, "f")
		expect(t, "GET of a missing counter", int64(0))(n.Get(ctx, k))
		expect(t, "GETFLOAT of a missing counter", 0.0)(n.GetFloat(ctx, k))
		expect(t, "INCR", int64(1))(n.Incr(ctx, k))
		expect(t, "INCRBY", int64(11))(n.IncrBy(ctx, k, 10))
		expect(t, "DECR", int64(10))(n.Decr(ctx, k))
		expect(t, "DECRBY", int64(6))(n.DecrBy(ctx, k, 4))
		expect(t, "DECRBY negative", int64(8))(n.DecrBy(ctx, k, -2))
		expect(t, "GET", int64(8))(n.Get(ctx, k))
		expect(t, "GETFLOAT of an integer counter", 8.0)(n.GetFloat(ctx, k))
		if r, err := c.Get(ctx, k); err != nil || string(r.Value) != "8" {
			t.Fatalf("a counter reads as decimal text: %+v %v", r, err)
		}
		expect(t, "INCRBYFLOAT", 0.5)(n.IncrByFloat(ctx, f, 0.5))
		expect(t, "INCRBYFLOAT again", 1.75)(n.IncrByFloat(ctx, f, 1.25))
		expect(t, "GETFLOAT", 1.75)(n.GetFloat(ctx, f))
		_, err := n.Get(ctx, f)
		refused(t, "GET of a float counter", err, sdk.ErrBadRequest)
		_, err = n.Incr(ctx, f)
		refused(t, "INCR of a float counter", err, sdk.ErrBadRequest)

		// Increments are atomic (R-DS-3).
		const workers, each = 8, 100
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					if _, err := n.Incr(ctx, dsKey(t, "shared")); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		expect(t, "concurrent INCR", int64(workers*each))(n.Get(ctx, dsKey(t, "shared")))
	})

	t.Run("WrongType", func(t *testing.T) {
		c := connect(t)
		str, hash, list, set, zset := dsTagged(t, "str"), dsTagged(t, "hash"), dsTagged(t, "list"), dsTagged(t, "set"), dsTagged(t, "zset")
		if r, err := c.Put(ctx, str, b("text"), nil); err != nil || !r.OK() {
			t.Fatal(r, err)
		}
		expect(t, "HSET", true)(c.Hashes().SetField(ctx, hash, "f", b("v")))
		expect(t, "RPUSH", 1)(c.Lists().RPush(ctx, list, b("v")))
		expect(t, "SADD", 1)(c.Sets().Add(ctx, set, "m"))
		expect(t, "ZADD", 1)(c.SortedSets().Add(ctx, zset, sdk.Member{Member: "m", Score: 1}))
		checks := []struct {
			what string
			call func() error
		}{
			{"HGET on a string", func() error { _, _, err := c.Hashes().Get(ctx, str, "f"); return err }},
			{"HLEN on a list", func() error { _, err := c.Hashes().Len(ctx, list); return err }},
			{"HSET on a set", func() error { _, err := c.Hashes().SetField(ctx, set, "f", b("v")); return err }},
			{"LPUSH on a hash", func() error { _, err := c.Lists().LPush(ctx, hash, b("v")); return err }},
			{"LRANGE on a zset", func() error { _, err := c.Lists().Range(ctx, zset, 0, -1); return err }},
			{"SADD on a list", func() error { _, err := c.Sets().Add(ctx, list, "m"); return err }},
			{"SISMEMBER on a string", func() error { _, err := c.Sets().IsMember(ctx, str, "m"); return err }},
			{"SINTER with a hash", func() error { _, err := c.Sets().Inter(ctx, set, hash); return err }},
			{"ZADD on a set", func() error { _, err := c.SortedSets().Add(ctx, set, sdk.Member{Member: "m"}); return err }},
			{"ZRANGE on a hash", func() error { _, err := c.SortedSets().Range(ctx, hash, 0, -1); return err }},
			{"INCR on a zset", func() error { _, err := c.Counters().Incr(ctx, zset); return err }},
			{"counter GET on a hash", func() error { _, err := c.Counters().Get(ctx, hash); return err }},
			{"lock on a list", func() error { _, err := c.Locks().Acquire(ctx, list, time.Second); return err }},
		}
		for _, ck := range checks {
			refused(t, ck.what, ck.call(), sdk.ErrWrongType)
		}
		var ce *sdk.CommandError
		_, err := c.Lists().LPush(ctx, hash, b("v"))
		if !errors.As(err, &ce) || ce.Op != sdk.CmdLPush || ce.Key != hash || ce.Status != sdk.StatusWrongType ||
			!strings.Contains(err.Error(), "LPUSH") {
			t.Fatalf("command error: %#v (%v)", ce, err)
		}
		// The refused writes changed nothing.
		expect(t, "the hash is intact", map[string][]byte{"f": b("v")})(c.Hashes().GetAll(ctx, hash))
		if typ := keyType(t, c, str); typ != "string" {
			t.Fatalf("the string became a %s", typ)
		}
	})

	t.Run("BadInput", func(t *testing.T) {
		c := connect(t)
		k := dsKey(t, "k")
		z, l, h := c.SortedSets(), c.Lists(), c.Hashes()
		_, err := z.Add(ctx, k, sdk.Member{Member: "m", Score: math.NaN()})
		refused(t, "NaN score", err, sdk.ErrBadRequest)
		_, err = z.IncrBy(ctx, k, "m", math.NaN())
		refused(t, "NaN increment", err, sdk.ErrBadRequest)
		_, err = z.AddWithOptions(ctx, k, sdk.ZAddOptions{NX: true, GT: true}, sdk.Member{Member: "m", Score: 1})
		refused(t, "ZADD NX GT", err, sdk.ErrBadRequest)
		_, err = z.Add(ctx, k)
		refused(t, "ZADD of no members", err, sdk.ErrBadRequest)
		if typ := keyType(t, c, k); typ != "none" {
			t.Fatalf("a refused ZADD created a %s", typ)
		}
		expect(t, "ZADD", 1)(z.Add(ctx, k, sdk.Member{Member: "m", Score: 1}))
		_, err = z.RangeByScore(ctx, k, sdk.InclusiveScore(math.NaN()), sdk.PosInfScore, sdk.RangeLimit{})
		refused(t, "NaN bound", err, sdk.ErrBadRequest)
		expect(t, "an infinite score is valid", 1)(z.Add(ctx, k, sdk.Member{Member: "inf", Score: math.Inf(1)}))
		_, err = z.IncrBy(ctx, k, "inf", math.Inf(-1))
		refused(t, "+Inf + -Inf", err, sdk.ErrBadRequest)
		expect2(t, "a refused ZINCRBY leaves the score", math.Inf(1), true)(z.Score(ctx, k, "inf"))

		lk := dsKey(t, "l")
		refused(t, "LSET of a missing list", l.Set(ctx, lk, 0, b("x")), sdk.ErrNotFound)
		expect(t, "RPUSH", 2)(l.RPush(ctx, lk, b("a"), b("b")))
		refused(t, "LSET out of range", l.Set(ctx, lk, 2, b("x")), sdk.ErrBadRequest)
		refused(t, "LSET out of range (negative)", l.Set(ctx, lk, -3, b("x")), sdk.ErrBadRequest)
		_, err = l.LPopCount(ctx, lk, -1)
		refused(t, "negative pop count", err, sdk.ErrBadRequest)
		_, err = l.LPush(ctx, lk)
		refused(t, "LPUSH of nothing", err, sdk.ErrBadRequest)
		expect(t, "the list is intact", bs("a", "b"))(l.Range(ctx, lk, 0, -1))

		hk := dsKey(t, "h")
		_, err = h.Set(ctx, hk, map[string][]byte{})
		refused(t, "HSET of no fields", err, sdk.ErrBadRequest)
		expect(t, "HSET", true)(h.SetField(ctx, hk, "s", b("text")))
		_, err = h.IncrBy(ctx, hk, "s", 1)
		refused(t, "HINCRBY of text", err, sdk.ErrBadRequest)
		_, err = h.IncrByFloat(ctx, hk, "s", 1)
		refused(t, "HINCRBYFLOAT of text", err, sdk.ErrBadRequest)
		_, err = h.IncrBy(ctx, hk, "big", math.MaxInt64)
		noErr(t, "HINCRBY to the max", err)
		_, err = h.IncrBy(ctx, hk, "big", 1)
		refused(t, "HINCRBY overflow", err, sdk.ErrBadRequest)

		n, ck := c.Counters(), dsKey(t, "n")
		if r, err := c.Put(ctx, ck, b("not a number"), nil); err != nil || !r.OK() {
			t.Fatal(r, err)
		}
		_, err = n.Incr(ctx, ck)
		refused(t, "INCR of text", err, sdk.ErrBadRequest)
		_, err = n.Get(ctx, ck)
		refused(t, "counter GET of text", err, sdk.ErrBadRequest)
		_, err = n.GetFloat(ctx, ck)
		refused(t, "counter GETFLOAT of text", err, sdk.ErrBadRequest)
		_, err = n.DecrBy(ctx, dsKey(t, "n2"), math.MinInt64)
		refused(t, "DECRBY MinInt64", err, sdk.ErrBadRequest)
		_, err = n.IncrBy(ctx, dsKey(t, "n3"), math.MaxInt64)
		noErr(t, "INCRBY to the max", err)
		_, err = n.Incr(ctx, dsKey(t, "n3"))
		refused(t, "INCR overflow", err, sdk.ErrBadRequest)

		_, err = c.Sets().Add(ctx, "", "m")
		refused(t, "empty key", err, sdk.ErrBadRequest)
		a, other := crossSegmentKeys(t)
		_, err = c.Sets().Union(ctx, a, other)
		refused(t, "SUNION across segments", err, sdk.ErrBadRequest)
	})

	t.Run("CollectionCap", func(t *testing.T) {
		c := connect(t)
		members := make([]string, dsMaxElems+1)
		values := make([][]byte, dsMaxElems+1)
		zm := make([]sdk.Member, dsMaxElems+1)
		fields := map[string][]byte{}
		for i := range members {
			members[i] = fmt.Sprint("m", i)
			values[i] = b(members[i])
			zm[i] = sdk.Member{Member: members[i], Score: float64(i)}
			fields[members[i]] = values[i]
		}
		_, err := c.Sets().Add(ctx, dsKey(t, "s"), members...)
		refused(t, "SADD past the cap", err, sdk.ErrItemTooLarge)
		_, err = c.Lists().RPush(ctx, dsKey(t, "l"), values...)
		refused(t, "RPUSH past the cap", err, sdk.ErrItemTooLarge)
		_, err = c.SortedSets().Add(ctx, dsKey(t, "z"), zm...)
		refused(t, "ZADD past the cap", err, sdk.ErrItemTooLarge)
		_, err = c.Hashes().Set(ctx, dsKey(t, "h"), fields)
		refused(t, "HSET past the cap", err, sdk.ErrItemTooLarge)
		for _, k := range []string{"s", "l", "z", "h"} {
			if typ := keyType(t, c, dsKey(t, k)); typ != "none" {
				t.Fatalf("a refused write created a %s", typ)
			}
		}
		// Up to the cap is fine; one more, one at a time, is refused and
		// leaves the collection as it was.
		expect(t, "SADD up to the cap", dsMaxElems)(c.Sets().Add(ctx, dsKey(t, "s"), members[:dsMaxElems]...))
		_, err = c.Sets().Add(ctx, dsKey(t, "s"), members[dsMaxElems])
		refused(t, "one more member", err, sdk.ErrItemTooLarge)
		expect(t, "SCARD at the cap", dsMaxElems)(c.Sets().Card(ctx, dsKey(t, "s")))
		expect(t, "LPUSH up to the cap", dsMaxElems)(c.Lists().LPush(ctx, dsKey(t, "l"), values[:dsMaxElems]...))
		_, err = c.Lists().LPush(ctx, dsKey(t, "l"), b("x"))
		refused(t, "one more element", err, sdk.ErrItemTooLarge)
		expect(t, "LLEN at the cap", dsMaxElems)(c.Lists().Len(ctx, dsKey(t, "l")))
	})

	t.Run("CollectionTTL", func(t *testing.T) {
		c := connect(t)
		keys := map[string]func() (int, error){}
		hk, lk, sk, zk := dsKey(t, "h"), dsKey(t, "l"), dsKey(t, "s"), dsKey(t, "z")
		expect(t, "HSET", true)(c.Hashes().SetField(ctx, hk, "f", b("v")))
		expect(t, "RPUSH", 1)(c.Lists().RPush(ctx, lk, b("v")))
		expect(t, "SADD", 1)(c.Sets().Add(ctx, sk, "m"))
		expect(t, "ZADD", 1)(c.SortedSets().Add(ctx, zk, sdk.Member{Member: "m", Score: 1}))
		keys[hk] = func() (int, error) { return c.Hashes().Len(ctx, hk) }
		keys[lk] = func() (int, error) { return c.Lists().Len(ctx, lk) }
		keys[sk] = func() (int, error) { return c.Sets().Card(ctx, sk) }
		keys[zk] = func() (int, error) { return c.SortedSets().Card(ctx, zk) }
		const ttl = 150 * time.Millisecond
		for k := range keys {
			if r, err := c.Expire(ctx, k, ttl); err != nil || !r.OK() {
				t.Fatalf("EXPIRE %s: %+v %v", k, r, err)
			}
		}
		// A mutation keeps the TTL (Redis semantics).
		expect(t, "HSET under a TTL", true)(c.Hashes().SetField(ctx, hk, "g", b("w")))
		if r, err := c.TimeToLive(ctx, hk); err != nil || r.TTL <= 0 || r.TTL > ttl {
			t.Fatalf("TTL after a mutation: %+v %v", r, err)
		}
		// Persist removes it again.
		if r, err := c.Persist(ctx, zk); err != nil || !r.OK() {
			t.Fatalf("PERSIST: %+v %v", r, err)
		}
		if r, _ := c.TimeToLive(ctx, zk); r.TTL != 0 {
			t.Fatalf("TTL after PERSIST: %v", r.TTL)
		}
		for k, size := range keys {
			if k == zk {
				continue
			}
			eventually(t, 5*time.Second, k+" expires", func() bool {
				n, err := size()
				noErr(t, "size", err)
				return n == 0
			})
		}
		expect(t, "the persisted sorted set stays", 1)(c.SortedSets().Card(ctx, zk))
		// An expired collection is gone: a new write starts from empty.
		expect(t, "HSET after expiry", true)(c.Hashes().SetField(ctx, hk, "new", b("x")))
		expect(t, "HGETALL after expiry", map[string][]byte{"new": b("x")})(c.Hashes().GetAll(ctx, hk))
		if r, _ := c.TimeToLive(ctx, hk); r.TTL != 0 {
			t.Fatalf("a re-created hash inherited a TTL: %v", r.TTL)
		}
	})

	t.Run("Locks", func(t *testing.T) {
		c := connect(t)
		locks, name := c.Locks(), dsKey(t, "lock")
		lease, err := locks.Acquire(ctx, name, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if lease.Name() != name || len(lease.Token()) < 16 || time.Until(lease.Deadline()) <= 0 {
			t.Fatalf("lease: %q %q %v", lease.Name(), lease.Token(), lease.Deadline())
		}
		if r, _ := c.Get(ctx, name); string(r.Value) != lease.Token() || r.TTL <= 0 || r.TTL > time.Minute {
			t.Fatalf("the lock key: %+v", r)
		}
		_, err = locks.Acquire(ctx, name, time.Minute)
		if !errors.Is(err, sdk.ErrLockHeld) {
			t.Fatalf("second acquire: %v", err)
		}
		noErr(t, "renew", lease.Renew(ctx, 2*time.Minute))
		if r, _ := c.TimeToLive(ctx, name); r.TTL <= time.Minute {
			t.Fatalf("renew did not extend the TTL: %v", r.TTL)
		}
		// A release by a non-holder (a forged token) is refused and changes
		// nothing.
		r, err := c.Do(ctx, sdk.NewCmd(sdk.CmdLockRelease, name, "forged"))
		if err != nil || !r.OK() || r.Int != 0 {
			t.Fatalf("forged release: %+v %v", r, err)
		}
		if r, _ := c.Get(ctx, name); string(r.Value) != lease.Token() {
			t.Fatalf("a forged release changed the lock: %+v", r)
		}
		noErr(t, "release", lease.Release(ctx))
		noErr(t, "second release", lease.Release(ctx))
		if err := lease.Renew(ctx, time.Minute); !errors.Is(err, sdk.ErrNotLockHolder) {
			t.Fatalf("renew after release: %v", err)
		}
		if r, _ := c.Get(ctx, name); r.Status != sdk.StatusNotFound {
			t.Fatalf("released lock still there: %+v", r)
		}
		again, err := locks.Acquire(ctx, name, time.Minute)
		noErr(t, "acquire after release", err)
		if again.Token() == lease.Token() {
			t.Fatal("tokens repeat")
		}
		noErr(t, "release", again.Release(ctx))

		_, err = locks.Acquire(ctx, name, 0)
		refused(t, "zero ttl", err, sdk.ErrBadRequest)
		_, err = locks.Acquire(ctx, name, -time.Second)
		refused(t, "negative ttl", err, sdk.ErrBadRequest)
		short, err := locks.Acquire(ctx, name, 100*time.Microsecond) // rounds up to 1 ms
		noErr(t, "sub-millisecond ttl", err)
		_ = short.Release(ctx) // may already have expired
		if _, err := locks.AcquireWait(ctx, name, time.Second, 0); !errors.Is(err, sdk.ErrBadRequest) {
			t.Fatalf("AcquireWait without an interval: %v", err)
		}
	})

	t.Run("LockContention", func(t *testing.T) {
		c := connect(t)
		name := dsKey(t, "lock")
		const contenders = 8
		start := make(chan struct{})
		var wg sync.WaitGroup
		leases := make(chan *sdk.Lease, contenders)
		errs := make(chan error, contenders)
		for range contenders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				l, err := c.Locks().Acquire(ctx, name, time.Minute)
				if err != nil {
					errs <- err
					return
				}
				leases <- l
			}()
		}
		close(start)
		wg.Wait()
		close(leases)
		close(errs)
		if len(leases) != 1 {
			t.Fatalf("%d contenders acquired the lock", len(leases))
		}
		for err := range errs {
			if !errors.Is(err, sdk.ErrLockHeld) {
				t.Fatalf("a loser got %v", err)
			}
		}
		noErr(t, "release", (<-leases).Release(ctx))
	})

	t.Run("LockExpiry", func(t *testing.T) {
		c := connect(t)
		locks, name := c.Locks(), dsKey(t, "lock")
		const ttl = 150 * time.Millisecond
		first, err := locks.Acquire(ctx, name, ttl)
		noErr(t, "first acquire", err)
		acquired := time.Now()

		// A second worker waits for the lease to expire — nobody releases it.
		type got struct {
			lease *sdk.Lease
			err   error
			at    time.Time
		}
		second := make(chan got, 1)
		go func() {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			l, err := locks.AcquireWait(wctx, name, time.Minute, 2*time.Millisecond)
			second <- got{l, err, time.Now()}
		}()
		var g got
		select {
		case g = <-second:
		case <-time.After(15 * time.Second):
			t.Fatal("the waiter never returned")
		}
		noErr(t, "second acquire", g.err)
		if waited := g.at.Sub(acquired); waited < ttl/2 {
			t.Fatalf("the waiter got the lock after %v, before the %v lease could expire", waited, ttl)
		}
		// The first holder lost it: it can neither renew nor release it,
		// and its failed release leaves the new holder's lock alone.
		if err := first.Renew(ctx, time.Minute); !errors.Is(err, sdk.ErrNotLockHolder) {
			t.Fatalf("renew by the expired holder: %v", err)
		}
		if err := first.Release(ctx); !errors.Is(err, sdk.ErrNotLockHolder) {
			t.Fatalf("release by the expired holder: %v", err)
		}
		if r, _ := c.Get(ctx, name); string(r.Value) != g.lease.Token() {
			t.Fatalf("the new holder's lock was disturbed: %+v", r)
		}
		if _, err := locks.Acquire(ctx, name, time.Minute); !errors.Is(err, sdk.ErrLockHeld) {
			t.Fatalf("acquire while the second holder holds it: %v", err)
		}

		// AcquireWait gives up when its context ends.
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond) // room for a first answer under load
		defer cancel()
		_, err = locks.AcquireWait(wctx, name, time.Minute, 5*time.Millisecond)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, sdk.ErrLockHeld) {
			t.Fatalf("AcquireWait past its deadline: %v", err)
		}
		noErr(t, "release", g.lease.Release(ctx))
	})
}

// crossSegmentKeys returns two keys in different segments of a store with
// the default segment count.
func crossSegmentKeys(t *testing.T) (string, string) {
	a := dsKey(t, "a")
	for i := range 1000 {
		other := dsKey(t, fmt.Sprint("b", i))
		if placement.SegmentOf(a, store.DefaultSegments) != placement.SegmentOf(other, store.DefaultSegments) {
			return a, other
		}
	}
	t.Fatal("no two keys in different segments")
	return "", ""
}

// A lease is coarse mutual exclusion; the version check is what keeps data
// correct when a paused holder acts after its lease expired.
func ExampleLocks_Acquire() {
	ctx := context.Background()
	c, err := sdk.Connect(ctx, "zaris://inproc/example-locks")
	if err != nil {
		panic(err)
	}
	defer c.Close()

	lease, err := c.Locks().Acquire(ctx, "lock:nightly-sweep", 30*time.Second)
	if errors.Is(err, sdk.ErrLockHeld) {
		return // another worker runs the sweep
	}
	if err != nil {
		panic(err)
	}
	defer lease.Release(ctx)

	// Inside the critical section, still write with a version check: if this
	// process paused past the lease, a second worker may be here too.
	c.Put(ctx, "sweep:last", []byte("run 1"), nil)
	cur, _ := c.Get(ctx, "sweep:last")
	r, _ := c.Put(ctx, "sweep:last", []byte("run 2"), &sdk.PutOptions{IfMatchVersion: cur.Version})
	fmt.Println("write:", r.Status)
	stale, _ := c.Put(ctx, "sweep:last", []byte("late run"), &sdk.PutOptions{IfMatchVersion: cur.Version})
	fmt.Println("stale write:", stale.Status)
	// Output:
	// write: Success
	// stale write: Conflict
}

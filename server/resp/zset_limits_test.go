package resp_test

import (
	"bufio"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/server"
)

// The per-key cap (--max-item-bytes) holds for every sorted-set and geo
// write: a *STORE whose result would pass it is refused whole and leaves
// the destination as it was; GEOADD like ZADD (issue #13 item 5).
func TestZSetStoresRespectTheItemCap(t *testing.T) {
	n := startNode(t, func(c *server.Config) { c.MaxItemBytes = 1024 })
	rdb := newClient(t, n)
	ctx := ctxT(t)
	const oom = "OOM value exceeds the maximum item size of 1024 bytes"
	// A member's item size is its bytes + 12 (header, score, framing): one
	// member of 510 bytes fits a 1 KiB cap, two (1044) do not.
	m1, m2 := strings.Repeat("a", 510), strings.Repeat("b", 510)
	require.NoError(t, rdb.ZAdd(ctx, "{c}1", redis.Z{Score: 1, Member: m1}).Err())
	require.NoError(t, rdb.ZAdd(ctx, "{c}2", redis.Z{Score: 2, Member: m2}).Err())
	require.NoError(t, rdb.ZAdd(ctx, "{c}dst", redis.Z{Score: 9, Member: "keep"}).Err())
	require.NoError(t, rdb.Set(ctx, "{c}u", "a string", 0).Err())

	require.EqualError(t, rdb.ZUnionStore(ctx, "{c}dst", &redis.ZStore{Keys: []string{"{c}1", "{c}2"}}).Err(), oom)
	require.EqualError(t, rdb.Do(ctx, "GEOSEARCHSTORE", "{c}dst", "{c}u", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m").Err(), "WRONGTYPE Operation against a key holding the wrong kind of value")
	require.Equal(t, []string{"keep"}, rdb.ZRange(ctx, "{c}dst", 0, -1).Val(), "a refused *STORE changed the destination")
	// Within the cap it is stored.
	require.Equal(t, int64(1), rdb.ZInterStore(ctx, "{c}dst", &redis.ZStore{Keys: []string{"{c}1", "{c}1"}}).Val())
	require.Equal(t, []string{m1}, rdb.ZRange(ctx, "{c}dst", 0, -1).Val())

	// GEOADD and GEOSEARCHSTORE.
	require.NoError(t, rdb.GeoAdd(ctx, "{c}geo", &redis.GeoLocation{Name: m1, Longitude: 1, Latitude: 1}).Err())
	require.EqualError(t, rdb.GeoAdd(ctx, "{c}geo", &redis.GeoLocation{Name: m2, Longitude: 1, Latitude: 1}).Err(), oom)
	require.NoError(t, rdb.GeoAdd(ctx, "{c}geo2", &redis.GeoLocation{Name: m2, Longitude: 1, Latitude: 1.001}).Err())
	require.NoError(t, rdb.ZUnionStore(ctx, "{c}dst", &redis.ZStore{Keys: []string{"{c}geo"}}).Err())
	require.EqualError(t, rdb.Do(ctx, "ZUNIONSTORE", "{c}dst", "2", "{c}geo", "{c}geo2").Err(), oom)
	require.Equal(t, int64(1), rdb.ZCard(ctx, "{c}dst").Val())
}

// Hostile arguments get Redis's errors or bounded work: LIMIT and counts
// at ±2^63, NaN, and ZRANDMEMBER's negative counts, whose reply (sized by
// the client, as in Redis) is streamed rather than built in memory.
func TestZSetHostileArguments(t *testing.T) {
	n := startNode(t)
	rdb := newClient(t, n)
	ctx := ctxT(t)
	for i := range 50 {
		require.NoError(t, rdb.ZAdd(ctx, "h", redis.Z{Score: float64(i), Member: "m" + strconv.Itoa(i)}).Err())
	}
	big, small := "9223372036854775807", "-9223372036854775808"
	for _, c := range [][]any{
		{"ZRANGE", "h", "-inf", "+inf", "BYSCORE", "LIMIT", big, big},
		{"ZRANGE", "h", "-inf", "+inf", "BYSCORE", "LIMIT", small, big},
		{"ZRANGE", "h", "-", "+", "BYLEX", "LIMIT", big, small},
		{"ZRANGE", "h", small, big},
		{"ZPOPMIN", "nokey", big},
		{"ZMPOP", big, "h", "MIN"},
		{"ZMPOP", "1", "h", "MIN", "COUNT", big},
		{"ZRANDMEMBER", "h", big},
		{"ZINTERCARD", "1", "h", "LIMIT", big},
		{"GEOSEARCH", "h", "FROMLONLAT", "0", "0", "BYRADIUS", "1e308", "m", "COUNT", big},
		{"GEOSEARCH", "h", "FROMLONLAT", "0", "0", "BYBOX", "inf", "inf", "m"},
		{"ZADD", "h", "nan", "x"},
		{"ZINCRBY", "h", "NaN", "m1"},
		{"ZUNIONSTORE", "d", big, "h"},
		{"ZSCAN", "h", "18446744073709551615", "COUNT", big},
	} {
		// Any answer will do (an error or a value); the node must answer.
		_ = rdb.Do(ctx, c...).Err()
		require.NoError(t, rdb.Ping(ctx).Err(), "after %v", c)
	}
	require.NoError(t, rdb.Do(ctx, "ZADD", "inf", "1e308", "x").Err())
	require.Equal(t, math.Inf(1), rdb.ZIncrBy(ctx, "inf", 1e308, "x").Val(), "overflow to inf is a score")
	require.EqualError(t, rdb.Do(ctx, "ZINCRBY", "inf", "-inf", "x").Err(), "ERR resulting score is not a number (NaN)")
	require.Equal(t, math.Inf(1), rdb.ZScore(ctx, "inf", "x").Val())

	// A negative count: |count| members with repetition, streamed.
	require.NoError(t, rdb.ZAdd(ctx, "h", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}).Err())
	conn, err := net.Dial("tcp", n.RESPAddr().String())
	require.NoError(t, err)
	defer conn.Close()
	const count = 300_000
	_, err = fmt.Fprintf(conn, "ZRANDMEMBER h -%d WITHSCORES\r\n", count)
	require.NoError(t, err)
	r := bufio.NewReaderSize(conn, 1<<16)
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "*"+strconv.Itoa(2*count)+"\r\n", line)
	for i := 0; i < 2*count; i++ {
		hdr, err := r.ReadString('\n')
		require.NoError(t, err)
		l, _ := strconv.Atoi(strings.TrimSpace(hdr[1:]))
		_, err = r.Discard(l + 2)
		require.NoError(t, err)
	}
	_, err = fmt.Fprintf(conn, "PING\r\n")
	require.NoError(t, err)
	line, err = r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", line)
}

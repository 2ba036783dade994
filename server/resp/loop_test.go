package resp_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/server"
)

// Event loops (D66): the tests below run on Linux, where a plain-TCP
// connection starts on a loop; they check that what a loop must never do —
// wait — moves the connection off it while the loop keeps serving the
// others, and that every way a connection ends still ends it.

func requireLoops(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("event loops are Linux-only; elsewhere every connection has its own goroutine")
	}
}

// clientsInfo reads one integer field of INFO clients.
func clientsInfo(t *testing.T, c *redis.Client, field string) int64 {
	t.Helper()
	s, err := c.Info(context.Background(), "clients").Result()
	require.NoError(t, err)
	return infoInt(t, s, field)
}

func oneLoop(c *server.Config) { c.RESPEventLoops = 1 }

// The loop's clients are counted, and a client on the loop stays there
// while it runs only loop commands.
func TestEventLoopServesPlainTCPClients(t *testing.T) {
	requireLoops(t)
	n := startNode(t, oneLoop)
	a := dialRaw(t, n.RESPAddr().String())
	require.Equal(t, "+OK\r\n", a.do("SET", "k", "v"))
	require.Equal(t, "$1\r\nv\r\n", a.do("GET", "k"))
	info := newClient(t, n)
	require.Equal(t, int64(1), clientsInfo(t, info, "zaris_event_loops"))
	// a and the INFO client itself (go-redis's HELLO and CLIENT SETINFO run on the loop)
	require.Equal(t, int64(2), clientsInfo(t, info, "zaris_event_loop_clients"))
	require.Equal(t, int64(0), clientsInfo(t, info, "zaris_event_loop_leaves"))
}

// The scans, random picks, bit, HyperLogLog, geo and stream commands of
// one key answer on the loop: a client using them does not leave it (they
// ran on goroutines before, at 0.3–0.6× Redis's rate, issue #17).
func TestEventLoopServesScansBitsAndStreams(t *testing.T) {
	requireLoops(t)
	n := startNode(t, oneLoop)
	a := dialRaw(t, n.RESPAddr().String())
	steps := [][]string{
		{"SADD", "s", "a", "b"}, {"SSCAN", "s", "0"}, {"HSET", "h", "f", "v"}, {"HSCAN", "h", "0"},
		{"HRANDFIELD", "h"}, {"ZADD", "z", "1", "a", "2", "b"}, {"ZSCAN", "z", "0"},
		{"ZRANDMEMBER", "z", "2"}, {"ZLEXCOUNT", "z", "-", "+"}, {"ZRANGEBYLEX", "z", "-", "+"},
		{"ZREVRANGEBYLEX", "z", "+", "-"}, {"ZREMRANGEBYRANK", "z", "0", "0"},
		{"ZREMRANGEBYSCORE", "z", "5", "6"}, {"ZREMRANGEBYLEX", "z", "[x", "[y"},
		{"SCAN", "0"}, {"RANDOMKEY"}, {"SETBIT", "b", "7", "1"}, {"GETBIT", "b", "7"},
		{"BITCOUNT", "b"}, {"BITPOS", "b", "1"}, {"BITFIELD", "b", "GET", "u8", "0"},
		{"BITFIELD_RO", "b", "GET", "u8", "0"}, {"SUBSTR", "b", "0", "0"}, {"PFADD", "hll", "x"},
		{"PFCOUNT", "hll"}, {"GEOADD", "g", "13.361389", "38.115556", "Palermo"},
		{"GEOPOS", "g", "Palermo"}, {"GEODIST", "g", "Palermo", "Palermo"}, {"GEOHASH", "g", "Palermo"},
		{"XADD", "x", "1-1", "f", "v"}, {"XLEN", "x"}, {"XRANGE", "x", "-", "+"}, {"XREVRANGE", "x", "+", "-"},
	}
	for _, st := range steps {
		if r := a.do(st...); strings.HasPrefix(r, "-") {
			t.Fatalf("%v: %q", st, r)
		}
	}
	require.True(t, strings.HasPrefix(a.do("SSCAN", "s", "0"), "*2\r\n$1\r\n0\r\n*2\r\n"), "a whole page, cursor 0")
	info := newClient(t, n)
	require.Equal(t, int64(0), clientsInfo(t, info, "zaris_event_loop_leaves"))
}

// -1 keeps the goroutine per connection.
func TestEventLoopsOff(t *testing.T) {
	n := startNode(t, func(c *server.Config) { c.RESPEventLoops = -1 })
	info := newClient(t, n)
	require.NoError(t, info.Set(context.Background(), "k", "v", 0).Err())
	require.Equal(t, int64(0), clientsInfo(t, info, "zaris_event_loops"))
	require.Equal(t, int64(0), clientsInfo(t, info, "zaris_event_loop_clients"))
}

// A blocking command leaves the loop: it waits on its own goroutine while
// the loop answers the others, and its reply still arrives.
func TestEventLoopBlockingCommandLeavesTheLoop(t *testing.T) {
	requireLoops(t)
	n := startNode(t, oneLoop)
	addr := n.RESPAddr().String()
	blocked := dialRaw(t, addr)
	other := dialRaw(t, addr)
	require.Equal(t, "+PONG\r\n", blocked.do("PING"))
	blocked.send(cmd("BLPOP", "q", "0"))
	info := newClient(t, n)
	require.Eventually(t, func() bool { return clientsInfo(t, info, "blocked_clients") == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, int64(1), clientsInfo(t, info, "zaris_event_loop_leaves"))
	for i := range 100 { // the loop was not stalled by the blocked client
		v := strconv.Itoa(i)
		require.Equal(t, "+OK\r\n", other.do("SET", "k", v))
		require.Equal(t, "$"+strconv.Itoa(len(v))+"\r\n"+v+"\r\n", other.do("GET", "k"))
	}
	require.Equal(t, ":1\r\n", other.do("LPUSH", "q", "x"))
	require.Equal(t, "*2\r\n$1\r\nq\r\n$1\r\nx\r\n", blocked.reply())
	// The client that left goes on on its own goroutine.
	require.Equal(t, "+OK\r\n", blocked.do("SET", "k2", "w"))
	require.Equal(t, "$1\r\nw\r\n", blocked.do("GET", "k2"))
}

// A client pause holds the loop's writers off the loop; readers on the
// loop keep their answers meanwhile.
func TestEventLoopPausedWriterLeavesTheLoop(t *testing.T) {
	requireLoops(t)
	n := startNode(t, oneLoop)
	addr := n.RESPAddr().String()
	admin := dialRaw(t, addr)
	writer := dialRaw(t, addr)
	reader := dialRaw(t, addr)
	require.Equal(t, "+OK\r\n", reader.do("SET", "k", "before"))
	require.Equal(t, "+OK\r\n", admin.do("CLIENT", "PAUSE", "60000", "WRITE"))
	writer.send(cmd("SET", "k", "after"))
	info := newClient(t, n)
	require.Eventually(t, func() bool { return clientsInfo(t, info, "zaris_event_loop_leaves") >= 2 }, // admin (CLIENT PAUSE) and the writer
		10*time.Second, 5*time.Millisecond)
	for range 50 {
		require.Equal(t, "$6\r\nbefore\r\n", reader.do("GET", "k"))
	}
	require.Equal(t, "+OK\r\n", admin.do("CLIENT", "UNPAUSE"))
	require.Equal(t, "+OK\r\n", writer.reply())
	require.Equal(t, "$5\r\nafter\r\n", reader.do("GET", "k"))
}

// CLIENT KILL, the idle timeout and a protocol error end a connection the
// loop serves: its client sees the end of the stream and the server
// forgets it.
func TestEventLoopConnectionEnds(t *testing.T) {
	requireLoops(t)
	n := startNode(t, oneLoop)
	addr := n.RESPAddr().String()
	// The idle timeout below closes this client's idle connection too: it
	// reconnects. One connection: the one that ran the last CONFIG SET (and
	// left the loop there) is the one INFO asks on — with a pool, INFO
	// could come on a fresh connection still on the loop (seen once).
	info := newClient(t, n, func(o *redis.Options) { o.MaxRetries, o.PoolSize = 3, 1 })
	ctx := context.Background()
	gone := func(c *rawConn) {
		t.Helper()
		_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := c.r.ReadByte()
		require.Error(t, err, "the server closed the connection")
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection was closed, not left open: %v", err)
	}

	victim := dialRaw(t, addr)
	id := victim.do("CLIENT", "ID")
	killed, err := info.ClientKillByFilter(ctx, "ID", strings.Trim(id[1:], "\r\n")).Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), killed)
	gone(victim)

	bad := dialRaw(t, addr)
	bad.send("*1\r\n$abc\r\n")
	require.True(t, strings.HasPrefix(bad.reply(), "-ERR Protocol error"))
	gone(bad)

	require.NoError(t, info.ConfigSet(ctx, "timeout", "1").Err())
	idle := dialRaw(t, addr)
	require.Equal(t, "+PONG\r\n", idle.do("PING"))
	gone(idle)
	require.NoError(t, info.ConfigSet(ctx, "timeout", "0").Err())
	// Only the INFO client is left, and it left the loop at CONFIG SET.
	require.Eventually(t, func() bool { return clientsInfo(t, info, "connected_clients") == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, int64(0), clientsInfo(t, info, "zaris_event_loop_clients"))
}

// A client that pipelines more replies than the socket holds and reads
// them late gets every byte, in order (the loop's background writer
// waits for the socket while the loop serves on).
func TestEventLoopSlowReaderGetsEveryReply(t *testing.T) {
	requireLoops(t)
	n := startNode(t, oneLoop, func(c *server.Config) { c.MemoryMaxBytes = 256 << 20 })
	addr := n.RESPAddr().String()
	c := dialRaw(t, addr)
	big := strings.Repeat("z", 512<<10)
	require.Equal(t, "+OK\r\n", c.do("SET", "big", big))
	const gets = 40 // 20 MiB of replies, far past the socket buffers
	var b strings.Builder
	for range gets {
		b.WriteString(cmd("GET", "big"))
	}
	c.send(b.String())
	other := dialRaw(t, addr)
	for range 20 { // the loop serves others while c's replies wait
		require.Equal(t, "+PONG\r\n", other.do("PING"))
	}
	want := "$" + strconv.Itoa(len(big)) + "\r\n" + big + "\r\n"
	for i := range gets {
		require.Equal(t, want, c.reply(), "reply %d", i)
	}
}

// Many clients on one loop, each incrementing one key: every increment
// is counted once, and each client reads its own replies.
func TestEventLoopConcurrentClients(t *testing.T) {
	requireLoops(t)
	n := startNode(t, oneLoop)
	const clients, per = 64, 200
	c := newClient(t, n, func(o *redis.Options) { o.PoolSize = clients })
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("own:%d", i)
			for j := 1; j <= per; j++ {
				if err := c.Incr(ctx, "shared").Err(); err != nil {
					errs <- err
					return
				}
				v, err := c.Incr(ctx, key).Result()
				if err != nil || v != int64(j) {
					errs <- fmt.Errorf("%s: %d, %v (want %d)", key, v, err, j)
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
	total, err := c.Get(ctx, "shared").Int64()
	require.NoError(t, err)
	require.Equal(t, int64(clients*per), total)
}

// Stopping the node ends the loop's connections after the commands they
// sent were answered.
func TestEventLoopShutdown(t *testing.T) {
	requireLoops(t)
	n := startNode(t, oneLoop)
	c := dialRaw(t, n.RESPAddr().String())
	require.Equal(t, "+OK\r\n", c.do("SET", "k", "v"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, n.Stop(ctx))
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.r.ReadByte()
	require.Error(t, err)
}

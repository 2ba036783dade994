package resp_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/testscale"
)

// stalledSubscriber subscribes to channel over raw TCP with a small receive
// buffer and then never reads again.
func stalledSubscriber(t *testing.T, addr, channel string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	require.NoError(t, nc.(*net.TCPConn).SetReadBuffer(16<<10))
	_, err = io.WriteString(nc, cmd("SUBSCRIBE", channel))
	require.NoError(t, err)
	buf := make([]byte, 64)
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := io.ReadAtLeast(nc, buf, len("*3\r\n$9\r\nsubscribe\r\n"))
	require.NoError(t, err, string(buf[:n]))
	return nc
}

// drainedToEOF reads what the kernel still holds and reports whether the
// server closed the connection (EOF or reset) within the timeout.
func drainedToEOF(nc net.Conn, timeout time.Duration) bool {
	ok, _ := drainToEOF(nc, timeout)
	return ok
}

// drainToEOF is drainedToEOF with what the read ended on, for a failure's
// message.
func drainToEOF(nc net.Conn, timeout time.Duration) (bool, string) {
	_ = nc.SetReadDeadline(time.Now().Add(testscale.D(timeout)))
	n, err := io.Copy(io.Discard, nc)
	return err == nil || errors.Is(err, syscall.ECONNRESET), fmt.Sprintf("%d bytes read, then %v", n, err)
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestStalledSubscriberDisconnectedMemoryBounded: a subscriber that stops
// reading while PUBLISH floods its channel is disconnected at the pubsub
// class's hard limit (client-output-buffer-limit), and the node's heap
// stays bounded while 64 MiB are published (twice the growth it may show).
func TestStalledSubscriberDisconnectedMemoryBounded(t *testing.T) {
	n := startNode(t)
	addr := n.RESPAddr().String()
	pub := dialRaw(t, addr)
	require.Equal(t, "+OK\r\n", pub.do("CONFIG", "SET", "client-output-buffer-limit", "pubsub 4mb 1mb 60"))
	sub := stalledSubscriber(t, addr, "flood")
	runtime.GC()
	base := heapInUse()
	payload := strings.Repeat("p", 64<<10)
	var peak uint64
	disconnectedAt := -1
	const total = 1024 // × 64 KiB = 64 MiB
	for i := 0; i < total; i++ {
		got := pub.do("PUBLISH", "flood", payload)
		if disconnectedAt < 0 && got == ":0\r\n" {
			disconnectedAt = i
		}
		if i%64 == 0 {
			peak = max(peak, heapInUse())
		}
	}
	t.Logf("disconnected after %d messages (%d MiB); heap in use %d MiB at start, %d MiB at peak", disconnectedAt, disconnectedAt>>4, base>>20, peak>>20)
	require.GreaterOrEqual(t, disconnectedAt, 0, "the stalled subscriber was never disconnected")
	require.Less(t, disconnectedAt*64<<10, 64<<20, "disconnected only after %d MiB were queued for it", disconnectedAt*64>>10)
	require.Less(t, peak, base+32<<20, "heap in use grew from %d MiB to %d MiB while 64 MiB were published", base>>20, peak>>20)
	closed, how := drainToEOF(sub, 30*time.Second)
	require.True(t, closed, "the server did not close the stalled subscriber (%s; %s)", how,
		regexp.MustCompile(`(client_output_buffer_limit_disconnections|pubsub_channels|connected_clients):\d+`).FindAllString(pub.do("INFO"), -1))
	info := pub.do("INFO", "stats")
	require.Regexp(t, `client_output_buffer_limit_disconnections:1\r\n`, info)
}

// TestSoftOutputLimit: above the soft limit for longer than its seconds,
// a subscriber is disconnected even under the hard limit.
func TestSoftOutputLimit(t *testing.T) {
	n := startNode(t)
	addr := n.RESPAddr().String()
	pub := dialRaw(t, addr)
	require.Equal(t, "+OK\r\n", pub.do("CONFIG", "SET", "client-output-buffer-limit", "pubsub 0 256kb 1"))
	sub := stalledSubscriber(t, addr, "soft")
	payload := strings.Repeat("s", 64<<10)
	start := time.Now()
	tick := time.NewTicker(50 * time.Millisecond) // pacing: a slow, steady publisher
	defer tick.Stop()
	var gone time.Duration
	for time.Since(start) < 30*time.Second {
		<-tick.C
		if pub.do("PUBLISH", "soft", payload) == ":0\r\n" {
			gone = time.Since(start)
			break
		}
	}
	require.NotZero(t, gone, "never disconnected over the soft limit")
	require.GreaterOrEqual(t, gone, time.Second, "disconnected before the soft seconds passed")
	require.True(t, drainedToEOF(sub, 10*time.Second))
}

// TestNormalClientHardLimit: a normal client pipelining reads it never
// collects is disconnected at the normal class's hard limit.
func TestNormalClientHardLimit(t *testing.T) {
	n := startNode(t)
	addr := n.RESPAddr().String()
	admin := dialRaw(t, addr)
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "client-output-buffer-limit", "normal 2mb 0 0"))
	require.Equal(t, "+OK\r\n", admin.do("SET", "big", strings.Repeat("b", 256<<10)))
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.(*net.TCPConn).SetReadBuffer(16<<10))
	batch := strings.Repeat(cmd("GET", "big"), 64)
	closed := false
	for i := 0; i < 256 && !closed; i++ { // up to 4 GiB of replies asked for
		_ = nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(nc, batch); err != nil {
			closed = true
		}
	}
	// Not reading meanwhile: a client that drains its replies as fast as the
	// node sends them keeps the queue under the limit (on a slow machine the
	// writes above can all fit in the socket buffers before the node queued
	// 2 MiB), and a fast reader is rightly never disconnected.
	testscale.Eventually(t, 20*time.Second, 50*time.Millisecond, "the client disconnected at the output buffer limit", func() bool {
		return strings.Contains(admin.do("INFO", "stats"), "client_output_buffer_limit_disconnections:1\r\n")
	})
	require.True(t, closed || drainedToEOF(nc, 10*time.Second), "the client was not disconnected")
}

// TestMaxClients: one connection beyond maxclients gets Redis's error and
// is closed; raising it admits new ones again.
func TestMaxClients(t *testing.T) {
	n := startNode(t)
	addr := n.RESPAddr().String()
	admin := dialRaw(t, addr)
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "maxclients", "3"))
	require.Equal(t, "+PONG\r\n", dialRaw(t, addr).do("PING"))
	require.Equal(t, "+PONG\r\n", dialRaw(t, addr).do("PING"))
	extra := dialRaw(t, addr)
	require.Equal(t, "-ERR max number of clients reached\r\n", extra.reply())
	extra.expectClosed(5 * time.Second)
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "maxclients", "10000"))
	require.Equal(t, "+PONG\r\n", dialRaw(t, addr).do("PING"))
	require.Regexp(t, `rejected_connections:1\r\n`, admin.do("INFO", "stats"))
}

// TestQueryLimitsLikeRedis: a bulk header beyond proto-max-bulk-len (as set
// with CONFIG SET) is refused with Redis's error before any of it is
// buffered, and a command growing past client-query-buffer-limit closes
// the connection, as on redis-server.
func TestQueryLimitsLikeRedis(t *testing.T) {
	redisAddr := startRedis(t, false)
	n := startNode(t)
	for _, addr := range []string{redisAddr, n.RESPAddr().String()} {
		admin := dialRaw(t, addr)
		require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "proto-max-bulk-len", "1mb"))
		c := dialRaw(t, addr)
		c.send("*2\r\n$3\r\nGET\r\n$2000000\r\n")
		require.Equal(t, "-ERR Protocol error: invalid bulk length\r\n", c.reply(), addr)
		c.expectClosed(5 * time.Second)

		require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "proto-max-bulk-len", "512mb", "client-query-buffer-limit", "1mb"))
		q := dialRaw(t, addr)
		q.send("*2\r\n$3\r\nGET\r\n$3000000\r\n")
		chunk := strings.Repeat("q", 256<<10)
		for i := 0; i < 8; i++ {
			_ = q.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(q.nc, chunk); err != nil {
				break
			}
		}
		q.expectClosed(5 * time.Second)
		require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "client-query-buffer-limit", "1gb"))
	}
}

// TestMonitorLikeRedis: MONITOR streams every command as Redis formats
// it — the same line on redis-server and on Zaris, but for the time and
// the client's port.
func TestMonitorLikeRedis(t *testing.T) {
	redisAddr := startRedis(t, false)
	n := startNode(t)
	norm := regexp.MustCompile(`^\+\d{10}\.\d{6} \[0 127\.0\.0\.1:\d+\] `)
	var lines [2][]string
	for i, addr := range []string{redisAddr, n.RESPAddr().String()} {
		mon := dialRaw(t, addr)
		require.Equal(t, "+OK\r\n", mon.do("MONITOR"))
		c := dialRaw(t, addr)
		c.do("SET", "k", "v\n\"x\x01é")
		c.do("GET", "k")
		c.do("AUTH", "secret")
		c.do("CONFIG", "GET", "hz") // admin: not shown
		c.do("GET")                 // refused: not shown
		c.do("PING")
		for range 4 {
			line := mon.reply()
			require.Regexp(t, norm, line)
			lines[i] = append(lines[i], norm.ReplaceAllString(line, ""))
		}
		// RESET leaves MONITOR mode: its answer, not its own line, comes
		// next, and later commands are not fed (the tcl suite's "RESET
		// clears MONITOR state").
		require.Equal(t, "+RESET\r\n", mon.do("RESET"))
		c.do("SET", "after", "reset")
		require.Equal(t, "+PONG\r\n", mon.do("PING"), "no monitored line after RESET")
	}
	require.Equal(t, lines[0], lines[1])
	require.Equal(t, `"SET" "k" "v\n\"x\x01\xc3\xa9"`+"\r\n", lines[1][0])
	require.Equal(t, `"auth" "(redacted)"`+"\r\n", strings.ToLower(lines[1][2]))
}

// TestClientPause: CLIENT PAUSE WRITE holds writes (their earlier replies
// delivered) and lets reads through; UNPAUSE releases them; PAUSE ALL holds
// everything until its timeout.
func TestClientPause(t *testing.T) {
	n := startNode(t)
	addr := n.RESPAddr().String()
	admin, w := dialRaw(t, addr), dialRaw(t, addr)
	require.Equal(t, "+OK\r\n", admin.do("CLIENT", "PAUSE", "60000", "WRITE"))
	require.Equal(t, "$-1\r\n", w.do("GET", "p"), "reads pass a WRITE pause")
	w.send(cmd("PING") + cmd("SET", "p", "1"))
	require.Equal(t, "+PONG\r\n", w.reply(), "the reply before the held command is delivered")
	waitFor(t, 5*time.Second, "the writer held by the pause", func() bool {
		return strings.Contains(admin.do("CLIENT", "LIST"), "flags=b")
	})
	require.Equal(t, "$-1\r\n", admin.do("GET", "p"), "the held SET has not run")
	require.Equal(t, "+OK\r\n", admin.do("CLIENT", "UNPAUSE"))
	require.Equal(t, "+OK\r\n", w.reply())
	require.Equal(t, "$1\r\n1\r\n", admin.do("GET", "p"))

	require.Equal(t, "+OK\r\n", admin.do("CLIENT", "PAUSE", "300", "ALL"))
	start := time.Now()
	require.Equal(t, "$1\r\n1\r\n", w.do("GET", "p"))
	require.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond, "a read ran during PAUSE ALL")
	for _, args := range [][]string{{"CLIENT", "PAUSE", "x"}, {"CLIENT", "PAUSE", "-1"}, {"CLIENT", "PAUSE", "10", "FOO"}} {
		require.True(t, strings.HasPrefix(admin.do(args...), "-ERR "), "%q", args)
	}
	require.Equal(t, "+OK\r\n", admin.do("CLIENT", "NO-EVICT", "on"))
	require.Contains(t, admin.do("CLIENT", "INFO"), "flags=e")
	require.Equal(t, "-ERR syntax error\r\n", admin.do("CLIENT", "NO-EVICT", "maybe"))
}

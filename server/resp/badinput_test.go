package resp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/resp"
)

// Malformed RESP is answered with Redis's protocol error and the connection
// is closed; the server goes on serving everyone else.
func TestProtocolErrorsCloseTheConnection(t *testing.T) {
	n := startNode(t)
	addr := n.RESPAddr().String()
	cases := []struct{ name, in, reply string }{
		{"bad multibulk length", "*x\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"negative bulk length", "*1\r\n$-3\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"huge bulk length", "*2\r\n$3\r\nSET\r\n$536870913\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"missing dollar", "*1\r\n:1\r\n", "-ERR Protocol error: expected '$', got ':'\r\n"},
		{"bulk not terminated by CRLF", "*1\r\n$4\r\nPINGxx", "-ERR Protocol error: invalid bulk length\r\n"},
		{"count beyond the limit", "*2000000\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"unbalanced quotes", "SET \"a b\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{"too big inline", strings.Repeat("x", 70<<10), "-ERR Protocol error: too big inline request\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := dialRaw(t, addr)
			require.Equal(t, "+PONG\r\n", r.do("PING"), "served before the bad input")
			r.send(tc.in)
			require.Equal(t, tc.reply, r.reply())
			r.expectClosed(5 * time.Second)
		})
	}
	// Everyone else is still served.
	r := dialRaw(t, addr)
	require.Equal(t, "+PONG\r\n", r.do("PING"))
}

// Errors in a well-formed command leave the connection usable.
func TestCommandErrorsKeepTheConnection(t *testing.T) {
	n := startNode(t)
	r := dialRaw(t, n.RESPAddr().String())
	require.Equal(t, "-ERR wrong number of arguments for 'get' command\r\n", r.do("GET"))
	require.Equal(t, "-ERR wrong number of arguments for 'set' command\r\n", r.do("set", "k"))
	long := strings.Repeat("a", 200)
	require.Equal(t, "-ERR unknown command '"+long[:128]+"', with args beginning with: '"+long[:128]+"' \r\n", r.do(long, long, long))
	require.Equal(t, "-ERR syntax error\r\n", r.do("SET", "k", "v", "BOGUS"))
	require.Equal(t, "-ERR value is not an integer or out of range\r\n", r.do("INCRBY", "k", "1.5"))
	require.Equal(t, "+OK\r\n", r.do("SET", "k\r\nwith\x00binary", "v\r\n"))
	require.Equal(t, "$3\r\nv\r\n\r\n", r.do("GET", "k\r\nwith\x00binary"))
	// Inline commands, quotes and escapes included.
	r.send("SET inl \"a b\\x41\"\r\n")
	require.Equal(t, "+OK\r\n", r.reply())
	r.send("GET inl\n")
	require.Equal(t, "$4\r\na bA\r\n", r.reply())
	r.send("\r\n\r\nPING\r\n") // blank lines are skipped
	require.Equal(t, "+PONG\r\n", r.reply())
	// A value over the per-item cap is refused, the connection lives on.
	big := strings.Repeat("x", 4<<20+1)
	require.Equal(t, "-OOM value exceeds the maximum item size of 4194304 bytes\r\n", r.do("SET", "big", big))
	require.Equal(t, "-ERR invalid key: empty or longer than the maximum key size\r\n", r.do("SET", "", "v"))
	require.Equal(t, "+PONG\r\n", r.do("PING"))
}

// MSET and MSETNX refuse a bad pair before writing any: a value over the
// per-item cap or an invalid key in a later pair used to leave the earlier
// pairs written behind the error (MSET is all or nothing).
func TestMultiSetRefusesBadPairsBeforeWriting(t *testing.T) {
	n := startNode(t)
	r := dialRaw(t, n.RESPAddr().String())
	big := strings.Repeat("x", 4<<20+1)
	const tooLarge = "-OOM value exceeds the maximum item size of 4194304 bytes\r\n"
	const badKey = "-ERR invalid key: empty or longer than the maximum key size\r\n"
	for _, tc := range []struct {
		name  string
		args  []string
		reply string
	}{
		{"MSET, oversized last value", []string{"MSET", "a1", "1", "a2", big}, tooLarge},
		{"MSET of one slot, oversized last value", []string{"MSET", "{t}a1", "1", "{t}a2", big}, tooLarge},
		{"MSET, empty second key", []string{"MSET", "a1", "1", "", "2"}, badKey},
		{"MSET, oversized key", []string{"MSET", "a1", "1", strings.Repeat("k", 1<<20), "2"}, badKey},
		{"MSETNX, oversized last value", []string{"MSETNX", "a1", "1", "a2", big}, tooLarge},
		{"MSETNX of one slot, empty second key", []string{"MSETNX", "{t}a1", "1", "", "2"}, badKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.reply, r.do(tc.args...))
			require.Equal(t, ":0\r\n", r.do("EXISTS", tc.args[1]), "the first pair was written before the refusal")
		})
	}
	require.Equal(t, "+OK\r\n", r.do("MSET", "a1", "1", "{t}a1", "2"))
	require.Equal(t, ":2\r\n", r.do("EXISTS", "a1", "{t}a1"))
}

// A deep pipeline written at once is answered in order.
func TestPipelining(t *testing.T) {
	n := startNode(t)
	r := dialRaw(t, n.RESPAddr().String())
	const cmds = 20000
	var b strings.Builder
	for i := 0; i < cmds; i++ {
		b.WriteString(cmd("SET", fmt.Sprint("k", i), fmt.Sprint(i)))
		b.WriteString(cmd("GET", fmt.Sprint("k", i)))
	}
	go func() { _, _ = io.WriteString(r.nc, b.String()) }()
	for i := 0; i < cmds; i++ {
		require.Equal(t, "+OK\r\n", r.reply())
		v := fmt.Sprint(i)
		require.Equal(t, fmt.Sprintf("$%d\r\n%s\r\n", len(v), v), r.reply())
	}
}

// A client that writes a long pipeline with large replies before reading
// any of them does not deadlock: replies the socket does not take wait in
// the connection's queue while the server keeps reading.
func TestPipelineLargerThanSocketBuffers(t *testing.T) {
	n := startNode(t)
	r := dialRaw(t, n.RESPAddr().String())
	value := strings.Repeat("v", 64<<10)
	require.Equal(t, "+OK\r\n", r.do("SET", "big", value))
	const gets = 1000 // 64 MiB of replies
	var b strings.Builder
	for i := 0; i < gets; i++ {
		b.WriteString(cmd("GET", "big"))
	}
	_ = r.nc.SetWriteDeadline(time.Now().Add(20 * time.Second))
	_, err := io.WriteString(r.nc, b.String()) // all of it before reading
	require.NoError(t, err)
	want := fmt.Sprintf("$%d\r\n%s\r\n", len(value), value)
	for i := 0; i < gets; i++ {
		require.Equal(t, want, r.reply())
	}
}

// A client that never reads its replies is disconnected once they pass the
// output buffer limit; other clients are unaffected.
func TestClientThatNeverReads(t *testing.T) {
	n, rs := startCustom(t, resp.Config{OutputBufferLimit: 1 << 20})
	addr := n.RESPAddr().String()
	r := dialRaw(t, addr)
	value := strings.Repeat("v", 32<<10)
	require.Equal(t, "+OK\r\n", r.do("SET", "big", value))
	// Keep sending GETs, never reading, until the server closes.
	one := cmd("GET", "big")
	deadline := time.Now().Add(20 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		_ = r.nc.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err = io.WriteString(r.nc, strings.Repeat(one, 64)); err != nil {
			break
		}
	}
	require.Error(t, err, "the server closed the connection")
	waitFor(t, 5*time.Second, "the connection to be forgotten", func() bool { return rs.Connections() == 0 })
	other := dialRaw(t, addr)
	require.Equal(t, "+PONG\r\n", other.do("PING"))
}

// A command larger than the query buffer limit closes the connection.
func TestQueryBufferLimit(t *testing.T) {
	n, _ := startCustom(t, resp.Config{MaxQueryBuffer: 1 << 20})
	r := dialRaw(t, n.RESPAddr().String())
	r.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3000000\r\n")
	chunk := strings.Repeat("x", 64<<10)
	var err error
	for i := 0; i < 3000000/len(chunk)+1 && err == nil; i++ {
		_ = r.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, err = io.WriteString(r.nc, chunk)
	}
	r.expectClosed(5 * time.Second)
}

func TestIdleTimeoutAndMaxClients(t *testing.T) {
	n, _ := startCustom(t, resp.Config{IdleTimeout: 200 * time.Millisecond, MaxClients: 2})
	addr := n.RESPAddr().String()
	a := dialRaw(t, addr)
	require.Equal(t, "+PONG\r\n", a.do("PING"))
	b := dialRaw(t, addr)
	require.Equal(t, "+PONG\r\n", b.do("PING"))
	c := dialRaw(t, addr)
	require.Equal(t, "-ERR max number of clients reached\r\n", c.reply())
	a.expectClosed(5 * time.Second)
	b.expectClosed(5 * time.Second)
	d := dialRaw(t, addr)
	require.Equal(t, "+PONG\r\n", d.do("PING"), "room again once the idle ones are gone")
}

// QUIT replies then closes; CLIENT REPLY OFF/SKIP silence replies.
func TestQuitAndClientReply(t *testing.T) {
	n := startNode(t)
	r := dialRaw(t, n.RESPAddr().String())
	r.send(cmd("CLIENT", "REPLY", "SKIP") + cmd("SET", "a", "1") + cmd("GET", "a"))
	require.Equal(t, "$1\r\n1\r\n", r.reply())
	r.send(cmd("CLIENT", "REPLY", "OFF") + cmd("SET", "a", "2") + cmd("GET", "a") + cmd("CLIENT", "REPLY", "ON"))
	require.Equal(t, "+OK\r\n", r.reply())
	require.Equal(t, "$1\r\n2\r\n", r.do("GET", "a"))
	r.send(cmd("QUIT") + cmd("PING"))
	require.Equal(t, "+OK\r\n", r.reply())
	r.expectClosed(5 * time.Second)
}

// Stopping the node answers what was read, then closes: a client sees
// complete replies and an orderly end, never a torn reply.
func TestShutdownDrains(t *testing.T) {
	cfg := testConfig()
	nd, err := server.NewNode(cfg, nil)
	require.NoError(t, err)
	require.NoError(t, nd.Start(context.Background()))
	nc, err := net.Dial("tcp", nd.RESPAddr().String())
	require.NoError(t, err)
	defer nc.Close()
	var b strings.Builder
	for i := 0; i < 500; i++ {
		b.WriteString(cmd("INCR", "n"))
	}
	_, err = io.WriteString(nc, b.String())
	require.NoError(t, err)
	// The whole pipeline is read and executed (a second client sees the
	// last INCR); its replies may still be on their way when the stop begins.
	probe := redis.NewClient(&redis.Options{Addr: nd.RESPAddr().String()})
	defer probe.Close()
	waitFor(t, 10*time.Second, "the pipeline executed", func() bool {
		n, err := probe.Get(context.Background(), "n").Int()
		return err == nil && n == 500
	})
	require.NoError(t, nd.Stop(context.Background()))
	rd := bufio.NewReader(nc)
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := 0
	for {
		s, err := readReply(rd)
		if err != nil {
			require.ErrorIs(t, err, io.EOF, "only whole replies, then EOF")
			require.Empty(t, s, "no torn reply")
			break
		}
		got++
		require.Equal(t, fmt.Sprintf(":%d\r\n", got), s)
	}
	require.Equal(t, 500, got, "the pipeline was read before the stop: all of it is answered")
}

func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testscale.Eventually(t, timeout, 5*time.Millisecond, what, cond)
}

package resp_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/resp"
)

// testConfig is a node on 127.0.0.1 with ephemeral ports and the RESP
// front end on, HTTP off.
func testConfig() server.Config {
	c := server.DefaultConfig()
	c.NodeID = "resp-test"
	c.ClientPort, c.PeerPort, c.GossipPort = server.EphemeralPort, server.EphemeralPort, server.EphemeralPort
	c.HTTPPort = 0
	c.RESPPort = server.EphemeralPort
	c.MemoryMaxBytes = 64 << 20
	c.ShutdownTimeout = 5 * time.Second
	return c
}

// startNode starts a real node serving RESP with its built-in front end.
func startNode(t testing.TB, mutate ...func(*server.Config)) *server.Node {
	t.Helper()
	cfg := testConfig()
	for _, m := range mutate {
		m(&cfg)
	}
	n, err := server.NewNode(cfg, nil)
	require.NoError(t, err)
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	require.NotNil(t, n.RESPAddr(), "the node serves RESP by default when RESPPort is set")
	return n
}

// startCustom starts a node whose RESP front end is built from rc (Store,
// NodeID and Metrics filled in from the node).
func startCustom(t *testing.T, rc resp.Config, mutate ...func(*server.Config)) (*server.Node, *resp.Server) {
	t.Helper()
	cfg := testConfig()
	for _, m := range mutate {
		m(&cfg)
	}
	n, err := server.NewNode(cfg, nil)
	require.NoError(t, err)
	rc.Store, rc.NodeID, rc.Metrics, rc.Token = n.Store(), cfg.NodeID, n.Metrics(), cfg.Token
	rs, err := resp.New(rc)
	require.NoError(t, err)
	require.NoError(t, n.Attach(server.EndpointRESP, rs))
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	return n, rs
}

func newClient(t *testing.T, n *server.Node, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: n.RESPAddr().String(), MaxRetries: -1, DialTimeout: 5 * time.Second}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// rawConn speaks RESP by hand, for byte-exact checks and bad input.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return &rawConn{t: t, nc: nc, r: bufio.NewReaderSize(nc, 1<<16)}
}

func (c *rawConn) send(s string) {
	c.t.Helper()
	_ = c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := io.WriteString(c.nc, s)
	require.NoError(c.t, err)
}

// cmd encodes args as a RESP array of bulk strings.
func cmd(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// do sends one command and returns its raw reply.
func (c *rawConn) do(args ...string) string {
	c.t.Helper()
	c.send(cmd(args...))
	return c.reply()
}

// reply reads one complete reply and returns its bytes.
func (c *rawConn) reply() string {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	s, err := readReply(c.r)
	require.NoError(c.t, err)
	return s
}

func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return line, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return line, fmt.Errorf("malformed reply line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', '-', ':', ',', '#', '_', '(':
		return line, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return line, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return line, err
		}
		return line + string(buf), nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return line, err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		out := line
		for i := 0; i < n; i++ {
			s, err := readReply(r)
			out += s
			if err != nil {
				return out, err
			}
		}
		if line[0] == '|' { // attributes precede the real reply
			s, err := readReply(r)
			return out + s, err
		}
		return out, nil
	}
	return line, fmt.Errorf("unknown reply type %q", line[0])
}

// expectClosed asserts the server closes the connection (after any replies
// still in flight) within the timeout.
func (c *rawConn) expectClosed(timeout time.Duration) {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(timeout))
	_, err := io.Copy(io.Discard, c.r)
	if errors.Is(err, syscall.ECONNRESET) {
		return // closed with unread input: the peer sees a reset
	}
	require.NoError(c.t, err, "the server should close the connection (EOF), not leave it open")
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

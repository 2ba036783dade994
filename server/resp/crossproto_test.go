package resp_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestCrossProtocolPOSTClosed is issue #15 item 4: a browser-made HTTP POST
// to the RESP port (cross-protocol scripting) runs nothing. Differential
// against redis-server 7: the same requests get the same bytes (none after
// the aborting command) from both, and the key the body tried to set is
// absent on both.
func TestCrossProtocolPOSTClosed(t *testing.T) {
	zaris := startNode(t).RESPAddr().String()
	rds := startRedis(t, false)
	cases := map[string]string{
		"POST first":         "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 15\r\n\r\nSET pwned yes\r\n",
		"Host: first":        "Host: 127.0.0.1\r\nSET pwned yes\r\n",
		"post lower":         "post /\r\nSET pwned yes\r\n",
		"after a command":    "PING\r\nPOST / HTTP/1.1\r\nSET pwned yes\r\n",
		"multibulk HOST:":    "*2\r\n$5\r\nHOST:\r\n$1\r\nx\r\n*3\r\n$3\r\nSET\r\n$5\r\npwned\r\n$3\r\nyes\r\n",
		"multibulk Post arg": "*1\r\n$4\r\nPost\r\n*3\r\n$3\r\nSET\r\n$5\r\npwned\r\n$3\r\nyes\r\n",
	}
	exchange := func(addr, req string) string {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = nc.Write([]byte(req))
		require.NoError(t, err)
		b, err := io.ReadAll(nc) // ends at the server's close
		require.NoError(t, err, "the server must close the connection")
		return string(b)
	}
	for name, req := range cases {
		want := exchange(rds, req)
		got := exchange(zaris, req)
		require.Equal(t, want, got, name)
	}

	// A real HTTP client posting a RESP command as its body.
	for _, addr := range []string{rds, zaris} {
		resp, err := http.Post("http://"+addr+"/", "text/plain", strings.NewReader("SET pwned yes\r\n"))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s answered an HTTP POST: %s", addr, resp.Status)
		}
		rc := redis.NewClient(&redis.Options{Addr: addr})
		n, err := rc.Exists(t.Context(), "pwned").Result()
		rc.Close()
		require.NoError(t, err)
		require.Zero(t, n, "the POST body ran on %s", addr)
	}
}

package resp_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/server"
)

// FuzzAuthHandshake throws arbitrary AUTH and HELLO … AUTH attempts at a
// node with a token (the default user's password) and one ACL user (issue
// #15 item 6, "fuzz the authentication handshakes"). Whatever the bytes:
// the node answers and keeps serving, a connection is authenticated only
// with a right user/password pair, and then as exactly that user; every
// other attempt leaves it unauthenticated (the next command is -NOAUTH).
// The failed-attempt limit may refuse even a right pair after a burst of
// wrong ones, as it should: then nothing is authenticated either.
func FuzzAuthHandshake(f *testing.F) {
	n := startNode(f, func(c *server.Config) { c.Token = "tok" })
	addr := n.RESPAddr().String()
	admin := dialAuth(f, addr)
	defer admin.Close()
	if rep := admin.roundTrip(f, "AUTH", "tok"); rep != "+OK" {
		f.Fatalf("AUTH with the token: %q", rep)
	}
	if rep := admin.roundTrip(f, "ACL", "SETUSER", "app", "on", ">pw", "allkeys", "+@all"); rep != "+OK" {
		f.Fatalf("ACL SETUSER: %q", rep)
	}
	right := map[[2]string]bool{{"default", "tok"}: true, {"", "tok"}: true, {"app", "pw"}: true}

	for _, s := range [][3]string{{"0", "", "tok"}, {"0", "app", "pw"}, {"0", "app", "PW"}, {"1", "app", "pw"},
		{"1", "default", "tok"}, {"1", "default", "tok\x00"}, {"2", "", ""}, {"1", "nosuch", "x"}, {"0", "a\r\nb", "\xff"}} {
		f.Add(s[0][0]-'0', s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, mode uint8, user, pass string) {
		c := dialAuth(t, addr)
		defer c.Close()
		var rep string
		switch mode % 3 {
		case 0: // AUTH [user] pass
			if user == "" {
				rep = c.roundTrip(t, "AUTH", pass)
			} else {
				rep = c.roundTrip(t, "AUTH", user, pass)
			}
		case 1:
			rep = c.roundTrip(t, "HELLO", "2", "AUTH", user, pass)
		default: // HELLO with a protocol version drawn from the password
			rep = c.roundTrip(t, "HELLO", pass, "AUTH", user, "tok")
		}
		who := c.roundTrip(t, "ACL", "WHOAMI")
		m := mode % 3
		var rightPair bool
		switch m {
		case 0:
			rightPair = (user == "" && pass == "tok") || (user != "" && right[[2]string{user, pass}])
		case 1:
			rightPair = user != "" && right[[2]string{user, pass}]
		default:
			rightPair = user != "" && right[[2]string{user, "tok"}]
		}
		mustAuth := rightPair && (m != 2 || pass == "2" || pass == "3")
		authed := !strings.HasPrefix(who, "-NOAUTH")
		as := who
		if i := strings.Index(who, "\r\n"); strings.HasPrefix(who, "$") && i > 0 {
			as = who[i+2:]
		}
		wantAs := user
		if wantAs == "" {
			wantAs = "default"
		}
		switch {
		case authed && !rightPair:
			t.Fatalf("mode %d user %q pass %q: authenticated (%q, whoami %q) with a wrong pair", m, user, pass, rep, who)
		case authed && as != wantAs:
			t.Fatalf("mode %d: authenticated as %q, asked for %q", m, as, wantAs)
		case mustAuth && !authed && !strings.Contains(rep, "too many failed"):
			t.Fatalf("mode %d user %q: the right pair refused: %q", m, user, rep)
		}
		if rep := admin.roundTrip(t, "PING"); rep != "+PONG" {
			t.Fatalf("the node stopped serving: %q", rep)
		}
	})
}

type authConn struct {
	net.Conn
	r *bufio.Reader
}

func dialAuth(tb testing.TB, addr string) *authConn {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	return &authConn{Conn: nc, r: bufio.NewReader(nc)}
}

// roundTrip sends one command and returns its reply as readReply renders
// it ("" and a failure when the connection ends).
func (c *authConn) roundTrip(tb testing.TB, args ...string) string {
	tb.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(cmd(args...))); err != nil {
		tb.Fatalf("write %v: %v", args[0], err)
	}
	rep, err := readReply(c.r)
	if err != nil {
		tb.Fatalf("reply to %v: %v", args[0], err)
	}
	return strings.TrimRight(rep, "\r\n")
}

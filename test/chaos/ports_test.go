package chaos

import (
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// A node's port the harness holds while the node is down behaves like the
// port of a dead process: a connection is refused at once (not accepted
// and left hanging, which made -scenario failover-time measure timeouts:
// p50 5.3 s instead of 3.2 s), and nothing else can bind it meanwhile.
func TestHeldPortRefusesAndStaysReserved(t *testing.T) {
	port, held, err := bindTCP("127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("a connection to a held port was accepted")
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial of a held port: %v after %v, want connection refused", err, time.Since(start))
	}
	if l, err := net.Listen("tcp", addr); err == nil {
		l.Close()
		t.Fatalf("another listener bound the held port %d", port)
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the released port %d: %v", port, err)
	}
	l.Close()
}

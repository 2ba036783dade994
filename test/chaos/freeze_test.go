package chaos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testenv"
	"github.com/zaris-io/zaris/sdk"
)

// A partition's owner frozen past failure detection is failed over; the
// new owner acknowledges a newer write; when the old owner resumes, a read
// that waited in its socket the whole time must not be answered with the
// value the new owner overwrote (D22, the freeze fence): the old owner
// answers MOVED (or TRYAGAIN) until it has re-confirmed its map.
func TestResumedOwnerDoesNotServeAStaleRead(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process freeze test: skipped with -short")
	}
	t.Parallel() // main_test.go: why the process tests run two at a time
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := built(t, "zaris-server")
	logs := &testenv.SyncBuffer{}
	// Three nodes: the control plane keeps a quorum whichever node is
	// paused (the owner may be the leader).
	c, err := Start(ctx, Options{Nodes: 3, RF: 2, Mode: "sync", Quorum: "all", Binary: bin, Log: logs})
	if err != nil {
		t.Fatalf("start: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i := range c.N() {
				t.Logf("---- %s log tail\n%s", NodeID(i), c.LogTail(i, 40))
			}
			t.Logf("---- harness\n%s", tail(logs.String(), 40))
		}
		_ = c.Close()
	})
	cl, err := sdk.Connect(ctx, c.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })

	const key = "freeze-k"
	if res, err := cl.Put(ctx, key, []byte("v1"), nil); err != nil || res.Status != sdk.StatusSuccess {
		t.Fatalf("put v1: %v %v", err, res.Status)
	}
	owner, err := c.OwnerOf(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	respAddr := net.JoinHostPort(c.nodes[owner].host, strconv.Itoa(c.nodes[owner].ports.resp))
	// The owner answers v1 before the freeze (the probe is sound).
	if got := respGet(t, respAddr, key, nil); got != bulk("v1") {
		t.Fatalf("the owner before the freeze answers %q, want v1", got)
	}

	if err := c.Pause(owner); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = c.Resume(owner)
		}
	})
	// Failover: the map names another active owner.
	if err := c.poll(ctx, "failover of the paused owner", func() (bool, error) {
		i, err := c.OwnerOf(ctx, key)
		return err == nil && i != owner, nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, c.Describe(context.Background()))
	}
	// The new owner acknowledges v2.
	if err := c.poll(ctx, "v2 acknowledged by the new owner", func() (bool, error) {
		wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
		defer wcancel()
		res, err := cl.Put(wctx, key, []byte("v2"), nil)
		return err == nil && res.Status == sdk.StatusSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s paused; failed over and v2 acknowledged %v later", NodeID(owner), time.Since(paused).Round(time.Millisecond))

	// A read waits in the old owner's socket (the kernel accepts and
	// buffers it while the process is stopped), then the owner resumes.
	got := respGet(t, respAddr, key, func() {
		if err := c.Resume(owner); err != nil {
			t.Fatal(err)
		}
		resumed = true
	})
	t.Logf("the resumed old owner answered %q", got)
	switch {
	case got == bulk("v1"):
		t.Fatalf("stale read: the resumed old owner answered v1 after the new owner acknowledged v2")
	case got == bulk("v2"), strings.HasPrefix(got, "-MOVED"), strings.HasPrefix(got, "-TRYAGAIN"):
	default:
		t.Fatalf("the resumed old owner answered %q, want MOVED, TRYAGAIN or v2", got)
	}
	// The fence is lifted once the old owner re-confirmed its map.
	if err := c.poll(ctx, "the old owner serving again", func() (bool, error) {
		b, err := os.ReadFile(c.LogPath(owner))
		return err == nil && strings.Contains(string(b), "not serving until the map is re-confirmed") &&
			strings.Contains(string(b), "map re-confirmed after a freeze: serving again"), nil
	}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(c.LogPath(owner)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "re-confirmed") {
				t.Logf("%s: %s", NodeID(owner), l)
			}
		}
	}
	if res, err := cl.Get(ctx, key); err != nil || res.Status != sdk.StatusSuccess || string(res.Value) != "v2" {
		t.Fatalf("read after the resume: %v %v %q, want v2", err, res.Status, res.Value)
	}
}

func bulk(v string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(v), v) }

// respGet sends GET key on a new raw connection to addr, runs between (if
// not nil) once the request is written, and returns the reply as read: a
// bulk string with its header, or an error line.
func respGet(t *testing.T, addr, key string, between func()) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := fmt.Fprintf(nc, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(key), key); err != nil {
		t.Fatal(err)
	}
	if between != nil {
		between()
	}
	_ = nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(nc)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the reply from %s: %v", addr, err)
	}
	if !strings.HasPrefix(line, "$") || line == "$-1\r\n" {
		return line
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		t.Fatalf("bad bulk header %q", line)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(br, body); err != nil {
		t.Fatalf("reading the bulk body: %v", err)
	}
	return line + string(body)
}

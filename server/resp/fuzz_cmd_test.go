package resp_test

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/resp"
)

// FuzzCommands sends arbitrary argument vectors for every command of the
// table to an in-process node: each must be answered (an error is fine)
// without a contained panic (-ERR internal error; zaris_panics_total is
// checked at the end, for the goroutines that do not answer) and the node
// must go on serving (a connection open from the start answers PING after
// every input). `go test` runs the seed corpus only: every
// command with empty, ordinary and extreme arguments; `go test -fuzz
// FuzzCommands ./server/resp` explores further.
func FuzzCommands(f *testing.F) {
	names := resp.CommandNames()
	cfg := testConfig()
	n, err := server.NewNode(cfg, nil)
	if err != nil {
		f.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = n.Stop(context.Background()) })
	f.Cleanup(func() {
		if got := panicCount(f, n, "resp"); got != 0 {
			f.Errorf("%v contained panic(s) while fuzzing", got)
		}
	})
	addr := n.RESPAddr().String()
	watcher, err := net.DialTimeout("tcp", addr, 5*time.Second) // one connection that must live through all inputs
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = watcher.Close() })
	watchReader := bufio.NewReader(watcher)

	seeds := []string{"", "k\x00v", "k\x00" + i64max + "\x00x", "k\x00" + i64min + "\x00" + i64max,
		"k\x00-inf\x00+inf\x00LIMIT\x00" + i64max + "\x00" + i64min, "k\x00" + idMax + "\x00f\x00v\x00COUNT\x00" + i64max,
		"a\x00b\x00nan\x00\xff"}
	for i := range names {
		for _, s := range seeds {
			f.Add(uint16(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, which uint16, blob []byte) {
		name := names[int(which)%len(names)]
		args := strings.Split(name, "|")
		if len(blob) > 0 {
			for _, a := range bytes.SplitN(blob, []byte{0}, 32) {
				args = append(args, string(a))
			}
		}
		switch args[0] {
		case "blpop", "brpop", "bzpopmin", "bzpopmax": // a zero timeout blocks for good: bound it
			args[len(args)-1] = "0.01"
		case "bzmpop":
			if len(args) > 1 {
				args[1] = "0.01"
			}
		case "client": // a pause would hold every later input: bound it
			if len(args) > 2 && strings.EqualFold(args[1], "pause") {
				args[2] = "10"
			}
		case "config": // limits that would cut the watcher off (maxclients 1, timeout 1, …) are left alone
			for i := 2; i+1 < len(args); i += 2 {
				switch strings.ToLower(args[i]) {
				case "maxclients", "timeout", "client-output-buffer-limit", "client-query-buffer-limit", "proto-max-bulk-len", "maxmemory", "maxmemory-policy":
					args[i] = "hz"
				}
			}
		case "migrate": // another host may take a DNS lookup's time, a long timeout its own: bound both
			if len(args) > 5 {
				args[1], args[5] = "127.0.0.1", "10"
			}
		case "xread", "xreadgroup":
			for i, a := range args {
				if strings.EqualFold(a, "BLOCK") && i+1 < len(args) {
					args[i+1] = "10"
				}
			}
		}
		reply, err := oneCommand(addr, args)
		if err != nil {
			t.Fatalf("%q: no reply: %v", args, err)
		}
		if strings.HasPrefix(reply, "-ERR internal error") {
			t.Fatalf("%q: a contained panic", args)
		}
		_ = watcher.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := watcher.Write([]byte(cmd("PING"))); err != nil {
			t.Fatalf("after %q: %v", args, err)
		}
		if pong, err := readReply(watchReader); err != nil || pong != "+PONG\r\n" {
			t.Fatalf("after %q the node does not answer PING: %q %v", args, pong, err)
		}
	})
}

// oneCommand sends args on a fresh connection and returns the first reply.
func oneCommand(addr string, args []string) (string, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte(cmd(args...))); err != nil {
		return "", err
	}
	return readReply(bufio.NewReader(nc))
}

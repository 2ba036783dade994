package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
)

// ctl runs the CLI as an operator would, against seed, with the cluster's
// token.
type ctl struct {
	t    *testing.T
	seed string
}

func (c ctl) run(args ...string) (code int, stdout, stderr string) {
	c.t.Helper()
	var out, errOut bytes.Buffer
	full := append([]string{"--http", c.seed, "--token", "tok", "--timeout", testscale.D(5 * time.Second).String()}, args...)
	code = run(full, &out, &errOut)
	return code, out.String(), errOut.String()
}

func (c ctl) must(want int, args ...string) string {
	c.t.Helper()
	code, out, errOut := c.run(args...)
	if code != want {
		c.t.Fatalf("zarisctl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out
}

// mustLeader is must for a command the control-plane leader answers: while
// the cluster elects one (a busy machine can cost a leader its lease), or
// while a rebalance waits for an owner that is away for a moment, the
// command exits 2 saying so, and is run again until a deadline.
func (c ctl) mustLeader(want int, args ...string) string {
	c.t.Helper()
	var code int
	var out, errOut string
	poll(c.t, 20*time.Second, "a control-plane leader for zarisctl "+strings.Join(args, " "), func() bool {
		code, out, errOut = c.run(args...)
		return !strings.Contains(errOut, "no control-plane leader") && !strings.Contains(errOut, "owner is away")
	})
	if code != want {
		c.t.Fatalf("zarisctl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out
}

// poll retries cond until it holds or the deadline passes.
func poll(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testscale.Eventually(t, timeout, 50*time.Millisecond, what, cond)
}

func nodeState(nd *server.Node, id string) (state string, inMap bool) {
	for _, n := range nd.ClusterStatus().Nodes {
		if string(n.ID) == id {
			return n.State, n.InMap
		}
	}
	return "", false
}

// Every command against a real three-node cluster, reached through one
// node's HTTP address (the others are discovered).
func TestCommandsAgainstACluster(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.Options{Token: "tok", NoRESP: true})
	leader := c.WaitLeader()
	if leader == nil {
		t.Fatal("no leader")
	}
	cli := ctl{t: t, seed: leader.HTTPAddr().String()}

	t.Run("status", func(t *testing.T) {
		out := cli.must(0, "status")
		for _, want := range []string{"Running", "leader", leader.Config().NodeID, "map version", "uptime", "3 healthy"} {
			if !strings.Contains(out, want) {
				t.Errorf("status lacks %q:\n%s", want, out)
			}
		}
		var st statusOut
		if err := json.Unmarshal([]byte(cli.must(0, "status", "--json")), &st); err != nil {
			t.Fatal(err)
		}
		if st.State != "Running" || st.Nodes != 3 || st.InMap != 3 || st.Partitions["healthy"] != 3 || st.Oldest == nil {
			t.Errorf("status --json: %+v", st)
		}
	})

	t.Run("errors", func(t *testing.T) {
		code, _, errOut := cli.run("status", "--token", "wrong")
		if code != exitError || !strings.Contains(errOut, "401") {
			t.Errorf("bad token: exit %d, stderr %q", code, errOut)
		}
		code, out, errOut := ctl{t: t, seed: "127.0.0.1:1"}.run("status")
		if code != exitError || !strings.Contains(out, "Stopped") || !strings.Contains(errOut, "unreachable") {
			t.Errorf("no node: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if code, _, errOut := cli.run("evict"); code != exitError || !strings.Contains(errOut, "NODE") {
			t.Errorf("evict without NODE: exit %d, stderr %q", code, errOut)
		}
		if code, _, _ := cli.run("frobnicate"); code != exitError {
			t.Errorf("unknown command: exit %d", code)
		}
		if code, out, _ := cli.run("--help"); code != exitOK || !strings.Contains(out, "drain NODE") {
			t.Errorf("--help: exit %d, %q", code, out)
		}
	})

	t.Run("nodes", func(t *testing.T) {
		out := cli.must(0, "nodes")
		for _, want := range []string{"ID", "MAP VERSION", "n1", "n2", "n3", "voter (leader)"} {
			if !strings.Contains(out, want) {
				t.Errorf("nodes lacks %q:\n%s", want, out)
			}
		}
		var rows []nodeRow
		if err := json.Unmarshal([]byte(cli.must(0, "nodes", "--json")), &rows); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 3 {
			t.Fatalf("%d rows", len(rows))
		}
		for _, r := range rows {
			if r.MapVersion == nil || *r.MapVersion == 0 || r.MemoryMax != 64<<20 || r.Error != "" || len(r.Partitions) != 1 {
				t.Errorf("row %+v", r)
			}
		}
	})

	t.Run("set get del", func(t *testing.T) {
		if out := cli.must(0, "set", "k1", "hello world", "--ttl", "1m"); !strings.Contains(out, "Success version 1") {
			t.Errorf("set: %q", out)
		}
		if out := cli.must(0, "get", "k1"); out != "hello world\n" {
			t.Errorf("get: %q", out)
		}
		cli.must(0, "del", "k1")
		code, _, errOut := cli.run("get", "k1")
		if code != exitPartial || !strings.Contains(errOut, "NotFound") {
			t.Errorf("get after del: exit %d, stderr %q", code, errOut)
		}
		cli.must(exitPartial, "del", "k1")
		// --addr and --store name the client endpoints without discovery.
		cli.must(0, "--addr", strings.Join(c.Endpoints(), ","), "--store", "default", "set", "k2", "v")
	})

	t.Run("top", func(t *testing.T) {
		for i := range 20 {
			cli.must(0, "set", "load", "x"+strings.Repeat("y", i))
		}
		out := cli.must(0, "top", "--count", "2", "--interval", "200ms")
		if n := strings.Count(out, "OPS/S"); n != 2 {
			t.Errorf("%d tables, want 2:\n%s", n, out)
		}
		for _, want := range []string{"n1", "n2", "n3", "REPL LAG", "64.0MiB"} {
			if !strings.Contains(out, want) {
				t.Errorf("top lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("rebalance and evict", func(t *testing.T) {
		spare := c.AddNode()
		id := spare.Config().NodeID
		poll(t, 20*time.Second, id+" in the map as a spare", func() bool {
			_, in := nodeState(leader, id)
			return in
		})
		if out := cli.mustLeader(0, "rebalance"); !strings.Contains(out, "map version") {
			t.Errorf("rebalance: %q", out)
		}
		poll(t, 20*time.Second, id+" owns a partition after the rebalance", func() bool {
			for _, n := range leader.ClusterStatus().Nodes {
				if string(n.ID) == id {
					return len(n.Partitions) > 0
				}
			}
			return false
		})
		if out := cli.mustLeader(0, "evict", id); !strings.Contains(out, id+" evicted") {
			t.Errorf("evict: %q", out)
		}
		poll(t, 20*time.Second, id+" evicted and out of the map", func() bool {
			st, in := nodeState(leader, id)
			return st == "evicted" && !in
		})
		code, _, errOut := cli.run("evict", "nosuchnode")
		if code != exitError || !strings.Contains(errOut, "unknown node") {
			t.Errorf("evict unknown: exit %d, %q", code, errOut)
		}
		cli.mustLeader(0, "rebalance") // the evicted node's segments to live members
		poll(t, 20*time.Second, "Running again", func() bool {
			code, _, _ := cli.run("status")
			return code == exitOK
		})
	})

	t.Run("drain", func(t *testing.T) {
		var target *server.Node
		for _, nd := range c.Running() {
			if st, in := nodeState(leader, nd.Config().NodeID); nd != leader && in && st == "alive" {
				target = nd
				break
			}
		}
		if target == nil {
			t.Fatal("no node to drain")
		}
		id := target.Config().NodeID
		out := cli.must(0, "drain", id)
		if !strings.Contains(out, id+" is decommissioning") || !strings.Contains(out, id+" left the map") {
			t.Errorf("drain: %q", out)
		}
		poll(t, 20*time.Second, id+" decommissioned and out of the map", func() bool {
			st, in := nodeState(leader, id)
			return st == "decommissioned" && !in
		})
		// The node stopped and told the process (which then exits) on Failed.
		select {
		case err := <-target.Failed():
			if !errors.Is(err, server.ErrDecommissioned) {
				t.Errorf("Failed delivered %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the drained node did not report its stop")
		}
		if code, _, errOut := cli.run("drain", id); code != exitError || !strings.Contains(errOut, "decommissioned") {
			t.Errorf("second drain: exit %d, %q", code, errOut)
		}
		rows := cli.must(0, "nodes")
		if !slices.ContainsFunc(strings.Split(rows, "\n"), func(l string) bool {
			return strings.HasPrefix(l, id+" ") && strings.Contains(l, "decommissioned")
		}) {
			t.Errorf("nodes does not show %s decommissioned:\n%s", id, rows)
		}
	})

	t.Run("partial", func(t *testing.T) {
		// The last non-leader stops without a leave: a member down.
		for _, nd := range c.Running() {
			if nd != leader {
				c.Stop(nd)
			}
		}
		poll(t, 20*time.Second, "status Partial", func() bool {
			code, _, _ := cli.run("status")
			return code == exitPartial
		})
		// nodes prints the stopped node unreachable and says so in its
		// exit code (issue #16 item 6).
		code, out, _ := cli.run("nodes")
		if code != exitError || !strings.Contains(out, "unreachable") {
			t.Errorf("nodes with a stopped node: exit %d, want %d:\n%s", code, exitError, out)
		}
		if code, _, _ := cli.run("nodes", "--json"); code != exitError {
			t.Errorf("nodes --json with a stopped node: exit %d, want %d", code, exitError)
		}
	})
}

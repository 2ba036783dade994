package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zaris-io/zaris/internal/testenv"
	"github.com/zaris-io/zaris/sdk"
)

// A network partition isolates a partition's active owner from every other
// node, while clients still reach it (issue #8, R-REP-4). Under sync
// replication the isolated owner must not acknowledge a single write from
// the moment it is cut off: its replicas cannot apply them, and the majority
// side promotes one of them and goes on without it. Writes it answers OK
// there would be lost when the partition heals. The test drives real
// zaris-server processes, each in its own network namespace bridged to the
// test's (NewNet), with a plain go-redis client pinned to the isolated
// owner's RESP port (it does not follow MOVED) and an SDK cluster client for
// the majority side.
func TestIsolatedOwnerStopsAcknowledgingSyncWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process partition test: skipped with -short")
	}
	t.Parallel() // main_test.go: why the process tests run two at a time
	probe, err := NewNet(0)
	if errors.Is(err, ErrNoNetns) {
		t.Skipf("needs root and network namespaces: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := probe.Close(); err != nil {
		t.Fatal(err)
	}
	bin := built(t, "zaris-server")
	for _, tc := range []struct {
		name   string
		rf     int
		quorum string
		nodes  int
	}{
		{"RF 2 sync all", 2, "all", 3},
		{"RF 3 sync majority", 3, "majority", 3},
	} {
		t.Run(tc.name, func(t *testing.T) { isolatedOwner(t, bin, tc.rf, tc.quorum, tc.nodes) })
	}
}

func isolatedOwner(t *testing.T, bin string, rf int, quorum string, nodes int) {
	nt, err := NewNet(nodes)
	if errors.Is(err, ErrNoNetns) {
		t.Skipf("needs root and network namespaces: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := nt.Close(); err != nil {
			t.Logf("network cleanup: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	logs := &testenv.SyncBuffer{}
	hosts := make([]string, nodes)
	for i := range hosts {
		hosts[i] = nt.Host(i)
	}
	c, err := Start(ctx, Options{Nodes: nodes, RF: rf, Mode: "sync", Quorum: quorum, Binary: bin,
		Hosts: hosts, Wrap: nt.Wrap, Log: logs,
		// The isolated node must stay in the map (no grace-window loss)
		// for the whole test: only failover moves ownership.
		Extra: []string{"--member-grace=5m", "--sync-timeout=1s"}})
	if err != nil {
		t.Fatalf("start: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i := range nodes {
				t.Logf("---- %s log tail\n%s", NodeID(i), c.LogTail(i, 40))
			}
			t.Logf("---- harness\n%s", tail(logs.String(), 40))
		}
		_ = c.Close()
	})

	key := "part-0"
	owner, err := c.OwnerOf(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// (The owner may lead the control plane too: then the majority side
	// also elects a new leader before it can fail the owner over.)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("isolating %s, the owner of %q (control-plane leader: %s)", NodeID(owner), key, NodeID(leader))
	// Keys of the same partition: a hash tag keeps them on key's slot.
	tagged := func(n int) string { return fmt.Sprintf("{%s}:%d", key, n) }

	direct := redis.NewClient(&redis.Options{Addr: net.JoinHostPort(nt.Host(owner), strconv.Itoa(c.nodes[owner].ports.resp)),
		MaxRetries: -1, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, DialTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = direct.Close() })
	if err := direct.Set(ctx, tagged(0), "before", 0).Err(); err != nil {
		t.Fatalf("a sync write before the partition: %v", err)
	}
	cl, err := sdk.Connect(ctx, c.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })

	// Cut the owner off. From now on it must acknowledge nothing.
	if err := nt.Isolate(owner); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	var (
		mu       sync.Mutex
		violated []string
		refused  = map[string]int{}
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			err := direct.Set(ctx, tagged(1000+n), "isolated", 0).Err()
			mu.Lock()
			if err == nil {
				violated = append(violated, fmt.Sprintf("%s acknowledged by the isolated owner %v after the cut", tagged(1000+n), time.Since(cut).Round(time.Millisecond)))
			} else {
				word, _, _ := strings.Cut(err.Error(), " ")
				refused[word]++
			}
			mu.Unlock()
			if err != nil && !strings.HasPrefix(err.Error(), "TIMEOUT") {
				time.Sleep(50 * time.Millisecond) // MOVED or a closed connection answer at once: pace them
			}
		}
	}()

	// The majority side fails the owner over and acknowledges writes of
	// the same partition again.
	acked := map[string]string{}
	var firstAck time.Duration
	for n := 1; ; n++ {
		if ctx.Err() != nil {
			t.Fatalf("the majority side never acknowledged a write after the cut\n%s", c.Describe(context.Background()))
		}
		wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
		res, err := cl.Put(wctx, tagged(n), []byte("majority-"+strconv.Itoa(n)), nil)
		wcancel()
		if err == nil && res.Status == sdk.StatusSuccess {
			acked[tagged(n)] = "majority-" + strconv.Itoa(n)
			if firstAck == 0 {
				firstAck = time.Since(cut)
			}
			if len(acked) >= 20 {
				break
			}
		}
	}
	t.Logf("first write acknowledged by the majority side %v after the cut", firstAck.Round(time.Millisecond))
	// Keep the isolated owner under load a little longer, past several
	// sync timeouts on its side.
	pause(ctx, 3*time.Second)

	// Heal: the old owner hears the newer map and is fenced (MOVED).
	if err := nt.Heal(owner); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := direct.Set(ctx, tagged(0), "after-heal", 0).Err()
		if err != nil && strings.HasPrefix(err.Error(), "MOVED") {
			break
		}
		if err == nil {
			mu.Lock()
			violated = append(violated, "the deposed owner acknowledged a write after the heal")
			mu.Unlock()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deposed owner never answered MOVED after the heal (last: %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("deposed owner fenced %v after the heal", time.Since(healed).Round(time.Millisecond))
	close(stop)
	wg.Wait()

	mu.Lock()
	t.Logf("isolated owner's answers after the cut: %v", refused)
	for _, v := range violated {
		t.Error(v)
	}
	mu.Unlock()
	if len(refused) == 0 {
		t.Error("the isolated owner was never asked anything: the test proved nothing")
	}
	// Nothing the majority side acknowledged is lost once the partition
	// healed and the cluster settled.
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatalf("not healthy after the heal: %v\n%s", err, c.Describe(context.Background()))
	}
	for k, v := range acked {
		res, err := cl.Get(ctx, k)
		if err != nil || res.Status != sdk.StatusSuccess || string(res.Value) != v {
			t.Errorf("acknowledged %s=%s, read back %v %v %q", k, v, err, res.Status, res.Value)
		}
	}
	res, err := cl.Get(ctx, tagged(0))
	if err != nil || res.Status != sdk.StatusSuccess || string(res.Value) != "before" {
		t.Errorf("the write acknowledged before the cut: %v %v %q", err, res.Status, res.Value)
	}
}

// pause waits d or until ctx ends (pacing, not synchronisation).
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

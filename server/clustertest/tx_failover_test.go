package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
)

// txCluster is 3 nodes, RF 2, Sync + All: every prepare and commit waits
// for the partition's replica.
func txCluster(t *testing.T) (*clustertest.Cluster, *sdk.Client) {
	t.Helper()
	c := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, NoHTTP: true, Mutate: func(cfg *server.Config) {
		cfg.ReplicationFactor = 2
		cfg.ReplicationMode, cfg.WriteQuorum = server.ReplicationSync, server.WriteQuorumAll
	}})
	cl, err := sdk.Connect(context.Background(), c.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return c, cl
}

// txPrepareTimeout outlasts a failover on a loaded machine: the promoted
// replica must still hold the reservations when the commit reaches it.
func txPrepareTimeout() time.Duration { return testscale.D(60 * time.Second) }

func mustGet(t *testing.T, cl *sdk.Client, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(20*time.Second))
	defer cancel()
	r, err := cl.Get(ctx, key)
	if err != nil || !r.OK() {
		t.Fatalf("get %s: %v %v", key, r.Status, err)
	}
	return string(r.Value)
}

// R-DS-4 across a failover. The failure it prevents: owner B voted yes and
// died before TX.COMMIT reached it while owner A committed; B's replica,
// promoted without the prepared transaction, answered "unknown
// transaction" and the transfer was half-applied (A's debit visible, B's
// credit lost). Now B's prepare is on its replica before B votes, and the
// coordinator retries the commit against the promoted owner.
func TestTxCommitsWholeAcrossAnOwnerKilledBetweenThePhases(t *testing.T) {
	c, cl := txCluster(t)
	m := c.Map()
	a := c.Node(string(m.Partitions[0].ActiveOwner))
	var b *server.Node
	for _, nd := range c.Running() {
		if nd != a {
			b = nd
			break
		}
	}
	ka := c.KeyOwnedBy(a.Config().NodeID, "acct:a:")
	kb := c.KeyOwnedBy(b.Config().NodeID, "acct:b:")
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(90*time.Second))
	defer cancel()
	for _, k := range []string{ka, kb} {
		if r, err := cl.Put(ctx, k, []byte("100"), nil); err != nil || !r.OK() {
			t.Fatalf("put %s: %v %v", k, r.Status, err)
		}
	}

	var killed atomic.Bool
	tx := cl.Tx().SetPrepareTimeout(txPrepareTimeout()).OnPrepared(func(string) {
		// Both owners voted yes; no commit has been sent. B dies now.
		c.Stop(b)
		killed.Store(true)
	})
	if _, err := tx.Get(ctx, ka); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Get(ctx, kb); err != nil {
		t.Fatal(err)
	}
	tx.Put(ka, []byte("70"), nil).Put(kb, []byte("130"), nil)
	res, err := tx.Commit(ctx)
	if !killed.Load() {
		t.Fatal("the hook between the phases did not run")
	}
	if err != nil || !res.OK() {
		t.Fatalf("commit across the failover: %+v %v", res, err)
	}
	if len(res.Writes) != 2 || res.Writes[0].Version != 2 || res.Writes[1].Version != 2 {
		t.Fatalf("commit results %+v", res.Writes)
	}
	// B's keys are served by the promoted replica; the transaction is
	// entirely applied there too.
	if got := c.Owner(kb); got == nil || got == b {
		t.Fatalf("no new owner of %s after the failover", kb)
	}
	va, vb := mustGet(t, cl, ka), mustGet(t, cl, kb)
	if va != "70" || vb != "130" {
		t.Fatalf("half-applied transaction: %s=%s %s=%s", ka, va, kb, vb)
	}
	// The reservations went with the commit: the keys take writes again.
	if r, err := cl.Put(ctx, kb, []byte("131"), nil); err != nil || !r.OK() {
		t.Fatalf("put after the commit: %v %v", r.Status, err)
	}
}

// The bank invariant under kills: transfers between accounts on every
// owner run while an owner is killed exactly between the phases of one
// transfer; the total is preserved and no transfer is partly applied.
func TestTxTransfersPreserveTheTotalAcrossAnOwnerKill(t *testing.T) {
	c, cl := txCluster(t)
	const accounts, initial = 12, 100
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(120*time.Second))
	defer cancel()
	keys := make([]string, accounts)
	for i := range keys {
		keys[i] = "bank:" + strconv.Itoa(i)
		if r, err := cl.Put(ctx, keys[i], []byte(strconv.Itoa(initial)), nil); err != nil || !r.OK() {
			t.Fatalf("put %s: %v %v", keys[i], r.Status, err)
		}
	}
	owners := map[*server.Node]bool{}
	for _, k := range keys {
		owners[c.Owner(k)] = true
	}
	if len(owners) < 2 {
		t.Fatalf("the accounts live on %d owner(s): the test needs transactions over several", len(owners))
	}

	var (
		victimOnce sync.Once
		killed     atomic.Bool
		committed  atomic.Int64
		mu         sync.Mutex
		fails      []string
	)
	fail := func(s string) {
		mu.Lock()
		fails = append(fails, s)
		mu.Unlock()
	}
	transfer := func(from, to string, kill bool) {
		for attempt := 0; attempt < 200 && ctx.Err() == nil; attempt++ {
			tx := cl.Tx().SetPrepareTimeout(txPrepareTimeout())
			if kill {
				tx.OnPrepared(func(string) {
					victimOnce.Do(func() {
						c.Stop(c.Owner(to))
						killed.Store(true)
					})
				})
			}
			f, err1 := tx.Get(ctx, from)
			g, err2 := tx.Get(ctx, to)
			if err1 != nil || err2 != nil || !f.OK() || !g.OK() {
				continue // a read during the failover: try again
			}
			fv, _ := strconv.Atoi(string(f.Value))
			gv, _ := strconv.Atoi(string(g.Value))
			tx.Put(from, []byte(strconv.Itoa(fv-1)), nil).Put(to, []byte(strconv.Itoa(gv+1)), nil)
			res, err := tx.Commit(ctx)
			switch {
			case err == nil && res.OK():
				committed.Add(1)
				return
			case errors.Is(err, sdk.ErrTxPartial):
				fail(fmt.Sprintf("%s→%s partly applied: %v", from, to, err))
				return
			case errors.Is(err, sdk.ErrTxOutcomeUnknown):
				fail(fmt.Sprintf("%s→%s outcome unknown within the deadline: %v", from, to, err))
				return
			}
			// Conflict (another transfer won) or a refused prepare: nothing
			// applied, run it again.
		}
	}
	// One transfer between accounts of two owners kills the owner of the
	// credited account between its phases, while the others run.
	kx, ky := keys[0], ""
	for _, k := range keys[1:] {
		if c.Owner(k) != c.Owner(kx) {
			ky = k
			break
		}
	}
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := range 8 {
				from, to := keys[(w*5+i)%accounts], keys[(w*5+i*7+1)%accounts]
				if from != to {
					transfer(from, to, false)
				}
			}
		})
	}
	wg.Go(func() { transfer(kx, ky, true) })
	wg.Wait()
	if !killed.Load() {
		t.Fatal("no owner was killed between the phases")
	}
	if len(fails) > 0 {
		t.Fatalf("%d transfers failed: %v", len(fails), fails)
	}
	total := 0
	for _, k := range keys {
		v, err := strconv.Atoi(mustGet(t, cl, k))
		if err != nil {
			t.Fatal(err)
		}
		total += v
	}
	if total != accounts*initial {
		t.Fatalf("total %d after %d transfers, want %d", total, committed.Load(), accounts*initial)
	}
	if committed.Load() == 0 {
		t.Fatal("no transfer committed")
	}
}

package follow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/follow"
)

// plane is a control plane of one node: the follow state folded with the
// same function raft's FSM uses (cluster.FoldFollow).
type plane struct {
	mu    sync.Mutex
	st    cluster.FollowState
	index uint64
}

func (p *plane) Follow() *cluster.FollowState {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.st
	return &st
}

func (p *plane) CommitFollow(_ context.Context, op cluster.FollowOp) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.index++
	next, err := cluster.FoldFollow(p.st, op, p.index)
	if err != nil {
		return err
	}
	p.st = next
	return nil
}

func (p *plane) ClaimFollow(_ context.Context, gen uint64) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.index++
	next, err := cluster.FoldFollow(p.st, cluster.FollowOp{Kind: cluster.FollowClaim, Generation: gen, Node: "test"}, p.index)
	if err != nil {
		return 0, err
	}
	p.st = next
	return p.index, nil
}

// embedded connects to a fresh in-process store (kept open by the test).
func embedded(t *testing.T, name string) (string, *sdk.Client) {
	t.Helper()
	cs := "zaris://inproc/" + name
	c, err := sdk.Connect(context.Background(), cs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return cs, c
}

type rig struct {
	t              *testing.T
	ctx            context.Context
	src            string
	primary, local *sdk.Client
	localCS        string
	plane          *plane
	stats          *follow.Stats
}

func newRig(t *testing.T) *rig {
	name := strings.ReplaceAll(t.Name(), "/", "-")
	src, p := embedded(t, name+"-primary")
	lcs, l := embedded(t, name+"-local")
	r := &rig{t: t, ctx: context.Background(), src: src, primary: p, local: l, localCS: lcs, plane: &plane{}, stats: follow.NewStats()}
	if err := r.plane.CommitFollow(r.ctx, cluster.FollowOp{Kind: cluster.FollowStart, Source: src, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	return r
}

// run runs the applier on the plane's current state until stop is called.
func (r *rig) run() (stop func() error) { return r.runWith(follow.Options{}) }

// runWith runs the applier with o's tuning (Lanes, BatchMax, FeedBuffer).
func (r *rig) runWith(o follow.Options) (stop func() error) {
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan error, 1)
	o.State, o.Plane, o.Stats = *r.plane.Follow(), r.plane, r.stats
	o.DialPrimary = func(ctx context.Context, s string) (*sdk.Client, error) { return sdk.Connect(ctx, s) }
	o.DialLocal = func(ctx context.Context, _ string) (*sdk.Client, error) { return sdk.Connect(ctx, r.localCS) }
	o.SampleEvery, o.CommitEvery = 20*time.Millisecond, 20*time.Millisecond
	go func() { done <- follow.Run(ctx, o) }()
	return func() error { cancel(); return <-done }
}

func (r *rig) put(k, v string) {
	r.t.Helper()
	if _, err := r.primary.Put(r.ctx, k, []byte(v), nil); err != nil {
		r.t.Fatal(err)
	}
}

// same waits until the local store holds exactly what the primary holds.
func (r *rig) same(what string) {
	r.t.Helper()
	var diff string
	deadline := time.Now().Add(testscale.D(20 * time.Second))
	for {
		p, l := r.dump(r.primary), r.dump(r.local)
		if p == l {
			return
		}
		diff = fmt.Sprintf("primary %s\nlocal   %s", p, l)
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: the follower does not mirror the primary:\n%s", what, diff)
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
}

func (r *rig) dump(c *sdk.Client) string {
	items, err := c.Scan().All(r.ctx, sdk.KeyRange{}, sdk.ScanOptions{IncludeValues: true, IncludeMetadata: true})
	if err != nil {
		r.t.Fatal(err)
	}
	var b strings.Builder
	for _, it := range items {
		fmt.Fprintf(&b, "%s=%s:%s;", it.Key, it.Type, it.Value)
		if it.Type == "hash" {
			m, _ := c.Hashes().GetAll(r.ctx, it.Key)
			fmt.Fprintf(&b, "%d fields;", len(m))
		}
	}
	return b.String()
}

// TestApplierCopiesResumesAndReplays: a full copy when there is no cursor,
// the feed after it, a resume from the committed cursor without a copy,
// and a replay from an older cursor that changes nothing.
func TestApplierCopiesResumesAndReplays(t *testing.T) {
	r := newRig(t)
	for i := range 50 {
		r.put(fmt.Sprintf("a%02d", i), "1")
	}
	if _, err := r.local.Put(r.ctx, "stray", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	stop := r.run()
	r.same("full copy")
	for i := range 20 {
		r.put(fmt.Sprintf("a%02d", i), "2")
		if _, err := r.primary.Delete(r.ctx, fmt.Sprintf("a%02d", 49-i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.primary.Hashes().Set(r.ctx, "h", map[string][]byte{"f": []byte("1"), "g": []byte("2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.primary.Counters().IncrBy(r.ctx, "n", 7); err != nil {
		t.Fatal(err)
	}
	r.same("feed")
	testscale.Eventually(t, 10*time.Second, 10*time.Millisecond, "lag 0", func() bool {
		revs, secs := r.stats.Lag(time.Now())
		return revs == 0 && secs == 0
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	older := *r.plane.Follow()
	if older.Cursor == "" || r.stats.Counters().FullCopies != 1 {
		t.Fatalf("after the first run: state %+v, counters %+v", older, r.stats.Counters())
	}

	// Resume: changes made while no applier ran arrive, with no copy.
	for i := range 10 {
		r.put(fmt.Sprintf("b%02d", i), "3")
	}
	stop = r.run()
	r.same("resume")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if k := r.stats.Counters(); k.FullCopies != 1 {
		t.Fatalf("the resume copied the primary in full: %+v", k)
	}

	// Replay from the older cursor: the b keys again, nothing changes.
	applied := r.stats.Counters().Applied
	if err := r.plane.CommitFollow(r.ctx, cluster.FollowOp{Kind: cluster.FollowCursor, Generation: older.Generation,
		Claim: r.plane.Follow().Claim, Cursor: older.Cursor, Applied: older.Applied}); err != nil {
		t.Fatal(err)
	}
	stop = r.run()
	testscale.Eventually(t, 10*time.Second, 10*time.Millisecond, "the replay", func() bool {
		return r.stats.Counters().Applied >= applied+10
	})
	r.same("replay")
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// This cluster lost its data (every node restarted): the cursor is
	// not trusted, the primary is copied in full again.
	r.localCS = "zaris://inproc/" + strings.ReplaceAll(t.Name(), "/", "-") + "-wiped"
	wiped, err := sdk.Connect(r.ctx, r.localCS)
	if err != nil {
		t.Fatal(err)
	}
	defer wiped.Close()
	r.local = wiped
	stop = r.run()
	r.same("after this cluster lost its data")
	// At least one more full copy: a session that failed on a loaded
	// machine starts its copy again (each attempt counts).
	testscale.Eventually(t, 10*time.Second, 10*time.Millisecond, "a second full copy (a wiped follower must not resume from its cursor)", func() bool {
		return r.stats.Counters().FullCopies >= 2
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// Promoted: the applier's next commit is refused and it stops.
	stop = r.run()
	testscale.Eventually(t, 10*time.Second, 10*time.Millisecond, "the applier runs", func() bool {
		return r.stats.Counters().Connected
	})
	if err := r.plane.CommitFollow(r.ctx, cluster.FollowOp{Kind: cluster.FollowStop}); err != nil {
		t.Fatal(err)
	}
	testscale.Eventually(t, 10*time.Second, 10*time.Millisecond, "the stale applier stops", func() bool {
		return !r.stats.Counters().Running
	})
	if err := stop(); !errors.Is(err, follow.ErrStale) {
		t.Fatalf("a promoted follow's applier returned %v, want ErrStale", err)
	}
	r.put("late", "x")
	if res, err := r.local.Get(r.ctx, "late"); err != nil || res.OK() {
		t.Fatalf("a change after the promotion was applied: %+v %v", res, err)
	}
}

// TestDeposedApplierStopsAndKeepsOffTheCursor (D135): another applier
// claims the follow (the leader moved); the running one stops with ErrStale
// and its last cursor commit, refused, leaves the cursor where the new
// applier found it.
func TestDeposedApplierStopsAndKeepsOffTheCursor(t *testing.T) {
	r := newRig(t)
	r.put("a", "1")
	stop := r.run()
	r.same("full copy")
	first := r.plane.Follow().Claim
	if first == 0 {
		t.Fatalf("the applier runs without a claim: %+v", r.plane.Follow())
	}
	second, err := r.plane.ClaimFollow(r.ctx, r.plane.Follow().Generation)
	if err != nil || second <= first {
		t.Fatalf("a second claim: %d, %v (first %d)", second, err, first)
	}
	cursor := r.plane.Follow().Cursor
	for i := range 20 {
		r.put(fmt.Sprintf("b%02d", i), "2") // changes the deposed applier may still be reading
	}
	testscale.Eventually(t, 10*time.Second, 10*time.Millisecond, "the deposed applier stops", func() bool {
		return !r.stats.Counters().Running
	})
	if err := stop(); !errors.Is(err, follow.ErrStale) {
		t.Fatalf("a deposed applier returned %v, want ErrStale", err)
	}
	if st := r.plane.Follow(); st.Cursor != cursor || st.Claim != second {
		t.Fatalf("the deposed applier moved the follow: cursor %q → %q, claim %d → %d", cursor, st.Cursor, second, st.Claim)
	}
	// The next applier claims again and carries on from that cursor.
	stop = r.run()
	r.same("after the next applier took over")
	if st := r.plane.Follow(); st.Claim <= second {
		t.Fatalf("the next applier runs under claim %d, not a new one after %d", st.Claim, second)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestApplierPipelineKeepsOrderAndReopensTheFeed: the changes go through
// several lanes at once, with a feed buffer far smaller than the bursts of
// the primary, so the feed overflows while the applier is behind: it is
// reopened from the changes read (no new session, no full copy) and every
// key ends with its last value — rewritten and deleted keys included, the
// changes of a key staying in order across the lanes.
func TestApplierPipelineKeepsOrderAndReopensTheFeed(t *testing.T) {
	r := newRig(t)
	r.put("seed", "0")
	stop := r.runWith(follow.Options{Lanes: 3, BatchMax: 16, FeedBuffer: 32})
	r.same("full copy")
	for round := range 10 {
		items := make([]sdk.KV, 200)
		for i := range items {
			items[i] = sdk.KV{Key: fmt.Sprintf("k%03d", i), Value: []byte(fmt.Sprintf("r%02d", round))}
		}
		if _, err := r.primary.PutMany(r.ctx, items); err != nil {
			t.Fatal(err)
		}
		gone := make([]string, 0, 20)
		for i := round; i < 200; i += 10 {
			gone = append(gone, fmt.Sprintf("k%03d", i))
		}
		if _, err := r.primary.DeleteMany(r.ctx, gone); err != nil {
			t.Fatal(err)
		}
	}
	r.same("after bursts larger than the feed's buffer")
	k := r.stats.Counters()
	if k.FeedReopens == 0 {
		t.Fatalf("bursts of 200 changes over a feed buffer of 32 never overflowed it: %+v", k)
	}
	if k.FullCopies != 1 {
		t.Fatalf("an overflow of the feed copied the primary in full again: %+v", k)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestRedact(t *testing.T) {
	got := follow.Redact("zaris://h1:1,h2:2/s?token=secret&timeout=2s")
	if strings.Contains(got, "secret") || !strings.Contains(got, "timeout=2s") || !strings.Contains(got, "h1:1,h2:2") {
		t.Fatalf("Redact = %q", got)
	}
	if err := follow.ValidSource("zaris://inproc/x"); err == nil {
		t.Fatal("an in-process store was accepted as a follow source")
	}
	if err := follow.ValidSource("http://x"); err == nil {
		t.Fatal("an http URL was accepted as a follow source")
	}
	if err := follow.ValidSource("zaris://10.0.0.1:7861/default?token=t"); err != nil {
		t.Fatal(err)
	}
}

package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zaris-io/zaris/internal/testenv"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
)

// TestFollowerProcesses is the WAN follower (issue #14 item 5, R-OPS-4)
// with real processes: a 3-node primary and a 2-node follower cluster
// (RF 2, sync: a node of it can die without losing what it applied)
// started with --follow. Every write the primary acknowledged — strings,
// TTLs, deletes, expiry, counters, lists, hashes, sets, sorted sets —
// reaches the follower; client writes to the follower are refused with the
// read-only status on every protocol; the lag shows in /v1/cluster and
// /metrics, in revisions and seconds; kill -9 of the process that runs the
// applier, writes meanwhile, a restart: the follower resumes from the
// cursor in its raft log without a full copy and catches up; zarisctl
// promote opens writes.
func TestFollowerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process follower test: skipped with -short")
	}
	t.Parallel() // main_test.go: why the process tests run two at a time
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(8*time.Minute))
	defer cancel()
	bin := built(t, "zaris-server")
	ctl := built(t, "zarisctl")
	logs := &testenv.SyncBuffer{}
	primary, err := Start(ctx, Options{Nodes: 3, Binary: bin, ClusterID: "primary", Log: logs,
		Extra: []string{"--feed-retention=32MiB,10m"}})
	if err != nil {
		t.Fatalf("start the primary: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() { closeAndReport(t, "primary", primary, logs) })
	source := primary.ConnString()
	follower, err := Start(ctx, Options{Nodes: 2, RF: 2, Mode: "sync", Quorum: "all", Binary: bin, ClusterID: "follower",
		Log: logs, Extra: []string{"--follow=" + source}})
	if err != nil {
		t.Fatalf("start the follower: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() { closeAndReport(t, "follower", follower, logs) })

	pc, err := sdk.Connect(ctx, source)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	fc, err := sdk.Connect(ctx, follower.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fc.Close() })
	f := &followCheck{t: t, ctx: ctx, primary: pc, follower: fc, c: follower}

	// --follow started the follow; the applier runs on the leader.
	applierNode, _ := f.waitApplier("--follow started following", func(st *FollowStatus) bool { return st.Applier.Connected })

	// 1. Writes of every kind on the primary reach the follower.
	m := newMirror()
	f.writeStrings(m, "a", 300)
	for i := range 20 {
		k := fmt.Sprintf("ttl:%02d", i)
		f.ok(pc.Put(ctx, k, []byte("t"), &sdk.PutOptions{TTL: time.Hour}))
		m.str[k] = "t"
		m.ttl[k] = true
	}
	for i := range 10 {
		k := fmt.Sprintf("short:%02d", i)
		f.ok(pc.Put(ctx, k, []byte("s"), &sdk.PutOptions{TTL: 2 * time.Second}))
		m.str[k] = "" // expires on the primary: gone on the follower too
	}
	for i := 0; i < 300; i += 10 {
		k := fmt.Sprintf("a:%04d", i)
		f.ok(pc.Delete(ctx, k))
		m.str[k] = ""
	}
	f.ok(pc.Expire(ctx, "a:0001", time.Hour)) // expiry set on an existing key
	m.ttl["a:0001"] = true
	f.ok(pc.Persist(ctx, "ttl:00")) // and removed
	delete(m.ttl, "ttl:00")
	f.step(pc.Counters().IncrBy(ctx, "ctr", 5))
	f.step(pc.Counters().IncrBy(ctx, "ctr", 7))
	m.str["ctr"] = "12"
	f.collections(m, "c1")
	f.mirrored("the first writes", m)

	// 2. Client writes to the follower are refused, on every protocol.
	if _, err := fc.Put(ctx, "a:0002", []byte("mine"), nil); !errors.Is(err, sdk.ErrReadOnly) {
		t.Fatalf("SDK put on the follower: %v, want ErrReadOnly", err)
	}
	if _, err := fc.Hashes().SetField(ctx, "c1:hash", "x", []byte("1")); !errors.Is(err, sdk.ErrReadOnly) {
		t.Fatalf("SDK HSET on the follower: %v, want ErrReadOnly", err)
	}
	rc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{follower.RESPAddr(0), follower.RESPAddr(1)}})
	t.Cleanup(func() { _ = rc.Close() })
	if err := rc.Set(ctx, "a:0002", "mine", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY ") {
		t.Fatalf("RESP SET on the follower: %v, want READONLY", err)
	}
	if v, err := rc.Get(ctx, "a:0002").Result(); err != nil || v != m.str["a:0002"] {
		t.Fatalf("RESP GET on the follower: %q, %v; want %q", v, err, m.str["a:0002"])
	}
	code, problem := f.rest(http.MethodPut, 0, "/v1/keys/a:0002", "mine")
	if code != http.StatusForbidden || problem.Code != "ReadOnly" || !strings.Contains(problem.Detail, "zarisctl promote") {
		t.Fatalf("REST PUT on the follower: %d %+v, want 403 ReadOnly naming zarisctl promote", code, problem)
	}
	f.mirrored("after the refused writes", m)

	// 3. The lag: 0 once caught up; in seconds, growing while the primary
	// cannot be reached (every primary process stopped).
	f.waitApplier("the lag settled at 0", func(st *FollowStatus) bool {
		return st.Applier.Connected && st.Applier.LagRevisions == 0 && st.Applier.LagSeconds == 0
	})
	for i := range follower.N() {
		if v := f.metric(i, "zaris_follower_following"); v != 1 {
			t.Fatalf("%s: zaris_follower_following = %v, want 1 on every node of the follower", NodeID(i), v)
		}
	}
	for i := range primary.N() {
		if err := primary.Pause(i); err != nil {
			t.Fatal(err)
		}
	}
	paused := true
	resumePrimary := func() {
		if paused {
			paused = false
			for i := range primary.N() {
				if err := primary.Resume(i); err != nil {
					t.Error(err)
				}
			}
		}
	}
	t.Cleanup(resumePrimary)
	applierNode, st := f.waitApplier("the lag in seconds grows while the primary is unreachable", func(st *FollowStatus) bool {
		return st.Applier.LagSeconds > 1.5
	})
	if secs := f.metric(applierNode, "zaris_follower_lag_seconds"); secs <= 1.5 {
		t.Fatalf("/v1/cluster shows a lag of %.1f s, /metrics zaris_follower_lag_seconds %.1f: want > 1.5 in both", st.Applier.LagSeconds, secs)
	}
	resumePrimary()
	f.waitApplier("the lag back to 0 after the primary resumed", func(st *FollowStatus) bool {
		return st.Applier.Connected && st.Applier.LagRevisions == 0 && st.Applier.LagSeconds == 0
	})

	// 4. kill -9 of the process that runs the applier; writes meanwhile;
	// a restart resumes from the cursor in raft, without a full copy.
	applierNode, _ = f.waitApplier("an applier before the kill", func(st *FollowStatus) bool { return st.Applier.Connected })
	copiesBefore := map[int]float64{}
	for i := range follower.N() {
		copiesBefore[i] = f.metric(i, "zaris_follower_full_copies_total")
	}
	if copiesBefore[applierNode] < 1 {
		t.Fatalf("the applier's node counts %v full copies: the follow began with none", copiesBefore[applierNode])
	}
	committed := f.followDoc(applierNode).AppliedChanges
	logFrom := map[int]int64{} // what each node had logged before the kill
	for i := range follower.N() {
		if fi, err := os.Stat(follower.LogPath(i)); err == nil {
			logFrom[i] = fi.Size()
		}
	}
	if err := follower.Kill(applierNode); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s (the applier's node; the cursor in raft covers %d changes)", NodeID(applierNode), committed)
	f.writeStrings(m, "b", 100_000)
	f.collections(m, "c2")
	// Hashes: each is copied from the primary (several round trips), so
	// the backlog takes a while to apply.
	for i := range 2000 {
		k := fmt.Sprintf("hb:%04d", i)
		f.step(pc.Hashes().Set(ctx, k, map[string][]byte{"f": []byte(k), "g": []byte("2")}))
		m.hash[k] = map[string]string{"f": k, "g": "2"}
	}
	if err := follower.Restart(applierNode); err != nil {
		t.Fatal(err)
	}
	// Catching up: every look at the applier while the backlog is not yet
	// applied (the last key is still missing after the look) must show a
	// lag, in /v1/cluster and in /metrics — never "0 and 0" (its samples
	// of the primary's head all postdate the backlog).
	type look struct {
		at                                       time.Time
		docRevs, docSecs, metricRevs, metricSecs float64
	}
	var catching []look
	caughtUp := false
	deadline := time.Now().Add(testscale.D(3 * time.Minute))
	for !caughtUp {
		if time.Now().After(deadline) {
			t.Fatalf("the follower did not catch up after the restart: %s", f.describe())
		}
		var looks []look
		for i := range follower.N() {
			st, err := follower.Status(ctx, i)
			if err != nil || st.Follow == nil || st.Follow.Applier == nil || !st.Follow.Applier.Connected {
				continue
			}
			revs, rerr := follower.metric(ctx, i, "zaris_follower_lag_revisions")
			secs, serr := follower.metric(ctx, i, "zaris_follower_lag_seconds")
			if rerr != nil || serr != nil {
				t.Fatalf("%s runs the applier and has no lag metrics: %v %v", NodeID(i), rerr, serr)
			}
			looks = append(looks, look{time.Now(), float64(st.Follow.Applier.LagRevisions), st.Follow.Applier.LagSeconds, revs, secs})
		}
		last, err := fc.Hashes().GetAll(ctx, "hb:1999") // the last write of the backlog
		if caughtUp = err == nil && len(last) == 2; !caughtUp {
			catching = append(catching, looks...)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	// The applier samples the primary's head when it connects and every
	// 500 ms: a look well after the first (3 s: a probe is slow on a
	// loaded machine) sees the backlog in revisions too.
	var maxRevs float64
	for _, l := range catching {
		if (l.docRevs == 0 && l.docSecs == 0) || (l.metricRevs == 0 && l.metricSecs == 0) {
			t.Fatalf("the applier showed no lag while the backlog was being applied: %+v", l)
		}
		if l.at.Sub(catching[0].at) > 3*time.Second && (l.docRevs == 0 || l.metricRevs == 0) {
			t.Fatalf("%v into the catch-up the applier shows no lag in revisions: %+v", l.at.Sub(catching[0].at), l)
		}
		maxRevs = max(maxRevs, l.docRevs)
	}
	var span time.Duration
	if len(catching) > 0 {
		span = catching[len(catching)-1].at.Sub(catching[0].at)
	}
	f.mirrored("after the kill and restart of the applier's node", m)
	t.Logf("caught up; %d looks at the applier over %v while it caught up, at most %v revisions behind",
		len(catching), span.Round(time.Millisecond), maxRevs)
	// Connected: past a full copy, had there been one (it counts before
	// the applier reads the feed).
	f.waitApplier("the applier connected after the restart", func(st *FollowStatus) bool { return st.Applier.Connected })
	for i := range follower.N() {
		after := f.metric(i, "zaris_follower_full_copies_total")
		want := copiesBefore[i]
		if i == applierNode {
			want = 0 // a new process: its counters start again
		}
		if after != want {
			t.Fatalf("%s counts %v full copies after the restart, want %v: the follower must resume from its cursor, not copy the primary again",
				NodeID(i), after, want)
		}
	}
	resumed := false
	for i := range follower.N() {
		b, err := os.ReadFile(follower.LogPath(i))
		if err == nil && int64(len(b)) >= logFrom[i] && strings.Contains(string(b[logFrom[i]:]), "resume=true") {
			resumed = true
		}
	}
	if !resumed {
		t.Fatal("no node logged an applier resuming from its cursor (resume=true) after the restart")
	}

	// 5. zarisctl promote opens writes.
	// A promotion is idempotent: an operator runs it again when the
	// control plane could not commit it in time (503 on a loaded machine).
	var out []byte
	deadline = time.Now().Add(testscale.D(60 * time.Second))
	for {
		out, err = exec.CommandContext(ctx, ctl, "--http", follower.HTTPAddr(1-applierNode), "--timeout", "10s", "promote").CombinedOutput()
		if err == nil || time.Now().After(deadline) {
			break
		}
		t.Logf("zarisctl promote: %v: %s (again)", err, bytes.TrimSpace(out))
		time.Sleep(200 * time.Millisecond) // between an operator's attempts
	}
	if err != nil || !strings.Contains(string(out), "promoted") {
		t.Fatalf("zarisctl promote: %v\n%s", err, out)
	}
	f.poll("writes open after zarisctl promote", func() bool {
		if _, err := fc.Put(ctx, "a:0002", []byte("mine"), nil); err != nil {
			return false
		}
		if err := rc.Set(ctx, "a:0003", "mine", 0).Err(); err != nil {
			return false
		}
		code, _ := f.rest(http.MethodPut, 0, "/v1/keys/a:0004", "mine")
		return code == http.StatusCreated || code == http.StatusOK || code == http.StatusNoContent
	})
	f.poll("no applier and no follow after the promotion", func() bool {
		for i := range follower.N() {
			st, err := follower.Status(ctx, i)
			if err != nil || st.Follow == nil || st.Follow.State != "promoted" || st.Follow.Applier != nil {
				return false
			}
			if f.metric(i, "zaris_follower_following") != 0 {
				return false
			}
		}
		return true
	})
	if r, err := fc.Get(ctx, "a:0002"); err != nil || string(r.Value) != "mine" {
		t.Fatalf("the promoted cluster's own write: %+v %v", r, err)
	}
}

// closeAndReport stops cluster c, with its log tails when the test failed.
func closeAndReport(t *testing.T, name string, c *Cluster, logs *testenv.SyncBuffer) {
	if t.Failed() {
		for i := range c.N() {
			t.Logf("---- %s %s log tail\n%s", name, NodeID(i), c.LogTail(i, 40))
		}
		t.Logf("---- harness\n%s", tail(logs.String(), 40))
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
	if crashes := c.Crashes(); len(crashes) > 0 {
		t.Errorf("%s: processes exited on their own: %v", name, crashes)
	}
}

// mirror is what the follower must hold: strings (value; "" = absent),
// keys with a TTL, and collections.
type mirror struct {
	str   map[string]string
	ttl   map[string]bool
	lists map[string][]string
	hash  map[string]map[string]string
	sets  map[string][]string
	zsets map[string]map[string]float64
}

func newMirror() *mirror {
	return &mirror{str: map[string]string{}, ttl: map[string]bool{}, lists: map[string][]string{},
		hash: map[string]map[string]string{}, sets: map[string][]string{}, zsets: map[string]map[string]float64{}}
}

type followCheck struct {
	t                 *testing.T
	ctx               context.Context
	primary, follower *sdk.Client
	c                 *Cluster // the follower cluster
}

func (f *followCheck) ok(r sdk.Result, err error) {
	f.t.Helper()
	if err != nil || !r.OK() {
		f.t.Fatalf("a write on the primary: %+v %v", r, err)
	}
}

func (f *followCheck) step(_ any, err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatalf("a write on the primary: %v", err)
	}
}

// writeStrings puts n keys prefix:NNNN through PutMany; the acknowledged
// ones go to the mirror.
func (f *followCheck) writeStrings(m *mirror, prefix string, n int) {
	f.t.Helper()
	for start := 0; start < n; start += 500 {
		items := make([]sdk.KV, 0, 500)
		for i := start; i < min(n, start+500); i++ {
			k := fmt.Sprintf("%s:%04d", prefix, i)
			items = append(items, sdk.KV{Key: k, Value: []byte("v" + k)})
		}
		res, err := f.primary.PutMany(f.ctx, items)
		if err != nil {
			f.t.Fatal(err)
		}
		for _, r := range res {
			if !r.OK() {
				f.t.Fatalf("PutMany on the primary: %s %v", r.Key, r.Status)
			}
			m.str[r.Key] = "v" + r.Key
		}
	}
}

// collections writes a list, a hash, a set and a sorted set with adds and
// removals (each change of the feed applies to a collection that exists).
func (f *followCheck) collections(m *mirror, p string) {
	f.t.Helper()
	ctx, pc := f.ctx, f.primary
	list, hash, set, zset := p+":list", p+":hash", p+":set", p+":zset"
	f.step(pc.Lists().RPush(ctx, list, []byte("a"), []byte("b"), []byte("c"), []byte("d")))
	if _, _, err := pc.Lists().LPop(ctx, list); err != nil {
		f.t.Fatal(err)
	}
	f.step(pc.Lists().LPush(ctx, list, []byte("z")))
	m.lists[list] = []string{"z", "b", "c", "d"}
	f.step(pc.Hashes().Set(ctx, hash, map[string][]byte{"a": []byte("1"), "b": []byte("2")}))
	f.step(pc.Hashes().SetField(ctx, hash, "c", []byte("3")))
	f.step(pc.Hashes().Del(ctx, hash, "a"))
	m.hash[hash] = map[string]string{"b": "2", "c": "3"}
	f.step(pc.Sets().Add(ctx, set, "x", "y", "z"))
	f.step(pc.Sets().Rem(ctx, set, "y"))
	m.sets[set] = []string{"x", "z"}
	f.step(pc.SortedSets().Add(ctx, zset, sdk.Member{Member: "m1", Score: 1}, sdk.Member{Member: "m2", Score: 2}))
	f.step(pc.SortedSets().IncrBy(ctx, zset, "m1", 5))
	f.step(pc.SortedSets().Rem(ctx, zset, "m2"))
	m.zsets[zset] = map[string]float64{"m1": 6}
}

// poll waits until cond holds.
func (f *followCheck) poll(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(testscale.D(60 * time.Second))
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s; follower: %s", what, f.describe())
		}
		time.Sleep(50 * time.Millisecond) // poll interval
	}
}

// mirrored waits until the follower holds what m says.
func (f *followCheck) mirrored(what string, m *mirror) {
	f.t.Helper()
	var last string
	deadline := time.Now().Add(testscale.D(90 * time.Second))
	for {
		if last = f.diff(m); last == "" {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%s: the follower does not hold what the primary acknowledged: %s; follower: %s", what, last, f.describe())
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
}

// diff is the first difference between the follower and m ("" = none).
func (f *followCheck) diff(m *mirror) string {
	ctx, fc := f.ctx, f.follower
	keys := slices.Sorted(maps.Keys(m.str))
	for start := 0; start < len(keys); start += 1000 {
		batch := keys[start:min(len(keys), start+1000)]
		res, err := fc.GetMany(ctx, batch)
		if err != nil {
			return err.Error()
		}
		for i, r := range res {
			want := m.str[batch[i]]
			switch {
			case want == "" && r.Status != sdk.StatusNotFound:
				return fmt.Sprintf("%s: %v %q, want absent", batch[i], r.Status, r.Value)
			case want != "" && (!r.OK() || string(r.Value) != want):
				return fmt.Sprintf("%s: %v %q, want %q", batch[i], r.Status, r.Value, want)
			}
		}
	}
	for k := range m.ttl {
		r, err := fc.TimeToLive(ctx, k)
		if err != nil || r.TTL <= 0 || r.TTL > time.Hour {
			return fmt.Sprintf("%s: TTL %v %v, want (0, 1h]", k, r.TTL, err)
		}
	}
	if r, err := fc.TimeToLive(ctx, "ttl:00"); err != nil || r.TTL > 0 {
		return fmt.Sprintf("ttl:00 after PERSIST: TTL %v %v, want none", r.TTL, err)
	}
	for k, want := range m.lists {
		got, err := fc.Lists().Range(ctx, k, 0, -1)
		if err != nil || !slices.Equal(strs(got), want) {
			return fmt.Sprintf("list %s: %q %v, want %q", k, strs(got), err, want)
		}
	}
	for k, want := range m.hash {
		got, err := fc.Hashes().GetAll(ctx, k)
		g := map[string]string{}
		for fk, v := range got {
			g[fk] = string(v)
		}
		if err != nil || !maps.Equal(g, want) {
			return fmt.Sprintf("hash %s: %v %v, want %v", k, g, err, want)
		}
	}
	for k, want := range m.sets {
		got, err := fc.Sets().Members(ctx, k)
		slices.Sort(got)
		if err != nil || !slices.Equal(got, want) {
			return fmt.Sprintf("set %s: %v %v, want %v", k, got, err, want)
		}
	}
	for k, want := range m.zsets {
		got, err := fc.SortedSets().Range(ctx, k, 0, -1)
		g := map[string]float64{}
		for _, mb := range got {
			g[mb.Member] = mb.Score
		}
		if err != nil || !maps.Equal(g, want) {
			return fmt.Sprintf("zset %s: %v %v, want %v", k, g, err, want)
		}
	}
	return ""
}

func strs(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// followDoc is node i's follow document (nil when it has none).
func (f *followCheck) followDoc(i int) *FollowStatus {
	st, err := f.c.Status(f.ctx, i)
	if err != nil {
		return nil
	}
	return st.Follow
}

// waitApplier waits until a node of the follower shows an applier whose
// document satisfies cond, and returns that node and the document.
func (f *followCheck) waitApplier(what string, cond func(*FollowStatus) bool) (int, *FollowStatus) {
	f.t.Helper()
	node, doc := -1, (*FollowStatus)(nil)
	f.poll(what, func() bool {
		for i := range f.c.N() {
			if !f.c.serving(i) {
				continue
			}
			if st := f.followDoc(i); st != nil && st.State == "following" && st.Applier != nil && cond(st) {
				node, doc = i, st
				return true
			}
		}
		return false
	})
	return node, doc
}

// describe is the follow documents of every serving node, for a failure.
func (f *followCheck) describe() string {
	var b strings.Builder
	for i := range f.c.N() {
		if !f.c.serving(i) {
			fmt.Fprintf(&b, "%s down; ", NodeID(i))
			continue
		}
		doc, _ := json.Marshal(f.followDoc(i))
		fmt.Fprintf(&b, "%s %s; ", NodeID(i), doc)
	}
	return b.String()
}

// metric is node i's unlabelled metric name (fatal when absent).
func (f *followCheck) metric(i int, name string) float64 {
	f.t.Helper()
	v, err := f.c.metric(f.ctx, i, name)
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

type problem struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// rest sends method path (with body) to node i's HTTP API.
func (f *followCheck) rest(method string, i int, path, body string) (int, problem) {
	f.t.Helper()
	req, err := http.NewRequestWithContext(f.ctx, method, "http://"+f.c.HTTPAddr(i)+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	resp, err := f.c.http.Do(req)
	if err != nil {
		return 0, problem{Detail: err.Error()}
	}
	defer resp.Body.Close()
	var p problem
	_ = json.NewDecoder(resp.Body).Decode(&p) // a success has no problem document
	return resp.StatusCode, p
}

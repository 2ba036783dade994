package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/store"
)

var scanStoreSeq atomic.Int64

func scanInproc(t *testing.T, opts ...sdk.Option) *sdk.Client {
	t.Helper()
	c, err := sdk.Connect(context.Background(), fmt.Sprintf("zaris://inproc/scan-%d", scanStoreSeq.Add(1)), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func scanRemote(t *testing.T, ts *testServer) *sdk.Client {
	t.Helper()
	c, err := sdk.Connect(context.Background(), "zaris://"+ts.addr+"/default")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func scanKeys(items []sdk.ScanItem) []string {
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = it.Key
	}
	return keys
}

func scanFill(t *testing.T, c *sdk.Client, keys ...string) {
	t.Helper()
	kvs := make([]sdk.KV, len(keys))
	for i, k := range keys {
		kvs[i] = sdk.KV{Key: k, Value: []byte("v:" + k)}
	}
	res, err := c.PutMany(context.Background(), kvs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if !r.OK() {
			t.Fatalf("put %q: %v", r.Key, r.Status)
		}
	}
}

// scanPages pages through a scan with Scanner.Page and its tokens.
func scanPages(t *testing.T, s *sdk.Scanner, r sdk.KeyRange, opts sdk.ScanOptions) (keys []string, pages int) {
	t.Helper()
	ctx := context.Background()
	for {
		p, err := s.Page(ctx, r, opts)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		pages++
		size := opts.PageSize
		if size == 0 {
			size = 100
		}
		if len(p.Items) > size {
			t.Fatalf("page %d: %d items over the page size %d", pages, len(p.Items), size)
		}
		keys = append(keys, scanKeys(p.Items)...)
		if p.Done() {
			return keys, pages
		}
		opts.ResumeToken = p.ResumeToken
	}
}

// runScanSuite is the scan behaviour both backends must show.
func runScanSuite(t *testing.T, connect func(t *testing.T) *sdk.Client) {
	ctx := context.Background()
	c := connect(t)
	var want []string
	for i := range 1000 {
		want = append(want, fmt.Sprintf("scan:%04d", i))
	}
	scanFill(t, c, want...)
	scanFill(t, c, "other:1", "other:2", "zzz")
	for i := range 50 { // tombstones never surface
		if r, _ := c.Delete(ctx, fmt.Sprintf("scan:%04d", 1000+i-50)); r.Status != sdk.StatusSuccess {
			t.Fatalf("delete: %v", r.Status)
		}
	}
	want = want[:950]
	if r, _ := c.Put(ctx, "scan:gone", []byte("x"), &sdk.PutOptions{TTL: time.Millisecond}); !r.OK() {
		t.Fatal(r.Status)
	}
	time.Sleep(5 * time.Millisecond) // expired, maybe not swept: never surfaces either
	prefix := sdk.KeyRange{Prefix: "scan:"}

	t.Run("IteratorInPages", func(t *testing.T) {
		it := c.Scan().Scan(ctx, prefix, sdk.ScanOptions{PageSize: 64})
		var got []string
		for it.Next(ctx) {
			got = append(got, it.Item().Key)
		}
		if err := it.Err(); err != nil || !slices.Equal(got, want) {
			t.Fatalf("got %d keys (%v), want %d in order", len(got), err, len(want))
		}
		if it.ResumeToken() != "" || it.Next(ctx) {
			t.Fatal("a finished iterator still has a token or items")
		}
	})
	t.Run("PagesWithTokens", func(t *testing.T) {
		got, pages := scanPages(t, c.Scan(), prefix, sdk.ScanOptions{PageSize: 128})
		if !slices.Equal(got, want) || pages != 8 {
			t.Fatalf("%d keys in %d pages, want %d in 8", len(got), pages, len(want))
		}
	})
	t.Run("ResumeInsideAPage", func(t *testing.T) {
		it := c.Scan().Scan(ctx, prefix, sdk.ScanOptions{PageSize: 100})
		var got []string
		for len(got) < 150 && it.Next(ctx) {
			got = append(got, it.Item().Key)
		}
		tok := it.ResumeToken()
		if tok == "" {
			t.Fatal("no token mid-scan")
		}
		// A different range in the arguments is ignored: the token rules.
		rest, err := c.Scan().All(ctx, sdk.KeyRange{Prefix: "other:"}, sdk.ScanOptions{ResumeToken: tok, PageSize: 33})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, scanKeys(rest)...)
		if !slices.Equal(got, want) {
			t.Fatalf("resumed scan: %d keys, want %d", len(got), len(want))
		}
	})
	t.Run("PrefixAndRange", func(t *testing.T) {
		items, err := c.Scan().All(ctx, sdk.KeyRange{Prefix: "scan:01"}, sdk.ScanOptions{PageSize: 7})
		if err != nil || !slices.Equal(scanKeys(items), want[100:200]) {
			t.Fatalf("prefix: %d keys, %v", len(items), err)
		}
		items, err = c.Scan().All(ctx, sdk.KeyRange{Start: "scan:0950", End: "scan:1000", Prefix: "scan:"}, sdk.ScanOptions{})
		if err != nil || len(items) != 0 {
			t.Fatalf("a range of deleted keys: %q %v", scanKeys(items), err)
		}
		items, _ = c.Scan().All(ctx, sdk.KeyRange{Start: "scan:0500", End: "scan:0510"}, sdk.ScanOptions{})
		if !slices.Equal(scanKeys(items), want[500:510]) {
			t.Fatalf("start/end: %q", scanKeys(items))
		}
		items, _ = c.Scan().All(ctx, sdk.KeyRange{Start: "scan:0949"}, sdk.ScanOptions{})
		if !slices.Equal(scanKeys(items), []string{"scan:0949", "zzz"}) {
			t.Fatalf("open end: %q", scanKeys(items))
		}
	})
	t.Run("ValuesAndMetadata", func(t *testing.T) {
		items, err := c.Scan().All(ctx, sdk.KeyRange{Prefix: "scan:00"}, sdk.ScanOptions{IncludeValues: true, PageSize: 30})
		if err != nil || len(items) != 100 {
			t.Fatalf("%d items, %v", len(items), err)
		}
		for _, it := range items {
			if string(it.Value) != "v:"+it.Key || it.Version != 0 || it.Type != "" {
				t.Fatalf("values only: %+v", it)
			}
		}
		if items, _ := c.Scan().All(ctx, sdk.KeyRange{Prefix: "scan:00"}, sdk.ScanOptions{}); items[0].Value != nil {
			t.Fatalf("keys only returned a value: %+v", items[0])
		}
		c.Put(ctx, "meta:a", []byte("x"), &sdk.PutOptions{TTL: time.Hour, ContentType: "text/plain", Labels: map[string]string{"team": "core"}})
		c.Put(ctx, "meta:b", nil, nil)
		c.Do(ctx, sdk.NewCmd(sdk.CmdHSet, "meta:c", "f", "v"))
		items, err = c.Scan().All(ctx, sdk.KeyRange{Prefix: "meta:"}, sdk.ScanOptions{IncludeValues: true, IncludeMetadata: true})
		if err != nil || len(items) != 3 {
			t.Fatalf("%+v %v", items, err)
		}
		a, b, h := items[0], items[1], items[2]
		if string(a.Value) != "x" || a.Version != 1 || a.Revision == 0 || a.TTL <= 59*time.Minute || a.TTL > time.Hour ||
			a.Type != "string" || a.ContentType != "text/plain" || a.Labels["team"] != "core" {
			t.Errorf("a: %+v", a)
		}
		if b.Value == nil || len(b.Value) != 0 || b.TTL != 0 || b.Labels != nil {
			t.Errorf("b (empty value): %+v", b)
		}
		if h.Type != "hash" || h.Value != nil || h.Version != 1 {
			t.Errorf("a hash: %+v", h)
		}
	})
	t.Run("LimitCount", func(t *testing.T) {
		items, err := c.Scan().All(ctx, prefix, sdk.ScanOptions{LimitCount: 250})
		if err != nil || !slices.Equal(scanKeys(items), want[:250]) {
			t.Fatalf("limit 250: %d %v", len(items), err)
		}
		var sizes []int
		opts := sdk.ScanOptions{LimitCount: 150, PageSize: 100}
		for {
			p, err := c.Scan().Page(ctx, prefix, opts)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, len(p.Items))
			if p.Done() {
				break
			}
			opts.ResumeToken = p.ResumeToken
		}
		if !slices.Equal(sizes, []int{100, 50}) {
			t.Fatalf("pages %v, want [100 50]", sizes)
		}
		it := c.Scan().Scan(ctx, prefix, sdk.ScanOptions{LimitCount: 1})
		if !it.Next(ctx) || it.Next(ctx) || it.Err() != nil || it.ResumeToken() != "" {
			t.Fatalf("limit 1: %v", it.Err())
		}
	})
	t.Run("CloseAbandonsTheScan", func(t *testing.T) {
		it := c.Scan().Scan(ctx, prefix, sdk.ScanOptions{PageSize: 10})
		if !it.Next(ctx) {
			t.Fatal(it.Err())
		}
		tok := it.ResumeToken()
		if err := it.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if it.Next(ctx) || it.Close(ctx) != nil {
			t.Fatal("a closed iterator goes on")
		}
		_, err := c.Scan().All(ctx, prefix, sdk.ScanOptions{ResumeToken: tok})
		if !errors.Is(err, sdk.ErrScanSessionNotFound) {
			t.Fatalf("the token of a closed scan: %v", err)
		}
	})
	t.Run("BadInput", func(t *testing.T) {
		for name, opts := range map[string]sdk.ScanOptions{
			"negative page size": {PageSize: -1},
			"huge page size":     {PageSize: store.MaxScanPageSize + 1},
			"negative limit":     {LimitCount: -1},
		} {
			if _, err := c.Scan().Page(ctx, prefix, opts); !errors.Is(err, sdk.ErrBadRequest) {
				t.Errorf("%s: %v", name, err)
			}
		}
		for _, tok := range []string{"nonsense", "zs1.!!!", "zs1.AAAA"} {
			if _, err := c.Scan().Page(ctx, prefix, sdk.ScanOptions{ResumeToken: tok}); !errors.Is(err, sdk.ErrBadScanToken) {
				t.Errorf("token %q: %v", tok, err)
			}
		}
		p, _ := c.Scan().Page(ctx, prefix, sdk.ScanOptions{PageSize: 5})
		// The same token twice: the second is out of order, loudly.
		p2, err := c.Scan().Page(ctx, prefix, sdk.ScanOptions{ResumeToken: p.ResumeToken})
		if err != nil {
			t.Fatal(err)
		}
		// Abandoning a paged scan: close an iterator made from its token.
		defer func() {
			if err := c.Scan().Scan(ctx, prefix, sdk.ScanOptions{ResumeToken: p2.ResumeToken}).Close(ctx); err != nil {
				t.Error(err)
			}
		}()
		if _, err := c.Scan().Page(ctx, prefix, sdk.ScanOptions{ResumeToken: p.ResumeToken}); !errors.Is(err, sdk.ErrScanTokenStale) || !errors.Is(err, sdk.ErrBadRequest) {
			t.Errorf("a replayed token: %v", err)
		}
	})
	t.Run("RetryFromTheTokenAfterAnError", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		it := c.Scan().Scan(cctx, prefix, sdk.ScanOptions{PageSize: 40})
		var got []string
		for it.Next(cctx) {
			got = append(got, it.Item().Key)
			if len(got) == 55 {
				cancel()
			}
		}
		if !errors.Is(it.Err(), context.Canceled) || len(got) != 55 {
			t.Fatalf("cancelled context: %d keys, %v", len(got), it.Err())
		}
		rest, err := c.Scan().All(ctx, prefix, sdk.ScanOptions{ResumeToken: it.ResumeToken()})
		if err != nil || !slices.Equal(append(got, scanKeys(rest)...), want) {
			t.Fatalf("retry from the token: %d + %d keys, %v", len(got), len(rest), err)
		}
	})
}

func TestScanSuite(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		runScanSuite(t, func(t *testing.T) *sdk.Client { return scanInproc(t) })
	})
	t.Run("remote", func(t *testing.T) {
		ts := startServer(t)
		runScanSuite(t, func(t *testing.T) *sdk.Client { return scanRemote(t, ts) })
		if st := ts.store.ScanStats(); st.OpenSessions != 0 {
			t.Errorf("the suite left %d scan sessions open on the server", st.OpenSessions)
		}
	})
}

// An owner's session that expired is a loud error, never a restarted scan.
func TestScanSessionExpiryIsLoud(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, c *sdk.Client, expire func()) {
		var keys []string
		for i := range 30 {
			keys = append(keys, fmt.Sprintf("k%02d", i))
		}
		scanFill(t, c, keys...)
		p, err := c.Scan().Page(ctx, sdk.KeyRange{}, sdk.ScanOptions{PageSize: 10})
		if err != nil || p.Done() {
			t.Fatal(err)
		}
		expire()
		_, err = c.Scan().Page(ctx, sdk.KeyRange{}, sdk.ScanOptions{ResumeToken: p.ResumeToken, PageSize: 10})
		if !errors.Is(err, sdk.ErrScanSessionNotFound) || !strings.Contains(err.Error(), "scan session not found (expired or unknown): restart the scan") {
			t.Fatalf("expired session: %v", err)
		}
		t.Log(err)
	}
	t.Run("embedded", func(t *testing.T) {
		clk := store.NewManualClock(time.Now())
		cfg := store.DefaultConfig()
		cfg.Clock = clk
		check(t, scanInproc(t, sdk.WithEmbeddedConfig(cfg)), func() { clk.Advance(store.DefaultScanIdleTTL + time.Second) })
	})
	t.Run("remote", func(t *testing.T) {
		ts := startServer(t)
		if err := ts.store.SetScanConfig(store.ScanConfig{IdleTTL: 30 * time.Millisecond, MaxSessions: 8}); err != nil {
			t.Fatal(err)
		}
		check(t, scanRemote(t, ts), func() { time.Sleep(100 * time.Millisecond) })
	})
}

// The fan-out: several owners (embedded and remote), merged in key order,
// with a hard total limit and tokens that carry every owner's position.
func TestScanFanOut(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t)
	owners := []*sdk.Client{scanInproc(t), scanInproc(t), scanRemote(t, ts), scanInproc(t)}
	var want []string
	for i := range 1000 {
		k := fmt.Sprintf("fan:%04d", i)
		want = append(want, k)
		scanFill(t, owners[(i*7)%len(owners)], k)
		if i%50 == 0 { // a key held by two owners (a move in flight) surfaces once
			scanFill(t, owners[(i*7+1)%len(owners)], k)
		}
	}
	s := sdk.NewScanner(owners...)
	all := sdk.KeyRange{Prefix: "fan:"}

	items, err := s.All(ctx, all, sdk.ScanOptions{PageSize: 50, IncludeValues: true})
	if err != nil || !slices.Equal(scanKeys(items), want) {
		t.Fatalf("merged scan: %d keys, %v", len(items), err)
	}
	for _, it := range items {
		if string(it.Value) != "v:"+it.Key {
			t.Fatalf("value of %q: %q", it.Key, it.Value)
		}
	}
	// The limit is a hard total across owners, not a per-owner cap.
	items, err = s.All(ctx, all, sdk.ScanOptions{PageSize: 50, LimitCount: 333})
	if err != nil || !slices.Equal(scanKeys(items), want[:333]) {
		t.Fatalf("limit 333 over 4 owners: %d items, %v", len(items), err)
	}
	// Pages resume every owner exactly where the merge left it.
	got, _ := scanPages(t, s, all, sdk.ScanOptions{PageSize: 37})
	if !slices.Equal(got, want) {
		t.Fatalf("paged merged scan: %d keys, want %d", len(got), len(want))
	}
	got, pages := scanPages(t, s, all, sdk.ScanOptions{PageSize: 40, LimitCount: 130})
	if !slices.Equal(got, want[:130]) || pages != 4 {
		t.Fatalf("paged with a limit: %d keys in %d pages", len(got), pages)
	}
	if st := ts.store.ScanStats(); st.OpenSessions != 0 {
		t.Fatalf("%d sessions left open on the remote owner", st.OpenSessions)
	}
	// A token is bound to its owners.
	p, err := s.Page(ctx, all, sdk.ScanOptions{PageSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owners[0].Scan().Page(ctx, all, sdk.ScanOptions{ResumeToken: p.ResumeToken}); !errors.Is(err, sdk.ErrBadScanToken) {
		t.Fatalf("a token of four owners on one: %v", err)
	}
	if _, err := sdk.NewScanner().Page(ctx, all, sdk.ScanOptions{}); !errors.Is(err, sdk.ErrBadRequest) {
		t.Fatalf("a scanner without owners: %v", err)
	}
}

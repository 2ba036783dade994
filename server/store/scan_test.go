package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// scanAll pages through a scan and returns the keys, checking the page
// invariants on the way (size bound, ascending order inside and across
// pages).
func scanAll(t testing.TB, s *Store, req ScanRequest) []string {
	t.Helper()
	var keys []string
	size := req.PageSize
	if size == 0 {
		size = DefaultScanPageSize
	}
	for pages := 0; ; pages++ {
		if pages > 1_000_000 {
			t.Fatal("scan does not end")
		}
		p, err := s.ScanPage(req)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		if len(p.Items) > size {
			t.Fatalf("page %d has %d items, page size %d", pages, len(p.Items), size)
		}
		for _, it := range p.Items {
			if n := len(keys); n > 0 && keys[n-1] >= it.Key {
				t.Fatalf("order: %q after %q", it.Key, keys[n-1])
			}
			keys = append(keys, it.Key)
		}
		if p.Done() {
			return keys
		}
		if len(p.Items) == 0 {
			t.Fatalf("page %d is empty but not done", pages)
		}
		req.ResumeToken = p.ResumeToken
	}
}

func putKeys(t testing.TB, s *Store, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if r := s.Put(k, []byte("v:"+k), nil); r.Status != kv.StatusSuccess {
			t.Fatalf("put %q: %v", k, r.Status)
		}
	}
}

// inRange is the oracle's definition of a KeyRange.
func inRange(r KeyRange, k string) bool {
	return k >= r.Start && (r.End == "" || k < r.End) && strings.HasPrefix(k, r.Prefix)
}

func TestScanOrderAcrossSegments(t *testing.T) {
	s, _ := newTestStore(t)
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[string]bool{}
	for len(want) < 2000 {
		k := fmt.Sprintf("k%x", rng.Uint64())
		want[k] = true
		putKeys(t, s, k)
	}
	segs := map[*Segment]bool{}
	for k := range want {
		segs[s.SegmentFor(k)] = true
	}
	if len(segs) < 200 {
		t.Fatalf("keys cover only %d segments; the test wants a real merge", len(segs))
	}
	got := scanAll(t, s, ScanRequest{PageSize: 37})
	sorted := slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	})
	if !slices.Equal(got, sorted) {
		t.Fatalf("scan returned %d keys, want %d in order", len(got), len(sorted))
	}
}

func TestScanRanges(t *testing.T) {
	s, _ := newTestStore(t)
	keys := []string{"a", "ab", "abc", "abd", "ac", "b", "ba", "c", "user:1", "user:10", "user:2", "users", "z", "\xff", "\xff\xff", "\xff\xffa"}
	putKeys(t, s, keys...)
	cases := []struct {
		name string
		r    KeyRange
		want []string
	}{
		{"everything", KeyRange{}, keys},
		{"start is inclusive", KeyRange{Start: "b"}, []string{"b", "ba", "c", "user:1", "user:10", "user:2", "users", "z", "\xff", "\xff\xff", "\xff\xffa"}},
		{"end is exclusive", KeyRange{End: "ac"}, []string{"a", "ab", "abc", "abd"}},
		{"start and end", KeyRange{Start: "ab", End: "b"}, []string{"ab", "abc", "abd", "ac"}},
		{"prefix", KeyRange{Prefix: "user:"}, []string{"user:1", "user:10", "user:2"}},
		{"prefix and start inside", KeyRange{Prefix: "user:", Start: "user:10"}, []string{"user:10", "user:2"}},
		{"prefix and end inside", KeyRange{Prefix: "ab", End: "abd"}, []string{"ab", "abc"}},
		{"start past the prefix", KeyRange{Prefix: "ab", Start: "b"}, nil},
		{"end before the prefix", KeyRange{Prefix: "b", End: "ab"}, nil},
		{"start after end", KeyRange{Start: "c", End: "a"}, nil},
		{"prefix of 0xff bytes", KeyRange{Prefix: "\xff\xff"}, []string{"\xff\xff", "\xff\xffa"}},
		{"prefix 0xff", KeyRange{Prefix: "\xff"}, []string{"\xff", "\xff\xff", "\xff\xffa"}},
		{"no match", KeyRange{Prefix: "nope"}, nil},
	}
	for _, tc := range cases {
		for _, size := range []int{1, 2, 100} {
			got := scanAll(t, s, ScanRequest{Range: tc.r, PageSize: size})
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s (page %d): got %q, want %q", tc.name, size, got, tc.want)
			}
		}
	}
}

// The store against a sorted model under random keys, ranges, page sizes
// and limits (STYLE 6).
func TestScanAgainstModel(t *testing.T) {
	s, clk := newTestStore(t)
	rng := rand.New(rand.NewPCG(7, 7))
	alphabet := "ab\xffc"
	randKey := func() string {
		b := make([]byte, 1+rng.IntN(4))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	model := map[string]bool{}
	for range 400 {
		k := randKey()
		switch rng.IntN(4) {
		case 0:
			s.Delete(k)
			delete(model, k)
		case 1:
			s.Put(k, []byte("x"), &kv.PutOptions{TTL: time.Second}) // expires below
			delete(model, k)
		default:
			s.Put(k, []byte("x"), nil)
			model[k] = true
		}
	}
	clk.Advance(2 * time.Second)
	for i := range 300 {
		r := KeyRange{}
		if rng.IntN(2) == 0 {
			r.Start = randKey()
		}
		if rng.IntN(2) == 0 {
			r.End = randKey()
		}
		if rng.IntN(2) == 0 {
			r.Prefix = randKey()
			r.Prefix = r.Prefix[:min(len(r.Prefix), 1+rng.IntN(2))]
		}
		limit := 0
		if rng.IntN(3) == 0 {
			limit = rng.IntN(20)
		}
		var want []string
		for k := range model {
			if inRange(r, k) {
				want = append(want, k)
			}
		}
		slices.Sort(want)
		if limit > 0 && len(want) > limit {
			want = want[:limit]
		}
		got := scanAll(t, s, ScanRequest{Range: r, PageSize: 1 + rng.IntN(30), LimitCount: limit})
		if !slices.Equal(got, want) {
			t.Fatalf("case %d: range %+q limit %d: got %q, want %q", i, r, limit, got, want)
		}
		var each []string
		if err := s.ScanEach(ScanRequest{Range: r, LimitCount: limit}, func(it ScanItem) bool {
			each = append(each, it.Key)
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(each, want) {
			t.Fatalf("case %d: ScanEach got %q, want %q", i, each, want)
		}
	}
	if st := s.ScanStats(); st.OpenSessions != 0 {
		t.Fatalf("finished scans left %d sessions open", st.OpenSessions)
	}
}

func TestScanPagingAndResume(t *testing.T) {
	s, _ := newTestStore(t)
	for i := range 200 {
		putKeys(t, s, fmt.Sprintf("k%03d", i))
	}
	p1, err := s.ScanPage(ScanRequest{})
	if err != nil || len(p1.Items) != 100 || p1.Done() || p1.Items[0].Key != "k000" {
		t.Fatalf("first page: %d items, done %v, %v", len(p1.Items), p1.Done(), err)
	}
	if st := s.ScanStats(); st.OpenSessions != 1 {
		t.Fatalf("open sessions %d, want 1", st.OpenSessions)
	}
	// Exactly 200 keys: the second page is the last, and says so (no empty
	// third page).
	p2, err := s.ScanPage(ScanRequest{ResumeToken: p1.ResumeToken})
	if err != nil || len(p2.Items) != 100 || !p2.Done() || p2.Items[0].Key != "k100" || p2.Items[99].Key != "k199" {
		t.Fatalf("second page: %d items, done %v, %v", len(p2.Items), p2.Done(), err)
	}
	if st := s.ScanStats(); st.OpenSessions != 0 {
		t.Fatalf("a finished scan holds %d sessions", st.OpenSessions)
	}
	// The first token again: the session is finished and gone.
	if _, err := s.ScanPage(ScanRequest{ResumeToken: p1.ResumeToken}); !errors.Is(err, ErrScanSessionNotFound) {
		t.Fatalf("token of a finished scan: %v", err)
	}

	// A token used twice while the session lives: out of order, loudly.
	a, _ := s.ScanPage(ScanRequest{PageSize: 50})
	b, err := s.ScanPage(ScanRequest{ResumeToken: a.ResumeToken, PageSize: 50})
	if err != nil || b.Items[0].Key != "k050" {
		t.Fatalf("resume: %v", err)
	}
	if _, err := s.ScanPage(ScanRequest{ResumeToken: a.ResumeToken, PageSize: 50}); !errors.Is(err, ErrScanTokenStale) {
		t.Fatalf("replayed token: %v", err)
	}
	// The page size may change between pages; the latest token still works.
	c, err := s.ScanPage(ScanRequest{ResumeToken: b.ResumeToken, PageSize: 7})
	if err != nil || len(c.Items) != 7 || c.Items[0].Key != "k100" {
		t.Fatalf("smaller page: %d %v", len(c.Items), err)
	}
	if !s.CloseScan(c.ResumeToken) || s.CloseScan(c.ResumeToken) {
		t.Fatal("CloseScan: want true once, then false")
	}
	if _, err := s.ScanPage(ScanRequest{ResumeToken: c.ResumeToken}); !errors.Is(err, ErrScanSessionNotFound) {
		t.Fatalf("closed session: %v", err)
	}

	// An empty store or range is done at once and holds no session.
	p, err := s.ScanPage(ScanRequest{Range: KeyRange{Prefix: "nothing"}})
	if err != nil || !p.Done() || len(p.Items) != 0 {
		t.Fatalf("empty range: %+v %v", p, err)
	}
	for _, bad := range []ScanRequest{{PageSize: -1}, {PageSize: MaxScanPageSize + 1}, {LimitCount: -1}} {
		if _, err := s.ScanPage(bad); !errors.Is(err, ErrBadScanRequest) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if _, err := s.ScanPage(ScanRequest{PageSize: MaxScanPageSize}); err != nil {
		t.Errorf("the largest page size: %v", err)
	}
}

func TestScanLimitCount(t *testing.T) {
	s, _ := newTestStore(t)
	for i := range 500 {
		putKeys(t, s, fmt.Sprintf("k%03d", i))
	}
	var sizes []int
	req := ScanRequest{LimitCount: 250}
	for {
		p, err := s.ScanPage(req)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(p.Items))
		if p.Done() {
			break
		}
		req.ResumeToken = p.ResumeToken
	}
	if !slices.Equal(sizes, []int{100, 100, 50}) {
		t.Fatalf("pages %v, want [100 100 50]", sizes)
	}
	// The limit belongs to the session: a resume cannot raise it.
	p, _ := s.ScanPage(ScanRequest{LimitCount: 3, PageSize: 2})
	p, _ = s.ScanPage(ScanRequest{ResumeToken: p.ResumeToken, PageSize: 2, LimitCount: 1000})
	if len(p.Items) != 1 || !p.Done() {
		t.Fatalf("resume past the limit: %d items, done %v", len(p.Items), p.Done())
	}
	if got := scanAll(t, s, ScanRequest{LimitCount: 1, Range: KeyRange{Start: "k499"}}); !slices.Equal(got, []string{"k499"}) {
		t.Fatalf("limit 1: %q", got)
	}
}

func TestScanNeverSurfacesTombstonesOrExpiredKeys(t *testing.T) {
	s, clk := newTestStore(t)
	putKeys(t, s, "live1", "live2", "deleted", "recreated")
	s.Delete("deleted")
	s.Delete("recreated")
	s.Put("recreated", []byte("again"), nil)
	s.Put("short", []byte("x"), &kv.PutOptions{TTL: time.Second})
	s.Put("long", []byte("x"), &kv.PutOptions{TTL: time.Hour})
	s.Put("swept", []byte("x"), &kv.PutOptions{TTL: time.Second})
	s.Exec(kv.NewCmd(kv.CmdHSet, "hash", "f", "v"))
	s.Exec(kv.NewCmd(kv.CmdSAdd, "emptied", "m"))
	s.Exec(kv.NewCmd(kv.CmdSRem, "emptied", "m")) // an emptied collection is deleted
	clk.Advance(2 * time.Second)                  // short and swept expire; not swept yet
	want := []string{"hash", "live1", "live2", "long", "recreated"}
	if got := scanAll(t, s, ScanRequest{PageSize: 2}); !slices.Equal(got, want) {
		t.Fatalf("unswept: got %q, want %q", got, want)
	}
	s.SweepOnce() // expired → tombstones → pruned
	if got := scanAll(t, s, ScanRequest{PageSize: 2}); !slices.Equal(got, want) {
		t.Fatalf("swept: got %q, want %q", got, want)
	}

	// Values and metadata.
	var items []ScanItem
	s.ScanEach(ScanRequest{IncludeValues: true, IncludeMetadata: true}, func(it ScanItem) bool {
		items = append(items, it)
		return true
	})
	byKey := map[string]ScanItem{}
	for _, it := range items {
		byKey[it.Key] = it
	}
	if it := byKey["recreated"]; string(it.Value) != "again" || it.Kind != KindString || it.Version != 1 || it.Revision == 0 {
		t.Errorf("recreated: %+v", it)
	}
	if it := byKey["long"]; it.TTL <= 59*time.Minute || it.TTL > time.Hour {
		t.Errorf("long TTL: %v", it.TTL)
	}
	if it := byKey["hash"]; it.Kind != KindHash || it.Value != nil {
		t.Errorf("a collection: %+v", it)
	}
	var noValues []ScanItem
	s.ScanEach(ScanRequest{}, func(it ScanItem) bool { noValues = append(noValues, it); return true })
	for _, it := range noValues {
		if it.Value != nil || it.Meta != nil {
			t.Fatalf("values or metadata not asked for: %+v", it)
		}
	}
}

// A session walks the keys it started with: keys deleted or expired before
// their turn are skipped, updated values are read as updated, keys created
// afterwards are not returned.
func TestScanSessionSeesLiveRecordsOfItsSnapshot(t *testing.T) {
	s, clk := newTestStore(t)
	putKeys(t, s, "a", "b", "c", "d", "e")
	s.Put("f", []byte("x"), &kv.PutOptions{TTL: time.Second})
	p, err := s.ScanPage(ScanRequest{PageSize: 1, IncludeValues: true})
	if err != nil || p.Items[0].Key != "a" {
		t.Fatal(err)
	}
	s.Delete("b")
	s.Put("c", []byte("new"), nil)
	s.Put("cc", []byte("created after the start"), nil)
	clk.Advance(2 * time.Second)
	var got []string
	for !p.Done() {
		p, err = s.ScanPage(ScanRequest{ResumeToken: p.ResumeToken, PageSize: 1, IncludeValues: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			got = append(got, it.Key+"="+string(it.Value))
		}
	}
	if want := []string{"c=new", "d=v:d", "e=v:e"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// Writers churn one part of the keyspace while scans run (race detector,
// no crash); the quiescent part is returned exactly, every time.
func TestScanWhileWriting(t *testing.T) {
	s, _ := newTestStore(t)
	var stable []string
	for i := range 3000 {
		stable = append(stable, fmt.Sprintf("stable:%05d", i))
	}
	putKeys(t, s, stable...)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("churn:%04d", rng.IntN(2000))
				if rng.IntN(3) == 0 {
					s.Delete(k)
				} else {
					s.Put(k, []byte("x"), nil)
				}
				if rng.IntN(50) == 0 {
					s.SweepOnce()
				}
			}
		}()
	}
	for range 5 {
		if got := scanAll(t, s, ScanRequest{Range: KeyRange{Prefix: "stable:"}, PageSize: 64}); !slices.Equal(got, stable) {
			t.Fatalf("quiescent range: %d keys, want %d", len(got), len(stable))
		}
		all := scanAll(t, s, ScanRequest{PageSize: 100, IncludeValues: true}) // ordered and unique by scanAll
		n := 0
		for _, k := range all {
			if strings.HasPrefix(k, "stable:") {
				n++
			}
		}
		if n != len(stable) {
			t.Fatalf("full scan under churn found %d stable keys, want %d", n, len(stable))
		}
	}
	close(stop)
	wg.Wait()
}

func TestScanSessionExpiryIsLoud(t *testing.T) {
	s, clk := newTestStore(t)
	for i := range 10 {
		putKeys(t, s, fmt.Sprintf("k%d", i))
	}
	p, err := s.ScanPage(ScanRequest{PageSize: 3})
	if err != nil || p.Done() {
		t.Fatal(err)
	}
	clk.Advance(DefaultScanIdleTTL - time.Second)
	if p, err = s.ScanPage(ScanRequest{ResumeToken: p.ResumeToken, PageSize: 3}); err != nil {
		t.Fatalf("within the idle TTL: %v", err)
	}
	clk.Advance(DefaultScanIdleTTL + time.Second)
	_, err = s.ScanPage(ScanRequest{ResumeToken: p.ResumeToken, PageSize: 3})
	if !errors.Is(err, ErrScanSessionNotFound) {
		t.Fatalf("expired session: %v", err)
	}
	// Through the command path: BadRequest with the loud message.
	r := s.Exec(ScanCmd(ScanRequest{ResumeToken: p.ResumeToken}))
	const loud = "scan session not found (expired or unknown): restart the scan"
	if r.Status != kv.StatusBadRequest || !strings.HasPrefix(r.Message, loud) {
		t.Fatalf("expired session via Exec: %v %q", r.Status, r.Message)
	}
	for _, tok := range []string{"garbage", "nodot", ".5", "abc.x", "0123456789abcdef1.0"} {
		if _, err := s.ScanPage(ScanRequest{ResumeToken: tok}); !errors.Is(err, ErrScanSessionNotFound) {
			t.Errorf("token %q: %v", tok, err)
		}
	}
}

func TestScanSessionBound(t *testing.T) {
	s, clk := newTestStore(t)
	if err := s.SetScanConfig(ScanConfig{IdleTTL: time.Minute, MaxSessions: 2}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []ScanConfig{{IdleTTL: 0, MaxSessions: 1}, {IdleTTL: time.Second, MaxSessions: 0}} {
		if s.SetScanConfig(bad) == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	for i := range 10 {
		putKeys(t, s, fmt.Sprintf("k%d", i))
	}
	open := func() (ScanPage, error) { return s.ScanPage(ScanRequest{PageSize: 1}) }
	a, _ := open()
	b, _ := open()
	if _, err := open(); !errors.Is(err, ErrTooManyScans) {
		t.Fatalf("third session: %v", err)
	}
	if r := s.Exec(ScanCmd(ScanRequest{PageSize: 1})); r.Status != kv.StatusCapacityExceeded {
		t.Fatalf("third session via Exec: %v %q", r.Status, r.Message)
	}
	// A scan answered in one page needs no session.
	if p, err := s.ScanPage(ScanRequest{}); err != nil || len(p.Items) != 10 {
		t.Fatalf("one-page scan at the bound: %v", err)
	}
	// The open sessions still work.
	if _, err := s.ScanPage(ScanRequest{ResumeToken: a.ResumeToken, PageSize: 1}); err != nil {
		t.Fatal(err)
	}
	s.CloseScan(b.ResumeToken)
	c, err := open()
	if err != nil {
		t.Fatalf("after a close: %v", err)
	}
	if st := s.ScanStats(); st.OpenSessions != 2 || st.MaxSessions != 2 {
		t.Fatalf("stats %+v", st)
	}
	clk.Advance(2 * time.Minute) // a and c expire
	if _, err := open(); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if _, err := s.ScanPage(ScanRequest{ResumeToken: c.ResumeToken}); !errors.Is(err, ErrScanSessionNotFound) {
		t.Fatalf("expired: %v", err)
	}
}

func TestScanCommand(t *testing.T) {
	s, _ := newTestStore(t)
	s.Put("a", []byte("1"), &kv.PutOptions{TTL: 1500 * time.Microsecond, ContentType: "text/plain", Labels: map[string]string{"z": "1", "y": "2"}})
	s.Put("b", nil, nil)
	s.Exec(kv.NewCmd(kv.CmdRPush, "c", "x"))
	putKeys(t, s, "d", "e")

	r := s.Exec(ScanCmd(ScanRequest{PageSize: 3, IncludeValues: true, IncludeMetadata: true}))
	p, err := DecodeScanReply(r)
	if err != nil || p.Done() || len(p.Items) != 3 {
		t.Fatalf("page: %+v %v", r, err)
	}
	a, b, c := p.Items[0], p.Items[1], p.Items[2]
	if a.Key != "a" || string(a.Value) != "1" || a.Kind != KindString || a.Version != 1 || a.Revision == 0 ||
		a.TTL != 2*time.Millisecond || a.Meta == nil || a.Meta.ContentType != "text/plain" || a.Meta.Labels["y"] != "2" {
		t.Errorf("a: %+v %+v", a, a.Meta)
	}
	if b.Key != "b" || b.Value == nil || len(b.Value) != 0 || b.TTL != 0 || b.Meta != nil {
		t.Errorf("b (empty value): %+v", b)
	}
	if c.Key != "c" || c.Value != nil || c.Kind != KindList {
		t.Errorf("c (a list): %+v", c)
	}
	// Keys only.
	r = s.Exec(ScanCmd(ScanRequest{ResumeToken: p.ResumeToken}))
	p, err = DecodeScanReply(r)
	if err != nil || !p.Done() || len(p.Items) != 2 || p.Items[0].Key != "d" || p.Items[0].Value != nil || p.Items[0].Version != 0 {
		t.Fatalf("keys-only page: %+v %v", p, err)
	}
	// Close.
	p, _ = DecodeScanReply(s.Exec(ScanCmd(ScanRequest{PageSize: 1})))
	if r := s.Exec(CloseScanCmd(p.ResumeToken)); r.Type != kv.ReplyInt || r.Int != 1 {
		t.Fatalf("close: %+v", r)
	}
	if r := s.Exec(CloseScanCmd(p.ResumeToken)); r.Int != 0 {
		t.Fatalf("second close: %+v", r)
	}
	// Bad input.
	for name, cmd := range map[string]kv.Cmd{
		"no argument":   {Op: kv.CmdScan},
		"two arguments": {Op: kv.CmdScan, Args: [][]byte{{0x80}, {0x80}}},
		"not msgpack":   {Op: kv.CmdScan, Args: [][]byte{{0xc1}}},
		"bad page size": ScanCmd(ScanRequest{PageSize: -5}),
		"bad limit":     ScanCmd(ScanRequest{LimitCount: -1}),
	} {
		if r := s.Exec(cmd); r.Status != kv.StatusBadRequest || r.Message == "" {
			t.Errorf("%s: %v %q", name, r.Status, r.Message)
		}
	}
	for name, r := range map[string]kv.Reply{
		"not an array": kv.IntReply(1),
		"bad token":    kv.ArrayReply([]kv.Reply{kv.IntReply(1), kv.ArrayReply(nil)}),
		"bad item":     kv.ArrayReply([]kv.Reply{kv.NilReply(), kv.ArrayReply([]kv.Reply{kv.IntReply(1)})}),
		"bad width":    kv.ArrayReply([]kv.Reply{kv.NilReply(), kv.ArrayReply([]kv.Reply{kv.ArrayReply([]kv.Reply{kv.BulkReply([]byte("k")), kv.NilReply(), kv.NilReply()})})}),
	} {
		if _, err := DecodeScanReply(r); err == nil {
			t.Errorf("DecodeScanReply(%s) accepted", name)
		}
	}
}

func TestScanKeySnapshotCache(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.Segments = 1 })
	st := s.scanState()
	g := s.Segment(0)
	putKeys(t, s, "b", "a")
	now := s.clock.NowNano()
	s1 := st.sortedKeys(g, now)
	if !slices.Equal(s1.keys, []string{"a", "b"}) {
		t.Fatalf("keys %q", s1.keys)
	}
	if st.sortedKeys(g, now) != s1 {
		t.Fatal("an unchanged segment rebuilt its snapshot")
	}
	putKeys(t, s, "c")
	if s2 := st.sortedKeys(g, now); s2 == s1 || len(s2.keys) != 3 || len(s1.keys) != 2 {
		t.Fatal("a write did not give a new snapshot, or changed the old one")
	}
	// A snapshot install at the same revision with other keys (a replica
	// style install) still invalidates the cache.
	rev := g.Revision()
	g.InstallSnapshot(Snapshot{Segment: 0, Revision: rev, Records: []Record{Record{Revision: rev}.WithVersion(1).With("x", []byte("1"))}})
	if got := scanAll(t, s, ScanRequest{}); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("after InstallSnapshot: %q", got)
	}
}

func TestScanSkipsReplicaSegments(t *testing.T) {
	s, _ := newTestStore(t)
	putKeys(t, s, "mine", "theirs")
	s.SegmentFor("theirs").SetOwned(false)
	if s.SegmentFor("mine") == s.SegmentFor("theirs") {
		t.Fatal("pick keys of two segments")
	}
	if got := scanAll(t, s, ScanRequest{}); !slices.Equal(got, []string{"mine"}) {
		t.Fatalf("got %q", got)
	}
}

// Two stores in one process keep their sessions apart (STYLE 13).
func TestScanStateIsPerStore(t *testing.T) {
	a, _ := newTestStore(t)
	b, _ := newTestStore(t)
	for i := range 5 {
		putKeys(t, a, fmt.Sprintf("k%d", i))
		putKeys(t, b, fmt.Sprintf("k%d", i))
	}
	p, _ := a.ScanPage(ScanRequest{PageSize: 1})
	if _, err := b.ScanPage(ScanRequest{ResumeToken: p.ResumeToken}); !errors.Is(err, ErrScanSessionNotFound) {
		t.Fatalf("another store's token: %v", err)
	}
}

// BenchmarkScan scans 100 000 keys in pages; keys/s is the figure.
func BenchmarkScan(b *testing.B) {
	for _, bc := range []struct {
		name   string
		size   int
		values bool
	}{{"keys/page=100", 100, false}, {"keys/page=1000", 1000, false}, {"values/page=1000", 1000, true}} {
		b.Run(bc.name, func(b *testing.B) {
			s, _ := newTestStore(b)
			const n = 100_000
			for i := range n {
				s.Put(fmt.Sprintf("key:%08d", i), []byte("value-of-sixteen"), nil)
			}
			scanAll(b, s, ScanRequest{PageSize: MaxScanPageSize}) // warm the snapshots
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				req := ScanRequest{PageSize: bc.size, IncludeValues: bc.values}
				got := 0
				for {
					p, err := s.ScanPage(req)
					if err != nil {
						b.Fatal(err)
					}
					got += len(p.Items)
					if p.Done() {
						break
					}
					req.ResumeToken = p.ResumeToken
				}
				if got != n {
					b.Fatalf("scanned %d keys, want %d", got, n)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
		})
	}
}

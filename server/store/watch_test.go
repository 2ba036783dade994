package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

func nextEvent(t *testing.T, w *Watch) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ev, err := w.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestWatchKeyEventsOfEveryKind(t *testing.T) {
	s, clk := newTestStore(t, func(c *Config) { c.MaxMemoryBytes = 1 << 20; c.MaxItemBytes = 64 << 10 })
	w, snap, err := s.Watch(WatchOptions{Key: "k", IncludeValues: true})
	if err != nil || snap != nil {
		t.Fatal(err, snap)
	}
	defer w.Close()
	s.Put("other", []byte("x"), nil) // not watched
	s.Put("k", []byte("v1"), nil)
	s.Expire("k", time.Second)
	s.Persist("k")
	s.Delete("k")
	run(t, s, kv.CmdHSet, "k", "f", "v")
	s.Expire("k", time.Second)
	clk.Advance(time.Second)
	s.SweepOnce()
	want := []EventKind{EventPut, EventExpire, EventPersist, EventDelete, EventCommand, EventExpire, EventExpired}
	var lastRev uint64
	for i, k := range want {
		ev := nextEvent(t, w)
		if ev.Kind != k || ev.Key != "k" {
			t.Fatalf("event %d = %v %q, want %v", i, ev.Kind, ev.Key, k)
		}
		if ev.Revision <= lastRev {
			t.Fatalf("event %d out of order", i)
		}
		lastRev = ev.Revision
		if i == 0 && string(ev.Value) != "v1" {
			t.Fatalf("put value %q", ev.Value)
		}
		if k == EventCommand && (ev.Command != kv.CmdHSet || ev.KeyKind != KindHash) {
			t.Fatalf("command event %+v", ev)
		}
	}
	// Eviction is an event too.
	s.Put("k", make([]byte, 1000), nil)
	nextEvent(t, w)
	for i := 0; s.Stats().OwnedBytes < 900<<10; i++ {
		s.Put(fmt.Sprint("fill", i), make([]byte, 1000), nil)
	}
	clk.Advance(time.Hour) // every fill key is as cold as k; k goes sooner or later
	for s.Get("k").OK() {
		s.Get("fill0") // keep something hot
		if s.EvictOnce(uint64(time.Now().UnixNano())) == 0 {
			t.Fatal("nothing evicted")
		}
		for i := 0; s.Stats().OwnedBytes < 900<<10; i++ {
			s.Put(fmt.Sprint("refill", i), make([]byte, 1000), nil)
		}
	}
	if ev := nextEvent(t, w); ev.Kind != EventEvicted {
		t.Fatalf("eviction event %v", ev.Kind)
	}
}

// R-DS-6: the snapshot and the events together reflect every change exactly
// once, while writers run concurrently.
func TestWatchPrefixSnapshotHasNoGapAndNoDuplicate(t *testing.T) {
	s, _ := newTestStore(t)
	for i := range 200 {
		s.Put(fmt.Sprintf("p:%d", i), []byte("0"), nil)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var mu sync.Mutex
	final := map[string]string{}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("p:%d", (i*7+w)%200)
				v := fmt.Sprint(w, "-", i)
				mu.Lock() // make "last write wins" observable in the oracle
				s.Put(k, []byte(v), nil)
				final[k] = v
				mu.Unlock()
			}
		}()
	}
	w, snap, err := s.Watch(WatchOptions{Prefix: "p:", Snapshot: true, IncludeValues: true, Buffer: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	close(stop)
	wg.Wait()
	s.Put("done", nil, nil)
	view := map[string]string{}
	rev := map[string]uint64{}
	for _, r := range snap {
		view[r.Key()] = string(r.Value())
		rev[r.Key()] = r.Revision
	}
	if len(view) != 200 {
		t.Fatalf("snapshot has %d keys", len(view))
	}
	for {
		select {
		case ev := <-w.Events():
			if ev.Revision <= rev[ev.Key] {
				t.Fatalf("duplicate or stale event for %s: %d ≤ %d", ev.Key, ev.Revision, rev[ev.Key])
			}
			view[ev.Key], rev[ev.Key] = string(ev.Value), ev.Revision
			continue
		default:
		}
		break
	}
	for k, v := range final {
		if view[k] != v {
			t.Fatalf("%s: view %q, store %q — an event was lost", k, view[k], v)
		}
	}
}

func TestWatchOverflowEndsLoudly(t *testing.T) {
	s, _ := newTestStore(t)
	w, _, _ := s.Watch(WatchOptions{Prefix: "", Buffer: 4})
	for i := range 10 {
		s.Put(fmt.Sprint("k", i), nil, nil)
	}
	n := 0
	for range w.Events() {
		n++
	}
	if n != 4 || !errors.Is(w.Err(), ErrWatchOverflow) {
		t.Fatalf("read %d, err %v", n, w.Err())
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.Watchers() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("overflowed watch still registered")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := w.Next(context.Background()); !errors.Is(err, ErrWatchOverflow) {
		t.Fatalf("Next after overflow: %v", err)
	}
}

func TestPubSubChannelsAndPatterns(t *testing.T) {
	s, _ := newTestStore(t)
	b := s.PubSub()
	a := b.NewSubscription(0)
	defer a.Close()
	if got := a.Subscribe("news", "sport"); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("counts %v", got)
	}
	p := b.NewSubscription(0)
	defer p.Close()
	p.PSubscribe("n*")
	if n := b.Publish("news", []byte("hello")); n != 2 {
		t.Fatalf("receivers %d", n)
	}
	if n := b.Publish("weather", []byte("rain")); n != 0 {
		t.Fatalf("receivers %d", n)
	}
	m := <-a.Messages()
	if m.Channel != "news" || string(m.Payload) != "hello" || m.Pattern != "" {
		t.Fatalf("%+v", m)
	}
	m = <-p.Messages()
	if m.Pattern != "n*" || m.Channel != "news" {
		t.Fatalf("%+v", m)
	}
	if b.NumSub("news") != 1 || b.NumPat() != 1 {
		t.Fatalf("numsub %d numpat %d", b.NumSub("news"), b.NumPat())
	}
	ch := b.ActiveChannels("")
	sort.Strings(ch)
	if fmt.Sprint(ch) != "[news sport]" {
		t.Fatalf("channels %v", ch)
	}
	a.Unsubscribe()
	if b.Publish("news", nil) != 1 || a.Count() != 0 {
		t.Fatal("unsubscribe-all did not remove the channels")
	}
	slow := b.NewSubscription(2)
	slow.Subscribe("flood")
	for range 5 {
		b.Publish("flood", nil)
	}
	if !errors.Is(slow.Err(), ErrSubscriberOverflow) {
		t.Fatalf("slow subscriber: %v", slow.Err())
	}
}

// The commit hook sees every committed mutation's segment before the
// write returns — puts, deletes, collection commands, expiries — and
// nothing after it is removed. Replication ships what it marks: a
// mutation it missed would reach replicas only at the next heartbeat pass.
func TestCommitHookSeesEveryMutation(t *testing.T) {
	s, clk := newTestStore(t)
	var (
		mu   sync.Mutex
		segs []uint16
	)
	s.SetCommitHook(func(seg uint16) {
		mu.Lock()
		segs = append(segs, seg)
		mu.Unlock()
	})
	took := func(key string, what string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		want := s.SegmentFor(key).ID()
		if len(segs) != 1 || segs[0] != want {
			t.Fatalf("%s of %q: hook saw segments %v, want [%d]", what, key, segs, want)
		}
		segs = segs[:0]
	}
	s.Put("a", []byte("1"), nil)
	took("a", "put")
	run(t, s, kv.CmdLPush, "l", "x")
	took("l", "LPUSH")
	s.Delete("a")
	took("a", "delete")
	s.Put("e", []byte("1"), &kv.PutOptions{TTL: time.Second})
	took("e", "put with a TTL")
	clk.Advance(2 * time.Second)
	if expired, _ := s.SweepOnce(); expired != 1 {
		t.Fatalf("sweep expired %d keys, want 1", expired)
	}
	took("e", "expiry")
	s.Get("l") // a read commits nothing
	mu.Lock()
	if len(segs) != 0 {
		t.Fatalf("a read reached the hook: %v", segs)
	}
	mu.Unlock()
	s.SetCommitHook(nil)
	s.Put("b", []byte("1"), nil)
	mu.Lock()
	defer mu.Unlock()
	if len(segs) != 0 {
		t.Fatalf("a removed hook still called: %v", segs)
	}
}

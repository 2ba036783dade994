package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/native"
	"github.com/zaris-io/zaris/server/store"
)

var streamsSeq atomic.Int64

func TestStreamsEmbedded(t *testing.T) {
	runStreamsSuite(t, func(t *testing.T, name string) *sdk.Client {
		c, err := sdk.Connect(context.Background(), "zaris://inproc/"+name, sdk.WithEmbeddedConfig(dsStoreConfig()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	})
}

func TestStreamsRemote(t *testing.T) {
	st, err := store.New(dsStoreConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ts := startServer(t, func(c *native.Config) { c.Store = st })
	runStreamsSuite(t, func(t *testing.T, _ string) *sdk.Client {
		c, err := sdk.Connect(context.Background(), "zaris://"+ts.addr+"/default")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	})
}

func xsFields(kv ...string) []sdk.Field {
	out := make([]sdk.Field, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, sdk.Field{Name: kv[i], Value: []byte(kv[i+1])})
	}
	return out
}

func xsIDs(es []sdk.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func xsEntryIDs(t *testing.T, what string, want ...string) func([]sdk.Entry, error) {
	t.Helper()
	return func(es []sdk.Entry, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := xsIDs(es); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
}

// runStreamsSuite runs the stream tests on one backend. open connects a
// client to the named store (embedded: an inproc store of that name; remote:
// the test server's one store, shared by subtests through distinct keys).
func runStreamsSuite(t *testing.T, open func(t *testing.T, store string) *sdk.Client) {
	ctx := context.Background()
	connect := func(t *testing.T) *sdk.Client { return open(t, fmt.Sprint("streams-", streamsSeq.Add(1))) }

	t.Run("Log", func(t *testing.T) {
		x := connect(t).Streams()
		k := dsKey(t, "s")
		expect(t, "XADD explicit", "1-1")(x.Add(ctx, k, xsFields("a", "1"), &sdk.AddOptions{ID: "1-1"}))
		expect(t, "XADD ms-*", "1-2")(x.Add(ctx, k, xsFields("b", "2"), &sdk.AddOptions{ID: "1-*"}))
		before := time.Now().UnixMilli()
		auto, err := x.Add(ctx, k, sdk.FieldsFromMap(map[string][]byte{"z": []byte("26"), "y": {}}), nil)
		noErr(t, "XADD *", err)
		var ms, seq int64
		if _, err := fmt.Sscanf(auto, "%d-%d", &ms, &seq); err != nil || ms < before-1000 || seq != 0 {
			t.Fatalf("generated id %q (now %d)", auto, before)
		}
		expect(t, "XLEN", 3)(x.Len(ctx, k))
		all, err := x.Range(ctx, k, "-", "+", 0)
		noErr(t, "XRANGE", err)
		want := []sdk.Entry{
			{ID: "1-1", Fields: xsFields("a", "1")},
			{ID: "1-2", Fields: xsFields("b", "2")},
			{ID: auto, Fields: []sdk.Field{{Name: "y", Value: []byte{}}, {Name: "z", Value: []byte("26")}}},
		}
		if !reflect.DeepEqual(all, want) {
			t.Fatalf("XRANGE = %+v, want %+v", all, want)
		}
		if v, ok := all[2].Value("z"); !ok || string(v) != "26" {
			t.Fatalf("Entry.Value: %q %v", v, ok)
		}
		if _, ok := all[2].Value("nope"); ok {
			t.Fatal("Entry.Value of a missing field")
		}
		xsEntryIDs(t, "XRANGE exclusive, COUNT", "1-2", auto)(x.Range(ctx, k, "(1-1", "+", 2))
		xsEntryIDs(t, "XRANGE bare ms", "1-1", "1-2")(x.Range(ctx, k, "1", "1", 0))
		xsEntryIDs(t, "XREVRANGE", auto, "1-2")(x.RevRange(ctx, k, "+", "-", 2))
		xsEntryIDs(t, "XREAD", "1-2", auto)(x.Read(ctx, k, "1-1", 0))
		xsEntryIDs(t, "XREAD COUNT", "1-1")(x.Read(ctx, k, "0", 1))
		xsEntryIDs(t, "XREAD $")(x.Read(ctx, k, "$", 0))
		expect(t, "XDEL", 1)(x.Del(ctx, k, "1-1", "9-9"))
		expect(t, "XTRIM MAXLEN", 1)(x.Trim(ctx, k, sdk.StreamTrim{MaxLen: 1}))
		xsEntryIDs(t, "after trim", auto)(x.Range(ctx, k, "-", "+", 0))
		next, err := x.Add(ctx, k, xsFields("n", "1"), &sdk.AddOptions{Trim: &sdk.StreamTrim{MinID: auto + "1"}})
		noErr(t, "XADD MINID", err)
		xsEntryIDs(t, "after XADD MINID", next)(x.Range(ctx, k, "-", "+", 0))
		// An emptied stream keeps its last id.
		expect(t, "XTRIM to nothing", 1)(x.Trim(ctx, k, sdk.StreamTrim{MaxLen: 0}))
		expect(t, "XLEN emptied", 0)(x.Len(ctx, k))
		_, err = x.Add(ctx, k, xsFields("a", "1"), &sdk.AddOptions{ID: "1-3"})
		refused(t, "XADD below the last id", err, sdk.ErrBadRequest)
		if !strings.Contains(err.Error(), "equal or smaller than the target stream top item") {
			t.Fatalf("message: %v", err)
		}
		// NOMKSTREAM and a missing stream.
		missing := dsKey(t, "missing")
		expect(t, "XADD NOMKSTREAM", "")(x.Add(ctx, missing, xsFields("a", "1"), &sdk.AddOptions{NoMkStream: true}))
		expect(t, "XLEN missing", 0)(x.Len(ctx, missing))
		xsEntryIDs(t, "XRANGE missing")(x.Range(ctx, missing, "-", "+", 0))
		xsEntryIDs(t, "XREAD missing")(x.Read(ctx, missing, "0", 0))
	})

	t.Run("Errors", func(t *testing.T) {
		c := connect(t)
		x := c.Streams()
		k := dsKey(t, "s")
		_, err := x.Add(ctx, k, nil, nil)
		refused(t, "XADD without fields", err, sdk.ErrBadRequest)
		_, err = x.Add(ctx, k, xsFields("a", "1"), &sdk.AddOptions{ID: "one"})
		refused(t, "XADD malformed id", err, sdk.ErrBadRequest)
		_, err = x.Range(ctx, k, "x", "+", 0)
		refused(t, "XRANGE malformed id", err, sdk.ErrBadRequest)
		// Redis's order: no stream or no group acks nothing, ids unread.
		expect(t, "XACK malformed id, no stream", 0)(x.Ack(ctx, k, "g", "1-x"))
		acked := dsKey(t, "acked")
		if _, err := x.Add(ctx, acked, xsFields("a", "1"), nil); err != nil {
			t.Fatal(err)
		}
		expect(t, "XGROUP CREATE", true)(x.CreateGroup(ctx, acked, "g", "0", false))
		_, err = x.Ack(ctx, acked, "g", "1-x")
		refused(t, "XACK malformed id", err, sdk.ErrBadRequest)
		_, err = x.ReadGroup(ctx, k, "g", "c", 0)
		refused(t, "XREADGROUP on a missing stream", err, sdk.ErrNotFound)
		_, err = x.CreateGroup(ctx, k, "g", "$", false)
		refused(t, "XGROUP CREATE on a missing stream", err, sdk.ErrNotFound)
		_, err = x.Pending(ctx, k, "g")
		refused(t, "XPENDING on a missing stream", err, sdk.ErrNotFound)
		h := dsKey(t, "h")
		if _, err := c.Hashes().Set(ctx, h, map[string][]byte{"a": []byte("1")}); err != nil {
			t.Fatal(err)
		}
		_, err = x.Add(ctx, h, xsFields("a", "1"), nil)
		refused(t, "XADD on a hash", err, sdk.ErrWrongType)
		_, err = x.Len(ctx, h)
		refused(t, "XLEN on a hash", err, sdk.ErrWrongType)
		for i := range dsMaxElems {
			if _, err := x.Add(ctx, k, xsFields("i", fmt.Sprint(i)), nil); err != nil {
				t.Fatal(err)
			}
		}
		_, err = x.Add(ctx, k, xsFields("one", "too many"), nil)
		refused(t, "XADD over the element cap", err, sdk.ErrItemTooLarge)
		expect(t, "XLEN at the cap", dsMaxElems)(x.Len(ctx, k))
		_, err = x.Add(ctx, k, xsFields("one", "more"), &sdk.AddOptions{Trim: &sdk.StreamTrim{MaxLen: dsMaxElems}})
		noErr(t, "XADD with MAXLEN at the cap", err)
	})

	t.Run("Groups", func(t *testing.T) {
		x := connect(t).Streams()
		k := dsKey(t, "s")
		var ids []string
		for i := range 5 {
			id, err := x.Add(ctx, k, xsFields("n", fmt.Sprint(i)), nil)
			noErr(t, "XADD", err)
			ids = append(ids, id)
		}
		expect(t, "XGROUP CREATE", true)(x.CreateGroup(ctx, k, "g", "0", false))
		expect(t, "XGROUP CREATE again", false)(x.CreateGroup(ctx, k, "g", "$", false))
		empty := dsKey(t, "empty")
		expect(t, "XGROUP CREATE MKSTREAM", true)(x.CreateGroup(ctx, empty, "g", "$", true))
		expect(t, "XLEN of a made stream", 0)(x.Len(ctx, empty))
		xsEntryIDs(t, "XREADGROUP on an empty stream")(x.ReadGroup(ctx, empty, "g", "c", 0))

		xsEntryIDs(t, "c1 reads 2", ids[0], ids[1])(x.ReadGroup(ctx, k, "g", "c1", 2))
		xsEntryIDs(t, "c2 reads the rest", ids[2:]...)(x.ReadGroup(ctx, k, "g", "c2", 0))
		xsEntryIDs(t, "nothing new")(x.ReadGroup(ctx, k, "g", "c1", 0))
		expect(t, "XPENDING", sdk.PendingSummary{Count: 5, Lowest: ids[0], Highest: ids[4],
			Consumers: []sdk.PendingConsumer{{Name: "c1", Pending: 2}, {Name: "c2", Pending: 3}}})(x.Pending(ctx, k, "g"))
		xsEntryIDs(t, "c1 re-reads its pending", ids[0], ids[1])(
			x.ReadGroupWith(ctx, k, "g", "c1", sdk.ReadGroupOptions{After: "0"}))
		expect(t, "XACK", 2)(x.Ack(ctx, k, "g", ids[0], ids[1], ids[1]))
		expect(t, "XACK again", 0)(x.Ack(ctx, k, "g", ids[0]))
		xsEntryIDs(t, "c1 has nothing pending")(x.ReadGroupWith(ctx, k, "g", "c1", sdk.ReadGroupOptions{After: "0"}))
		// A pending entry deleted from the stream re-reads with nil fields.
		expect(t, "XDEL a pending entry", 1)(x.Del(ctx, k, ids[2]))
		hist, err := x.ReadGroupWith(ctx, k, "g", "c2", sdk.ReadGroupOptions{After: "0", Count: 1})
		noErr(t, "history", err)
		if len(hist) != 1 || hist[0].ID != ids[2] || hist[0].Fields != nil {
			t.Fatalf("deleted pending entry reads as %+v", hist)
		}
		// NOACK delivers without a pending entry.
		id6, _ := x.Add(ctx, k, xsFields("n", "6"), nil)
		xsEntryIDs(t, "NOACK read", id6)(x.ReadGroupWith(ctx, k, "g", "c3", sdk.ReadGroupOptions{NoAck: true}))
		expect(t, "pending after NOACK", int64(3))(func() (int64, error) {
			p, err := x.Pending(ctx, k, "g")
			return p.Count, err
		}())
		// SETID rewinds: entries are delivered again, to whoever reads.
		noErr(t, "XGROUP SETID", x.SetGroupID(ctx, k, "g", "0"))
		xsEntryIDs(t, "redelivery", ids[0], ids[1], ids[3], ids[4], id6)(x.ReadGroup(ctx, k, "g", "c4", 0))
		expect(t, "CREATECONSUMER", true)(x.CreateConsumer(ctx, k, "g", "c5"))
		expect(t, "CREATECONSUMER again", false)(x.CreateConsumer(ctx, k, "g", "c5"))
		expect(t, "DELCONSUMER", 5)(x.DeleteConsumer(ctx, k, "g", "c4"))
		expect(t, "XPENDING after DELCONSUMER", sdk.PendingSummary{Count: 1, Lowest: ids[2], Highest: ids[2],
			Consumers: []sdk.PendingConsumer{{Name: "c2", Pending: 1}}})(x.Pending(ctx, k, "g"))
		expect(t, "XGROUP DESTROY", true)(x.DestroyGroup(ctx, k, "g"))
		expect(t, "XGROUP DESTROY again", false)(x.DestroyGroup(ctx, k, "g"))
		_, err = x.ReadGroup(ctx, k, "g", "c1", 0)
		refused(t, "XREADGROUP on a destroyed group", err, sdk.ErrNotFound)
		expect(t, "XPENDING of an idle group", sdk.PendingSummary{})(x.Pending(ctx, empty, "g"))
	})

	t.Run("ClaimAndPending", func(t *testing.T) {
		x := connect(t).Streams()
		k := dsKey(t, "s")
		var ids []string
		for i := range 6 {
			id, _ := x.Add(ctx, k, xsFields("n", fmt.Sprint(i)), nil)
			ids = append(ids, id)
		}
		x.CreateGroup(ctx, k, "g", "0", false)
		xsEntryIDs(t, "a reads", ids[:3]...)(x.ReadGroup(ctx, k, "g", "a", 3))
		xsEntryIDs(t, "b reads", ids[3:]...)(x.ReadGroup(ctx, k, "g", "b", 3))
		pe, err := x.PendingEntries(ctx, k, "g", sdk.PendingFilter{Consumer: "a", Start: "(" + ids[0], Count: 1})
		noErr(t, "XPENDING extended", err)
		if len(pe) != 1 || pe[0].ID != ids[1] || pe[0].Consumer != "a" || pe[0].Deliveries != 1 || pe[0].Idle < 0 {
			t.Fatalf("XPENDING extended = %+v", pe)
		}
		pe, err = x.PendingEntries(ctx, k, "g", sdk.PendingFilter{MinIdle: time.Hour})
		if err != nil || len(pe) != 0 {
			t.Fatalf("XPENDING IDLE 1h = %+v %v", pe, err)
		}
		xsEntryIDs(t, "XCLAIM not idle enough")(x.Claim(ctx, k, "g", "b", time.Hour, ids[0]))
		claimed, err := x.Claim(ctx, k, "g", "b", 0, ids[0], "99-0")
		noErr(t, "XCLAIM", err)
		if len(claimed) != 1 || claimed[0].ID != ids[0] || string(claimed[0].Fields[0].Value) != "0" {
			t.Fatalf("XCLAIM = %+v", claimed)
		}
		expect(t, "XCLAIM JUSTID", []string{ids[1]})(x.ClaimIDs(ctx, k, "g", "b", 0, ids[1]))
		pe, err = x.PendingEntries(ctx, k, "g", sdk.PendingFilter{End: ids[1]})
		noErr(t, "XPENDING", err)
		if len(pe) != 2 || pe[0].Consumer != "b" || pe[0].Deliveries != 2 || pe[1].Consumer != "b" || pe[1].Deliveries != 1 {
			t.Fatalf("after XCLAIM: %+v", pe)
		}
		// AutoClaim scans in pages; a deleted entry is dropped and reported.
		x.Del(ctx, k, ids[4])
		var got, deleted []string
		cursor := "0"
		for pages := 0; ; pages++ {
			res, err := x.AutoClaim(ctx, k, "g", "c", 0, cursor, 2)
			noErr(t, "XAUTOCLAIM", err)
			got = append(got, xsIDs(res.Entries)...)
			deleted = append(deleted, res.Deleted...)
			if cursor = res.Next; cursor == "0-0" {
				break
			}
			if pages > 10 {
				t.Fatal("XAUTOCLAIM cursor does not advance")
			}
		}
		wantIDs := []string{ids[0], ids[1], ids[2], ids[3], ids[5]}
		if !slices.Equal(got, wantIDs) || !slices.Equal(deleted, []string{ids[4]}) {
			t.Fatalf("XAUTOCLAIM claimed %v deleted %v", got, deleted)
		}
		expect(t, "XPENDING after AutoClaim", sdk.PendingSummary{Count: 5, Lowest: ids[0], Highest: ids[5],
			Consumers: []sdk.PendingConsumer{{Name: "c", Pending: 5}}})(x.Pending(ctx, k, "g"))
		_, err = x.Claim(ctx, k, "nogroup", "c", 0, ids[0])
		refused(t, "XCLAIM without a group", err, sdk.ErrNotFound)
		_, err = x.AutoClaim(ctx, k, "nogroup", "c", 0, "0", 0)
		refused(t, "XAUTOCLAIM without a group", err, sdk.ErrNotFound)
	})

	// At-least-once: worker A takes entries and "crashes" without
	// acknowledging some; worker B claims them once they have been idle for
	// minIdle (real time) and every entry is processed.
	t.Run("AtLeastOnce", func(t *testing.T) {
		name := fmt.Sprint("streams-", streamsSeq.Add(1))
		cA, cB := open(t, name), open(t, name) // two workers on one store
		a, b := cA.Streams(), cB.Streams()
		k := dsKey(t, "jobs")
		var all []string
		for i := range 6 {
			id, err := a.Add(ctx, k, xsFields("job", fmt.Sprint(i)), nil)
			noErr(t, "XADD", err)
			all = append(all, id)
		}
		expect(t, "XGROUP CREATE", true)(a.CreateGroup(ctx, k, "workers", "0", false))
		processed := map[string]int{}
		taken, err := a.ReadGroup(ctx, k, "workers", "A", 3)
		readAt := time.Now()
		noErr(t, "A reads", err)
		processed[taken[0].ID]++
		expect(t, "A acks one", 1)(a.Ack(ctx, k, "workers", taken[0].ID))
		cA.Close() // A crashes with two entries pending

		rest, err := b.ReadGroup(ctx, k, "workers", "B", 0)
		noErr(t, "B reads", err)
		for _, e := range rest {
			processed[e.ID]++
			expect(t, "B acks", 1)(b.Ack(ctx, k, "workers", e.ID))
		}
		const minIdle = 200 * time.Millisecond
		res, err := b.AutoClaim(ctx, k, "workers", "B", minIdle, "0", 10)
		noErr(t, "early XAUTOCLAIM", err)
		if time.Since(readAt) < minIdle-20*time.Millisecond && len(res.Entries) != 0 {
			t.Fatalf("claimed %v before they were idle for %v", xsIDs(res.Entries), minIdle)
		}
		// Poll, with a deadline, until the entries are claimable.
		var claimed []sdk.Entry
		deadline := time.Now().Add(10 * time.Second)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for claimed = res.Entries; len(claimed) < 2; <-tick.C {
			if time.Now().After(deadline) {
				t.Fatalf("B claimed %v after 10s", xsIDs(claimed))
			}
			res, err := b.AutoClaim(ctx, k, "workers", "B", minIdle, "0", 10)
			noErr(t, "XAUTOCLAIM", err)
			claimed = append(claimed, res.Entries...)
		}
		if time.Since(readAt) < minIdle {
			t.Fatalf("claimed after %v, before min-idle %v", time.Since(readAt), minIdle)
		}
		if !slices.Equal(xsIDs(claimed), xsIDs(taken[1:])) {
			t.Fatalf("B claimed %v, want %v", xsIDs(claimed), xsIDs(taken[1:]))
		}
		pe, err := b.PendingEntries(ctx, k, "workers", sdk.PendingFilter{})
		noErr(t, "XPENDING", err)
		for _, p := range pe {
			if p.Consumer != "B" || p.Deliveries != 2 || p.Idle >= minIdle {
				t.Fatalf("after the claim: %+v", p)
			}
		}
		// A restarted A finds nothing of its own pending any more.
		a2 := open(t, name).Streams()
		xsEntryIDs(t, "A's history after the claim")(a2.ReadGroupWith(ctx, k, "workers", "A", sdk.ReadGroupOptions{After: "0"}))
		for _, e := range claimed {
			processed[e.ID]++
			expect(t, "B acks a claimed entry", 1)(b.Ack(ctx, k, "workers", e.ID))
		}
		for _, id := range all {
			if processed[id] != 1 {
				t.Fatalf("%s processed %d times (%v)", id, processed[id], processed)
			}
		}
		expect(t, "nothing pending", sdk.PendingSummary{})(b.Pending(ctx, k, "workers"))
	})

	t.Run("Wait", func(t *testing.T) {
		x := connect(t).Streams()
		k := dsKey(t, "s")
		first, _ := x.Add(ctx, k, xsFields("n", "0"), nil)
		type result struct {
			es  []sdk.Entry
			err error
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()

		// ReadWait after a known id sees the entry added later, whichever
		// of the two runs first.
		done := make(chan result, 1)
		go func() {
			es, err := x.ReadWait(wctx, k, first, 0, 5*time.Millisecond)
			done <- result{es, err}
		}()
		second, _ := x.Add(ctx, k, xsFields("n", "1"), nil)
		if r := <-done; r.err != nil || !slices.Equal(xsIDs(r.es), []string{second}) {
			t.Fatalf("ReadWait = %v %v, want [%s]", xsIDs(r.es), r.err, second)
		}
		// "$" skips what is already there.
		sctx, scancel := context.WithTimeout(ctx, 30*time.Millisecond)
		es, err := x.ReadWait(sctx, k, "$", 0, time.Millisecond)
		scancel()
		if !errors.Is(err, context.DeadlineExceeded) || len(es) != 0 {
			t.Fatalf("ReadWait $ on a quiet stream = %v %v", xsIDs(es), err)
		}
		// ReadGroupWait delivers the entry added while it waits.
		x.CreateGroup(ctx, k, "g", "$", false)
		go func() {
			es, err := x.ReadGroupWait(wctx, k, "g", "w", 10, 0)
			done <- result{es, err}
		}()
		third, _ := x.Add(ctx, k, xsFields("n", "2"), nil)
		if r := <-done; r.err != nil || !slices.Equal(xsIDs(r.es), []string{third}) {
			t.Fatalf("ReadGroupWait = %v %v, want [%s]", xsIDs(r.es), r.err, third)
		}
		// Cancelling the context ends the wait.
		cctx, ccancel := context.WithCancel(ctx)
		go func() {
			es, err := x.ReadGroupWait(cctx, k, "g", "w", 10, sdk.MaxStreamPoll)
			done <- result{es, err}
		}()
		ccancel()
		select {
		case r := <-done:
			if !errors.Is(r.err, context.Canceled) || len(r.es) != 0 {
				t.Fatalf("cancelled ReadGroupWait = %v %v", xsIDs(r.es), r.err)
			}
		case <-wctx.Done():
			t.Fatal("a cancelled ReadGroupWait did not return")
		}
		// A refused read ends the wait with its error.
		_, err = x.ReadGroupWait(wctx, k, "nogroup", "w", 10, 0)
		refused(t, "ReadGroupWait without a group", err, sdk.ErrNotFound)
	})
}

// --- benchmarks (embedded: the engine plus the SDK's reply copy) ---

func streamsBenchClient(b *testing.B) *sdk.Client {
	cfg := store.DefaultConfig()
	cfg.MaxCollectionElements = 1 << 30
	cfg.MaxCollectionBytes = cfg.MaxMemoryBytes
	cfg.MaxItemBytes = int(cfg.MaxMemoryBytes) // a stream of 100k entries is one key past the default 4 MiB
	c, err := sdk.Connect(context.Background(), fmt.Sprintf("zaris://inproc/streams-bench-%d", streamsSeq.Add(1)),
		sdk.WithEmbeddedConfig(cfg))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

var benchEntry = []sdk.Field{{Name: "event", Value: []byte("order-created")}, {Name: "payload", Value: make([]byte, 64)}}

func BenchmarkStreamsAdd(b *testing.B) {
	ctx := context.Background()
	opts := &sdk.AddOptions{Trim: &sdk.StreamTrim{MaxLen: 100000}}
	b.Run("serial", func(b *testing.B) {
		x := streamsBenchClient(b).Streams()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := x.Add(ctx, "bench", benchEntry, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, keys := range []int{1, 64} {
		b.Run(fmt.Sprintf("parallel-keys=%d", keys), func(b *testing.B) {
			x := streamsBenchClient(b).Streams()
			var next atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				key := fmt.Sprint("bench:", next.Add(1)%int64(keys))
				for pb.Next() {
					if _, err := x.Add(ctx, key, benchEntry, opts); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func BenchmarkStreamsRange10(b *testing.B) {
	ctx := context.Background()
	x := streamsBenchClient(b).Streams()
	for range 100000 {
		x.Add(ctx, "bench", benchEntry, nil)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			x.Range(ctx, "bench", "-", "+", 10)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				x.Range(ctx, "bench", "-", "+", 10)
			}
		})
	})
}

// BenchmarkStreamsReadGroupAck: one consumer step, ReadGroup of 10 then Ack
// of the 10; a consumer at the end of the stream rewinds the group.
func BenchmarkStreamsReadGroupAck(b *testing.B) {
	ctx := context.Background()
	step := func(b *testing.B, x *sdk.Streams, key, consumer string) {
		es, err := x.ReadGroup(ctx, key, "g", consumer, 10)
		if err == nil && len(es) == 0 {
			x.SetGroupID(ctx, key, "g", "0")
			es, err = x.ReadGroup(ctx, key, "g", consumer, 10)
		}
		if err != nil || len(es) == 0 {
			b.Errorf("ReadGroup: %v (%d entries)", err, len(es)) // Errorf: RunParallel goroutines cannot FailNow
			return
		}
		x.Ack(ctx, key, "g", xsIDs(es)...)
	}
	setup := func(b *testing.B, keys int) *sdk.Streams {
		x := streamsBenchClient(b).Streams()
		for i := range keys {
			key := fmt.Sprint("bench:", i)
			for range 10000 {
				x.Add(ctx, key, benchEntry, nil)
			}
			x.CreateGroup(ctx, key, "g", "0", false)
		}
		return x
	}
	b.Run("serial", func(b *testing.B) {
		x := setup(b, 1)
		b.ReportAllocs()
		for b.Loop() {
			step(b, x, "bench:0", "c")
		}
	})
	b.Run("parallel-64-keys", func(b *testing.B) {
		x := setup(b, 64)
		var next atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			w := next.Add(1)
			key, consumer := fmt.Sprint("bench:", w%64), fmt.Sprint("c", w)
			for pb.Next() {
				step(b, x, key, consumer)
			}
		})
	})
}

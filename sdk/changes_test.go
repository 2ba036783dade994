package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/clustertest"
)

func nextChange(t *testing.T, f *sdk.ChangeFeed) sdk.Change {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := f.Next(ctx)
	if err != nil {
		t.Fatalf("next change: %v", err)
	}
	return ch
}

// noChange checks nothing more arrives for a moment (a duplicate would).
func noChange(t *testing.T, f *sdk.ChangeFeed) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if ch, err := f.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unexpected change %+v %v", ch, err)
	}
}

// runChangesSuite: the change feed (R-OPS-4) resumes exactly after its
// cursor, and a cursor whose history is gone is refused loudly or
// resynchronised from a snapshot.
func runChangesSuite(t *testing.T, c *sdk.Client) {
	ctx := context.Background()
	f, err := c.Changes(ctx, &sdk.ChangesOptions{Prefix: "feed:"})
	if err != nil {
		t.Fatal(err)
	}
	c.Put(ctx, "other", []byte("x"), nil) // outside the prefix
	c.Put(ctx, "feed:a", []byte("1"), nil)
	c.Delete(ctx, "feed:a")
	c.Do(ctx, sdk.NewCmd(sdk.CmdHSet, "feed:a", "f", "v"))
	for i, want := range []sdk.WatchEventKind{sdk.WatchPut, sdk.WatchDelete, sdk.WatchCommand} {
		if ch := nextChange(t, f); ch.Kind != want || ch.Key != "feed:a" {
			t.Fatalf("change %d: %+v, want %v", i, ch, want)
		}
	}
	saved := f.Cursor().String()
	f.Close()

	// Changes made while nobody consumed: resuming from the stored cursor
	// replays exactly them, then goes live.
	c.Put(ctx, "feed:a", []byte("2"), nil)
	c.Put(ctx, "feed:b", []byte("3"), nil)
	cur, err := sdk.ParseCursor(saved)
	if err != nil {
		t.Fatal(err)
	}
	f, err = c.Changes(ctx, &sdk.ChangesOptions{Prefix: "feed:", Cursor: cur})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for range 2 {
		ch := nextChange(t, f)
		got[ch.Key] = string(ch.Value)
	}
	if fmt.Sprint(got) != "map[feed:a:2 feed:b:3]" {
		t.Fatalf("replayed %v", got)
	}
	c.Put(ctx, "feed:c", []byte("4"), nil)
	if ch := nextChange(t, f); ch.Key != "feed:c" || string(ch.Value) != "4" {
		t.Fatalf("live change %+v", ch)
	}
	noChange(t, f)
	cur = f.Cursor()
	f.Close()

	// Push feed:a's segment past its op-log (1024 operations by default,
	// no feed retention): that part of the cursor has expired.
	for i := range 1100 {
		c.Put(ctx, "feed:a", []byte(fmt.Sprint("x", i)), nil)
	}
	f, err = c.Changes(ctx, &sdk.ChangesOptions{Prefix: "feed:", Cursor: cur})
	if err == nil {
		_, err = f.Next(ctx) // a cluster learns it when the segment's stream opens
		f.Close()
	}
	var ce *sdk.CursorExpiredError
	if !errors.Is(err, sdk.ErrCursorExpired) || !errors.As(err, &ce) {
		t.Fatalf("expired cursor: %v", err)
	}
	f, err = c.Changes(ctx, &sdk.ChangesOptions{Prefix: "feed:", Cursor: cur, ResyncOnExpired: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ch := nextChange(t, f)
	if ch.Kind != sdk.WatchResync || ch.Segment != ce.Segment || len(ch.Records) != 1 ||
		ch.Records[0].Key != "feed:a" || string(ch.Records[0].Value) != "x1099" {
		t.Fatalf("resync %+v", ch)
	}
	c.Put(ctx, "feed:a", []byte("after"), nil)
	if ch := nextChange(t, f); ch.Key != "feed:a" || string(ch.Value) != "after" {
		t.Fatalf("after the resync: %+v", ch)
	}
	noChange(t, f)
}

func TestChangesEmbedded(t *testing.T) {
	c, err := sdk.Connect(context.Background(), "zaris://inproc/changes-suite")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	runChangesSuite(t, c)
}

func TestChangesRemote(t *testing.T) {
	ts := startServer(t)
	runChangesSuite(t, realConnect(t, "zaris://"+ts.addr+"/default"))
}

func TestChangesRealCluster(t *testing.T) {
	cl := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, NoHTTP: true})
	runChangesSuite(t, realConnect(t, cl.ConnString()))
}

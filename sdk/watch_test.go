package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/zaris-io/zaris/internal/testscale"
	"testing"
	"time"

	"github.com/zaris-io/zaris/sdk"
)

func recvEvent(t *testing.T, s *sdk.WatchStream) sdk.WatchEvent {
	t.Helper()
	select {
	case ev, ok := <-s.Events():
		if !ok {
			t.Fatalf("watch ended: %v", s.Err())
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return sdk.WatchEvent{}
}

func recvMessage(t *testing.T, s *sdk.Subscription) sdk.Message {
	t.Helper()
	select {
	case m, ok := <-s.Messages():
		if !ok {
			t.Fatalf("subscription ended: %v", s.Err())
		}
		return m
	case <-time.After(testscale.D(5 * time.Second)):
		t.Fatalf("no message within %v", testscale.D(5*time.Second))
	}
	return sdk.Message{}
}

func runWatchSuite(t *testing.T, connect func(t *testing.T) *sdk.Client) {
	ctx := context.Background()
	t.Run("KeyEvents", func(t *testing.T) {
		c := connect(t)
		w, err := c.Watch().Key(ctx, "k", &sdk.WatchOptions{IncludeValues: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		c.Put(ctx, "other", []byte("x"), nil)
		c.Put(ctx, "k", []byte("v1"), nil)
		c.Expire(ctx, "k", time.Hour)
		c.Delete(ctx, "k")
		c.Do(ctx, sdk.NewCmd(sdk.CmdLPush, "k", "a"))
		c.Put(ctx, "k", []byte("short"), &sdk.PutOptions{TTL: 20 * time.Millisecond})
		want := []sdk.WatchEventKind{sdk.WatchPut, sdk.WatchExpire, sdk.WatchDelete, sdk.WatchCommand, sdk.WatchPut, sdk.WatchExpired}
		for i, k := range want {
			ev := recvEvent(t, w)
			if ev.Kind != k || ev.Key != "k" {
				t.Fatalf("event %d: %v %q, want %v", i, ev.Kind, ev.Key, k)
			}
			if i == 0 && string(ev.Value) != "v1" {
				t.Fatalf("value %q", ev.Value)
			}
			if k == sdk.WatchCommand && ev.Command != sdk.CmdLPush {
				t.Fatalf("command %v", ev.Command)
			}
		}
	})
	t.Run("PrefixSnapshotThenEvents", func(t *testing.T) {
		c := connect(t)
		for i := range 50 {
			c.Put(ctx, fmt.Sprintf("snap:%02d", i), []byte(fmt.Sprint(i)), nil)
		}
		c.Put(ctx, "elsewhere", []byte("x"), nil)
		w, err := c.Watch().Prefix(ctx, "snap:", &sdk.WatchOptions{Snapshot: true, IncludeValues: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if n := len(w.Snapshot()); n != 50 {
			t.Fatalf("snapshot of %d records", n)
		}
		for _, r := range w.Snapshot() {
			if r.Version != 1 || len(r.Value) == 0 {
				t.Fatalf("snapshot record %+v", r)
			}
		}
		c.Put(ctx, "snap:07", []byte("new"), nil)
		ev := recvEvent(t, w)
		if ev.Key != "snap:07" || string(ev.Value) != "new" || ev.Version != 2 {
			t.Fatalf("event %+v", ev)
		}
	})
	t.Run("CloseEndsTheStream", func(t *testing.T) {
		c := connect(t)
		w, err := c.Watch().Prefix(ctx, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		w.Close()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case _, ok := <-w.Events():
				if !ok {
					if w.Err() != nil {
						t.Fatalf("closed watch err %v", w.Err())
					}
					return
				}
			case <-deadline:
				t.Fatal("events channel not closed after Close")
			}
		}
	})
	t.Run("PubSub", func(t *testing.T) {
		c := connect(t)
		sub, err := c.PubSub().Subscribe(ctx, "news")
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		psub, err := c.PubSub().PSubscribe(ctx, "n*")
		if err != nil {
			t.Fatal(err)
		}
		defer psub.Close()
		// The count is the publishing node's subscribers: both on one
		// node; on a cluster, where each subscription lives on the home
		// node of its channel or pattern, at least the channel's.
		n, err := c.PubSub().Publish(ctx, "news", []byte("hello"))
		if err != nil || n < 1 || n > 2 {
			t.Fatalf("publish: %d %v", n, err)
		}
		if m := recvMessage(t, sub); m.Channel != "news" || string(m.Payload) != "hello" || m.Pattern != "" {
			t.Fatalf("message %+v", m)
		}
		if m := recvMessage(t, psub); m.Pattern != "n*" {
			t.Fatalf("pattern message %+v", m)
		}
		if n, _ := c.PubSub().Publish(ctx, "weather", nil); n != 0 {
			t.Fatalf("nobody listens to weather, got %d", n)
		}
		if _, err := c.PubSub().Subscribe(ctx); !errors.Is(err, sdk.ErrBadRequest) {
			t.Fatalf("empty subscribe: %v", err)
		}
	})
}

func TestWatchSuiteEmbedded(t *testing.T) {
	runWatchSuite(t, func(t *testing.T) *sdk.Client {
		storeSeq++
		c, err := sdk.Connect(context.Background(), fmt.Sprintf("zaris://inproc/watch-%d", storeSeq))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	})
}

func TestWatchSuiteRemote(t *testing.T) {
	runWatchSuite(t, func(t *testing.T) *sdk.Client {
		ts := startServer(t)
		c, err := sdk.Connect(context.Background(), "zaris://"+ts.addr+"/default")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	})
}

// A slow consumer does not stall the connection: other calls keep working
// and the watch ends with ErrWatchOverflow.
func TestRemoteSlowWatcherDoesNotStallTheConnection(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	c, err := sdk.Connect(ctx, "zaris://"+ts.addr+"/default")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w, err := c.Watch().Prefix(ctx, "flood:", &sdk.WatchOptions{Buffer: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 2000 {
		if r, err := c.Put(ctx, fmt.Sprint("flood:", i), []byte("x"), nil); err != nil || !r.OK() {
			t.Fatalf("put %d while a watcher lags: %v %v", i, r.Status, err)
		}
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-w.Events():
			if !ok {
				if !errors.Is(w.Err(), sdk.ErrWatchOverflow) {
					t.Fatalf("err = %v", w.Err())
				}
				return
			}
		case <-deadline:
			t.Fatal("the lagging watch never ended")
		}
	}
}

// Closing a client while its subscription is receiving must not race the
// read loop's delivery against the close of the stream (a send on a closed
// channel crashed the process).
func TestRemoteCloseWhileSubscriptionReceives(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	pub, err := sdk.Connect(ctx, "zaris://"+ts.addr+"/default")
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	for round := range 20 {
		sub, err := sdk.Connect(ctx, "zaris://"+ts.addr+"/default")
		if err != nil {
			t.Fatal(err)
		}
		s, err := sub.PubSub().Subscribe(ctx, "flood")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range 500 {
				pub.PubSub().Publish(ctx, "flood", []byte(fmt.Sprint(round, i)))
			}
		}()
		<-s.Messages() // traffic is flowing
		sub.Close()
		<-done
		for range s.Messages() { // drains and ends
		}
	}
}

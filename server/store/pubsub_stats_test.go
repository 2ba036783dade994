package store

import (
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testscale"
)

// Broker.Stats counts channels, channel and pattern subscriptions, the
// messages delivered (a pattern delivery too) and the subscriptions ended
// for falling behind.
func TestPubSubStats(t *testing.T) {
	s, _ := newTestStore(t)
	b := s.PubSub()
	a, p := b.NewSubscription(8), b.NewSubscription(1)
	a.Subscribe("news", "sport")
	p.PSubscribe("n*")
	if st := b.Stats(); st != (PubSubStats{Channels: 2, Patterns: 1, Subscriptions: 2}) {
		t.Fatalf("after subscribing: %+v", st)
	}
	if n := b.Publish("news", []byte("1")); n != 2 {
		t.Fatalf("published to %d", n)
	}
	if n := b.Publish("news", []byte("2")); n != 1 { // p's buffer of 1 is full: it overflows
		t.Fatalf("published to %d", n)
	}
	st := b.Stats()
	if st.Delivered != 3 || st.Overflowed != 1 {
		t.Fatalf("after publishing: %+v", st)
	}
	a.Close()
	testscale.Eventually(t, 5*time.Second, time.Millisecond, "the overflowed subscription is removed", func() bool { return b.Stats().Patterns == 0 })
	if st := b.Stats(); st.Channels != 0 || st.Subscriptions != 0 || st.Delivered != 3 {
		t.Fatalf("after closing: %+v", st)
	}
}

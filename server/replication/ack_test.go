package replication

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server/store"
)

// ackReader reads the acks a replicaAcker writes into the far end of a
// pipe, one frame per receive.
func ackReader(t *testing.T, far net.Conn) <-chan []ack {
	t.Helper()
	out := make(chan []ack, 16)
	go func() {
		defer close(out)
		fr := frameReader{r: bufio.NewReader(far)}
		for {
			ft, body, err := fr.next()
			if err != nil {
				return
			}
			if ft != fAck {
				t.Errorf("frame %d from the acker", ft)
				return
			}
			acks, err := decodeAcks(body, nil)
			if err != nil {
				t.Error(err)
				return
			}
			out <- acks
		}
	}()
	return out
}

func newAckerPair(t *testing.T, linger time.Duration) (*replicaAcker, *store.Store, <-chan []ack) {
	t.Helper()
	sc := store.DefaultConfig()
	sc.Segments = 4
	st, err := store.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	near, far := net.Pipe()
	t.Cleanup(func() { near.Close(); far.Close() })
	a := &replicaAcker{st: st, conn: near, w: bufio.NewWriter(near), enc: newEncoder(), linger: linger, timeout: testscale.D(5 * time.Second)}
	t.Cleanup(a.close)
	return a, st, ackReader(t, far)
}

func nextAck(t *testing.T, got <-chan []ack, within time.Duration) []ack {
	t.Helper()
	select {
	case a := <-got:
		return a
	case <-time.After(within):
		t.Fatalf("no ack within %v", within)
		return nil
	}
}

// Sync (no linger): every drained read batch is acknowledged at once, at
// the segment's revision — a sync write waits for exactly this ack.
func TestReplicaAckerSyncAcksEachBatch(t *testing.T) {
	a, st, got := newAckerPair(t, 0)
	seg := uint16(1)
	for i := range 3 {
		st.Segment(seg).Put("k", []byte{byte(i)}, nil)
		a.touch(seg)
		a.flush()
		acks := nextAck(t, got, testscale.D(5*time.Second))
		if len(acks) != 1 || acks[0].Segment != seg || acks[0].Revision != st.Segment(seg).Revision() {
			t.Fatalf("batch %d: acks %+v, want segment %d at revision %d", i, acks, seg, st.Segment(seg).Revision())
		}
	}
	// Nothing applied and no ping: nothing to say.
	a.flush()
	select {
	case acks := <-got:
		t.Fatalf("an ack with nothing applied: %+v", acks)
	default:
	}
}

// Async (linger): a burst inside one linger gets the first ack at once and
// one more for the rest once the linger has passed — the last writes of a
// burst are never left unacknowledged (the low-water mark and WAIT read
// these acks).
func TestReplicaAckerAsyncCoalescesAndSendsTheTail(t *testing.T) {
	linger := testscale.D(200 * time.Millisecond)
	a, st, got := newAckerPair(t, linger)
	g := st.Segment(2)
	g.Put("a", []byte("1"), nil)
	a.touch(2)
	a.flush()
	if acks := nextAck(t, got, testscale.D(5*time.Second)); len(acks) != 1 || acks[0].Revision != g.Revision() {
		t.Fatalf("first ack %+v", acks)
	}
	// Three more batches inside the linger: held, then one ack for all.
	for i := range 3 {
		g.Put("b", []byte{byte(i)}, nil)
		a.touch(2)
		a.flush()
	}
	st.Segment(3).Put("c", []byte("x"), nil)
	a.touch(3)
	a.flush()
	acks := nextAck(t, got, testscale.D(5*time.Second))
	want := map[uint16]uint64{2: g.Revision(), 3: st.Segment(3).Revision()}
	if len(acks) != 2 {
		t.Fatalf("tail ack %+v, want segments 2 and 3", acks)
	}
	for _, k := range acks {
		if want[k.Segment] != k.Revision {
			t.Fatalf("tail ack %+v, want %v", acks, want)
		}
	}
	select {
	case extra := <-got:
		t.Fatalf("a burst inside one linger sent a third ack: %+v", extra)
	case <-time.After(2 * linger):
	}
}

// A ping with nothing applied is still answered: the owner's session
// counts on an answer per heartbeat.
func TestReplicaAckerAnswersPing(t *testing.T) {
	a, _, got := newAckerPair(t, time.Hour)
	a.pinged()
	a.flush()
	if acks := nextAck(t, got, testscale.D(5*time.Second)); len(acks) != 0 {
		t.Fatalf("ping answer %+v, want an empty ack", acks)
	}
}

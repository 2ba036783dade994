package hybrid

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/sdk"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	for _, e := range []envelope{
		{created: 1, expires: 2, local: 3, physical: 4, observed: 5, payload: []byte("v")},
		{created: -1, expires: 1 << 62, tags: []string{"a", "", "{x}", "ü"}, payload: nil},
		{tags: []string{string(make([]byte, 300))}, payload: make([]byte, 1000)},
	} {
		got, err := decodeEnvelope(e.encode())
		require.NoError(t, err)
		assert.Equal(t, e.created, got.created)
		assert.Equal(t, e.expires, got.expires)
		assert.Equal(t, e.local, got.local)
		assert.Equal(t, e.physical, got.physical)
		assert.Equal(t, e.observed, got.observed)
		assert.Equal(t, len(e.tags), len(got.tags))
		for i := range e.tags {
			assert.Equal(t, e.tags[i], got.tags[i])
		}
		assert.Equal(t, len(e.payload), len(got.payload))
	}
	for _, bad := range [][]byte{nil, {envMagic}, make([]byte, envHeaderSize+1), append([]byte{envMagic}, make([]byte, 40)...)} {
		if len(bad) > envHeaderSize {
			bad[envHeaderSize] = 0xff // a tag count that cannot fit
		}
		_, err := decodeEnvelope(bad)
		assert.Error(t, err)
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	f.Add((&envelope{created: 1, tags: []string{"t"}, payload: []byte("p")}).encode())
	f.Add([]byte{envMagic})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEnvelope(b)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to an equivalent envelope.
		again, err := decodeEnvelope(e.encode())
		if err != nil || again.created != e.created || len(again.tags) != len(e.tags) || string(again.payload) != string(e.payload) {
			t.Fatalf("re-encode mismatch: %v", err)
		}
	})
}

var internalSeq atomic.Int64

func inproc(t *testing.T) *sdk.Client {
	t.Helper()
	c, err := sdk.Connect(context.Background(), fmt.Sprintf("zaris://inproc/hybrid-internal-%d", internalSeq.Add(1)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func collect(b *JournalBackplane) (func() []Invalidation, func()) {
	var mu sync.Mutex // guards got
	var got []Invalidation
	unsub := b.Subscribe(func(inv Invalidation) {
		mu.Lock()
		got = append(got, inv)
		mu.Unlock()
	})
	return func() []Invalidation {
		mu.Lock()
		defer mu.Unlock()
		return append([]Invalidation(nil), got...)
	}, unsub
}

// A sequence number taken but never written (a publisher that died between
// its two writes) is waited for, then turned into InvalidateAll; later
// messages still arrive.
func TestJournalHoleBecomesInvalidateAll(t *testing.T) {
	ctx := context.Background()
	c := inproc(t)
	// A long poll interval: the test drives the reader with PollNow.
	opts := JournalOptions{PollInterval: time.Hour, Retention: 5 * time.Hour, MissingGrace: 20 * time.Millisecond}
	pub, err := NewJournalBackplane(ctx, c, opts)
	require.NoError(t, err)
	defer pub.Close()
	require.NoError(t, pub.Publish(ctx, Invalidation{Kind: InvalidateKey, Key: "first"}))

	reader, err := NewJournalBackplane(ctx, c, opts)
	require.NoError(t, err)
	defer reader.Close()
	got, unsub := collect(reader)
	defer unsub()

	// Take sequence 2 without writing its entry.
	r, err := c.Get(ctx, pub.seqKey)
	require.NoError(t, err)
	id, seq, ok := decodeHead(r)
	require.True(t, ok)
	w, err := c.Put(ctx, pub.seqKey, encodeHead(id, seq+1), &sdk.PutOptions{IfMatchVersion: r.Version})
	require.NoError(t, err)
	require.True(t, w.OK())
	require.NoError(t, pub.Publish(ctx, Invalidation{Kind: InvalidateKey, Key: "third"}))

	require.NoError(t, reader.PollNow(ctx))
	assert.Empty(t, got(), "the reader started after 'first' and waits at the hole")
	deadline := time.Now().Add(10 * time.Second)
	for len(got()) == 0 {
		require.True(t, time.Now().Before(deadline), "hole never declared lost")
		require.NoError(t, reader.PollNow(ctx))
	}
	assert.Equal(t, []Invalidation{{Kind: InvalidateAll}}, got())

	require.NoError(t, pub.Publish(ctx, Invalidation{Kind: InvalidateKey, Key: "fourth"}))
	require.NoError(t, reader.PollNow(ctx))
	assert.Equal(t, "fourth", got()[len(got())-1].Key)
}

// A journal whose head key is lost starts over under a new id; readers
// clear their L1 instead of trusting sequence numbers from another journal.
func TestJournalResetBecomesInvalidateAll(t *testing.T) {
	ctx := context.Background()
	c := inproc(t)
	opts := JournalOptions{PollInterval: time.Hour, Retention: 5 * time.Hour}
	b, err := NewJournalBackplane(ctx, c, opts)
	require.NoError(t, err)
	defer b.Close()
	got, unsub := collect(b)
	defer unsub()

	require.NoError(t, b.Publish(ctx, Invalidation{Kind: InvalidateTag, Tag: "t", At: 9}))
	require.NoError(t, b.PollNow(ctx))
	require.Equal(t, []Invalidation{{Kind: InvalidateTag, Tag: "t", At: 9}}, got(), "a journal created after the reader is read from its start")

	_, err = c.Delete(ctx, b.seqKey)
	require.NoError(t, err)
	require.NoError(t, b.Publish(ctx, Invalidation{Kind: InvalidateKey, Key: "k"}))
	require.NoError(t, b.PollNow(ctx))
	assert.Equal(t, InvalidateAll, got()[1].Kind)
}

// InvalidateAll from the transport drops every L1 copy of a cache: reads go
// to L2 again.
func TestCacheAppliesInvalidateAll(t *testing.T) {
	ctx := context.Background()
	bp := NewLocalBackplane()
	h := New(inproc(t), inproc(t), Options{Backplane: bp})
	defer h.Close()
	for _, k := range []string{"a", "b"} {
		_, err := GetOrCreate(ctx, h, k, func(context.Context) (string, error) { return "v-" + k, nil }, nil)
		require.NoError(t, err)
	}
	require.NoError(t, bp.Publish(ctx, Invalidation{Kind: InvalidateAll}))
	for _, k := range []string{"a", "b"} {
		v, err := GetOrCreate(ctx, h, k, func(context.Context) (string, error) { return "", fmt.Errorf("must come from L2") }, nil)
		require.NoError(t, err)
		assert.Equal(t, "v-"+k, v)
	}
	assert.Equal(t, uint64(2), h.Stats().L2Hits)
	assert.Equal(t, uint64(0), h.Stats().L1Hits)
}

// The janitor frees materialized values whose L1 record is gone.
func TestSweepDropsOrphanedMaterializedValues(t *testing.T) {
	ctx := context.Background()
	l1 := inproc(t)
	h := New(l1, inproc(t), Options{SweepInterval: time.Hour})
	defer h.Close()
	for _, k := range []string{"a", "b"} {
		_, err := GetOrCreate(ctx, h, k, func(context.Context) (int, error) { return 1, nil }, nil)
		require.NoError(t, err)
	}
	_, err := l1.Delete(ctx, h.l1Key("a"))
	require.NoError(t, err)
	h.sweep(ctx)
	_, aLive := h.mat.Load("a")
	_, bLive := h.mat.Load("b")
	assert.False(t, aLive)
	assert.True(t, bLive)
}

package hybrid

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInvalidationFrameRoundTrip(t *testing.T) {
	for _, inv := range []Invalidation{
		{Kind: InvalidateKey, Source: "a1b2", Namespace: "hc:", Key: "product:1"},
		{Kind: InvalidateTag, Source: "x", Namespace: "", Tag: "ü{tag}", At: 1<<62 + 7},
		{Kind: InvalidateTag, At: -5},
		{Kind: InvalidateAll},
		{Kind: InvalidateKey, Key: string(make([]byte, 5000))},
		{Kind: InvalidateKey, Source: "s", Namespace: "hc:", Key: "k", SentAt: 1_796_000_000_123_456_789},
	} {
		frame := encodeInvalidation(nil, 0xDEADBEEF, &inv)
		origin, got, err := decodeInvalidation(frame)
		require.NoError(t, err)
		assert.Equal(t, uint64(0xDEADBEEF), origin)
		assert.Equal(t, inv, got)
		// Every truncation, and any trailing byte, is refused.
		for n := range len(frame) {
			_, _, err := decodeInvalidation(frame[:n])
			require.ErrorIs(t, err, errBadInvalidation, "truncated to %d", n)
		}
		_, _, err = decodeInvalidation(append(frame, 0))
		require.ErrorIs(t, err, errBadInvalidation)
	}
	for _, bad := range [][]byte{
		nil,
		{invMagic + 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0}, // another version
		{invMagic, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},     // kind 0
		{invMagic, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0},     // kind 4
		{invMagic, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F},
	} {
		_, _, err := decodeInvalidation(bad)
		assert.ErrorIs(t, err, errBadInvalidation, "% x", bad)
	}
}

// A version-1 frame (no SentAt), as an older instance sends it, still
// decodes, with SentAt 0 (unknown).
func TestInvalidationFrameVersion1StillRead(t *testing.T) {
	inv := Invalidation{Kind: InvalidateTag, Source: "old", Namespace: "hc:", Tag: "t", At: 42, SentAt: 7}
	frame := encodeInvalidation(nil, 9, &inv)
	frame[0] = invMagicV1
	frame = frame[:len(frame)-1] // SentAt 7 is one varint byte
	origin, got, err := decodeInvalidation(frame)
	require.NoError(t, err)
	inv.SentAt = 0
	assert.Equal(t, uint64(9), origin)
	assert.Equal(t, inv, got)
	_, _, err = decodeInvalidation(append(frame, 14)) // a v1 frame has no SentAt
	require.ErrorIs(t, err, errBadInvalidation)
}

func FuzzDecodeInvalidation(f *testing.F) {
	f.Add(encodeInvalidation(nil, 1, &Invalidation{Kind: InvalidateTag, Source: "s", Namespace: "n", Tag: "t", At: 9}))
	f.Add([]byte{invMagic})
	f.Fuzz(func(t *testing.T, b []byte) {
		origin, inv, err := decodeInvalidation(b)
		if err != nil {
			return
		}
		// What decodes survives a round trip (varints need not be minimal
		// on input, so the bytes may differ).
		origin2, inv2, err := decodeInvalidation(encodeInvalidation(nil, origin, &inv))
		require.NoError(t, err)
		assert.Equal(t, origin, origin2)
		assert.Equal(t, inv, inv2)
	})
}

func TestPubSubRetryDelay(t *testing.T) {
	for _, o := range []PubSubOptions{{}, {MinBackoff: time.Minute, MaxBackoff: time.Hour}, {MinBackoff: time.Nanosecond, MaxBackoff: time.Nanosecond}} {
		b := &PubSubBackplane{o: o.withDefaults()}
		for attempt := 1; attempt < 100; attempt++ {
			d := b.retryDelay(attempt)
			require.GreaterOrEqual(t, d, b.o.MinBackoff/2, "attempt %d", attempt)
			require.LessOrEqual(t, d, b.o.MaxBackoff, "attempt %d", attempt)
			if attempt > 40 {
				require.GreaterOrEqual(t, d, b.o.MaxBackoff/2, "capped, attempt %d", attempt)
			}
		}
	}
}

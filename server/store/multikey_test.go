package store

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/kv"
)

// keysOfTwoSegments returns two keys of different segments.
func keysOfTwoSegments(t *testing.T, s *Store) (string, string) {
	t.Helper()
	a := "a"
	for i := 0; i < 1000; i++ {
		b := "b" + string(rune('0'+i%10)) + string(rune('a'+i/10%26)) + string(rune('a'+i/260))
		if s.SegmentFor(b) != s.SegmentFor(a) {
			return a, b
		}
	}
	t.Fatal("no two keys of different segments")
	return "", ""
}

// A multi-key command reaches only the segments its caller holds: through
// one segment a key of another is CROSSSLOT and nothing changes; through a
// multi-segment atomic view it runs.
func TestMultiKeyCommandsReachHeldSegmentsOnly(t *testing.T) {
	s, _ := newTestStore(t)
	a, b := keysOfTwoSegments(t, s)
	mustReply(t, run(t, s, kv.CmdRPush, a, "x", "y"), kv.StatusSuccess)
	r := run(t, s, kv.CmdLMove, a, b, "LEFT", "RIGHT")
	require.Equal(t, kv.StatusBadRequest, r.Status)
	require.Contains(t, r.Message, "CROSSSLOT")
	require.Equal(t, "[x y]", flat(run(t, s, kv.CmdLRange, a, "0", "-1")), "a refused move changed the source")

	ids := []uint16{s.SegmentFor(a).ID(), s.SegmentFor(b).ID()}
	s.AtomicallyMany(ids, func(v *Atomic) {
		require.Equal(t, "x", flat(v.Exec(kv.NewCmd(kv.CmdLMove, a, b, "LEFT", "RIGHT"))))
		require.Equal(t, "y", flat(v.Exec(kv.NewCmd(kv.CmdLMove, a, b, "LEFT", "RIGHT"))))
	})
	require.Equal(t, "0", flat(run(t, s, kv.CmdLLen, a)), "the emptied source is deleted")
	require.Equal(t, "[x y]", flat(run(t, s, kv.CmdLRange, b, "0", "-1")))
}

// A store replaces a destination of any kind and drops its TTL (Redis's
// setKey); an empty result deletes it; a source of another kind is
// WRONGTYPE before the destination is touched.
func TestSetStoreReplacesTheDestination(t *testing.T) {
	s, _ := newTestStore(t)
	mustReply(t, run(t, s, kv.CmdSAdd, "{t}s1", "a", "b"), kv.StatusSuccess)
	mustReply(t, run(t, s, kv.CmdSAdd, "{t}s2", "b", "c"), kv.StatusSuccess)
	mustStatus(t, s.Put("{t}d", []byte("v"), &kv.PutOptions{TTL: time.Hour}), kv.StatusSuccess)
	require.Equal(t, "2", flat(run(t, s, kv.CmdSDiffStore, "{t}d", "{t}s1", "{t}nokey")))
	require.Equal(t, "[a b]", setFlat(run(t, s, kv.CmdSMembers, "{t}d")))
	require.Zero(t, s.TimeToLive("{t}d").TTL, "the store kept the old TTL")
	mustStatus(t, s.Put("{t}str", []byte("v"), nil), kv.StatusSuccess)
	mustReply(t, run(t, s, kv.CmdSUnionStore, "{t}d", "{t}s1", "{t}str"), kv.StatusWrongType)
	require.Equal(t, "[a b]", setFlat(run(t, s, kv.CmdSMembers, "{t}d")), "a refused store changed the destination")
	require.Equal(t, "0", flat(run(t, s, kv.CmdSInterStore, "{t}d", "{t}s1", "{t}nokey")))
	require.Equal(t, kv.StatusNotFound, s.Get("{t}d").Status)
	require.Equal(t, "1", flat(run(t, s, kv.CmdSInterStore, "{t}d", "{t}s1", "{t}s2")))
	require.Equal(t, "[b]", setFlat(run(t, s, kv.CmdSMembers, "{t}d")))
}

// setFlat is flat of a set reply, its members sorted (a set answers in its
// own order, as in Redis).
func setFlat(r kv.Reply) string {
	ms := make([]string, len(r.Array))
	for i, e := range r.Array {
		ms[i] = string(e.Bulk)
	}
	slices.Sort(ms)
	return "[" + strings.Join(ms, " ") + "]"
}

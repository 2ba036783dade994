package resp_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server"
)

// Every sorted-set and geo mutation logs a deterministic effect (pops as
// the ZREM of what they took, *STORE as the destination's whole content,
// GEOADD as a ZADD of exact scores): a replica replaying them holds the
// owner's keys record for record. A seeded mix of writes over RESP on a
// 3-node cluster with sync replication, then the segment digests (content,
// versions, expiries) of owner and replica compared (issue #13 item 5).
func TestZSetGeoWritesConvergeOnReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	_, owner, replicas, tag := syncCluster(t, 3, 2, server.WriteQuorumAll)
	replica := replicas[0]
	rc := newClient(t, owner)
	ctx := ctxT(t)
	keys := []string{tag + "a", tag + "b", tag + "c", tag + "g"}
	r := rand.New(rand.NewPCG(5, 6))
	member := func() string { return "m" + strconv.Itoa(r.IntN(30)) }
	key := func() string { return keys[r.IntN(3)] }
	score := func() string {
		return []string{"1", "2.5", "-0", "inf", "-inf", "0.1", "1e300", strconv.Itoa(r.IntN(100))}[r.IntN(8)]
	}
	seg := owner.Store().SegmentFor(keys[0])
	nonEmpty := 0
	for i := range 800 {
		var c []any
		switch r.IntN(16) {
		case 0, 1, 2:
			c = []any{"ZADD", key(), score(), member(), score(), member()}
		case 3:
			c = []any{"ZINCRBY", key(), score(), member()}
		case 4:
			c = []any{[]string{"ZPOPMIN", "ZPOPMAX"}[r.IntN(2)], key(), r.IntN(3)}
		case 5:
			c = []any{"ZMPOP", 2, key(), key(), "MAX", "COUNT", 2}
		case 6:
			c = []any{"BZPOPMIN", key(), key(), "0.01"}
		case 7:
			c = []any{"ZREMRANGEBYRANK", key(), r.IntN(3), r.IntN(5) - 2}
		case 8:
			c = []any{"ZREMRANGEBYSCORE", key(), "(" + strconv.Itoa(r.IntN(50)), "+inf"}
		case 9:
			c = []any{"ZREMRANGEBYLEX", key(), "[m1", "(m2"}
		case 10:
			c = []any{[]string{"ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"}[r.IntN(3)], key(), 2, key(), key()}
		case 11:
			c = []any{"ZRANGESTORE", key(), key(), "(1", "+inf", "BYSCORE", "LIMIT", 1, 5}
		case 12:
			c = []any{"GEOADD", keys[3], strconv.FormatFloat(r.Float64()*360-180, 'f', 5, 64),
				strconv.FormatFloat(r.Float64()*170-85, 'f', 5, 64), member()}
		case 13:
			c = []any{"GEOSEARCHSTORE", key(), keys[3], "FROMLONLAT", r.IntN(360) - 180, r.IntN(170) - 85,
				"BYRADIUS", 1 + r.IntN(5000), "km", "STOREDIST"}
		case 14:
			c = []any{"GEORADIUS", keys[3], r.IntN(360) - 180, r.IntN(170) - 85, 3000, "km", "STORE", key()}
		default:
			c = []any{"SET", key(), "string now"} // a *STORE then overwrites another type
		}
		err := rc.Do(ctx, c...).Err()
		// A node starved past the freeze threshold answers TRYAGAIN until it
		// re-confirms the map (D22): refused before it ran, asked again.
		for deadline := time.Now().Add(testscale.D(20 * time.Second)); err != nil && strings.HasPrefix(err.Error(), "TRYAGAIN") && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond) // poll interval
			err = rc.Do(ctx, c...).Err()
		}
		if err != nil && err.Error() != "redis: nil" {
			require.Contains(t, err.Error(), "WRONGTYPE", "command %d %v", i, c)
		}
		// Sync replication: the reply came once the replica applied it.
		require.True(t, replicated(owner, replica, keys[0]))
		d := seg.Digest()
		require.Equal(t, d, replica.Store().Segment(seg.ID()).Digest(), "after %v the replica's keys differ from the owner's", c)
		if d.Count > 0 {
			nonEmpty++
		}
	}
	require.Greater(t, nonEmpty, 700, "the keys were mostly empty: the comparison proved little")
	t.Logf("%+v %+v %d %d", seg.Digest(), replica.Store().Segment(seg.ID()).Digest(), seg.Revision(), replica.Store().Segment(seg.ID()).Revision())
}

package clustertest_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
)

// TestLargeStringEditsReachTheReplica: SETBIT, SETRANGE, APPEND and
// BITFIELD on a string large enough to be paged (store/pagedstr.go), sent
// by go-redis to the owner of an RF 2 sync + all cluster, are on the
// replica once acknowledged — the replication codec carries a paged
// value's bytes — and both copies hold what a client-side model says.
func TestLargeStringEditsReachTheReplica(t *testing.T) {
	c := clustertest.Start(t, 2, clustertest.Options{Mutate: func(cfg *server.Config) {
		cfg.ReplicationFactor = 2
		cfg.ReplicationMode, cfg.WriteQuorum = server.ReplicationSync, server.WriteQuorumAll
	}})
	c.WaitConverged(30 * time.Second)
	const key = "bitmap"
	owner, replica := c.Owner(key), c.NonOwner(key)
	rc := redis.NewClient(&redis.Options{Addr: owner.RESPAddr().String()})
	t.Cleanup(func() { rc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	model := []byte(strings.Repeat("z", 100_000))
	if err := rc.Set(ctx, key, model, 0).Err(); err != nil {
		t.Fatal(err)
	}
	grow := func(n int) {
		if n > len(model) {
			model = append(model, make([]byte, n-len(model))...)
		}
	}
	rng := rand.New(rand.NewPCG(5, 9))
	for i := range 300 {
		switch i % 4 {
		case 0:
			off := rng.Int64N(8 * 120_000)
			if err := rc.SetBit(ctx, key, off, 1).Err(); err != nil {
				t.Fatal(err)
			}
			grow(int(off>>3) + 1)
			model[off>>3] |= 1 << (7 - off&7)
		case 1:
			off, patch := rng.IntN(110_000), strings.Repeat("r", 1+rng.IntN(6000))
			if err := rc.SetRange(ctx, key, int64(off), patch).Err(); err != nil {
				t.Fatal(err)
			}
			grow(off + len(patch))
			copy(model[off:], patch)
		case 2:
			if err := rc.Append(ctx, key, "+app").Err(); err != nil {
				t.Fatal(err)
			}
			model = append(model, "+app"...)
		case 3:
			off := rng.IntN(100_000)
			if err := rc.BitField(ctx, key, "SET", "u8", "#"+strconv.Itoa(off), "7").Err(); err != nil {
				t.Fatal(err)
			}
			grow(off + 1)
			model[off] = 7
		}
	}
	got, err := rc.Get(ctx, key).Bytes()
	if err != nil || !bytes.Equal(got, model) {
		t.Fatalf("GET from the owner: %d bytes (err %v), the model has %d", len(got), err, len(model))
	}
	var held []byte
	for _, r := range replica.Store().SegmentFor(key).Snapshot().Records {
		if r.Key() == key {
			held = r.Value()
		}
	}
	if !bytes.Equal(held, model) {
		t.Fatalf("the replica holds %d bytes that differ from the %d acknowledged", len(held), len(model))
	}
}

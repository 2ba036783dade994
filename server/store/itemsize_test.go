package store

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
)

// collOf is the collection at key in a one-segment store.
func collOf(t *testing.T, s *Store, key string) collection {
	t.Helper()
	g := s.Segment(0)
	g.mu.RLock()
	defer g.mu.RUnlock()
	r := g.items.get(key)
	if r == nil {
		return nil
	}
	return r.coll()
}

// arrayHeader is what msgpack spends on an array header of n items.
func arrayHeader(n int) int {
	switch {
	case n < 16:
		return 1
	case n < 1<<16:
		return 3
	}
	return 5
}

// envelope is what a collection's encoding spends beyond its item size:
// the outer array headers, a stream's last id and counters, and a group's
// array headers past the 1 byte the item size counts for each.
func envelope(c collection) int {
	switch c := c.(type) {
	case *listColl:
		return arrayHeader(c.n)
	case *hashColl:
		return arrayHeader(2 * c.count())
	case *setColl:
		return arrayHeader(c.count())
	case *zsetColl:
		return arrayHeader(c.count())
	case *streamColl:
		// [last id, entries, groups, entries added, max deleted id, first id]
		n := 1 + 19 + arrayHeader(c.entries.live) + arrayHeader(len(c.groups)) + 9 + 19 + 19
		for _, g := range c.groups {
			n += arrayHeader(len(g.consumers)) - 1 + arrayHeader(g.pel.live) - 1
		}
		return n
	}
	panic(fmt.Sprintf("no envelope for %T", c))
}

// word is one of n byte strings of 32 to 232 bytes: msgpack spends exactly
// 2 bytes on the header of each whether it is encoded as bin or str (a str
// up to 31 bytes costs 1, which the item size counts as 2). Few words, so
// that commands meet members, fields, groups and consumers already there.
func word(r *rand.Rand, tag string, n int) string {
	i := r.IntN(n)
	return tag + strconv.Itoa(i%10) + strings.Repeat("w", 30+50*(i%5)+i/10)
}

// itemSizeKinds are, per collection kind, random commands on key "k"
// covering every way the kind grows and shrinks.
var itemSizeKinds = []struct {
	name  string
	steps []itemSizeStep
}{
	{"List", []itemSizeStep{
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdRPush, []string{word(r, "e", 40), word(r, "e", 40)}
		},
		func(r *rand.Rand) (kv.CmdOp, []string) { return kv.CmdLPush, []string{word(r, "e", 40)} },
		func(r *rand.Rand) (kv.CmdOp, []string) { return kv.CmdLPop, nil },
		func(r *rand.Rand) (kv.CmdOp, []string) { return kv.CmdRPop, []string{"2"} },
		func(r *rand.Rand) (kv.CmdOp, []string) { return kv.CmdLSet, []string{"0", word(r, "e", 40)} },
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdLInsert, []string{"BEFORE", word(r, "e", 40), word(r, "e", 40)}
		},
		func(r *rand.Rand) (kv.CmdOp, []string) { return kv.CmdLRem, []string{"0", word(r, "e", 40)} },
		func(r *rand.Rand) (kv.CmdOp, []string) { return kv.CmdLTrim, []string{"1", "-2"} },
		func(r *rand.Rand) (kv.CmdOp, []string) { return kv.CmdLMove, []string{"k", "LEFT", "RIGHT"} },
	}},
	{"Hash", []itemSizeStep{
		func(r *rand.Rand) (kv.CmdOp, []string) {
			f := word(r, "f", 30)
			return kv.CmdHSet, []string{f, word(r, "v", 30), word(r, "f", 30), word(r, "v", 30), f, word(r, "v", 30)}
		},
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdHSetNX, []string{word(r, "f", 30), word(r, "v", 30)}
		},
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdHDel, []string{word(r, "f", 30), word(r, "f", 30)}
		},
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdHIncrBy, []string{"n" + strconv.Itoa(r.IntN(3)), strconv.Itoa(r.IntN(2000) - 1000)}
		},
		func(r *rand.Rand) (kv.CmdOp, []string) { return kv.CmdHIncrByFloat, []string{"x", "0.125"} },
	}},
	{"Set", []itemSizeStep{
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdSAdd, []string{word(r, "m", 40), word(r, "m", 40), word(r, "m", 40)}
		},
		func(r *rand.Rand) (kv.CmdOp, []string) { return kv.CmdSRem, []string{word(r, "m", 40)} },
		func(r *rand.Rand) (kv.CmdOp, []string) { return kv.CmdSPop, nil },
	}},
	{"SortedSet", []itemSizeStep{
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdZAdd, []string{strconv.Itoa(r.IntN(9)), word(r, "m", 40), "1.5", word(r, "m", 40)}
		},
		func(r *rand.Rand) (kv.CmdOp, []string) { return kv.CmdZAdd, []string{"XX", "7", word(r, "m", 40)} },
		func(r *rand.Rand) (kv.CmdOp, []string) { return kv.CmdZIncrBy, []string{"2", word(r, "m", 40)} },
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdZRem, []string{word(r, "m", 40), word(r, "m", 40)}
		},
		func(r *rand.Rand) (kv.CmdOp, []string) { return kv.CmdZPop, []string{"MIN", "1"} },
		func(r *rand.Rand) (kv.CmdOp, []string) { return kv.CmdZRemRange, []string{"SCORE", "3", "4"} },
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdZStore, []string{"1", word(r, "m", 40), "2", word(r, "m", 40), "3", word(r, "m", 40)}
		},
	}},
	{"Stream", []itemSizeStep{
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdXAdd, []string{"*", word(r, "f", 30), word(r, "v", 30), "n", strconv.Itoa(r.IntN(100))}
		},
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdXAdd, []string{"MAXLEN", strconv.Itoa(5 + r.IntN(20)), "*", "f", word(r, "v", 30)}
		},
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdXTrim, []string{"MAXLEN", strconv.Itoa(10 + r.IntN(20))}
		},
		func(r *rand.Rand) (kv.CmdOp, []string) { return kv.CmdXDel, []string{"0-1"} },
		func(r *rand.Rand) (kv.CmdOp, []string) { return kv.CmdXGroup, []string{"CREATE", word(r, "g", 3), "0"} },
		func(r *rand.Rand) (kv.CmdOp, []string) { return kv.CmdXGroup, []string{"DESTROY", word(r, "g", 3)} },
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdXGroup, []string{"CREATECONSUMER", word(r, "g", 3), word(r, "c", 4)}
		},
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdXGroup, []string{"DELCONSUMER", word(r, "g", 3), word(r, "c", 4)}
		},
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdXGroup, []string{"SETID", word(r, "g", 3), "0"}
		},
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdXReadGroup, []string{word(r, "g", 3), word(r, "c", 4), "COUNT", "3", ">"}
		},
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdXClaim, []string{word(r, "g", 3), word(r, "c", 4), "0", "0-1", "0-2", "0-1", "FORCE"}
		},
		func(r *rand.Rand) (kv.CmdOp, []string) {
			return kv.CmdXAutoClaim, []string{word(r, "g", 3), word(r, "c", 4), "0", "0", "COUNT", "4"}
		},
	}},
}

type itemSizeStep func(r *rand.Rand) (kv.CmdOp, []string)

// randomStep draws a command on key "k" from steps; a stream's XDEL and
// XCLAIM name ids the stream holds.
func randomStep(t *testing.T, s *Store, r *rand.Rand, steps []itemSizeStep) (kv.CmdOp, []string) {
	op, args := steps[r.IntN(len(steps))](r)
	c, _ := collOf(t, s, "k").(*streamColl)
	if c == nil || c.entries.len() == 0 {
		return op, args
	}
	anyID := func() string { return c.entries.at(r.IntN(c.entries.len())).id.String() }
	switch op {
	case kv.CmdXDel:
		args = []string{anyID()}
	case kv.CmdXClaim:
		args[3], args[4] = anyID(), anyID()
		args[5] = args[3]
	}
	return op, args
}

// The item size --max-item-bytes bounds is what a collection really spends
// in its canonical encoding (the form snapshots, migration and replication
// carry), and it is tracked incrementally through every command that
// changes a collection: after each of a few hundred random commands, the
// tracked item size plus the encoding's envelope is the encoding's length,
// to the byte.
func TestItemSizeTracksTheEncoding(t *testing.T) {
	for _, kind := range itemSizeKinds {
		t.Run(kind.name, func(t *testing.T) {
			s, _ := newTestStore(t, func(c *Config) { c.Segments = 1 })
			r := rand.New(rand.NewPCG(7, 7))
			applied := 0
			for i := range 600 {
				op, args := randomStep(t, s, r, kind.steps)
				rep := run(t, s, op, "k", args...)
				if rep.Status == kv.StatusSuccess {
					applied++
				}
				c := collOf(t, s, "k")
				if c == nil {
					continue
				}
				if got, want := c.itemSize()+int64(envelope(c)), int64(len(c.encode())); got != want {
					t.Fatalf("step %d (%v): item size %d + envelope %d = %d, encoding %d bytes",
						i, op, c.itemSize(), envelope(c), got, want)
				}
			}
			if applied < 300 {
				t.Fatalf("only %d of 600 commands applied: the sequence does not exercise the collection", applied)
			}
		})
	}
}

// Every growing command computes its exact growth before it mutates: under
// a cap, after each of a few hundred random commands the key is within the
// cap, and every refusal was needed — the same command, run with the cap
// raised from the same state, takes the key past the old cap. So the check
// neither lets a key pass the cap (growth underestimated) nor refuses one
// that fits (overestimated: a field named twice counted twice, ZADD XX
// charged, trimming not credited…).
func TestItemCapRefusesExactlyWhatWouldPassIt(t *testing.T) {
	const capBytes = 1200
	for _, kind := range itemSizeKinds {
		t.Run(kind.name, func(t *testing.T) {
			s, _ := newTestStore(t, func(c *Config) { c.Segments = 1; c.MaxItemBytes = capBytes })
			g := s.Segment(0)
			r := rand.New(rand.NewPCG(11, 11))
			itemOf := func() int64 {
				if c := collOf(t, s, "k"); c != nil {
					return c.itemSize()
				}
				return 0
			}
			refusals, atCap := 0, int64(0)
			for i := range 800 {
				op, args := randomStep(t, s, r, kind.steps)
				before, snap, digest := itemOf(), g.Snapshot(), g.Digest()
				rep := run(t, s, op, "k", args...)
				if rep.Status != kv.StatusItemTooLarge {
					if after := itemOf(); after > capBytes {
						t.Fatalf("step %d (%v %v): accepted, item size %d → %d past the cap %d", i, op, rep.Status, before, after, capBytes)
					}
					atCap = max(atCap, itemOf())
					continue
				}
				refusals++
				if g.Digest() != digest {
					t.Fatalf("step %d (%v): a refused command changed the segment", i, op)
				}
				s.cfg.MaxItemBytes = 1 << 30
				rep = run(t, s, op, "k", args...)
				after := itemOf()
				s.cfg.MaxItemBytes = capBytes
				g.InstallSnapshot(snap)
				if rep.Status != kv.StatusSuccess || after <= capBytes {
					t.Fatalf("step %d (%v %q): refused at item size %d, but uncapped it gives %v and item size %d, within the cap %d",
						i, op, args, before, rep.Status, after, capBytes)
				}
			}
			// The run must have reached the cap, or it proves nothing.
			t.Logf("%d refusals, at most %d item bytes held", refusals, atCap)
			if refusals < 10 || atCap < capBytes*9/10 {
				t.Fatalf("%d refusals, at most %d item bytes held: the run never pressed on the cap", refusals, atCap)
			}
		})
	}
}

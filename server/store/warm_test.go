package store

import (
	"strconv"
	"sync"

	"github.com/zaris-io/zaris/internal/kv"
	"testing"
)

// TestWarmAheadReadsTheKeysOwnSlot: the read-ahead lands on the slot and
// record the key's lookup will probe first — for a key at its home slot,
// its own record — and on the op-log slot the key's segment writes next
// (rings of 4, full after a few writes: the tail holds the revision a
// write trims); it
// reads nothing for a key of an empty segment. The
// failure it prevents: a read-ahead that places keys differently from the
// table (another segment, another slot formula) costs its loads and saves
// the lookups nothing.
func TestWarmAheadReadsTheKeysOwnSlot(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.OpLogMaxOps = 4 })
	if got := s.WarmAhead([][]byte{[]byte("absent")}); got != 0 {
		t.Fatalf("read ahead %d from an empty store, want 0", got)
	}
	atHome, fullRings := 0, 0
	for i := range 3000 {
		key := "warm:" + strconv.Itoa(i)
		mustStatus(t, s.Put(key, []byte("v"), nil), kv.StatusSuccess)
		g := s.SegmentFor(key)
		g.mu.Lock()
		slot := g.items.home(hashKey(key))
		own := g.items.recs[slot] != nil && g.items.recs[slot].Key() == key
		tailRev := g.log.tail.rev
		g.mu.Unlock()
		if !own {
			continue
		}
		atHome++
		if tailRev != 0 {
			fullRings++
		}
		want := uint(hashKey(key)) + uint(key[0]) + uint(key[len(key)-1]) + uint(tailRev)
		if got := s.WarmAhead([][]byte{[]byte(key)}); got != want {
			t.Fatalf("read ahead %d for %q, want its slot's hash, its key's first and last bytes and its op-log tail's revision: %d", got, key, want)
		}
	}
	if atHome < 1000 || fullRings < 500 {
		t.Fatalf("of 3000 keys only %d sit at their home slot, %d of those in a segment whose ring is full", atHome, fullRings)
	}
}

// TestWarmAheadBesideWriters: the read-ahead runs without locks beside
// writers that insert, delete, grow and shrink tables and replace a
// segment's table whole; it must never fault, and (go:norace) the race
// detector must not report its deliberate reads while it still checks
// everything else here.
func TestWarmAheadBesideWriters(t *testing.T) {
	s, _ := newTestStore(t)
	keys := make([][]byte, 64)
	for i := range keys {
		keys[i] = []byte("race:" + strconv.Itoa(i%8))
	}
	stop := readAheadMeanwhile(func() {
		for i := 0; i < len(keys); i += WarmBatch {
			s.WarmAhead(keys[i:])
		}
	})
	for round := range 200 {
		for i := range 300 {
			mustStatus(t, s.Put("race:"+strconv.Itoa(i), []byte("v"), nil), kv.StatusSuccess)
		}
		g := s.SegmentFor("race:1")
		g.InstallSnapshot(g.Snapshot())
		if round%2 == 0 {
			s.Flush()
		} else {
			for i := range 300 {
				s.Delete("race:" + strconv.Itoa(i))
			}
		}
	}
	stop()
}

// TestWarmSlotIsTheLookupsSlot: the read-ahead warms the record the lookup
// compares — for a key displaced from its home slot by collisions too,
// up to warmProbe slots on (D87). A table of 3 000 keys has plenty of them.
func TestWarmSlotIsTheLookupsSlot(t *testing.T) {
	tbl := newRecordTable(0)
	const n = 3000
	for i := range n {
		// Every other record expires: its stored hash carries expiresBit.
		tbl.set(newStringRecord("warm:"+strconv.Itoa(i), []byte("v"), int64(i%2)<<60))
	}
	sh := tbl.shape
	displaced := 0
	for i := range n {
		key := "warm:" + strconv.Itoa(i)
		h := hashKey(key)
		home := tbl.home(h)
		at := uint32(tbl.find(key, h))
		dist := (int(at) - int(home) + len(tbl.recs)) % len(tbl.recs)
		if dist == 0 {
			continue
		}
		if dist >= warmProbe {
			continue // past the walk's bound: a stale neighbour at worst, never wrong
		}
		displaced++
		if got := warmSlot(sh, home, h); got != at && sh.hashes[got]&^expiresBit != h {
			t.Fatalf("%s: home %d, found at %d, warmed %d", key, home, at, got)
		}
	}
	if displaced < n/10 {
		t.Fatalf("only %d of %d keys displaced: the test shows nothing", displaced, n)
	}
}

// TestWarmAheadReadsTheFieldsSlot: for a key holding a hash, a set or a
// sorted set, the read-ahead adds the slot the field's lookup starts at and
// that slot's entry (D88): a field at its home slot reads its own hash and entry; a
// string key or a missing field argument adds nothing. The failure it
// prevents: a field read-ahead that hashes or places fields unlike the
// table warms lines the HSET then does not read.
func TestWarmAheadReadsTheFieldsSlot(t *testing.T) {
	s, _ := newTestStore(t)
	key := []byte("warm:hash")
	for i := range 2000 {
		if r := s.Exec(kv.Cmd{Op: kv.CmdHSet, Key: string(key), Args: [][]byte{[]byte("f" + strconv.Itoa(i)), []byte("v")}}); r.Status != kv.StatusSuccess {
			t.Fatalf("HSET: %v", r.Status)
		}
	}
	base := s.WarmAhead([][]byte{key})
	checkFieldsAtHome(t, s, key, "f", 2000, func(r *Record) *fieldArray { return r.coll().(*hashColl).t.arr })
	if got := s.WarmAheadFields([][]byte{key}, [][]byte{nil}, [][]byte{nil}); got != base {
		t.Fatalf("read ahead %d without a field, want the key's %d", got, base)
	}
	// A set's member the same way.
	set := []byte("warm:set")
	for i := range 500 {
		s.Exec(kv.Cmd{Op: kv.CmdSAdd, Key: string(set), Args: [][]byte{[]byte("m" + strconv.Itoa(i))}})
	}
	checkFieldsAtHome(t, s, set, "m", 500, func(r *Record) *fieldArray { return r.coll().(*setColl).t.arr })
	// A sorted set's member is its command's last argument (ZADD key
	// score member): its slot, its node's member bytes and its neighbours.
	zkey := []byte("warm:zset")
	for i := range 500 {
		s.Exec(kv.Cmd{Op: kv.CmdZAdd, Key: string(zkey), Args: [][]byte{[]byte(strconv.Itoa(i % 97)), []byte("z" + strconv.Itoa(i))}})
	}
	zBase := s.WarmAhead([][]byte{zkey})
	gz := s.SegmentFor(string(zkey))
	atHome := 0
	for i := range 500 {
		m := "z" + strconv.Itoa(i)
		gz.mu.Lock()
		z := gz.items.get(string(zkey)).coll().(*zsetColl)
		a := z.nodes.arr
		hash := fieldHashString(m)
		slot := a.slots[hash&a.mask]
		n := (*slNode)(slot.e)
		own := n != nil && n.member == m
		want := zBase + uint(hash) + uint(m[0])
		if own && n.next() != nil {
			want += uint(n.next().height())
		}
		if own && n.prev != nil {
			want += uint(n.prev.height())
		}
		gz.mu.Unlock()
		if !own {
			continue
		}
		atHome++
		if got := s.WarmAheadFields([][]byte{zkey}, [][]byte{[]byte("1")}, [][]byte{[]byte(m)}); got != want {
			t.Fatalf("read ahead %d for member %q, want %d", got, m, want)
		}
	}
	if atHome < 250 {
		t.Fatalf("only %d of 500 members at their home slot", atHome)
	}
	mustStatus(t, s.Put("warm:string", []byte("v"), nil), kv.StatusSuccess)
	plain := s.WarmAhead([][]byte{[]byte("warm:string")})
	if got := s.WarmAheadFields([][]byte{[]byte("warm:string")}, [][]byte{[]byte("f1")}, [][]byte{[]byte("f1")}); got != plain {
		t.Fatalf("read ahead %d for a string key with a field, want the key's %d", got, plain)
	}
}

// checkFieldsAtHome checks the field read-ahead for the n fields prefix0 …
// of key (a hash's or a set's, arrOf finds its table): each field at its
// home slot adds the key's read-ahead, the slot's hash and the entry's first
// byte (the field's length). Half of them at least must be at home, or the
// check shows nothing.
func checkFieldsAtHome(t *testing.T, s *Store, key []byte, prefix string, n int, arrOf func(*Record) *fieldArray) {
	t.Helper()
	base := s.WarmAhead([][]byte{key})
	g := s.SegmentFor(string(key))
	atHome := 0
	for i := range n {
		f := prefix + strconv.Itoa(i)
		g.mu.Lock()
		a := arrOf(g.items.get(string(key)))
		hash := fieldHashString(f)
		slot := a.slots[hash&a.mask]
		own := slot.e != nil && entryField(slot.e) == f
		g.mu.Unlock()
		if !own {
			continue
		}
		atHome++
		want := base + uint(hash) + uint(len(f))
		if got := s.WarmAheadFields([][]byte{key}, [][]byte{[]byte(f)}, [][]byte{[]byte(f)}); got != want {
			t.Fatalf("read ahead %d for %q of %s, want the key's %d plus its slot's hash and entry: %d", got, f, key, base, want)
		}
	}
	if atHome < n/2 {
		t.Fatalf("only %d of %d fields of %s at their home slot", atHome, n, key)
	}
}

// TestWarmAheadFieldsBesideWriters: the field read-ahead runs without
// locks beside writers that grow, shrink, empty and recreate the hash; it
// must never fault, and the race detector must not report its reads.
func TestWarmAheadFieldsBesideWriters(t *testing.T) {
	s, _ := newTestStore(t)
	keys, fields := make([][]byte, WarmBatch), make([][]byte, WarmBatch)
	for i := range keys {
		keys[i], fields[i] = []byte("race:h"+strconv.Itoa(i%2)), []byte("f"+strconv.Itoa(i))
	}
	stop := readAheadMeanwhile(func() { s.WarmAheadFields(keys, fields, fields) })
	for round := range 100 {
		for i := range 200 {
			s.Exec(kv.Cmd{Op: kv.CmdZAdd, Key: "race:h0", Args: [][]byte{[]byte(strconv.Itoa(i)), []byte("f" + strconv.Itoa(i))}})
		}
		s.Delete("race:h0")
		for _, k := range []string{"race:h0", "race:h1"} {
			for i := range 200 {
				s.Exec(kv.Cmd{Op: kv.CmdHSet, Key: k, Args: [][]byte{[]byte("f" + strconv.Itoa(i)), []byte("v")}})
			}
			if round%2 == 0 {
				s.Delete(k)
			} else {
				for i := range 200 {
					s.Exec(kv.Cmd{Op: kv.CmdHDel, Key: k, Args: [][]byte{[]byte("f" + strconv.Itoa(i))}})
				}
			}
		}
	}
	stop()
}

// TestWarmAheadReadsARepeatedKeyOnce: a pipeline on one key (LPUSH or HSET
// on one list or hash, redis-benchmark's shape) reads the key's slot and
// record once, not once per command — the loads are in flight already —
// while each command's field is still read ahead.
func TestWarmAheadReadsARepeatedKeyOnce(t *testing.T) {
	s, _ := newTestStore(t)
	mustStatus(t, s.Put("warm:once", []byte("v"), nil), kv.StatusSuccess)
	k := []byte("warm:once")
	one := s.WarmAhead([][]byte{k})
	if one == 0 {
		t.Fatal("read nothing ahead for a stored key")
	}
	if got := s.WarmAhead([][]byte{k, k, k, k}); got != one {
		t.Fatalf("read ahead %d for one key four times, want the %d of one", got, one)
	}
	h := []byte("warm:oncehash")
	for i := range 100 {
		s.Exec(kv.Cmd{Op: kv.CmdHSet, Key: string(h), Args: [][]byte{[]byte("f" + strconv.Itoa(i)), []byte("v")}})
	}
	f1, f2 := []byte("f1"), []byte("f2")
	both := s.WarmAheadFields([][]byte{h, h}, [][]byte{f1, f2}, [][]byte{f1, f2})
	first := s.WarmAheadFields([][]byte{h}, [][]byte{f1}, [][]byte{f1})
	second := s.WarmAheadFields([][]byte{h}, [][]byte{f2}, [][]byte{f2})
	key := s.WarmAhead([][]byte{h})
	if both != first+second-key {
		t.Fatalf("read ahead %d for two fields of one hash, want the key once and both fields: %d", both, first+second-key)
	}
}

// readAheadMeanwhile runs read over and over on a goroutine of its own
// until the returned stop is called (and waits for it then).
func readAheadMeanwhile(read func()) (stop func()) {
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
				read()
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// TestWarmAheadOpsReadsTheKeysTheApplyLooksUp: a replica's read-ahead of a
// shipped batch reads what WarmAhead reads for the keys the apply will
// look up — a record op's key, a command op's command key — for the
// batch's first WarmBatch ops, and nothing for a batch of one. The
// failure it prevents: warming other keys (a command op's record, ops past
// the batch) costs the loads and leaves the lookups cold.
func TestWarmAheadOpsReadsTheKeysTheApplyLooksUp(t *testing.T) {
	s, _ := newTestStore(t)
	var ops []Op
	var keys [][]byte
	for i := range 40 {
		key := "op:" + strconv.Itoa(i)
		mustStatus(t, s.Put(key, []byte("v"), nil), kv.StatusSuccess)
		op := Op{Kind: OpPut, Record: Record{}.With(key, []byte("v"))}
		if i%3 == 0 {
			op = Op{Kind: OpCommand, Record: Record{}.With("another:"+key, nil), Cmd: &kv.Cmd{Op: kv.CmdLPush, Key: key}}
		}
		ops, keys = append(ops, op), append(keys, []byte(key))
	}
	if got, want := s.WarmAheadOps(ops), s.WarmAhead(keys[:WarmBatch]); got != want || want == 0 {
		t.Fatalf("read ahead %d for the batch, want %d (WarmAhead of its first %d keys)", got, want, WarmBatch)
	}
	if got, want := s.WarmAheadOps(ops[20:]), s.WarmAhead(keys[20:20+WarmBatch]); got != want {
		t.Fatalf("read ahead %d from op 20, want %d", got, want)
	}
	if got := s.WarmAheadOps(ops[:1]); got != 0 {
		t.Fatalf("read ahead %d for one op, want 0", got)
	}
}

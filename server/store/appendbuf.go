package store

// APPEND to a large string without copying it each time. A string record is
// immutable, so APPEND built a new value: O(n) per call, 0.00× Redis's rate
// on a 1 MB string, and every old copy the op-log still held was memory.
// Instead a string that APPEND grows past appendGrowMin gets a buffer with
// spare capacity (doubling, then +1 MiB, as Redis's sds): the records of
// successive appends are prefixes of one buffer (each with cap == len, so
// nobody can append into it through a value the store handed out), and an
// append writes its bytes past the prefix the current record covers, where
// no record reads, and publishes a longer prefix. The segment keeps each
// such buffer beside the key with the length its newest record covers;
// bytes are written in place only when the record being extended is that
// newest one — an older record of the key installed again (a merge, a
// replica catching up) never extends over bytes a newer record covers. The
// buffer's spare capacity counts against the memory budget.

// appendGrowMin is the value size from which APPEND keeps spare capacity.
const appendGrowMin = 1 << 10

// growBuf is a string's append buffer: buf (its whole capacity) and used,
// the length of the newest committed record's value, a prefix of buf.
type growBuf struct {
	buf  []byte
	used int
}

func (e *growBuf) spare() int64 { return int64(len(e.buf) - e.used) }

// appendValue is APPEND's new value for cur + add (within the item cap,
// checked by the caller), in place in the key's buffer when it can be.
func (x *execCtx) appendValue(cur, add []byte) []byte {
	n := len(cur) + len(add)
	if n < appendGrowMin {
		v := make([]byte, 0, n)
		return append(append(v, cur...), add...)
	}
	g := x.seg
	if e := g.growable[x.cmd.Key]; e != nil && len(cur) > 0 && &cur[0] == &e.buf[0] &&
		e.used == len(cur) && len(e.buf)-len(cur) >= len(add) {
		copy(e.buf[len(cur):], add) // past every record's bytes
		return e.buf[:n:n]
	}
	capacity := 2 * n
	if n >= 1<<20 {
		capacity = n + 1<<20
	}
	capacity = max(n, min(capacity, g.store.cfg.MaxItemBytes))
	buf := make([]byte, capacity)
	copy(buf, cur)
	copy(buf[len(cur):], add)
	x.grown = &growBuf{buf: buf, used: n}
	return buf[:n:n]
}

// settleGrowableLocked keeps the key's append buffer in step with now, its
// record being committed: a value that is the buffer's prefix, as long as
// the newest or longer, advances it; anything else (another value, a
// delete, a collection, an older prefix) drops it. The spare capacity's
// accounting follows.
func (g *Segment) settleGrowableLocked(key string, now *Record) {
	e := g.growable[key]
	if e == nil {
		return
	}
	// Only a prefix at least as long as the newest advances the buffer: a
	// shorter one is an older record back, and bytes past it may be a newer
	// record's, still read (the op-log, a reply being written).
	if now != nil && !now.Deleted() && now.coll() == nil && now.paged() == nil && len(now.Value()) >= e.used && len(now.Value()) > 0 && &now.Value()[0] == &e.buf[0] {
		before := e.spare()
		e.used = len(now.Value())
		g.settleLocked(e.spare() - before)
		return
	}
	delete(g.growable, key)
	g.settleLocked(-e.spare())
}

// installGrowableLocked records the new buffer APPEND made for the key's
// record just committed.
func (g *Segment) installGrowableLocked(key string, e *growBuf) {
	if g.growable == nil {
		g.growable = make(map[string]*growBuf)
	}
	g.growable[key] = e
	g.settleLocked(e.spare())
}

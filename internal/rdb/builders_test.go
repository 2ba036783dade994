package rdb

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
)

// Builders of hand-made payloads: the encodings Restore reads, written from
// the format descriptions. TestRedisLoadsHandBuilt has a real redis-server
// load what they build, so they are checked against Redis, not only against
// the decoder they test.

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// withFooter appends the version and Redis's CRC64.
func withFooter(ver uint16, obj []byte) []byte { return Seal(slices.Clone(obj), ver) }

func payload(obj ...[]byte) []byte { return withFooter(Version, cat(obj...)) }

func ln(n uint64) []byte { return appendLen(nil, n) }

// raw is an RDB string written raw, never integer-encoded.
func raw(s string) []byte { return append(appendLen(nil, uint64(len(s))), s...) }

// rs is an RDB string as Dump writes it (integer-encoded when it can be).
func rs(s string) []byte { return appendString(nil, []byte(s)) }

// lzfStr is an LZF-encoded RDB string: 0xC3, the compressed length, the
// uncompressed length, the stream.
func lzfStr(ulen int, stream ...byte) []byte {
	return cat([]byte{0xC3}, ln(uint64(len(stream))), ln(uint64(ulen)), stream)
}

// lzfLiterals is a valid LZF stream of literal runs only.
func lzfLiterals(s string) []byte {
	var b []byte
	for len(s) > 0 {
		n := min(len(s), 32)
		b = append(append(b, byte(n-1)), s[:n]...)
		s = s[n:]
	}
	return b
}

// Listpack entries, one builder per encoding.
type lpEntry []byte

func lp7(v uint8) lpEntry { return lpEntry{v & 0x7f} }
func lp13(v int64) lpEntry {
	u := uint16(v) & 0x1fff
	return lpEntry{0xC0 | byte(u>>8), byte(u)}
}
func lpInt(enc byte, size int, v int64) lpEntry {
	b := binary.LittleEndian.AppendUint64(nil, uint64(v))
	return append(lpEntry{enc}, b[:size]...)
}
func lp16(v int64) lpEntry { return lpInt(0xF1, 2, v) }
func lp24(v int64) lpEntry { return lpInt(0xF2, 3, v) }
func lp32(v int64) lpEntry { return lpInt(0xF3, 4, v) }
func lp64(v int64) lpEntry { return lpInt(0xF4, 8, v) }
func lpS6(s string) lpEntry {
	return append(lpEntry{0x80 | byte(len(s))}, s...)
}
func lpS12(s string) lpEntry {
	return append(lpEntry{0xE0 | byte(len(s)>>8), byte(len(s))}, s...)
}
func lpS32(s string) lpEntry {
	return append(binary.LittleEndian.AppendUint32(lpEntry{0xF0}, uint32(len(s))), s...)
}

// lpAuto picks the encoding Redis would for s.
func lpAuto(s string) lpEntry {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil && strconv.FormatInt(v, 10) == s {
		switch {
		case v >= 0 && v <= 127:
			return lp7(uint8(v))
		case v >= -4096 && v <= 4095:
			return lp13(v)
		case v >= math.MinInt16 && v <= math.MaxInt16:
			return lp16(v)
		case v >= -1<<23 && v < 1<<23:
			return lp24(v)
		case v >= math.MinInt32 && v <= math.MaxInt32:
			return lp32(v)
		default:
			return lp64(v)
		}
	}
	switch {
	case len(s) < 64:
		return lpS6(s)
	case len(s) < 4096:
		return lpS12(s)
	default:
		return lpS32(s)
	}
}

func lpStrs(ss ...string) []lpEntry {
	out := make([]lpEntry, len(ss))
	for i, s := range ss {
		out[i] = lpAuto(s)
	}
	return out
}

// listpackCount builds a listpack with the given header count.
func listpackCount(count uint16, entries ...lpEntry) []byte {
	b := make([]byte, 6)
	for _, e := range entries {
		b = append(b, e...)
		b = appendBacklen(b, uint64(len(e)))
	}
	b = append(b, 0xFF)
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	binary.LittleEndian.PutUint16(b[4:], count)
	return b
}

func listpack(entries ...lpEntry) []byte {
	return listpackCount(uint16(min(len(entries), 0xFFFF)), entries...)
}

// Ziplist entries: the encoding and data; the builder adds prevlen.
type zlEntry []byte

func zlS6(s string) zlEntry { return append(zlEntry{byte(len(s))}, s...) }
func zlS14(s string) zlEntry {
	return append(zlEntry{0x40 | byte(len(s)>>8), byte(len(s))}, s...)
}
func zlS32(s string) zlEntry {
	return append(binary.BigEndian.AppendUint32(zlEntry{0x80}, uint32(len(s))), s...)
}
func zlInt(enc byte, size int, v int64) zlEntry {
	b := binary.LittleEndian.AppendUint64(nil, uint64(v))
	return append(zlEntry{enc}, b[:size]...)
}
func zl8(v int64) zlEntry  { return zlInt(0xFE, 1, v) }
func zl16(v int64) zlEntry { return zlInt(0xC0, 2, v) }
func zl24(v int64) zlEntry { return zlInt(0xF0, 3, v) }
func zl32(v int64) zlEntry { return zlInt(0xD0, 4, v) }
func zl64(v int64) zlEntry { return zlInt(0xE0, 8, v) }
func zlImm(v int) zlEntry  { return zlEntry{0xF1 + byte(v)} }

func zlAuto(s string) zlEntry {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil && strconv.FormatInt(v, 10) == s {
		switch {
		case v >= 0 && v <= 12:
			return zlImm(int(v))
		case v >= math.MinInt8 && v <= math.MaxInt8:
			return zl8(v)
		case v >= math.MinInt16 && v <= math.MaxInt16:
			return zl16(v)
		case v >= -1<<23 && v < 1<<23:
			return zl24(v)
		case v >= math.MinInt32 && v <= math.MaxInt32:
			return zl32(v)
		default:
			return zl64(v)
		}
	}
	switch {
	case len(s) < 64:
		return zlS6(s)
	case len(s) < 16384:
		return zlS14(s)
	default:
		return zlS32(s)
	}
}

func zlStrs(ss ...string) []zlEntry {
	out := make([]zlEntry, len(ss))
	for i, s := range ss {
		out[i] = zlAuto(s)
	}
	return out
}

// ziplist builds a ziplist; bigPrev writes every prevlen in its 5-byte form,
// which Redis leaves behind to avoid cascading updates.
func ziplistOpt(bigPrev bool, entries ...zlEntry) []byte {
	b := make([]byte, 10)
	tail, prev := 10, 0
	for _, e := range entries {
		tail = len(b)
		if prev < 254 && !bigPrev {
			b = append(b, byte(prev))
		} else {
			b = binary.LittleEndian.AppendUint32(append(b, 0xFE), uint32(prev))
		}
		b = append(b, e...)
		prev = len(b) - tail
	}
	b = append(b, 0xFF)
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	binary.LittleEndian.PutUint32(b[4:], uint32(tail))
	binary.LittleEndian.PutUint16(b[8:], uint16(min(len(entries), 0xFFFF)))
	return b
}

func ziplist(entries ...zlEntry) []byte { return ziplistOpt(false, entries...) }

// zipmap builds a zipmap of key, value, key, value… with free bytes after
// each value.
func zipmap(free int, kv ...string) []byte {
	b := []byte{byte(min(len(kv)/2, 254))}
	zlen := func(n int) {
		if n < 254 {
			b = append(b, byte(n))
		} else {
			b = binary.LittleEndian.AppendUint32(append(b, 254), uint32(n))
		}
	}
	for i := 0; i < len(kv); i += 2 {
		zlen(len(kv[i]))
		b = append(b, kv[i]...)
		zlen(len(kv[i+1]))
		b = append(b, byte(free))
		b = append(b, kv[i+1]...)
		b = append(b, make([]byte, free)...)
	}
	return append(b, 0xFF)
}

func intset(width int, vals ...int64) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(width))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(vals)))
	for _, v := range vals {
		b = append(b, binary.LittleEndian.AppendUint64(nil, uint64(v))[:width]...)
	}
	return b
}

// blob wraps a listpack, ziplist, zipmap or intset as a raw RDB string.
func blob(b []byte) []byte { return raw(string(b)) }

func bs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func listV(ss ...string) Value { return Value{Kind: List, Elems: bs(ss...)} }
func setV(ss ...string) Value  { return Value{Kind: Set, Elems: bs(ss...)} }
func hashV(ss ...string) Value { return Value{Kind: Hash, Pairs: bs(ss...)} }
func strV(s string) Value      { return Value{Kind: String, Str: []byte(s)} }

// zsetV takes member, score, member, score…
func zsetV(ms ...any) Value {
	v := Value{Kind: ZSet}
	for i := 0; i < len(ms); i += 2 {
		v.Members = append(v.Members, ZMember{Member: []byte(ms[i].(string)), Score: ms[i+1].(float64)})
	}
	return v
}

// equalValues compares exactly: order of every collection, and scores by
// their bits (so -0 is not 0 and NaN would equal itself).
func equalValues(a, b Value) bool {
	eq := func(x, y [][]byte) bool {
		return slices.EqualFunc(x, y, func(p, q []byte) bool { return bytes.Equal(p, q) })
	}
	return a.Kind == b.Kind && bytes.Equal(a.Str, b.Str) && eq(a.Elems, b.Elems) && eq(a.Pairs, b.Pairs) &&
		slices.EqualFunc(a.Members, b.Members, func(p, q ZMember) bool {
			return bytes.Equal(p.Member, q.Member) && math.Float64bits(p.Score) == math.Float64bits(q.Score)
		}) && equalStreams(a.Stream, b.Stream)
}

// equalStreams compares every field, nil and empty slices alike.
func equalStreams(a, b *StreamValue) bool {
	if a == nil || b == nil {
		return a == b
	}
	eq := func(x, y [][]byte) bool {
		return slices.EqualFunc(x, y, func(p, q []byte) bool { return bytes.Equal(p, q) })
	}
	return a.LastID == b.LastID && a.FirstID == b.FirstID && a.MaxDeletedID == b.MaxDeletedID && a.EntriesAdded == b.EntriesAdded &&
		slices.EqualFunc(a.Entries, b.Entries, func(x, y StreamEntry) bool { return x.ID == y.ID && eq(x.Fields, y.Fields) }) &&
		slices.EqualFunc(a.Groups, b.Groups, func(x, y StreamGroup) bool {
			return bytes.Equal(x.Name, y.Name) && x.LastID == y.LastID && x.EntriesRead == y.EntriesRead &&
				slices.EqualFunc(x.Pending, y.Pending, func(p, q StreamPending) bool {
					return p.ID == q.ID && p.DeliveryMs == q.DeliveryMs && p.DeliveryCount == q.DeliveryCount && bytes.Equal(p.Consumer, q.Consumer)
				}) &&
				slices.EqualFunc(x.Consumers, y.Consumers, func(p, q StreamConsumer) bool {
					return bytes.Equal(p.Name, q.Name) && p.SeenMs == q.SeenMs && p.ActiveMs == q.ActiveMs
				})
		})
}

// withoutActive is v with each stream consumer's ActiveMs its SeenMs: what
// Dump keeps of it.
func withoutActive(v Value) Value {
	if v.Stream == nil {
		return v
	}
	s := *v.Stream
	s.Groups = slices.Clone(s.Groups)
	for i := range s.Groups {
		g := &s.Groups[i]
		g.Consumers = slices.Clone(g.Consumers)
		for j := range g.Consumers {
			g.Consumers[j].ActiveMs = g.Consumers[j].SeenMs
		}
	}
	v.Stream = &s
	return v
}

// content is a Value as Redis's replies show it: lists in order, sets and
// hashes and sorted sets sorted (duplicates collapsed, the last one
// winning), scores as their bits.
type content struct {
	Kind  Kind
	Items []string
}

func contentOf(v Value) content {
	c := content{Kind: v.Kind}
	switch v.Kind {
	case String:
		c.Items = []string{string(v.Str)}
	case List:
		for _, e := range v.Elems {
			c.Items = append(c.Items, string(e))
		}
	case Set:
		m := map[string]bool{}
		for _, e := range v.Elems {
			m[string(e)] = true
		}
		for k := range m {
			c.Items = append(c.Items, k)
		}
	case Hash:
		m := map[string]string{}
		for i := 0; i+1 < len(v.Pairs); i += 2 {
			m[string(v.Pairs[i])] = string(v.Pairs[i+1])
		}
		for k, x := range m {
			c.Items = append(c.Items, strconv.Quote(k)+"="+strconv.Quote(x))
		}
	case ZSet:
		m := map[string]float64{}
		for _, z := range v.Members {
			m[string(z.Member)] = z.Score
		}
		for k, s := range m {
			if s == 0 {
				s = 0 // Redis keeps -0 only in some encodings: its replies cannot tell
			}
			c.Items = append(c.Items, fmt.Sprintf("%q=%x", k, math.Float64bits(s)))
		}
	case Stream:
		c.Items = streamContent(v.Stream)
	}
	if v.Kind != List && v.Kind != String && v.Kind != Stream {
		sort.Strings(c.Items)
	}
	return c
}

func fmtID(id StreamID) string { return fmt.Sprintf("%d-%d", id.Ms, id.Seq) }

// streamContent is what XINFO STREAM FULL shows of a stream in Redis 7.0:
// everything but the consumers' active-time, the groups and consumers in
// name order.
func streamContent(s *StreamValue) []string {
	out := []string{fmt.Sprintf("last %s first %s max-deleted %s added %d", fmtID(s.LastID), fmtID(s.FirstID), fmtID(s.MaxDeletedID), s.EntriesAdded)}
	for _, e := range s.Entries {
		line := "entry " + fmtID(e.ID)
		for _, f := range e.Fields {
			line += " " + strconv.Quote(string(f))
		}
		out = append(out, line)
	}
	groups := slices.Clone(s.Groups)
	slices.SortFunc(groups, func(a, b StreamGroup) int { return bytes.Compare(a.Name, b.Name) })
	for _, g := range groups {
		out = append(out, fmt.Sprintf("group %q last %s read %d", g.Name, fmtID(g.LastID), g.EntriesRead))
		for _, p := range g.Pending {
			out = append(out, fmt.Sprintf("  pending %s %q at %d count %d", fmtID(p.ID), p.Consumer, p.DeliveryMs, p.DeliveryCount))
		}
		consumers := slices.Clone(g.Consumers)
		slices.SortFunc(consumers, func(a, b StreamConsumer) int { return bytes.Compare(a.Name, b.Name) })
		for _, c := range consumers {
			out = append(out, fmt.Sprintf("  consumer %q seen %d", c.Name, c.SeenMs))
		}
	}
	return out
}

// Stream payload builders.

func sid(ms, seq uint64) StreamID { return StreamID{ms, seq} }

// rawKey is an ID as a node key or PEL ID: 16 bytes big-endian.
func rawKey(ms, seq uint64) []byte { return appendRawID(nil, sid(ms, seq)) }

// nodeKey is a node's key as the RDB string Redis writes.
func nodeKey(ms, seq uint64) []byte { return raw(string(rawKey(ms, seq))) }

// idLens is an ID as two RDB lengths.
func idLens(ms, seq uint64) []byte { return appendID(nil, sid(ms, seq)) }

func lpI(v int64) lpEntry { return lpAuto(strconv.FormatInt(v, 10)) }

// streamLP is a stream node listpack: the master entry (live and deleted
// counts, the field names, 0), then the entries.
func streamLP(live, deleted int64, fields []string, entries ...[]lpEntry) []byte {
	es := []lpEntry{lpI(live), lpI(deleted), lpI(int64(len(fields)))}
	es = append(es, lpStrs(fields...)...)
	es = append(es, lpI(0))
	for _, e := range entries {
		es = append(es, e...)
	}
	return listpack(es...)
}

// sameE is a SAMEFIELDS entry (flags gets the SAMEFIELDS bit added).
func sameE(flags, msd, seqd int64, values ...string) []lpEntry {
	e := []lpEntry{lpI(flags | streamSameFields), lpI(msd), lpI(seqd)}
	e = append(e, lpStrs(values...)...)
	return append(e, lpI(int64(len(values)+3)))
}

// fullE is an entry with its own field names.
func fullE(flags, msd, seqd int64, pairs ...string) []lpEntry {
	e := []lpEntry{lpI(flags), lpI(msd), lpI(seqd), lpI(int64(len(pairs) / 2))}
	e = append(e, lpStrs(pairs...)...)
	return append(e, lpI(int64(len(pairs)+4)))
}

// pelE is a group PEL entry: the raw ID, the delivery time, the count.
func pelE(ms, seq uint64, deliveryMs int64, count uint64) []byte {
	return cat(rawKey(ms, seq), binary.LittleEndian.AppendUint64(nil, uint64(deliveryMs)), ln(count))
}

// consumerB is a consumer: name, seen-time, then (active-time and) the
// raw IDs it owns.
func consumerB(name string, times []int64, ids ...StreamID) []byte {
	b := rs(name)
	for _, t := range times {
		b = binary.LittleEndian.AppendUint64(b, uint64(t))
	}
	b = append(b, ln(uint64(len(ids)))...)
	for _, id := range ids {
		b = appendRawID(b, id)
	}
	return b
}

// groupB is a group: name, last ID, entries_read (nil for type 15), the
// PEL, the consumers.
func groupB(name string, last StreamID, entriesRead []byte, pel [][]byte, consumers ...[]byte) []byte {
	b := cat(rs(name), appendID(nil, last), entriesRead, ln(uint64(len(pel))))
	b = append(b, cat(pel...)...)
	b = append(b, ln(uint64(len(consumers)))...)
	return append(b, cat(consumers...)...)
}

// er is an entries_read as Redis writes it: rdbSaveLen of a long long.
func er(n int64) []byte { return ln(uint64(n)) }

func ent(ms, seq uint64, kv ...string) StreamEntry {
	return StreamEntry{ID: sid(ms, seq), Fields: bs(kv...)}
}

func streamV(s StreamValue) Value { return Value{Kind: Stream, Stream: &s} }

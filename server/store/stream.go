package store

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/zaris-io/zaris/internal/kv"
)

// Streams (R-DS-2): an append-only log of entries with monotonic ids, and
// consumer groups that split it over workers with a pending-entries list
// (PEL) per group, acknowledgement and claiming — at-least-once delivery.
// Commands and replies follow Redis's XADD … XREAD after the key; XREAD and
// XREADGROUP take one key per command and reply with that key's entries
// (a front end serving several keys wraps them as [[key, entries] …]).
//
// Differences from Redis, deliberate:
//   - "~" (approximate trimming) trims exactly, like "=": the node-local
//     representation has no macro nodes to round to. LIMIT is honoured with
//     "~" as a cap on the entries one call removes (0: no cap).
//   - XCLAIM and XAUTOCLAIM always create the named consumer (XREADGROUP
//     only when it serves something, as Redis); a consumer's seen time
//     is node-local (XINFO's seen-time/idle on a replica count from when
//     it got the consumer).
//   - XCLAIM processes each id once (a repeated id is ignored) and accepts an
//     empty id list (it then only creates the consumer and applies LASTID).
//   - XGROUP CREATE/SETID's ENTRIESREAD sets the group's read counter, from
//     which XINFO derives the lag as Redis 7.0 does (stream_info.go).
//   - An emptied stream keeps existing (as in Redis: it keeps its last id and
//     groups), so count() never reports 0; only DEL/expiry remove it.
//
// Effects (what the op-log carries, see exec.go): XADD is logged with the
// concrete id it generated; XGROUP CREATE/SETID with "$" resolved; XDEL,
// XTRIM, XACK and the other XGROUP subcommands as given. The three commands
// that read the clock — XREADGROUP, XCLAIM, XAUTOCLAIM — are logged as one
// XCLAIM in the idempotent form Redis itself propagates:
//
//	XCLAIM key group consumer 0 id… TIME <delivery ms> [RETRYCOUNT n] [FORCE] [JUSTID] [LASTID id]
//
// where the ids are exactly those the command changed (claimed, created by
// a delivery, or dropped from the PEL because the entry is gone). With
// min-idle 0 a replica processes every listed id, with the source's
// delivery time, so it reaches the same state whatever its own clock says.
// An XREADGROUP ">" becomes "… 0 ids TIME now RETRYCOUNT 1 FORCE JUSTID
// LASTID last" (NOACK: "… 0 LASTID last"). A TIME in the future is clamped
// to now for clients only, never when a replica applies an effect.

// streamID is an entry id: milliseconds and a sequence number.
type streamID struct{ ms, seq uint64 }

var maxStreamID = streamID{math.MaxUint64, math.MaxUint64}

func (a streamID) less(b streamID) bool { return a.ms < b.ms || a.ms == b.ms && a.seq < b.seq }

// incr is the next id; false at the maximum.
func (a streamID) incr() (streamID, bool) {
	switch {
	case a.seq < math.MaxUint64:
		return streamID{a.ms, a.seq + 1}, true
	case a.ms < math.MaxUint64:
		return streamID{a.ms + 1, 0}, true
	}
	return a, false
}

// decr is the previous id; false at 0-0.
func (a streamID) decr() (streamID, bool) {
	switch {
	case a.seq > 0:
		return streamID{a.ms, a.seq - 1}, true
	case a.ms > 0:
		return streamID{a.ms - 1, math.MaxUint64}, true
	}
	return a, false
}

func (a streamID) bytes() []byte {
	b := make([]byte, 0, 41)
	b = strconv.AppendUint(b, a.ms, 10)
	b = append(b, '-')
	return strconv.AppendUint(b, a.seq, 10)
}

func (a streamID) String() string { return string(a.bytes()) }

func parseUintBytes(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// parseStreamID parses "ms-seq", or "ms" meaning ms-missingSeq.
func parseStreamID(b []byte, missingSeq uint64) (streamID, bool) {
	i := bytes.IndexByte(b, '-')
	if i < 0 {
		ms, ok := parseUintBytes(b)
		return streamID{ms, missingSeq}, ok
	}
	ms, ok1 := parseUintBytes(b[:i])
	seq, ok2 := parseUintBytes(b[i+1:])
	return streamID{ms, seq}, ok1 && ok2
}

// parseRangeBound parses an interval bound: "-", "+", an id (a bare ms is
// ms-0 as a start, ms-max as an end), or "(" id, exclusive.
func parseRangeBound(b []byte, start bool) (id streamID, ok, inInterval bool) {
	switch string(b) {
	case "-":
		return streamID{}, true, true
	case "+":
		return maxStreamID, true, true
	}
	exclusive := len(b) > 0 && b[0] == '('
	if exclusive {
		b = b[1:]
	}
	var missing uint64
	if !start {
		missing = math.MaxUint64
	}
	id, ok = parseStreamID(b, missing)
	switch {
	case !ok || !exclusive:
		return id, ok, true
	case start:
		id, inInterval = id.incr()
	default:
		id, inInterval = id.decr()
	}
	return id, true, inInterval
}

// rangeBounds parses an interval's start and end bounds in Redis's order
// and with its errors: a malformed id, or an exclusive bound past the last
// possible id ("(" max-max as a start, "(" 0-0 as an end).
func rangeBounds(a, b []byte) (start, end streamID, r kv.Reply, ok bool) {
	start, ok, in := parseRangeBound(a, true)
	switch {
	case !ok:
		return start, end, errStreamID, false
	case !in:
		return start, end, kv.BadRequest("invalid start ID for the interval"), false
	}
	end, ok, in = parseRangeBound(b, false)
	switch {
	case !ok:
		return start, end, errStreamID, false
	case !in:
		return start, end, kv.BadRequest("invalid end ID for the interval"), false
	}
	return start, end, kv.Reply{}, true
}

// isWord reports whether b is the ASCII keyword w (upper case), ignoring case.
func isWord(b []byte, w string) bool {
	if len(b) != len(w) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}

// idSeq is a sequence of values ordered by id: stream entries and pending
// lists. Ids mostly arrive in increasing order, so adding is an append;
// removal leaves a dead slot that keeps its id (binary search still works),
// and tidy drops leading dead slots and compacts once the dead outnumber the
// live, so iteration stays proportional to the live items and the cost is
// amortised O(1) per removal. Indexes are invalidated only by put and tidy.
type idSeq[V any] struct {
	items []idItem[V]
	live  int
}

type idItem[V any] struct {
	id   streamID
	val  V
	dead bool
}

// search returns the first index whose id is >= id.
func (q *idSeq[V]) search(id streamID) int {
	return sort.Search(len(q.items), func(i int) bool { return !q.items[i].id.less(id) })
}

// get returns the live value under id (valid until the next put or tidy).
func (q *idSeq[V]) get(id streamID) *V {
	if i := q.search(id); i < len(q.items) && q.items[i].id == id && !q.items[i].dead {
		return &q.items[i].val
	}
	return nil
}

// put stores v under id, replacing a live value.
func (q *idSeq[V]) put(id streamID, v V) {
	n := len(q.items)
	if n == 0 || q.items[n-1].id.less(id) {
		q.items = append(q.items, idItem[V]{id: id, val: v})
		q.live++
		return
	}
	i := q.search(id)
	if q.items[i].id == id {
		if q.items[i].dead {
			q.items[i].dead = false
			q.live++
		}
		q.items[i].val = v
		return
	}
	q.items = slices.Insert(q.items, i, idItem[V]{id: id, val: v})
	q.live++
}

// killAt marks the live slot i dead.
func (q *idSeq[V]) killAt(i int) {
	var zero V
	q.items[i].val, q.items[i].dead = zero, true
	q.live--
}

// nextLive returns the first live index >= i (len(items) if none).
func (q *idSeq[V]) nextLive(i int) int {
	for i < len(q.items) && q.items[i].dead {
		i++
	}
	return i
}

func (q *idSeq[V]) tidy() {
	k := 0
	for k < len(q.items) && q.items[k].dead {
		k++
	}
	if k > 0 {
		clear(q.items[:k])
		q.items = q.items[k:]
	}
	if dead := len(q.items) - q.live; dead > 16 && dead > q.live {
		kept := make([]idItem[V], 0, q.live+q.live/4)
		for _, it := range q.items {
			if !it.dead {
				kept = append(kept, it)
			}
		}
		q.items = kept
	}
	if q.live == 0 {
		q.items = nil
	}
}

// Accounted sizes (bytes) beyond the payload: headers, ids, index slots.
const (
	streamEntryOverhead    = 64
	streamFieldOverhead    = 16 // per field and per value
	streamPendingOverhead  = 64
	streamConsumerOverhead = 64
	streamGroupOverhead    = 128
)

func entrySize(fields [][]byte) int64 {
	n := streamEntryOverhead
	for _, f := range fields {
		n += len(f) + streamFieldOverhead
	}
	return int64(n)
}

func consumerSize(name int) int64 { return int64(streamConsumerOverhead + name) }

// streamColl is the materialized form of a stream.
type streamColl struct {
	entries idSeq[[][]byte] // field, value, field, value, …
	last    streamID        // the greatest id ever added: ids stay monotonic after XDEL/XTRIM
	groups  map[string]*streamGroup
	bytes   int64
	// Redis 7's counters (XINFO, XSETID, consumer-group lag): entries ever
	// added, the greatest id deleted by XDEL, and the recorded first id
	// (the first entry's, 0-0 once the stream is empty, as Redis records
	// it).
	entriesAdded uint64
	maxDeleted   streamID
	firstID      streamID
	// clockMs is the time of the command running on the stream (set by
	// streamOf): a consumer created now is seen now.
	clockMs int64
}

type streamGroup struct {
	name      string
	last      streamID // last delivered id
	pel       idSeq[pendingEntry]
	consumers map[string]*streamConsumer
	// entriesRead is Redis's logical read counter of the group (-1:
	// unknown), kept as Redis keeps it so XINFO reports its entries-read
	// and lag (stream_info.go).
	entriesRead int64
}

// pendingEntry is a delivered, not yet acknowledged entry.
type pendingEntry struct {
	consumer    *streamConsumer
	deliveredMs int64 // Unix ms of the last delivery
	deliveries  uint64
}

type streamConsumer struct {
	name    string
	pending int   // entries of the group's PEL it owns
	seenMs  int64 // Unix ms it was created or last read or claimed (XINFO seen-time, idle); node-local, not encoded
}

func newStream() *streamColl { return &streamColl{} }

func (s *streamColl) kind() ValueKind { return KindStream }
func (s *streamColl) size() int64     { return s.bytes }

// count is the number of entries, but at least 1: an emptied stream keeps
// existing (with its last id and groups), as in Redis.
func (s *streamColl) count() int { return max(1, s.entries.live) }

// add appends an entry, copying its fields into one buffer. id must be
// greater than s.last.
func (s *streamColl) add(id streamID, fields [][]byte) {
	total := 0
	for _, f := range fields {
		total += len(f)
	}
	buf := make([]byte, 0, total)
	out := make([][]byte, len(fields))
	for i, f := range fields {
		start := len(buf)
		buf = append(buf, f...)
		out[i] = buf[start:len(buf):len(buf)]
	}
	if s.entries.live == 0 {
		s.firstID = id
	}
	s.entries.put(id, out)
	s.last = id
	s.bytes += entrySize(fields)
}

func (s *streamColl) removeEntry(id streamID) bool {
	i := s.entries.search(id)
	if i == len(s.entries.items) || s.entries.items[i].id != id || s.entries.items[i].dead {
		return false
	}
	s.bytes -= entrySize(s.entries.items[i].val)
	s.entries.killAt(i)
	return true
}

// trimFront removes the n oldest entries.
func (s *streamColl) trimFront(n int) {
	for i := 0; n > 0 && i < len(s.entries.items); i++ {
		if !s.entries.items[i].dead {
			s.bytes -= entrySize(s.entries.items[i].val)
			s.entries.killAt(i)
			n--
		}
	}
	s.entries.tidy()
	s.firstID = s.firstLive(streamID{})
}

func (s *streamColl) addGroup(name string, last streamID) *streamGroup {
	if s.groups == nil {
		s.groups = map[string]*streamGroup{}
	}
	g := &streamGroup{name: name, last: last, consumers: map[string]*streamConsumer{}, entriesRead: -1}
	s.groups[name] = g
	s.bytes += int64(streamGroupOverhead + len(name))
	return g
}

func (s *streamColl) delGroup(g *streamGroup) {
	s.bytes -= int64(streamGroupOverhead+len(g.name)) + int64(g.pel.live)*streamPendingOverhead
	for _, c := range g.consumers {
		s.bytes -= consumerSize(len(c.name))
	}
	delete(s.groups, g.name)
}

func (s *streamColl) addConsumer(g *streamGroup, name string) *streamConsumer {
	c := &streamConsumer{name: name, seenMs: s.clockMs}
	g.consumers[name] = c
	s.bytes += consumerSize(len(name))
	return c
}

// delConsumer removes c and its pending entries; returns how many it had.
func (s *streamColl) delConsumer(g *streamGroup, c *streamConsumer) int {
	n := c.pending
	for i := range g.pel.items {
		if it := &g.pel.items[i]; !it.dead && it.val.consumer == c {
			g.pel.killAt(i)
		}
	}
	g.pel.tidy()
	s.bytes -= int64(n)*streamPendingOverhead + consumerSize(len(c.name))
	delete(g.consumers, c.name)
	return n
}

// setPending makes id pending for c (adding or transferring it).
func (s *streamColl) setPending(g *streamGroup, id streamID, c *streamConsumer, deliveredMs int64, deliveries uint64) {
	if pe := g.pel.get(id); pe != nil {
		pe.consumer.pending--
		pe.consumer, pe.deliveredMs, pe.deliveries = c, deliveredMs, deliveries
		c.pending++
		return
	}
	g.pel.put(id, pendingEntry{consumer: c, deliveredMs: deliveredMs, deliveries: deliveries})
	c.pending++
	s.bytes += streamPendingOverhead
}

func (s *streamColl) ack(g *streamGroup, id streamID) bool {
	i := g.pel.search(id)
	if i == len(g.pel.items) || g.pel.items[i].id != id || g.pel.items[i].dead {
		return false
	}
	g.pel.items[i].val.consumer.pending--
	g.pel.killAt(i)
	s.bytes -= streamPendingOverhead
	return true
}

// --- canonical encoding ---

type streamWire struct {
	_msgpack struct{} `msgpack:",as_array"`
	Last     [2]uint64
	Entries  []streamEntryWire
	Groups   []streamGroupWire // by name
	// Redis 7's counters, appended (an older encoding decodes with zeros).
	EntriesAdded uint64
	MaxDeleted   [2]uint64
	FirstID      [2]uint64
}

type streamEntryWire struct {
	_msgpack struct{} `msgpack:",as_array"`
	ID       [2]uint64
	Fields   [][]byte
}

type streamGroupWire struct {
	_msgpack  struct{} `msgpack:",as_array"`
	Name      string
	Last      [2]uint64
	Consumers []string // sorted
	Pending   []streamPendingWire
	// Appended: the group's read counter + 1 (0 = unknown).
	EntriesRead1 int64
}

type streamPendingWire struct {
	_msgpack    struct{} `msgpack:",as_array"`
	ID          [2]uint64
	Consumer    string
	DeliveredMs int64
	Deliveries  uint64
}

func wireID(id streamID) [2]uint64 { return [2]uint64{id.ms, id.seq} }

// encode: [last, entries in id order, groups by name with consumers sorted
// and the PEL in id order].
func (s *streamColl) encode() []byte {
	w := streamWire{Last: wireID(s.last), Entries: make([]streamEntryWire, 0, s.entries.live),
		Groups: make([]streamGroupWire, 0, len(s.groups)), EntriesAdded: s.entriesAdded,
		MaxDeleted: wireID(s.maxDeleted), FirstID: wireID(s.firstID)}
	for _, it := range s.entries.items {
		if !it.dead {
			w.Entries = append(w.Entries, streamEntryWire{ID: wireID(it.id), Fields: it.val})
		}
	}
	names := make([]string, 0, len(s.groups))
	for n := range s.groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g := s.groups[n]
		gw := streamGroupWire{Name: n, Last: wireID(g.last), Consumers: make([]string, 0, len(g.consumers)),
			Pending: make([]streamPendingWire, 0, g.pel.live)}
		for c := range g.consumers {
			gw.Consumers = append(gw.Consumers, c)
		}
		sort.Strings(gw.Consumers)
		gw.EntriesRead1 = g.entriesRead + 1
		for _, it := range g.pel.items {
			if !it.dead {
				gw.Pending = append(gw.Pending, streamPendingWire{ID: wireID(it.id), Consumer: it.val.consumer.name,
					DeliveredMs: it.val.deliveredMs, Deliveries: it.val.deliveries})
			}
		}
		w.Groups = append(w.Groups, gw)
	}
	return mustMarshal(&w)
}

func (s *streamColl) decode(b []byte) error {
	var w streamWire
	if err := msgpack.Unmarshal(b, &w); err != nil {
		return err
	}
	for _, e := range w.Entries {
		id := streamID{e.ID[0], e.ID[1]}
		if len(e.Fields) == 0 || len(e.Fields)%2 != 0 {
			return fmt.Errorf("stream entry %v has %d fields and values", id, len(e.Fields))
		}
		if s.entries.live > 0 && !s.last.less(id) {
			return fmt.Errorf("stream entry %v out of order", id)
		}
		s.add(id, e.Fields)
	}
	s.entriesAdded = w.EntriesAdded
	s.maxDeleted = streamID{w.MaxDeleted[0], w.MaxDeleted[1]}
	if w.FirstID != [2]uint64{} || s.entries.live == 0 {
		s.firstID = streamID{w.FirstID[0], w.FirstID[1]}
	}
	if last := (streamID{w.Last[0], w.Last[1]}); s.last.less(last) {
		s.last = last
	} else if last.less(s.last) {
		return errors.New("stream last id below its greatest entry")
	}
	for _, gw := range w.Groups {
		if s.groups[gw.Name] != nil {
			return fmt.Errorf("stream group %q twice", gw.Name)
		}
		g := s.addGroup(gw.Name, streamID{gw.Last[0], gw.Last[1]})
		g.entriesRead = gw.EntriesRead1 - 1
		for _, c := range gw.Consumers {
			// seen-time is node-local (not encoded, like the LRU stamps):
			// a copy counts from when it got the consumer.
			s.addConsumer(g, c).seenMs = time.Now().UnixMilli()
		}
		for _, p := range gw.Pending {
			c := g.consumers[p.Consumer]
			if c == nil {
				return fmt.Errorf("stream group %q: pending entry of unknown consumer %q", gw.Name, p.Consumer)
			}
			s.setPending(g, streamID{p.ID[0], p.ID[1]}, c, p.DeliveredMs, p.Deliveries)
		}
	}
	return nil
}

// --- command helpers ---

func streamOf(x *execCtx) *streamColl {
	if x.coll == nil {
		return nil
	}
	s := x.coll.(*streamColl)
	s.clockMs = nowMs(x)
	return s
}

var (
	errStreamID     = kv.BadRequest("Invalid stream ID specified as stream command argument")
	errSyntax       = kv.BadRequest("syntax error")
	errXAddTooSmall = kv.BadRequest("The ID specified in XADD is equal or smaller than the target stream top item")
	errXAddZero     = kv.BadRequest("The ID specified in XADD must be greater than 0-0")
	errStreamFull   = kv.BadRequest("The stream has exhausted the last possible ID, unable to add more items")
	// errSeqExhausted: "ms-*" when the top item is ms-(2^64-1) (Redis's
	// reply for that case).
	errSeqExhausted = kv.BadRequest("Elements are too large to be stored")
	errNoKey        = kv.Reply{Status: kv.StatusNotFound, Message: "The XGROUP subcommand requires the key to exist. " +
		"Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."}
)

func errNoGroup(x *execCtx, group []byte) kv.Reply {
	return kv.Reply{Status: kv.StatusNotFound,
		Message: fmt.Sprintf("NOGROUP No such key '%s' or consumer group '%s'", x.cmd.Key, group)}
}

// groupOf returns the stream and its group, or a NOGROUP reply.
func groupOf(x *execCtx, name []byte) (*streamColl, *streamGroup, kv.Reply, bool) {
	s := streamOf(x)
	if s == nil || x.rec == nil {
		return nil, nil, errNoGroup(x, name), false
	}
	g := s.groups[string(name)]
	if g == nil {
		return nil, nil, errNoGroup(x, name), false
	}
	return s, g, kv.Reply{}, true
}

// streamFits reports whether the stream may hold entries entries and grow by
// addBytes.
func (x *execCtx) streamFits(s *streamColl, entries int, addBytes int64) bool {
	return x.fitsFrom(s.entries.live, s.bytes, entries-s.entries.live, addBytes)
}

func nowMs(x *execCtx) int64 { return x.now / int64(1e6) }

// replyBuilder carves the replies of a list of entries out of a few
// allocations: reply headers from a slab, ids from a shared buffer. Parts
// never move once handed out (an exhausted slab or buffer is replaced, not
// grown).
type replyBuilder struct {
	out  []kv.Reply
	slab []kv.Reply
	ids  []byte
	hint int // entries expected
}

// newReplies returns a builder for about n entries.
func newReplies(n int) *replyBuilder {
	n = min(max(n, 1), 256)
	return &replyBuilder{out: make([]kv.Reply, 0, n), hint: n}
}

func (b *replyBuilder) take(n int) []kv.Reply {
	if len(b.slab) < n {
		b.slab = make([]kv.Reply, max(n, 4*b.hint))
	}
	r := b.slab[:n:n]
	b.slab = b.slab[n:]
	return r
}

func (b *replyBuilder) id(id streamID) []byte {
	if cap(b.ids)-len(b.ids) < 41 {
		b.ids = make([]byte, 0, 41*b.hint)
	}
	start := len(b.ids)
	b.ids = strconv.AppendUint(b.ids, id.ms, 10)
	b.ids = append(b.ids, '-')
	b.ids = strconv.AppendUint(b.ids, id.seq, 10)
	return b.ids[start:len(b.ids):len(b.ids)]
}

// entry adds [id, [field, value, …]].
func (b *replyBuilder) entry(id streamID, fields [][]byte) {
	r := b.take(2 + len(fields))
	f := r[2:]
	for i, v := range fields {
		f[i] = kv.BulkReply(v)
	}
	r[0], r[1] = kv.BulkReply(b.id(id)), kv.ArrayReply(f)
	b.out = append(b.out, kv.ArrayReply(r[0:2:2]))
}

// entryOrNil adds an entry that may have been deleted: [id, nil].
func (b *replyBuilder) entryOrNil(s *streamColl, id streamID) {
	if f := s.entries.get(id); f != nil {
		b.entry(id, *f)
		return
	}
	r := b.take(2)
	r[0], r[1] = kv.BulkReply(b.id(id)), kv.NilReply()
	b.out = append(b.out, kv.ArrayReply(r))
}

// bulkID adds a bare id.
func (b *replyBuilder) bulkID(id streamID) { b.out = append(b.out, kv.BulkReply(b.id(id))) }

func (b *replyBuilder) len() int { return len(b.out) }

func (b *replyBuilder) reply() kv.Reply { return kv.ArrayReply(b.out) }

// trimSpec is MAXLEN|MINID [=|~] threshold [LIMIT n].
type trimSpec struct {
	set    bool
	minID  bool
	maxLen int64
	min    streamID
	limit  int64 // 0: none
}

// parseTrim parses a trim spec at args[i:] and returns the index after it.
func parseTrim(args [][]byte, i int, t *trimSpec) (int, kv.Reply, bool) {
	if t.set {
		return 0, kv.BadRequest("syntax error, MAXLEN and MINID options at the same time are not compatible"), false
	}
	t.set, t.minID = true, isWord(args[i], "MINID")
	i++
	approx := false
	if i < len(args) && (string(args[i]) == "=" || string(args[i]) == "~") {
		approx = args[i][0] == '~'
		i++
	}
	if i >= len(args) {
		return 0, errSyntax, false
	}
	if t.minID {
		id, ok := parseStreamID(args[i], 0)
		if !ok {
			return 0, errStreamID, false
		}
		t.min = id
	} else {
		n, ok := argInt(args[i])
		if !ok {
			return 0, errNotInteger, false
		}
		if n < 0 {
			return 0, kv.BadRequest("The MAXLEN argument must be >= 0."), false
		}
		t.maxLen = n
	}
	i++
	if i < len(args) && isWord(args[i], "LIMIT") {
		if i+1 >= len(args) {
			return 0, errSyntax, false
		}
		n, ok := argInt(args[i+1])
		if !ok || n < 0 {
			return 0, kv.BadRequest("The LIMIT argument must be >= 0."), false
		}
		if !approx {
			return 0, kv.BadRequest("syntax error, LIMIT cannot be used without the special ~ option"), false
		}
		t.limit = n
		i += 2
	}
	return i, kv.Reply{}, true
}

// trimPlan counts the oldest entries t removes — from the stream plus, when
// extra is set, one more entry appended after it — and their bytes.
func (s *streamColl) trimPlan(t *trimSpec, extra *streamID, extraBytes int64) (n int, size int64) {
	if !t.set {
		return 0, 0
	}
	total := s.entries.live
	if extra != nil {
		total++
	}
	if !t.minID && int64(total) <= t.maxLen {
		return 0, 0
	}
	removes := func(id streamID) bool {
		if t.limit > 0 && int64(n) >= t.limit {
			return false
		}
		if t.minID {
			return id.less(t.min)
		}
		return int64(total-n) > t.maxLen
	}
	for _, it := range s.entries.items {
		if it.dead {
			continue
		}
		if !removes(it.id) {
			return n, size
		}
		n++
		size += entrySize(it.val)
	}
	if extra != nil && removes(*extra) {
		n++
		size += extraBytes
	}
	return n, size
}

// nextID resolves an XADD id argument: "*", "ms-*" or an explicit id.
func (s *streamColl) nextID(arg []byte, nowMs int64) (streamID, kv.Reply, bool) {
	// Redis's order: a malformed id first, then 0-0, then an exhausted
	// stream (whatever the id), then the id against the top item.
	exhausted := s.last == maxStreamID
	if string(arg) == "*" {
		ms := uint64(max(nowMs, 0))
		if s.last.ms < ms {
			return streamID{ms, 0}, kv.Reply{}, true
		}
		id, ok := s.last.incr()
		if !ok {
			return id, errStreamFull, false
		}
		return id, kv.Reply{}, true
	}
	if bytes.HasSuffix(arg, []byte("-*")) {
		ms, ok := parseUintBytes(arg[:len(arg)-2])
		switch {
		case !ok:
			return streamID{}, errStreamID, false
		case exhausted:
			return streamID{}, errStreamFull, false
		case ms < s.last.ms:
			return streamID{}, errXAddTooSmall, false
		case ms == s.last.ms && s.last.seq == math.MaxUint64:
			return streamID{}, errSeqExhausted, false
		case ms == s.last.ms:
			return streamID{ms, s.last.seq + 1}, kv.Reply{}, true
		}
		return streamID{ms, 0}, kv.Reply{}, true
	}
	id, ok := parseStreamID(arg, 0)
	switch {
	case !ok:
		return id, errStreamID, false
	case id == streamID{}:
		return id, errXAddZero, false
	case exhausted:
		return id, errStreamFull, false
	case !s.last.less(id):
		return id, errXAddTooSmall, false
	}
	return id, kv.Reply{}, true
}

func xadd(x *execCtx) kv.Reply {
	args := x.cmd.Args
	var t trimSpec
	noMk := false
	i := 0
options:
	for i < len(args) {
		switch {
		case isWord(args[i], "NOMKSTREAM"):
			noMk = true
			i++
		case isWord(args[i], "MAXLEN"), isWord(args[i], "MINID"):
			next, r, ok := parseTrim(args, i, &t)
			if !ok {
				return r
			}
			i = next
		default:
			break options
		}
	}
	if rest := len(args) - i; rest < 3 || rest%2 != 1 {
		return kv.BadRequest("wrong number of arguments for XADD")
	}
	s := streamOf(x)
	if x.rec == nil && noMk {
		return kv.NilReply()
	}
	id, r, ok := s.nextID(args[i], nowMs(x))
	if !ok {
		return r
	}
	fields := args[i+1:]
	size := entrySize(fields)
	n, freed := s.trimPlan(&t, &id, size)
	if !x.streamFits(s, s.entries.live+1-n, size-freed) {
		return x.tooLarge()
	}
	s.add(id, fields)
	s.entriesAdded++
	if n > 0 {
		s.trimFront(n)
	}
	idb := id.bytes() // the effect is copied into the op-log: the reply may share it
	effect := make([][]byte, 0, len(args))
	effect = append(effect, args[:i]...)
	effect = append(effect, idb)
	x.changedAs(kv.CmdXAdd, append(effect, fields...)...)
	return kv.BulkReply(idb)
}

func xtrim(x *execCtx) kv.Reply {
	args := x.cmd.Args
	if len(args) < 2 || !isWord(args[0], "MAXLEN") && !isWord(args[0], "MINID") {
		return errSyntax
	}
	var t trimSpec
	next, r, ok := parseTrim(args, 0, &t)
	if !ok {
		return r
	}
	if next != len(args) {
		return errSyntax
	}
	s := streamOf(x)
	if s == nil {
		return kv.IntReply(0)
	}
	n, _ := s.trimPlan(&t, nil, 0)
	if n > 0 {
		s.trimFront(n)
		x.changed()
	}
	return kv.IntReply(int64(n))
}

// parseCount parses an optional trailing "COUNT n" at args[i:]; count is -1
// when absent.
func parseCount(args [][]byte) (count int64, r kv.Reply, ok bool) {
	switch {
	case len(args) == 0:
		return -1, kv.Reply{}, true
	case len(args) == 2 && isWord(args[0], "COUNT"):
		n, ok := argInt(args[1])
		if !ok {
			return 0, errNotInteger, false
		}
		return max(n, 0), kv.Reply{}, true // Redis: a negative COUNT is 0
	}
	return 0, errSyntax, false
}

func xrange(rev bool) func(x *execCtx) kv.Reply {
	return func(x *execCtx) kv.Reply {
		if r, ok := arity(x, 2, 4); !ok {
			return r
		}
		a, b := x.cmd.Args[0], x.cmd.Args[1]
		if rev {
			a, b = b, a // XREVRANGE key end start
		}
		start, end, r, ok := rangeBounds(a, b)
		if !ok {
			return r
		}
		count, r, ok := parseCount(x.cmd.Args[2:])
		if !ok {
			return r
		}
		s := streamOf(x)
		switch {
		case s == nil:
			return kv.ArrayReply([]kv.Reply{})
		case count == 0:
			return kv.NilReply() // Redis's null array for COUNT 0 on a stream
		case end.less(start):
			return kv.ArrayReply([]kv.Reply{})
		}
		limit := int(min(count, math.MaxInt32))
		if count < 0 {
			limit = math.MaxInt
		}
		out := newReplies(min(limit, s.entries.live))
		items := s.entries.items
		if !rev {
			for i := s.entries.search(start); i < len(items) && out.len() < limit && !end.less(items[i].id); i++ {
				if !items[i].dead {
					out.entry(items[i].id, items[i].val)
				}
			}
		} else {
			i := sort.Search(len(items), func(i int) bool { return end.less(items[i].id) }) - 1
			for ; i >= 0 && out.len() < limit && !items[i].id.less(start); i-- {
				if !items[i].dead {
					out.entry(items[i].id, items[i].val)
				}
			}
		}
		return out.reply()
	}
}

func xread(x *execCtx) kv.Reply {
	args := x.cmd.Args
	var idArg []byte
	count := int64(-1)
	for i := 0; i < len(args); i++ {
		switch {
		case isWord(args[i], "COUNT") && i+1 < len(args):
			n, ok := argInt(args[i+1])
			if !ok {
				return errNotInteger
			}
			count = n
			i++
		case idArg == nil:
			idArg = args[i]
		default:
			return errSyntax
		}
	}
	if idArg == nil {
		return kv.BadRequest("wrong number of arguments for XREAD")
	}
	s := streamOf(x)
	var after streamID
	if string(idArg) == "$" {
		if s != nil {
			after = s.last
		}
	} else {
		var ok bool
		if after, ok = parseStreamID(idArg, 0); !ok {
			return errStreamID
		}
	}
	start, ok := after.incr()
	if s == nil || !ok {
		return kv.ArrayReply([]kv.Reply{})
	}
	limit := s.entries.live
	if count > 0 {
		limit = int(min(count, int64(limit)))
	}
	out := newReplies(limit)
	items := s.entries.items
	for i := s.entries.search(start); i < len(items) && out.len() < limit; i++ {
		if !items[i].dead {
			out.entry(items[i].id, items[i].val)
		}
	}
	return out.reply()
}

func xdel(x *execCtx) kv.Reply {
	if r, ok := arity(x, 1, -1); !ok {
		return r
	}
	ids := make([]streamID, len(x.cmd.Args))
	for i, a := range x.cmd.Args {
		id, ok := parseStreamID(a, 0)
		if !ok {
			return errStreamID
		}
		ids[i] = id
	}
	s := streamOf(x)
	if s == nil {
		return kv.IntReply(0)
	}
	n := 0
	for _, id := range ids {
		if s.removeEntry(id) {
			n++
			if s.maxDeleted.less(id) {
				s.maxDeleted = id
			}
		}
	}
	if n > 0 {
		s.entries.tidy()
		s.firstID = s.firstLive(streamID{})
		x.changed()
	}
	return kv.IntReply(int64(n))
}

func xgroup(x *execCtx) kv.Reply {
	args := x.cmd.Args
	if len(args) < 2 {
		return kv.BadRequest("wrong number of arguments for XGROUP")
	}
	sub, name := args[0], args[1]
	s := streamOf(x)
	missing := x.rec == nil
	switch {
	case isWord(sub, "CREATE"):
		if len(args) < 3 || len(args) > 6 {
			return errSubcommandSyntax("XGROUP", sub)
		}
		mk := false
		entriesRead := int64(invalidEntriesRead)
		for i := 3; i < len(args); {
			switch {
			case isWord(args[i], "MKSTREAM"):
				mk = true
				i++
			case isWord(args[i], "ENTRIESREAD") && i+1 < len(args):
				n, bad := parseEntriesRead(args[i+1])
				if bad != nil {
					return *bad
				}
				entriesRead = n
				i += 2
			default:
				return errSubcommandSyntax("XGROUP", sub)
			}
		}
		if missing && !mk {
			return errNoKey
		}
		last := s.last
		if string(args[2]) != "$" {
			id, ok := parseStreamID(args[2], 0)
			if !ok {
				return errStreamID
			}
			last = id
		}
		if s.groups[string(name)] != nil {
			return kv.Reply{Status: kv.StatusConflict, Message: "BUSYGROUP Consumer Group name already exists"}
		}
		if !x.streamFits(s, s.entries.live, int64(streamGroupOverhead+len(name))) {
			return x.tooLarge()
		}
		s.addGroup(string(name), last).entriesRead = entriesRead
		effect := [][]byte{args[0], name, last.bytes()}
		if mk {
			effect = append(effect, []byte("MKSTREAM"))
		}
		if entriesRead != invalidEntriesRead {
			effect = append(effect, []byte("ENTRIESREAD"), strconv.AppendInt(nil, entriesRead, 10))
		}
		x.changedAs(kv.CmdXGroup, effect...)
		return kv.OKReply()
	case isWord(sub, "DESTROY"):
		if len(args) != 2 {
			return kv.BadRequest("wrong number of arguments for XGROUP DESTROY")
		}
		if missing {
			return errNoKey
		}
		g := s.groups[string(name)]
		if g == nil {
			return kv.IntReply(0)
		}
		s.delGroup(g)
		x.changed()
		return kv.IntReply(1)
	case isWord(sub, "SETID"):
		if len(args) != 3 && len(args) != 5 {
			return errSubcommandSyntax("XGROUP", sub)
		}
		// Redis parses SETID's ENTRIESREAD before the key and group lookups.
		entriesRead := int64(invalidEntriesRead)
		if len(args) == 5 {
			if !isWord(args[3], "ENTRIESREAD") {
				return errSubcommandSyntax("XGROUP", sub)
			}
			n, bad := parseEntriesRead(args[4])
			if bad != nil {
				return *bad
			}
			entriesRead = n
		}
		if missing {
			return errNoKey
		}
		g := s.groups[string(name)]
		if g == nil {
			return errNoGroup(x, name)
		}
		last := s.last
		if string(args[2]) != "$" {
			id, ok := parseStreamID(args[2], 0)
			if !ok {
				return errStreamID
			}
			last = id
		}
		if g.last != last || g.entriesRead != entriesRead {
			// Redis: SETID without ENTRIESREAD makes the counter unknown.
			g.last, g.entriesRead = last, entriesRead
			effect := [][]byte{args[0], name, last.bytes()}
			if entriesRead != invalidEntriesRead {
				effect = append(effect, []byte("ENTRIESREAD"), strconv.AppendInt(nil, entriesRead, 10))
			}
			x.changedAs(kv.CmdXGroup, effect...)
		}
		return kv.OKReply()
	case isWord(sub, "CREATECONSUMER"), isWord(sub, "DELCONSUMER"):
		if len(args) != 3 {
			return kv.BadRequest("wrong number of arguments for XGROUP " + string(sub))
		}
		if missing {
			return errNoKey
		}
		g := s.groups[string(name)]
		if g == nil {
			return errNoGroup(x, name)
		}
		c := g.consumers[string(args[2])]
		if isWord(sub, "DELCONSUMER") {
			if c == nil {
				return kv.IntReply(0)
			}
			n := s.delConsumer(g, c)
			x.changed()
			return kv.IntReply(int64(n))
		}
		if c != nil {
			return kv.IntReply(0)
		}
		if !x.streamFits(s, s.entries.live, consumerSize(len(args[2]))) {
			return x.tooLarge()
		}
		s.addConsumer(g, string(args[2]))
		x.changed()
		return kv.IntReply(1)
	}
	return kv.BadRequest("unknown XGROUP subcommand " + strconv.Quote(string(sub)))
}

// claimEffect logs the XCLAIM that reproduces a delivery or a claim.
func claimEffect(x *execCtx, group, consumer []byte, ids []streamID, tail ...[]byte) {
	args := make([][]byte, 0, 3+len(ids)+len(tail))
	args = append(args, group, consumer, []byte("0"))
	for _, id := range ids {
		args = append(args, id.bytes())
	}
	x.changedAs(kv.CmdXClaim, append(args, tail...)...)
}

func msArg(ms int64) []byte { return strconv.AppendInt(nil, ms, 10) }

func xreadgroup(x *execCtx) kv.Reply {
	args := x.cmd.Args
	if len(args) < 3 {
		return kv.BadRequest("wrong number of arguments for XREADGROUP")
	}
	group, consumer, idArg := args[0], args[1], args[len(args)-1]
	count, noAck := int64(0), false
	for i := 2; i < len(args)-1; i++ {
		switch {
		case isWord(args[i], "COUNT") && i+1 < len(args)-1:
			n, ok := argInt(args[i+1])
			if !ok {
				return errNotInteger
			}
			count = n
			i++
		case isWord(args[i], "NOACK"):
			noAck = true
		default:
			return errSyntax
		}
	}
	limit := math.MaxInt
	if count > 0 {
		limit = int(min(count, math.MaxInt32))
	}
	var after streamID
	history := string(idArg) != ">"
	if history {
		var ok bool
		if after, ok = parseStreamID(idArg, 0); !ok {
			return errStreamID
		}
	}
	s, g, r, ok := groupOf(x, group)
	if !ok {
		return r
	}
	c := g.consumers[string(consumer)]
	if c != nil {
		c.seenMs = nowMs(x)
	}
	var grow int64
	if c == nil {
		grow = consumerSize(len(consumer))
	}
	if history {
		// The consumer's own pending entries after the id; no state changes
		// but the consumer's creation.
		if c == nil {
			if !x.streamFits(s, s.entries.live, grow) {
				return x.tooLarge()
			}
			s.addConsumer(g, string(consumer))
			claimEffect(x, group, consumer, nil)
			return kv.ArrayReply([]kv.Reply{})
		}
		out := newReplies(min(limit, c.pending))
		start, more := after.incr()
		items := g.pel.items
		for i := g.pel.search(start); more && i < len(items) && out.len() < limit; i++ {
			if !items[i].dead && items[i].val.consumer == c {
				out.entryOrNil(s, items[i].id)
			}
		}
		return out.reply()
	}
	var ids []streamID
	if start, more := g.last.incr(); more {
		items := s.entries.items
		for i := s.entries.search(start); i < len(items) && len(ids) < limit; i++ {
			if !items[i].dead {
				ids = append(ids, items[i].id)
				if !noAck && g.pel.get(items[i].id) == nil {
					grow += streamPendingOverhead
				}
			}
		}
	}
	if grow > 0 && !x.streamFits(s, s.entries.live, grow) {
		return x.tooLarge()
	}
	if len(ids) == 0 {
		// Nothing new: as Redis, the consumer is created only when served.
		return kv.ArrayReply([]kv.Reply{})
	}
	if c == nil {
		c = s.addConsumer(g, string(consumer))
	}
	now := nowMs(x)
	out := newReplies(len(ids))
	for _, id := range ids {
		if !noAck {
			s.setPending(g, id, c, now, 1)
		}
		out.entry(id, *s.entries.get(id))
	}
	if len(ids) > 0 {
		s.advanceGroup(g, ids[len(ids)-1])
	}
	switch {
	case noAck && len(ids) > 0:
		claimEffect(x, group, consumer, nil, []byte("LASTID"), g.last.bytes())
	case noAck || len(ids) == 0:
		claimEffect(x, group, consumer, nil)
	default:
		claimEffect(x, group, consumer, ids, []byte("TIME"), msArg(now), []byte("RETRYCOUNT"), []byte("1"),
			[]byte("FORCE"), []byte("JUSTID"), []byte("LASTID"), g.last.bytes())
	}
	return out.reply()
}

func xack(x *execCtx) kv.Reply {
	if r, ok := arity(x, 2, -1); !ok {
		return r
	}
	ids := make([]streamID, 0, len(x.cmd.Args)-1)
	for _, a := range x.cmd.Args[1:] {
		id, ok := parseStreamID(a, 0)
		if !ok {
			return errStreamID
		}
		ids = append(ids, id)
	}
	s := streamOf(x)
	if s == nil {
		return kv.IntReply(0)
	}
	g := s.groups[string(x.cmd.Args[0])]
	if g == nil {
		return kv.IntReply(0)
	}
	n := 0
	for _, id := range ids {
		if s.ack(g, id) {
			n++
		}
	}
	if n > 0 {
		g.pel.tidy()
		x.changed()
	}
	return kv.IntReply(int64(n))
}

func xpending(x *execCtx) kv.Reply {
	args := x.cmd.Args
	if len(args) == 0 {
		return kv.BadRequest("wrong number of arguments for XPENDING")
	}
	// Parse the extended form before looking the group up.
	var (
		minIdle    int64
		start, end streamID
		count      int64
		consumer   []byte
	)
	ext := args[1:]
	if len(ext) > 0 {
		if isWord(ext[0], "IDLE") {
			if len(ext) < 2 {
				return errSyntax
			}
			n, ok := argInt(ext[1])
			if !ok {
				return errNotInteger
			}
			minIdle = n
			ext = ext[2:]
		}
		if len(ext) < 3 || len(ext) > 4 {
			return errSyntax
		}
		var r kv.Reply
		var ok, ok3 bool
		if start, end, r, ok = rangeBounds(ext[0], ext[1]); !ok {
			return r
		}
		if count, ok3 = argInt(ext[2]); !ok3 {
			return errNotInteger
		}
		if len(ext) == 4 {
			consumer = ext[3]
		}
	}
	_, g, r, ok := groupOf(x, args[0])
	if !ok {
		return r
	}
	items := g.pel.items
	if len(args) == 1 {
		if g.pel.live == 0 {
			return kv.ArrayReply([]kv.Reply{kv.IntReply(0), kv.NilReply(), kv.NilReply(), kv.NilReply()})
		}
		lo := g.pel.nextLive(0)
		hi := len(items) - 1
		for items[hi].dead {
			hi--
		}
		names := make([]string, 0, len(g.consumers))
		for n, c := range g.consumers {
			if c.pending > 0 {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		per := make([]kv.Reply, len(names))
		for i, n := range names {
			per[i] = kv.ArrayReply([]kv.Reply{kv.BulkReply([]byte(n)),
				kv.BulkReply(strconv.AppendInt(nil, int64(g.consumers[n].pending), 10))})
		}
		return kv.ArrayReply([]kv.Reply{kv.IntReply(int64(g.pel.live)), kv.BulkReply(items[lo].id.bytes()),
			kv.BulkReply(items[hi].id.bytes()), kv.ArrayReply(per)})
	}
	out := newReplies(int(min(max(count, 0), int64(g.pel.live))))
	now := nowMs(x)
	for i := g.pel.search(start); i < len(items) && int64(out.len()) < count && !end.less(items[i].id); i++ {
		it := &items[i]
		if it.dead || consumer != nil && it.val.consumer.name != string(consumer) {
			continue
		}
		idle := max(0, now-it.val.deliveredMs)
		if idle < minIdle {
			continue
		}
		r := out.take(4)
		r[0], r[1] = kv.BulkReply(out.id(it.id)), kv.BulkReply([]byte(it.val.consumer.name))
		r[2], r[3] = kv.IntReply(idle), kv.IntReply(int64(it.val.deliveries))
		out.out = append(out.out, kv.ArrayReply(r))
	}
	return out.reply()
}

func isClaimOption(b []byte) bool {
	for _, w := range [...]string{"IDLE", "TIME", "RETRYCOUNT", "FORCE", "JUSTID", "LASTID"} {
		if isWord(b, w) {
			return true
		}
	}
	return false
}

// bumpDeliveries applies XCLAIM's RETRYCOUNT (any int64: Redis stores a
// negative count as its unsigned wrap) or the implicit increment.
func bumpDeliveries(pe *pendingEntry, retry int64, hasRetry, justID bool) {
	switch {
	case hasRetry:
		pe.deliveries = uint64(retry)
	case !justID:
		pe.deliveries++
	}
}

func xclaim(x *execCtx) kv.Reply {
	args := x.cmd.Args
	if len(args) < 3 {
		return kv.BadRequest("wrong number of arguments for XCLAIM")
	}
	group, consumer := args[0], args[1]
	minIdle, ok := argInt(args[2])
	if !ok {
		return kv.BadRequest("Invalid min-idle-time argument for XCLAIM")
	}
	minIdle = max(minIdle, 0)
	i := 3
	var ids []streamID
	seen := map[streamID]bool{}
	for ; i < len(args) && !isClaimOption(args[i]); i++ {
		id, ok := parseStreamID(args[i], 0)
		if !ok {
			return errStreamID
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	now := nowMs(x)
	delivery, retry, hasRetry := now, int64(0), false
	force, justID := false, false
	var lastID []byte
	for ; i < len(args); i++ {
		word := args[i]
		if isWord(word, "FORCE") {
			force = true
			continue
		}
		if isWord(word, "JUSTID") {
			justID = true
			continue
		}
		if i+1 >= len(args) {
			return errSyntax
		}
		i++
		switch {
		case isWord(word, "LASTID"):
			if _, ok := parseStreamID(args[i], 0); !ok {
				return errStreamID
			}
			lastID = args[i]
			continue
		case !isWord(word, "IDLE") && !isWord(word, "TIME") && !isWord(word, "RETRYCOUNT"):
			return errSyntax
		}
		n, ok := argInt(args[i])
		if !ok {
			return kv.BadRequest("Invalid " + string(word) + " option argument for XCLAIM")
		}
		switch {
		case isWord(word, "IDLE"):
			delivery = now - n
		case isWord(word, "TIME"):
			delivery = n
		default:
			retry, hasRetry = n, true
		}
	}
	if !x.apply && (delivery < 0 || delivery > now) {
		delivery = now // a client's bogus time; a replica keeps the source's
	}
	s, g, r, ok := groupOf(x, group)
	if !ok {
		return r
	}
	// Plan, so that a refusal changes nothing.
	const (
		skip = iota
		claim
		create
		clean
	)
	steps := make([]int, len(ids))
	c := g.consumers[string(consumer)]
	if c != nil {
		c.seenMs = nowMs(x)
	}
	var grow int64
	if c == nil {
		grow = consumerSize(len(consumer))
	}
	for k, id := range ids {
		exists := s.entries.get(id) != nil
		switch pe := g.pel.get(id); {
		case pe != nil && minIdle > 0 && now-pe.deliveredMs < minIdle:
		case pe != nil && !exists:
			steps[k] = clean
		case pe != nil:
			steps[k] = claim
		case force && exists:
			steps[k] = create
			grow += streamPendingOverhead
		}
	}
	if grow > 0 && !x.streamFits(s, s.entries.live, grow) {
		return x.tooLarge()
	}
	changed := c == nil
	if c == nil {
		c = s.addConsumer(g, string(consumer))
	}
	out := newReplies(len(ids))
	var done []streamID
	for k, id := range ids {
		switch steps[k] {
		case skip:
			continue
		case clean:
			s.ack(g, id)
		case create:
			s.setPending(g, id, c, delivery, 1)
			bumpDeliveries(g.pel.get(id), retry, hasRetry, justID)
		case claim:
			pe := g.pel.get(id)
			s.setPending(g, id, c, delivery, pe.deliveries)
			bumpDeliveries(g.pel.get(id), retry, hasRetry, justID)
		}
		done = append(done, id)
		if steps[k] == clean {
			continue
		}
		if justID {
			out.bulkID(id)
		} else {
			out.entry(id, *s.entries.get(id))
		}
	}
	g.pel.tidy()
	if lastID != nil {
		if id, _ := parseStreamID(lastID, 0); g.last.less(id) {
			s.advanceGroup(g, id)
			changed = true
		}
	}
	if changed || len(done) > 0 {
		tail := [][]byte{[]byte("TIME"), msArg(delivery)}
		if hasRetry {
			tail = append(tail, []byte("RETRYCOUNT"), msArg(retry))
		}
		if force {
			tail = append(tail, []byte("FORCE"))
		}
		if justID {
			tail = append(tail, []byte("JUSTID"))
		}
		if lastID != nil {
			tail = append(tail, []byte("LASTID"), lastID)
		}
		claimEffect(x, group, consumer, done, tail...)
	}
	return out.reply()
}

func xautoclaim(x *execCtx) kv.Reply {
	args := x.cmd.Args
	if len(args) < 4 {
		return kv.BadRequest("wrong number of arguments for XAUTOCLAIM")
	}
	group, consumer := args[0], args[1]
	minIdle, ok := argInt(args[2])
	if !ok {
		return kv.BadRequest("Invalid min-idle-time argument for XAUTOCLAIM")
	}
	minIdle = max(minIdle, 0)
	start, ok, in := parseRangeBound(args[3], true)
	switch {
	case !ok:
		return errStreamID
	case !in:
		return kv.BadRequest("invalid start ID for the interval")
	}
	count, justID := int64(100), false
	for i := 4; i < len(args); i++ {
		switch {
		case isWord(args[i], "JUSTID"):
			justID = true
		case isWord(args[i], "COUNT") && i+1 < len(args):
			n, ok := argInt(args[i+1])
			if !ok || n < 1 || n > math.MaxInt32 {
				return kv.BadRequest("COUNT must be > 0")
			}
			count = n
			i++
		default:
			return errSyntax
		}
	}
	s, g, r, ok := groupOf(x, group)
	if !ok {
		return r
	}
	c := g.consumers[string(consumer)]
	if c != nil {
		c.seenMs = nowMs(x)
	}
	if c == nil && !x.streamFits(s, s.entries.live, consumerSize(len(consumer))) {
		return x.tooLarge()
	}
	now := nowMs(x)
	var claimIDs, deleted []streamID
	items := g.pel.items
	attempts := count * 10
	i := g.pel.search(start)
	for ; i < len(items) && attempts > 0 && count > 0; i++ {
		it := &items[i]
		if it.dead {
			continue
		}
		attempts--
		if s.entries.get(it.id) == nil {
			deleted = append(deleted, it.id)
			count--
			continue
		}
		if minIdle > 0 && now-it.val.deliveredMs < minIdle {
			continue
		}
		claimIDs = append(claimIDs, it.id)
		count--
	}
	cursor := streamID{}
	if j := g.pel.nextLive(i); j < len(items) {
		cursor = items[j].id
	}
	changed := c == nil
	if c == nil {
		c = s.addConsumer(g, string(consumer))
	}
	claimed := newReplies(len(claimIDs))
	for _, id := range claimIDs {
		pe := g.pel.get(id)
		s.setPending(g, id, c, now, pe.deliveries)
		bumpDeliveries(g.pel.get(id), 0, false, justID)
		if justID {
			claimed.bulkID(id)
		} else {
			claimed.entry(id, *s.entries.get(id))
		}
	}
	gone := make([]kv.Reply, len(deleted))
	for k, id := range deleted {
		s.ack(g, id)
		gone[k] = kv.BulkReply(id.bytes())
	}
	g.pel.tidy()
	if changed || len(claimIDs)+len(deleted) > 0 {
		tail := [][]byte{[]byte("TIME"), msArg(now)}
		if justID {
			tail = append(tail, []byte("JUSTID"))
		}
		// The replica processes the ids in this order; claimed and deleted
		// ids are disjoint, so their relative order does not matter.
		claimEffect(x, group, consumer, append(claimIDs, deleted...), tail...)
	}
	return kv.ArrayReply([]kv.Reply{kv.BulkReply(cursor.bytes()), claimed.reply(), kv.ArrayReply(gone)})
}

func init() {
	register(kv.CmdXAdd, handler{kind: KindStream, write: true, create: true, run: xadd})
	register(kv.CmdXRange, handler{kind: KindStream, run: xrange(false)})
	register(kv.CmdXRevRange, handler{kind: KindStream, run: xrange(true)})
	register(kv.CmdXLen, handler{kind: KindStream, run: func(x *execCtx) kv.Reply {
		if r, ok := arity(x, 0, 0); !ok {
			return r
		}
		if s := streamOf(x); s != nil {
			return kv.IntReply(int64(s.entries.live))
		}
		return kv.IntReply(0)
	}})
	register(kv.CmdXDel, handler{kind: KindStream, write: true, run: xdel})
	register(kv.CmdXTrim, handler{kind: KindStream, write: true, run: xtrim})
	register(kv.CmdXGroup, handler{kind: KindStream, write: true, create: true, run: xgroup})
	register(kv.CmdXReadGroup, handler{kind: KindStream, write: true, run: xreadgroup})
	register(kv.CmdXAck, handler{kind: KindStream, write: true, run: xack})
	register(kv.CmdXPending, handler{kind: KindStream, run: xpending})
	register(kv.CmdXClaim, handler{kind: KindStream, write: true, run: xclaim})
	register(kv.CmdXAutoClaim, handler{kind: KindStream, write: true, run: xautoclaim})
	register(kv.CmdXRead, handler{kind: KindStream, run: xread})
}

// parseEntriesRead reads XGROUP's ENTRIESREAD value: an integer, at least 0
// or exactly -1 ("unknown"), with Redis 7.0's errors.
func parseEntriesRead(arg []byte) (int64, *kv.Reply) {
	n, ok := kv.ParseInt(arg)
	if !ok {
		r := errNotInteger
		return 0, &r
	}
	if n < 0 && n != invalidEntriesRead {
		r := kv.BadRequest("value for ENTRIESREAD must be positive or -1")
		return 0, &r
	}
	return n, nil
}

// errSubcommandSyntax is Redis's reply to a subcommand's bad options or
// argument count, naming the subcommand as the client spelled it.
func errSubcommandSyntax(cmd string, sub []byte) kv.Reply {
	return kv.BadRequest("unknown subcommand or wrong number of arguments for '" + string(sub) + "'. Try " + cmd + " HELP.")
}

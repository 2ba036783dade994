package store

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/mpsafe"
)

// Streams (R-DS-2): an append-only log of entries with monotonic ids, and
// consumer groups that split it over workers with a pending-entries list
// (PEL) per group, acknowledgement and claiming — at-least-once delivery.
// Commands and replies follow Redis's XADD … XREAD after the key; XREAD and
// XREADGROUP take one key per command and reply with that key's entries
// (a front end serving several keys wraps them as [[key, entries] …]).
//
// Differences from Redis, deliberate:
//   - "~" (approximate trimming) removes the whole nodes Redis would: the
//     entries are not in Redis's radix tree of listpacks, so streamNodes
//     models where its nodes would close (stream_nodes.go, D119).
//   - XCLAIM and XAUTOCLAIM always create the named consumer (XREADGROUP
//     only when it serves something, as Redis); a consumer's seen time
//     is node-local (XINFO's seen-time/idle on a replica count from when
//     it got the consumer).
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

// parseUintBytes reads an unsigned 64-bit number as Redis's string2ull: a
// strict decimal (string2ll's: no sign but '-', no leading zero, no space),
// negative refused; failing that, what strtoull reads in full — leading
// white space, a '+' or '-' sign (a negation modulo 2^64, as C's), leading
// zeros — without overflow.
func parseUintBytes(b []byte) (uint64, bool) {
	if n, ok := kv.ParseInt(b); ok {
		return uint64(n), n >= 0
	}
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] >= '\t' && b[i] <= '\r') {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	if i == len(b) {
		return 0, false
	}
	var n uint64
	for _, c := range b[i:] {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false // ERANGE
		}
		n = n*10 + d
	}
	if neg {
		n = -n
	}
	return n, true
}

// streamIDMaxLen: Redis copies an id argument into a 128-byte buffer.
const streamIDMaxLen = 127

// cString is b up to its first NUL byte: Redis parses ids as C strings.
func cString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// parseStreamID parses "ms-seq", or "ms" meaning ms-missingSeq, as Redis's
// streamGenericParseIDOrReply: the argument read as a C string, split at
// its first '-', each part by string2ull.
func parseStreamID(b []byte, missingSeq uint64) (streamID, bool) {
	if len(b) > streamIDMaxLen {
		return streamID{}, false
	}
	b = cString(b)
	i := bytes.IndexByte(b, '-')
	if i < 0 {
		ms, ok := parseUintBytes(b)
		return streamID{ms, missingSeq}, ok
	}
	ms, ok1 := parseUintBytes(b[:i])
	seq, ok2 := parseUintBytes(b[i+1:])
	return streamID{ms, seq}, ok1 && ok2
}

// parseLooseStreamID is parseStreamID that also takes "-" (0-0) and "+"
// (the last possible id), as Redis's non-strict streamParseIDOrReply (read
// as a C string: "-\x00x" is "-"). Range bounds and XGROUP SETID use it;
// the commands that name entries take only "ms-seq" (parseStreamID).
func parseLooseStreamID(b []byte, missingSeq uint64) (streamID, bool) {
	if len(b) > streamIDMaxLen {
		return streamID{}, false
	}
	switch string(cString(b)) {
	case "-":
		return streamID{}, true
	case "+":
		return maxStreamID, true
	}
	return parseStreamID(b, missingSeq)
}

// parseRangeBound parses an interval bound: "-", "+", an id (a bare ms is
// ms-0 as a start, ms-max as an end), or "(" id, exclusive (Redis's
// streamParseIntervalIDOrReply: "(-", "(+" and a lone "(" are no bounds).
func parseRangeBound(b []byte, start bool) (id streamID, ok, inInterval bool) {
	exclusive := len(b) > 1 && b[0] == '('
	var missing uint64
	if !start {
		missing = math.MaxUint64
	}
	if exclusive {
		id, ok = parseStreamID(b[1:], missing)
	} else {
		id, ok = parseLooseStreamID(b, missing)
	}
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

// Accounted sizes (bytes) beyond the payload: headers, ids, index slots.
const (
	streamEntryOverhead    = 64
	streamFieldOverhead    = 16 // per field and per value
	streamPendingOverhead  = 64
	streamConsumerOverhead = 64
	streamGroupOverhead    = 128
)

// streamColl is the materialized form of a stream.
type streamColl struct {
	entries idSeq[[][]byte] // field, value, field, value, …
	last    streamID        // the greatest id ever added: ids stay monotonic after XDEL/XTRIM
	groups  map[string]*streamGroup
	bytes   int64 // accounted
	item    int64 // item size
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
	// nodes models Redis's radix-tree nodes, for "~" trimming and XINFO.
	nodes streamNodes
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
func (s *streamColl) itemSize() int64 { return s.item }

// account adds a change of the stream's bytes (its entries are counted by
// s.entries).
func (s *streamColl) account(k keySize) {
	s.bytes += k.acct
	s.item += k.item
}

// current is the stream's size in the per-key caps' dimensions: its
// elements are its live entries (count reports at least 1).
func (s *streamColl) current() keySize {
	return keySize{s.entries.live, s.item, s.bytes}
}

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
	s.nodes.append(id, fields)
	s.last = id
	s.account(streamEntrySize(fields))
}

func (s *streamColl) removeEntry(id streamID) bool {
	i := s.entries.search(id)
	if i == s.entries.len() || s.entries.at(i).id != id || s.entries.at(i).dead {
		return false
	}
	s.account(keySize{}.minus(streamEntrySize(s.entries.at(i).val)))
	s.entries.killAt(i)
	s.nodes.remove(id)
	return true
}

// trimFront removes the n oldest entries.
func (s *streamColl) trimFront(n int) {
	s.nodes.trimFront(int64(n))
	for i := 0; n > 0 && i < s.entries.len(); i++ {
		if it := s.entries.at(i); !it.dead {
			s.account(keySize{}.minus(streamEntrySize(it.val)))
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
	s.account(streamGroupSize(len(name)))
	return g
}

func (s *streamColl) delGroup(g *streamGroup) {
	gone := streamGroupSize(len(g.name))
	for _, c := range g.consumers {
		gone = gone.plus(consumerWithPending(c))
	}
	s.account(keySize{}.minus(gone))
	delete(s.groups, g.name)
}

func (s *streamColl) addConsumer(g *streamGroup, name string) *streamConsumer {
	c := &streamConsumer{name: name, seenMs: s.clockMs}
	g.consumers[name] = c
	s.account(streamConsumerSize(len(name)))
	return c
}

// delConsumer removes c and its pending entries; returns how many it had.
func (s *streamColl) delConsumer(g *streamGroup, c *streamConsumer) int {
	n := c.pending
	gone := consumerWithPending(c)
	for i := range g.pel.len() {
		if it := g.pel.at(i); !it.dead && it.val.consumer == c {
			g.pel.killAt(i)
		}
	}
	g.pel.tidy()
	s.account(keySize{}.minus(gone))
	delete(g.consumers, c.name)
	return n
}

// setPending makes id pending for c (adding or transferring it).
func (s *streamColl) setPending(g *streamGroup, id streamID, c *streamConsumer, deliveredMs int64, deliveries uint64) {
	if pe := g.pel.get(id); pe != nil {
		s.account(pendingTransfer(pe.consumer, c))
		pe.consumer.pending--
		pe.consumer, pe.deliveredMs, pe.deliveries = c, deliveredMs, deliveries
		c.pending++
		return
	}
	g.pel.put(id, pendingEntry{consumer: c, deliveredMs: deliveredMs, deliveries: deliveries})
	c.pending++
	s.account(streamPendingSize(len(c.name)))
}

// consumerWithPending is a consumer with its pending entries.
func consumerWithPending(c *streamConsumer) keySize {
	k := streamConsumerSize(len(c.name))
	p := streamPendingSize(len(c.name))
	k.item += int64(c.pending) * p.item
	k.acct += int64(c.pending) * p.acct
	return k
}

// pendingTransfer is what moving a pending entry from one consumer to
// another changes: the encoding names its consumer.
func pendingTransfer(from, to *streamConsumer) keySize {
	return streamPendingSize(len(to.name)).minus(streamPendingSize(len(from.name)))
}

func (s *streamColl) ack(g *streamGroup, id streamID) bool {
	i := g.pel.search(id)
	if i == g.pel.len() || g.pel.at(i).id != id || g.pel.at(i).dead {
		return false
	}
	c := g.pel.at(i).val.consumer
	c.pending--
	g.pel.killAt(i)
	s.account(keySize{}.minus(streamPendingSize(len(c.name))))
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
	for it := range s.entries.all() {
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
		for it := range g.pel.all() {
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
	if err := mpsafe.Unmarshal(b, &w); err != nil {
		return err
	}
	// seen-time is node-local (not encoded, like the LRU stamps): a copy
	// counts from when it got the consumer.
	now := time.Now().UnixMilli()
	return s.fromWire(&w, func(string, string) int64 { return now })
}

// keepSeenTimes gives a copy's consumers the seen-times they have in from
// (the wire form leaves them out): COPY makes the same stream, XINFO's
// seen-time and idle included, as Redis's COPY does.
func (s *streamColl) keepSeenTimes(from *streamColl) {
	for name, g := range s.groups {
		fg := from.groups[name]
		if fg == nil {
			continue
		}
		for cname, c := range g.consumers {
			if fc := fg.consumers[cname]; fc != nil {
				c.seenMs = fc.seenMs
			}
		}
	}
}

// fromWire builds the stream from its wire form, checking what a payload
// from outside could get wrong (entries out of order, a last id below
// them, a group twice, a pending entry of no consumer); seenMs gives each
// consumer's seen-time.
func (s *streamColl) fromWire(w *streamWire, seenMs func(group, consumer string) int64) error {
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
			if g.consumers[c] != nil {
				return fmt.Errorf("stream group %q: consumer %q twice", gw.Name, c)
			}
			s.addConsumer(g, c).seenMs = seenMs(gw.Name, c)
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
		Message: fmt.Sprintf("NOGROUP No such key '%s' or consumer group '%s'", cString([]byte(x.cmd.Key)), cString(group))}
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

// streamFits reports whether the stream may grow by grow (its elems: the
// change of its live entries).
func (x *execCtx) streamFits(s *streamColl, grow keySize) bool {
	return x.fitsFrom(s.current(), grow)
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
	// limitExact: LIMIT without '~', refused once the options are read
	// (Redis checks it after its option loop: errLimitExact).
	limitExact bool
	// approx: "~", whole modelled nodes only (stream_nodes.go); limitGiven:
	// a LIMIT was given (without one "~" works at most
	// approxTrimDefaultLimit entries).
	approx, limitGiven bool
}

var errLimitExact = kv.BadRequest("syntax error, LIMIT cannot be used without the special ~ option")

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
		// Redis reads the value past the last argument: MAXLEN's is no
		// integer, MINID's no id.
		if t.minID {
			return 0, errStreamID, false
		}
		return 0, errNotInteger, false
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
	if i+1 < len(args) && isWord(args[i], "LIMIT") { // a last LIMIT is no option (XADD: the id)
		n, ok := argInt(args[i+1])
		if !ok {
			return 0, errNotInteger, false
		}
		if n < 0 {
			return 0, kv.BadRequest("The LIMIT argument must be >= 0."), false
		}
		t.limit, t.limitExact, t.limitGiven = n, !approx, true
		i += 2
	}
	t.approx = approx
	return i, kv.Reply{}, true
}

// trimPlan counts the oldest entries t removes — from the stream plus, when
// extra is set, one more entry (of extraFields) appended after it — and
// their size. A "~" trim removes the whole nodes Redis would
// (streamNodes.approxTrim).
func (s *streamColl) trimPlan(t *trimSpec, extra *streamID, extraFields [][]byte, extraSize keySize) (n int, size keySize) {
	if !t.set {
		return 0, size
	}
	if t.approx {
		n = int(s.nodes.approxTrim(t, int64(s.entries.live), extra, extraFields))
		left := n
		for it := range s.entries.all() {
			if left == 0 {
				break
			}
			if !it.dead {
				size = size.plus(streamEntrySize(it.val))
				left--
			}
		}
		if left > 0 { // the appended entry goes too
			size = size.plus(extraSize)
		}
		return n, size
	}
	total := s.entries.live
	if extra != nil {
		total++
	}
	if !t.minID && int64(total) <= t.maxLen {
		return 0, size
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
	for it := range s.entries.all() {
		if it.dead {
			continue
		}
		if !removes(it.id) {
			return n, size
		}
		n++
		size = size.plus(streamEntrySize(it.val))
	}
	if extra != nil && removes(*extra) {
		n++
		size = size.plus(extraSize)
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
		msPart := arg[:len(arg)-2]
		ms, ok := parseUintBytes(msPart)
		ok = ok && len(arg) <= streamIDMaxLen && bytes.IndexByte(msPart, '-') < 0 && bytes.IndexByte(msPart, 0) < 0
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

// xaddArgs parses XADD's arguments as Redis does before it looks the key
// up: the options, the id's syntax, the field count, the 0-0 id; i is the
// id's index.
func xaddArgs(args [][]byte) (t trimSpec, noMk bool, i int, r kv.Reply, ok bool) {
options:
	for i < len(args) {
		switch {
		case isWord(args[i], "NOMKSTREAM"):
			noMk = true
			i++
		case isWord(args[i], "MAXLEN"), isWord(args[i], "MINID"):
			next, r, ok := parseTrim(args, i, &t)
			if !ok {
				return t, false, 0, r, false
			}
			i = next
		default:
			break options
		}
	}
	if i < len(args) && string(args[i]) != "*" {
		if ms, ok := bytes.CutSuffix(args[i], []byte("-*")); ok {
			if _, ok := parseUintBytes(ms); !ok || len(args[i]) > streamIDMaxLen || bytes.IndexByte(ms, '-') >= 0 || bytes.IndexByte(ms, 0) >= 0 {
				return t, false, 0, errStreamID, false
			}
		} else if _, ok := parseStreamID(args[i], 0); !ok {
			return t, false, 0, errStreamID, false
		}
	}
	if t.limitExact {
		return t, false, 0, errLimitExact, false
	}
	if rest := len(args) - i; rest < 3 || rest%2 != 1 {
		return t, false, 0, kv.BadRequest("wrong number of arguments for 'xadd' command"), false
	}
	if id, ok := parseStreamID(args[i], 0); ok && id == (streamID{}) {
		return t, false, 0, errXAddZero, false
	}
	return t, noMk, i, kv.Reply{}, true
}

func xaddCheck(args [][]byte) kv.Reply {
	_, _, _, r, _ := xaddArgs(args)
	return r
}

func xadd(x *execCtx) kv.Reply {
	args := x.cmd.Args
	t, noMk, i, r, ok := xaddArgs(args)
	if !ok {
		return r
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
	size := streamEntrySize(fields)
	n, freed := s.trimPlan(&t, &id, fields, size)
	if !x.streamFits(s, size.minus(freed)) {
		return x.tooLarge()
	}
	s.add(id, fields)
	s.entriesAdded++
	if n > 0 {
		s.trimFront(n)
	}
	idb := id.bytes()         // the effect is copied into the op-log: the reply may share it
	effect := x.room.args[:0] // copied by the op-log before the write returns
	if len(args) > len(x.room.args) {
		effect = make([][]byte, 0, len(args))
	}
	if t.set {
		// The trim as the length it left: a replica's node model may differ
		// (streamNodes), its entries do not.
		effect = appendExactTrim(effect, args[:i], s.entries.live, x.room.num[:0])
	} else {
		effect = append(effect, args[:i]...)
	}
	effect = append(effect, idb)
	x.changedArgs(kv.CmdXAdd, append(effect, fields...))
	return kv.BulkReply(idb)
}

// appendExactTrim appends XADD's options with its trim replaced by MAXLEN =
// the stream's length after it, the number formatted into num (the write
// context's room: the op-log copies the effect before the write returns).
func appendExactTrim(dst, opts [][]byte, length int, num []byte) [][]byte {
	for _, o := range opts {
		if isWord(o, "NOMKSTREAM") {
			dst = append(dst, o)
		}
	}
	return append(dst, wordMaxLen, wordExact, strconv.AppendInt(num, int64(length), 10))
}

var wordMaxLen, wordExact = []byte("MAXLEN"), []byte("=")

// xtrimArgs parses XTRIM's arguments (Redis parses them before it looks
// the key up).
func xtrimArgs(args [][]byte) (t trimSpec, r kv.Reply, ok bool) {
	if len(args) < 2 || !isWord(args[0], "MAXLEN") && !isWord(args[0], "MINID") {
		return t, errSyntax, false
	}
	next, r, ok := parseTrim(args, 0, &t)
	if !ok {
		return t, r, false
	}
	if next != len(args) {
		return t, errSyntax, false
	}
	if t.limitExact {
		return t, errLimitExact, false
	}
	return t, kv.Reply{}, true
}

func xtrimCheck(args [][]byte) kv.Reply {
	_, r, _ := xtrimArgs(args)
	return r
}

func xtrim(x *execCtx) kv.Reply {
	t, r, ok := xtrimArgs(x.cmd.Args)
	if !ok {
		return r
	}
	s := streamOf(x)
	if s == nil {
		return kv.IntReply(0)
	}
	n, _ := s.trimPlan(&t, nil, nil, keySize{})
	if n > 0 {
		s.trimFront(n)
		x.changedArgs(kv.CmdXTrim, appendExactTrim(x.room.args[:0], nil, s.entries.live, x.room.num[:0]))
	}
	return kv.IntReply(int64(n))
}

// xrangeArgs parses XRANGE/XREVRANGE's arguments in Redis's order, before
// the key's lookup: the two bounds, then COUNT options (the last one
// counts; a negative count is 0); count is -1 without one.
func xrangeArgs(args [][]byte, rev bool) (start, end streamID, count int64, r kv.Reply, ok bool) {
	if len(args) < 2 {
		return start, end, 0, kv.BadRequest("wrong number of arguments"), false
	}
	a, b := args[0], args[1]
	if rev {
		a, b = b, a // XREVRANGE key end start
	}
	if start, end, r, ok = rangeBounds(a, b); !ok {
		return start, end, 0, r, false
	}
	count = -1
	for j := 2; j < len(args); j++ {
		if !isWord(args[j], "COUNT") || j+1 >= len(args) {
			return start, end, 0, errSyntax, false
		}
		n, ok := argInt(args[j+1])
		if !ok {
			return start, end, 0, errNotInteger, false
		}
		count = max(n, 0)
		j++
	}
	return start, end, count, kv.Reply{}, true
}

func xrangeCheck(rev bool) func(args [][]byte) kv.Reply {
	return func(args [][]byte) kv.Reply {
		_, _, _, r, _ := xrangeArgs(args, rev)
		return r
	}
}

// A factory of handlers is not inlined into the init that registers them:
// there the closure was compiled without its small calls inlined
// (kv.IntReply was a call and a copied 96-byte reply per LPUSH, issue #17).
//
//go:noinline
func xrange(rev bool) func(x *execCtx) kv.Reply {
	return func(x *execCtx) kv.Reply {
		start, end, count, r, ok := xrangeArgs(x.cmd.Args, rev)
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
		q := &s.entries
		if !rev {
			for i := q.search(start); i < q.len() && out.len() < limit; i++ {
				it := q.at(i)
				if end.less(it.id) {
					break
				}
				if !it.dead {
					out.entry(it.id, it.val)
				}
			}
		} else {
			i := q.len() - 1 // the last id <= end
			if top, more := end.incr(); more {
				i = q.search(top) - 1
			}
			for ; i >= 0 && out.len() < limit; i-- {
				it := q.at(i)
				if it.id.less(start) {
					break
				}
				if !it.dead {
					out.entry(it.id, it.val)
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
	// Redis's order: the key's type (checked before the handler), then
	// '$' and '>', then the id's syntax.
	s := streamOf(x)
	var after streamID
	switch {
	case string(idArg) == "$":
		if s != nil {
			after = s.last
		}
	case string(idArg) == ">":
		return errGreaterInRead
	default:
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
	for i := s.entries.search(start); i < s.entries.len() && out.len() < limit; i++ {
		if it := s.entries.at(i); !it.dead {
			out.entry(it.id, it.val)
		}
	}
	return out.reply()
}

func xdel(x *execCtx) kv.Reply {
	if !arity(x, 1, -1) {
		return arityError(x)
	}
	if streamOf(x) == nil {
		return kv.IntReply(0) // Redis looks the key up before the ids
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

// xgroupSubs are XGROUP's subcommands with their argument counts (the
// store's: subcommand, group, then the rest), as Redis's dispatch checks
// them once the key and the group are looked up.
var xgroupSubs = map[string]func(n int) bool{
	"CREATE":         func(n int) bool { return n >= 3 && n <= 6 },
	"SETID":          func(n int) bool { return n == 3 || n == 5 },
	"DESTROY":        func(n int) bool { return n == 2 },
	"CREATECONSUMER": func(n int) bool { return n == 3 },
	"DELCONSUMER":    func(n int) bool { return n == 3 },
}

// xgroupSub returns the subcommand's upper-case name, or "".
func xgroupSub(b []byte) string {
	for name := range xgroupSubs {
		if isWord(b, name) {
			return name
		}
	}
	return ""
}

// xgroupArgs reads XGROUP's options as Redis 7.0 does before it looks the
// key up: from the argument after the id, MKSTREAM (CREATE) and
// ENTRIESREAD n (CREATE, SETID); anything else is a syntax error.
func xgroupArgs(args [][]byte) (sub string, mk bool, entriesRead int64, r kv.Reply, ok bool) {
	entriesRead = invalidEntriesRead
	if len(args) < 2 {
		return "", false, 0, kv.BadRequest("wrong number of arguments for XGROUP"), false
	}
	if sub = xgroupSub(args[0]); sub == "" {
		return "", false, 0, kv.BadRequest("unknown XGROUP subcommand " + strconv.Quote(string(args[0]))), false
	}
	for i := 3; i < len(args); {
		switch {
		case sub == "CREATE" && isWord(args[i], "MKSTREAM"):
			mk = true
			i++
		case (sub == "CREATE" || sub == "SETID") && isWord(args[i], "ENTRIESREAD") && i+1 < len(args):
			n, bad := parseEntriesRead(args[i+1])
			if bad != nil {
				return "", false, 0, *bad, false
			}
			entriesRead = n
			i += 2
		default:
			return "", false, 0, errSubcommandSyntax("XGROUP", args[0]), false
		}
	}
	return sub, mk, entriesRead, kv.Reply{}, true
}

func xgroupCheck(args [][]byte) kv.Reply {
	_, _, _, r, _ := xgroupArgs(args)
	return r
}

// xgroup runs XGROUP in Redis 7.0's order: the options (xgroupArgs), the
// key's type, a missing key (unless MKSTREAM), a missing group (SETID,
// CREATECONSUMER, DELCONSUMER), the argument count, then the id.
func xgroup(x *execCtx) kv.Reply {
	args := x.cmd.Args
	sub, mk, entriesRead, r, ok := xgroupArgs(args)
	if !ok {
		return r
	}
	x.event = "xgroup-" + strings.ToLower(sub)
	name := args[1]
	s := streamOf(x)
	var g *streamGroup
	if !mk {
		if x.rec == nil {
			return errNoKey
		}
		g = s.groups[string(name)]
		if g == nil && sub != "CREATE" && sub != "DESTROY" {
			return errNoGroup(x, name)
		}
	}
	if !xgroupSubs[sub](len(args)) {
		return errSubcommandSyntax("XGROUP", args[0])
	}
	switch sub {
	case "CREATE":
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
		if !x.streamFits(s, streamGroupSize(len(name))) {
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
		x.changedArgs(kv.CmdXGroup, effect)
		return kv.OKReply()
	case "DESTROY":
		if g == nil {
			return kv.IntReply(0)
		}
		s.delGroup(g)
		x.changed()
		return kv.IntReply(1)
	case "SETID":
		last := s.last
		if string(args[2]) != "$" {
			// SETID reads its id loosely, as Redis: "-" is 0-0, "+" the
			// last possible id.
			id, ok := parseLooseStreamID(args[2], 0)
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
			x.changedArgs(kv.CmdXGroup, effect)
		}
		return kv.OKReply()
	}
	// CREATECONSUMER, DELCONSUMER
	c := g.consumers[string(args[2])]
	if sub == "DELCONSUMER" {
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
	if !x.streamFits(s, streamConsumerSize(len(args[2]))) {
		return x.tooLarge()
	}
	s.addConsumer(g, string(args[2]))
	x.changed()
	return kv.IntReply(1)
}

// claimEffect logs the XCLAIM that reproduces a delivery or a claim. An
// effect without ids creates the consumer when replayed (XREADGROUP served
// it); one with ids creates it only if one is claimed, as the command.
func claimEffect(x *execCtx, group, consumer []byte, ids []streamID, tail ...[]byte) {
	args := make([][]byte, 0, 3+len(ids)+len(tail))
	args = append(args, group, consumer, []byte("0"))
	for _, id := range ids {
		args = append(args, id.bytes())
	}
	x.changedArgs(kv.CmdXClaim, append(args, tail...))
}

func msArg(ms int64) []byte { return strconv.AppendInt(nil, ms, 10) }

var (
	errGreaterInRead = kv.BadRequest("The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
	errDollarInGroup = kv.BadRequest("The $ ID is meaningless in the context of XREADGROUP: you want to read the history of " +
		"this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
)

// CheckGroupReadID checks an XREADGROUP id as Redis does once the key and
// the group are found: ">" (new entries) or an entry id; "$" is refused.
// The RESP front end checks every key of a multi-key XREADGROUP with it
// before it serves any.
func CheckGroupReadID(id []byte) kv.Reply {
	switch {
	case string(id) == "$":
		return errDollarInGroup
	case string(id) == ">":
		return kv.Reply{}
	}
	if _, ok := parseStreamID(id, 0); !ok {
		return errStreamID
	}
	return kv.Reply{}
}

// GroupReadsHistory reports whether an XREADGROUP id (checked by
// CheckGroupReadID) reads the consumer's pending history rather than new
// entries: any id but ">" and the last possible id, which Redis takes for
// ">" (its internal spelling of it).
func GroupReadsHistory(id []byte) bool {
	if string(id) == ">" {
		return false
	}
	parsed, _ := parseStreamID(id, 0)
	return parsed != maxStreamID
}

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
	// Redis's order: the key's type, the group, then the id.
	s, g, r, ok := groupOf(x, group)
	if !ok {
		return r
	}
	if r := CheckGroupReadID(idArg); r.Status != kv.StatusSuccess {
		return r
	}
	history := GroupReadsHistory(idArg)
	after, _ := parseStreamID(idArg, 0)
	c := g.consumers[string(consumer)]
	if c != nil {
		c.seenMs = nowMs(x)
	}
	var grow keySize
	reader := c
	if c == nil {
		grow = streamConsumerSize(len(consumer))
		reader = &streamConsumer{name: string(consumer)} // its size, for the plan
	}
	if history {
		// The consumer's own pending entries after the id; no state changes
		// but the consumer's creation.
		if c == nil {
			if !x.streamFits(s, grow) {
				return x.tooLarge()
			}
			s.addConsumer(g, string(consumer))
			claimEffect(x, group, consumer, nil)
			return kv.ArrayReply([]kv.Reply{})
		}
		out := newReplies(min(limit, c.pending))
		start, more := after.incr()
		for i := g.pel.search(start); more && i < g.pel.len() && out.len() < limit; i++ {
			if it := g.pel.at(i); !it.dead && it.val.consumer == c {
				out.entryOrNil(s, it.id)
			}
		}
		return out.reply()
	}
	var ids []streamID
	if start, more := g.last.incr(); more {
		for i := s.entries.search(start); i < s.entries.len() && len(ids) < limit; i++ {
			if it := s.entries.at(i); !it.dead {
				ids = append(ids, it.id)
				if noAck {
					continue
				}
				if pe := g.pel.get(it.id); pe == nil {
					grow = grow.plus(streamPendingSize(len(consumer)))
				} else {
					grow = grow.plus(pendingTransfer(pe.consumer, reader))
				}
			}
		}
	}
	if !x.streamFits(s, grow) {
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
	if !arity(x, 2, -1) {
		return arityError(x)
	}
	// Redis's order: no key or no group acks nothing, whatever the ids.
	s := streamOf(x)
	if s == nil {
		return kv.IntReply(0)
	}
	g := s.groups[string(x.cmd.Args[0])]
	if g == nil {
		return kv.IntReply(0)
	}
	ids := make([]streamID, 0, len(x.cmd.Args)-1)
	for _, a := range x.cmd.Args[1:] {
		id, ok := parseStreamID(a, 0)
		if !ok {
			return errStreamID
		}
		ids = append(ids, id)
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

// pendingSpec is XPENDING's extended form: [IDLE min-idle] start end
// count [consumer].
type pendingSpec struct {
	extended   bool
	minIdle    int64
	start, end streamID
	count      int64
	consumer   []byte
}

// xpendingArgs parses XPENDING's arguments (group first) as Redis 7.0
// does before it looks the key up: the argument count (the summary form,
// or 6 to 9 in Redis's argv), IDLE's value, the count (a negative one is
// 0), then the bounds. Past the count, the argument that follows is the
// consumer and any other is ignored, as in Redis.
func xpendingArgs(args [][]byte) (p pendingSpec, r kv.Reply, ok bool) {
	if len(args) == 0 {
		return p, kv.BadRequest("wrong number of arguments for XPENDING"), false
	}
	argc := len(args) + 2 // Redis's: XPENDING key group …
	if argc != 3 && (argc < 6 || argc > 9) {
		return p, errSyntax, false
	}
	if argc == 3 {
		return p, kv.Reply{}, true
	}
	p.extended = true
	ext := args[1:]
	if isWord(ext[0], "IDLE") {
		n, ok := argInt(ext[1])
		if !ok {
			return p, errNotInteger, false
		}
		if argc < 8 {
			return p, errSyntax, false
		}
		p.minIdle, ext = n, ext[2:]
	}
	n, ok := argInt(ext[2])
	if !ok {
		return p, errNotInteger, false
	}
	p.count = max(n, 0)
	if p.start, p.end, r, ok = rangeBounds(ext[0], ext[1]); !ok {
		return p, r, false
	}
	if len(ext) > 3 {
		p.consumer = ext[3]
	}
	return p, kv.Reply{}, true
}

func xpendingCheck(args [][]byte) kv.Reply {
	_, r, _ := xpendingArgs(args)
	return r
}

func xpending(x *execCtx) kv.Reply {
	args := x.cmd.Args
	p, r, ok := xpendingArgs(args)
	if !ok {
		return r
	}
	minIdle, start, end, count, consumer := p.minIdle, p.start, p.end, p.count, p.consumer
	_, g, r, ok := groupOf(x, args[0])
	if !ok {
		return r
	}
	pel := &g.pel
	if !p.extended {
		if g.pel.live == 0 {
			return kv.ArrayReply([]kv.Reply{kv.IntReply(0), kv.NilReply(), kv.NilReply(), kv.NilReply()})
		}
		lo := g.pel.nextLive(0)
		hi := g.pel.lastLive()
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
		return kv.ArrayReply([]kv.Reply{kv.IntReply(int64(g.pel.live)), kv.BulkReply(pel.at(lo).id.bytes()),
			kv.BulkReply(pel.at(hi).id.bytes()), kv.ArrayReply(per)})
	}
	out := newReplies(int(min(max(count, 0), int64(g.pel.live))))
	now := nowMs(x)
	for i := g.pel.search(start); i < pel.len() && int64(out.len()) < count && !end.less(pel.at(i).id); i++ {
		it := pel.at(i)
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

// xclaim runs XCLAIM in Redis 7.0's order: the key's type and the group
// first, then min-idle-time, then the ids — every argument from the fifth
// that reads as an id, up to the first that does not — and the options
// after them, each refused as an "Unrecognized XCLAIM option". An id named
// twice is claimed twice, as Redis does.
func xclaim(x *execCtx) kv.Reply {
	args := x.cmd.Args
	if len(args) < 3 {
		return kv.BadRequest("wrong number of arguments for XCLAIM")
	}
	group, consumer := args[0], args[1]
	s, g, r, ok := groupOf(x, group)
	if !ok {
		return r
	}
	minIdle, ok := argInt(args[2])
	if !ok {
		return kv.BadRequest("Invalid min-idle-time argument for XCLAIM")
	}
	minIdle = max(minIdle, 0)
	i := 3
	var ids []streamID
	for ; i < len(args); i++ {
		id, ok := parseStreamID(args[i], 0)
		if !ok {
			break
		}
		ids = append(ids, id)
	}
	now := nowMs(x)
	delivery, retry, hasRetry := now, int64(0), false
	force, justID := false, false
	var lastID []byte
	for ; i < len(args); i++ {
		word, more := args[i], i+1 < len(args)
		switch {
		case isWord(word, "FORCE"):
			force = true
			continue
		case isWord(word, "JUSTID"):
			justID = true
			continue
		case isWord(word, "LASTID") && more:
			i++
			if _, ok := parseStreamID(args[i], 0); !ok {
				return errStreamID
			}
			lastID = args[i]
			continue
		}
		opt := ""
		for _, w := range [...]string{"IDLE", "TIME", "RETRYCOUNT"} {
			if isWord(word, w) && more {
				opt = w
			}
		}
		if opt == "" {
			return kv.BadRequest("Unrecognized XCLAIM option '" + string(cString(word)) + "'")
		}
		i++
		n, ok := argInt(args[i])
		if !ok {
			return kv.BadRequest("Invalid " + opt + " option argument for XCLAIM")
		}
		switch opt {
		case "IDLE":
			delivery = now - n
		case "TIME":
			delivery = n
		default:
			retry, hasRetry = n, true
		}
	}
	if !x.apply && (delivery < 0 || delivery > now) {
		delivery = now // a client's bogus time; a replica keeps the source's
	}
	// Plan, so that a refusal changes nothing.
	const (
		skip = iota
		claim
		create
		clean
	)
	steps := make([]int, len(ids))
	// As Redis 7.0, the consumer is looked up (its seen-time refreshed) or
	// created only when an id is claimed or created in the PEL. A replayed
	// effect without ids is XREADGROUP's: it served the consumer, which
	// exists from then on (claimEffect).
	c := g.consumers[string(consumer)]
	var grow keySize
	claimer := c
	if c == nil {
		claimer = &streamConsumer{name: string(consumer)} // its size, for the plan
	}
	// An id named again meets the state its first claim left: pending
	// since delivery (claimed or created), or gone (cleaned).
	again := map[streamID]int{}
	for k, id := range ids {
		exists := s.entries.get(id) != nil
		if first, seen := again[id]; seen {
			switch {
			case first == skip || first == clean:
			case minIdle > 0 && now-delivery < minIdle:
			default:
				steps[k] = claim
			}
			continue
		}
		pe := g.pel.get(id)
		switch {
		case pe != nil && minIdle > 0 && now-pe.deliveredMs < minIdle:
		case pe != nil && !exists:
			steps[k] = clean
		case pe != nil:
			steps[k] = claim
		case force && exists:
			steps[k] = create
		}
		// The growth counts an id once: a repeat continued above.
		switch steps[k] {
		case clean:
			grow = grow.minus(streamPendingSize(len(pe.consumer.name)))
		case claim:
			grow = grow.plus(pendingTransfer(pe.consumer, claimer))
		case create:
			grow = grow.plus(streamPendingSize(len(consumer)))
		}
		again[id] = steps[k]
	}
	claims := slices.ContainsFunc(steps, func(st int) bool { return st == claim || st == create }) ||
		x.apply && len(ids) == 0
	if c == nil && claims {
		grow = grow.plus(streamConsumerSize(len(consumer)))
	}
	if !x.streamFits(s, grow) {
		return x.tooLarge()
	}
	changed := false
	switch {
	case claims && c == nil:
		c, changed = s.addConsumer(g, string(consumer)), true
	case claims:
		c.seenMs = now
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
	if c == nil && len(done) == 0 {
		// Only LASTID moved, and the consumer does not exist: an effect
		// without ids would create it on a replica; log the move as Redis
		// propagates it.
		if changed {
			effect := [][]byte{[]byte("SETID"), group, g.last.bytes()}
			if g.entriesRead != invalidEntriesRead {
				effect = append(effect, []byte("ENTRIESREAD"), strconv.AppendInt(nil, g.entriesRead, 10))
			}
			x.changedArgs(kv.CmdXGroup, effect)
		}
		return out.reply()
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

// autoclaimMaxCount is Redis 7.0's bound on XAUTOCLAIM's COUNT: LONG_MAX
// over the 16 bytes of an id it reserves per count.
const autoclaimMaxCount = math.MaxInt64 / 16

// xautoclaimArgs parses XAUTOCLAIM's arguments (group consumer min-idle
// start [COUNT n] [JUSTID]) as Redis 7.0 does before it checks the key's
// type and looks the group up.
func xautoclaimArgs(args [][]byte) (minIdle int64, start streamID, count int64, justID bool, r kv.Reply, ok bool) {
	if len(args) < 4 {
		return 0, start, 0, false, kv.BadRequest("wrong number of arguments for XAUTOCLAIM"), false
	}
	minIdle, ok = argInt(args[2])
	if !ok {
		return 0, start, 0, false, kv.BadRequest("Invalid min-idle-time argument for XAUTOCLAIM"), false
	}
	minIdle = max(minIdle, 0)
	start, ok, in := parseRangeBound(args[3], true)
	switch {
	case !ok:
		return 0, start, 0, false, errStreamID, false
	case !in:
		return 0, start, 0, false, kv.BadRequest("invalid start ID for the interval"), false
	}
	count = 100
	for i := 4; i < len(args); i++ {
		switch {
		case isWord(args[i], "JUSTID"):
			justID = true
		case isWord(args[i], "COUNT") && i+1 < len(args):
			n, ok := argInt(args[i+1])
			if !ok || n < 1 || n > autoclaimMaxCount {
				return 0, start, 0, false, kv.BadRequest("COUNT must be > 0"), false
			}
			count = n
			i++
		default:
			return 0, start, 0, false, errSyntax, false
		}
	}
	return minIdle, start, count, justID, kv.Reply{}, true
}

func xautoclaimCheck(args [][]byte) kv.Reply {
	_, _, _, _, r, _ := xautoclaimArgs(args)
	return r
}

// xautoclaim: Redis reserves a transient buffer of 16 bytes per COUNT and
// answers "Insufficient memory" when it cannot; Zaris allocates per entry
// found, so any COUNT up to autoclaimMaxCount runs.
func xautoclaim(x *execCtx) kv.Reply {
	args := x.cmd.Args
	minIdle, start, count, justID, r, ok := xautoclaimArgs(args)
	if !ok {
		return r
	}
	group, consumer := args[0], args[1]
	s, g, r, ok := groupOf(x, group)
	if !ok {
		return r
	}
	// As Redis 7.0, the consumer is looked up (its seen-time refreshed)
	// or created only when an entry is claimed: a scan that claims
	// nothing, or only clears deleted entries, leaves consumers alone.
	c := g.consumers[string(consumer)]
	var grow keySize
	claimer := c
	if c == nil {
		claimer = &streamConsumer{name: string(consumer)} // its size, for the plan
	}
	now := nowMs(x)
	var claimIDs, deleted []streamID
	pel := &g.pel
	attempts := count * 10
	i := g.pel.search(start)
	for ; i < pel.len() && attempts > 0 && count > 0; i++ {
		it := pel.at(i)
		if it.dead {
			continue
		}
		attempts--
		if s.entries.get(it.id) == nil {
			deleted = append(deleted, it.id)
			grow = grow.minus(streamPendingSize(len(it.val.consumer.name)))
			count--
			continue
		}
		if minIdle > 0 && now-it.val.deliveredMs < minIdle {
			continue
		}
		claimIDs = append(claimIDs, it.id)
		grow = grow.plus(pendingTransfer(it.val.consumer, claimer))
		count--
	}
	claims := len(claimIDs) > 0
	if c == nil && claims {
		grow = grow.plus(streamConsumerSize(len(consumer)))
	}
	if !x.streamFits(s, grow) {
		return x.tooLarge()
	}
	cursor := streamID{}
	if j := g.pel.nextLive(i); j < pel.len() {
		cursor = pel.at(j).id
	}
	switch {
	case claims && c == nil:
		c = s.addConsumer(g, string(consumer))
	case claims:
		c.seenMs = now
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
	if len(claimIDs)+len(deleted) > 0 {
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
	register(kv.CmdXAdd, handler{kind: KindStream, write: true, create: true, check: xaddCheck, run: xadd})
	register(kv.CmdXRange, handler{kind: KindStream, check: xrangeCheck(false), run: xrange(false)})
	register(kv.CmdXRevRange, handler{kind: KindStream, check: xrangeCheck(true), run: xrange(true)})
	register(kv.CmdXLen, handler{kind: KindStream, run: func(x *execCtx) kv.Reply {
		if !arity(x, 0, 0) {
			return arityError(x)
		}
		if s := streamOf(x); s != nil {
			return kv.IntReply(int64(s.entries.live))
		}
		return kv.IntReply(0)
	}})
	register(kv.CmdXDel, handler{kind: KindStream, write: true, run: xdel})
	register(kv.CmdXTrim, handler{kind: KindStream, write: true, check: xtrimCheck, run: xtrim})
	register(kv.CmdXGroup, handler{kind: KindStream, write: true, create: true, check: xgroupCheck, run: xgroup})
	register(kv.CmdXReadGroup, handler{kind: KindStream, write: true, run: xreadgroup})
	register(kv.CmdXAck, handler{kind: KindStream, write: true, run: xack})
	register(kv.CmdXPending, handler{kind: KindStream, check: xpendingCheck, run: xpending})
	register(kv.CmdXClaim, handler{kind: KindStream, write: true, run: xclaim})
	register(kv.CmdXAutoClaim, handler{kind: KindStream, write: true, check: xautoclaimCheck, run: xautoclaim})
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

package rdb

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// StreamID is a stream entry's ID: milliseconds, then a sequence number.
type StreamID struct{ Ms, Seq uint64 }

func cmpID(a, b StreamID) int {
	switch {
	case a.Ms != b.Ms:
		if a.Ms < b.Ms {
			return -1
		}
		return 1
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	}
	return 0
}

// StreamValue is a stream: its entries in ID order and its consumer groups.
type StreamValue struct {
	Entries      []StreamEntry
	LastID       StreamID // the greatest ID ever added (XADD's floor), ≥ every entry's
	FirstID      StreamID // the recorded first ID (0-0 when the stream is empty; see Restore for type 15)
	MaxDeletedID StreamID // the greatest ID deleted by XDEL
	EntriesAdded uint64   // entries ever added
	Groups       []StreamGroup
}

// StreamEntry is one live entry of a stream.
//
// The field names of the entries Restore returns may be shared between
// entries (the stream encoding stores a node's common field names once).
type StreamEntry struct {
	ID     StreamID
	Fields [][]byte // field, value, field, value, … (at least one pair)
}

// StreamGroup is a consumer group.
type StreamGroup struct {
	Name        []byte
	LastID      StreamID
	EntriesRead int64           // Redis's entries_read; -1 when unknown
	Pending     []StreamPending // the group's PEL in ID order
	Consumers   []StreamConsumer
}

// StreamPending is an entry of a group's pending entries list.
type StreamPending struct {
	ID            StreamID
	DeliveryMs    int64 // Unix ms of the last delivery
	DeliveryCount uint64
	Consumer      []byte // the name of the consumer that owns it (one of the group's Consumers)
}

// StreamConsumer is a consumer of a group; the entries it owns are the
// group's Pending entries that name it.
type StreamConsumer struct {
	Name     []byte
	SeenMs   int64 // Unix ms
	ActiveMs int64 // Unix ms; from payloads older than RDB_TYPE_STREAM_LISTPACKS_3 it is SeenMs (as Redis 7.2 loads them)
}

// The stream listpack's entry flags.
const (
	streamDeleted    = 1
	streamSameFields = 2
)

// Redis's defaults for stream-node-max-entries and stream-node-max-bytes:
// Dump cuts its nodes where Redis would, roughly, so that what Redis loads
// from it is shaped like what Redis builds itself.
const (
	streamNodeMaxEntries = 100
	streamNodeMaxBytes   = 4096
)

// Minimum sizes in a payload, to bound counts before allocating: a group is
// at least a name, two ID halves, entries_read and two counts; a pending
// entry a raw ID, a time and a count; a consumer a name, a time and a count.
const (
	minGroupSize    = 6
	minPendingSize  = 16 + 8 + 1
	minConsumerSize = 1 + 8 + 1
)

// invalid reports why Restore would refuse s, or "" when it would not.
// Dump panics on what it reports, Restore refuses it.
func (s *StreamValue) invalid() string {
	for i, e := range s.Entries {
		if len(e.Fields) == 0 || len(e.Fields)%2 != 0 {
			return fmt.Sprintf("entry %d-%d has %d fields and values", e.ID.Ms, e.ID.Seq, len(e.Fields))
		}
		if i > 0 && cmpID(s.Entries[i-1].ID, e.ID) >= 0 {
			return "entries not in increasing ID order"
		}
	}
	if n := len(s.Entries); n > 0 && cmpID(s.LastID, s.Entries[n-1].ID) < 0 {
		return "LastID below the last entry's"
	}
	if cmpID(s.MaxDeletedID, s.LastID) > 0 {
		return "MaxDeletedID above LastID"
	}
	if s.EntriesAdded < uint64(len(s.Entries)) {
		return "EntriesAdded below the number of entries"
	}
	groups := make(map[string]bool, len(s.Groups))
	for _, g := range s.Groups {
		if groups[string(g.Name)] {
			return fmt.Sprintf("two groups named %q", g.Name)
		}
		groups[string(g.Name)] = true
		if g.EntriesRead < -1 {
			return fmt.Sprintf("group %q has EntriesRead %d", g.Name, g.EntriesRead)
		}
		consumers := make(map[string]bool, len(g.Consumers))
		for _, c := range g.Consumers {
			if consumers[string(c.Name)] {
				return fmt.Sprintf("group %q has two consumers named %q", g.Name, c.Name)
			}
			consumers[string(c.Name)] = true
		}
		for i, p := range g.Pending {
			if i > 0 && cmpID(g.Pending[i-1].ID, p.ID) >= 0 {
				return fmt.Sprintf("group %q: pending entries not in increasing ID order", g.Name)
			}
			if !consumers[string(p.Consumer)] {
				return fmt.Sprintf("group %q: pending entry owned by %q, not a consumer", g.Name, p.Consumer)
			}
		}
	}
	return ""
}

// appendStream writes s as RDB_TYPE_STREAM_LISTPACKS_2, Redis 7.0's
// encoding (RDB version 10 has no later one).
func appendStream(b []byte, s *StreamValue) []byte {
	if why := s.invalid(); why != "" {
		panic("rdb: Dump of an invalid stream: " + why)
	}
	b = append(b, typeStreamListpacks2)
	b = appendStreamNodes(b, s.Entries)
	b = appendLen(b, uint64(len(s.Entries)))
	b = appendID(b, s.LastID)
	b = appendID(b, s.FirstID)
	b = appendID(b, s.MaxDeletedID)
	b = appendLen(b, s.EntriesAdded)
	b = appendLen(b, uint64(len(s.Groups)))
	for _, g := range s.Groups {
		b = appendString(b, g.Name)
		b = appendID(b, g.LastID)
		// Redis saves entries_read with rdbSaveLen of a long long: -1 is
		// the 64-bit length 2^64-1.
		b = appendLen(b, uint64(g.EntriesRead))
		b = appendLen(b, uint64(len(g.Pending)))
		owned := make(map[string][]StreamID, len(g.Consumers))
		for _, p := range g.Pending {
			b = appendRawID(b, p.ID)
			b = binary.LittleEndian.AppendUint64(b, uint64(p.DeliveryMs))
			b = appendLen(b, p.DeliveryCount)
			owned[string(p.Consumer)] = append(owned[string(p.Consumer)], p.ID)
		}
		b = appendLen(b, uint64(len(g.Consumers)))
		for _, c := range g.Consumers {
			b = appendString(b, c.Name)
			b = binary.LittleEndian.AppendUint64(b, uint64(c.SeenMs))
			ids := owned[string(c.Name)]
			b = appendLen(b, uint64(len(ids)))
			for _, id := range ids {
				b = appendRawID(b, id)
			}
		}
	}
	return b
}

// appendID writes an ID as two RDB lengths.
func appendID(b []byte, id StreamID) []byte { return appendLen(appendLen(b, id.Ms), id.Seq) }

// appendRawID writes an ID as a rax key: ms and seq big-endian, which sorts
// bytewise in ID order.
func appendRawID(b []byte, id StreamID) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(b, id.Ms), id.Seq)
}

func rawID(b []byte) StreamID {
	return StreamID{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])}
}

// streamNode is the listpack Dump is filling: its master entry is its
// first entry's ID and field names.
type streamNode struct {
	key    StreamID
	fields [][]byte
	master []byte // the master entry, its count (1 byte: at most 100) patched at the end
	body   []byte // the entries after the master entry
	n      int    // entries
	elems  int    // listpack elements
}

func (n *streamNode) start(e StreamEntry) {
	n.key, n.n = e.ID, 1
	n.fields = make([][]byte, len(e.Fields)/2)
	for j := range n.fields {
		n.fields[j] = e.Fields[2*j]
	}
	n.master = lpAppendInt(n.master[:0], 1)
	n.master = lpAppendInt(n.master, 0) // deleted
	n.master = lpAppendInt(n.master, int64(len(n.fields)))
	for _, f := range n.fields {
		n.master = lpAppendStr(n.master, f)
	}
	n.master = lpAppendInt(n.master, 0) // the master entry's terminator
	n.body, n.elems = appendStreamEntry(n.body[:0], e, n.key, n.fields)
	n.elems += 3 + len(n.fields) + 1
}

func (n *streamNode) size() int { return listpackHeader + len(n.master) + len(n.body) + 1 }

// appendTo writes the node's key and listpack as RDB strings.
func (n *streamNode) appendTo(b []byte) []byte {
	n.master[0] = byte(n.n)
	total := n.size()
	b = appendLen(b, 16)
	b = appendRawID(b, n.key)
	b = appendLen(b, uint64(total))
	b = binary.LittleEndian.AppendUint32(b, uint32(total))
	b = binary.LittleEndian.AppendUint16(b, uint16(min(n.elems, 0xFFFF)))
	b = append(b, n.master...)
	b = append(b, n.body...)
	return append(b, 0xFF)
}

// appendStreamNodes writes the rax of listpacks: the node count, then each
// node's 16-byte key and listpack. A node takes entries until it has
// streamNodeMaxEntries or would reach streamNodeMaxBytes.
func appendStreamNodes(b []byte, entries []StreamEntry) []byte {
	// The count comes first but is known last: the nodes are written after
	// room for its longest form, then moved back onto its actual one.
	const room = 9
	start := len(b)
	b = append(b, make([]byte, room)...)
	var (
		nodes uint64
		node  streamNode
	)
	for i, e := range entries {
		if i > 0 {
			mark, before := len(node.body), node.size()
			body, elems := appendStreamEntry(node.body, e, node.key, node.fields)
			if node.n < streamNodeMaxEntries && before+len(body)-mark < streamNodeMaxBytes {
				node.body, node.n, node.elems = body, node.n+1, node.elems+elems
				continue
			}
			node.body = body[:mark]
			b = node.appendTo(b)
			nodes++
		}
		node.start(e)
	}
	if len(entries) > 0 {
		b = node.appendTo(b)
		nodes++
	}
	n := len(appendLen(b[start:start], nodes))
	copy(b[start+n:], b[start+room:])
	return b[:len(b)-room+n]
}

// appendStreamEntry writes e into a node with master ID key and master
// fields: flags, the ID as differences from key, then the values alone when
// e has the master's field names (SAMEFIELDS), else the field count and
// the pairs; last, the entry's element count (so that it can be walked
// backwards). It returns the elements written.
func appendStreamEntry(b []byte, e StreamEntry, key StreamID, master [][]byte) ([]byte, int) {
	same := len(e.Fields) == 2*len(master)
	for j := 0; same && j < len(master); j++ {
		same = string(e.Fields[2*j]) == string(master[j])
	}
	nf := len(e.Fields) / 2
	var count int
	if same {
		b = lpAppendInt(b, streamSameFields)
		count = nf + 3
	} else {
		b = lpAppendInt(b, 0)
		count = 2*nf + 4
	}
	// Redis stores the differences as int64s and adds them back modulo 2^64.
	b = lpAppendInt(b, int64(e.ID.Ms-key.Ms))
	b = lpAppendInt(b, int64(e.ID.Seq-key.Seq))
	if same {
		for j := 1; j < len(e.Fields); j += 2 {
			b = lpAppendStr(b, e.Fields[j])
		}
	} else {
		b = lpAppendInt(b, int64(nf))
		for _, f := range e.Fields {
			b = lpAppendStr(b, f)
		}
	}
	b = lpAppendInt(b, int64(count))
	return b, count + 1
}

// lpAppendInt writes a listpack integer in the smallest encoding, as
// Redis does.
func lpAppendInt(b []byte, v int64) []byte {
	start := len(b)
	switch {
	case v >= 0 && v <= 127:
		b = append(b, byte(v))
	case v >= -4096 && v <= 4095:
		u := uint16(v) & 0x1fff
		b = append(b, 0xC0|byte(u>>8), byte(u))
	case v >= math.MinInt16 && v <= math.MaxInt16:
		b = binary.LittleEndian.AppendUint16(append(b, 0xF1), uint16(v))
	case v >= -1<<23 && v < 1<<23:
		b = append(b, 0xF2, byte(v), byte(v>>8), byte(v>>16))
	case v >= math.MinInt32 && v <= math.MaxInt32:
		b = binary.LittleEndian.AppendUint32(append(b, 0xF3), uint32(v))
	default:
		b = binary.LittleEndian.AppendUint64(append(b, 0xF4), uint64(v))
	}
	return appendBacklen(b, uint64(len(b)-start))
}

// lpAppendStr writes a listpack string; like Redis, as an integer when it
// is one's canonical decimal form.
func lpAppendStr(b, s []byte) []byte {
	if v, ok := canonicalInt64(s); ok {
		return lpAppendInt(b, v)
	}
	start := len(b)
	switch n := len(s); {
	case n < 64:
		b = append(b, 0x80|byte(n))
	case n < 4096:
		b = append(b, 0xE0|byte(n>>8), byte(n))
	default:
		b = binary.LittleEndian.AppendUint32(append(b, 0xF0), uint32(n))
	}
	b = append(b, s...)
	return appendBacklen(b, uint64(len(b)-start))
}

// streamDumpSize is an upper bound of what appendStream writes.
func streamDumpSize(s *StreamValue) int {
	n := 1 + 9 + 8*9 + 9
	for _, e := range s.Entries {
		// A node per entry at worst: its key, header, master entry (with
		// the field names once more) and 5 integers of the entry.
		n += 1 + 16 + 9 + listpackHeader + 1 + 4*(9+5) + 5*(9+5)
		for i, f := range e.Fields {
			n += len(f) + 10 // a listpack string's header and backlen at most
			if i%2 == 0 {
				n += len(f) + 10
			}
		}
	}
	for _, g := range s.Groups {
		n += 9 + len(g.Name) + 5*9 + len(g.Pending)*(16+8+9+16)
		for _, c := range g.Consumers {
			n += 9 + len(c.Name) + 8 + 9
		}
	}
	return n
}

// stream reads a stream of RDB type t (15, 19 or 21).
func (d *decoder) stream(t byte) (Value, bool) {
	s := &StreamValue{}
	nodes, ok := d.length()
	if !ok || nodes > d.left() {
		return Value{}, false
	}
	var prevKey StreamID
	for i := range nodes {
		kb, ok := d.str()
		if !ok || len(kb) != 16 {
			return Value{}, false
		}
		key := rawID(kb)
		// Redis writes the nodes in key order, and a node's key is the
		// first ID it was given: greater than every earlier entry's.
		if i > 0 && cmpID(key, prevKey) <= 0 {
			return Value{}, false
		}
		if n := len(s.Entries); n > 0 && cmpID(key, s.Entries[n-1].ID) <= 0 {
			return Value{}, false
		}
		prevKey = key
		lp, ok := d.str()
		if !ok || !d.streamListpack(lp, key, &s.Entries) {
			return Value{}, false
		}
	}
	length, ok := d.length()
	if !ok || length != uint64(len(s.Entries)) {
		return Value{}, false
	}
	if s.LastID, ok = d.id(); !ok {
		return Value{}, false
	}
	if t == typeStreamListpacks {
		// What Redis 7.0 fills in for a stream saved before them; for the
		// first ID of an empty stream, what its search for a first entry
		// returns when there is none.
		s.EntriesAdded = length
		s.FirstID = StreamID{math.MaxUint64, math.MaxUint64}
		if len(s.Entries) > 0 {
			s.FirstID = s.Entries[0].ID
		}
	} else {
		s.FirstID, ok = d.id()
		if ok {
			s.MaxDeletedID, ok = d.id()
		}
		if ok {
			s.EntriesAdded, ok = d.length()
		}
		if !ok {
			return Value{}, false
		}
	}
	ngroups, ok := d.length()
	if !ok || ngroups > d.left()/minGroupSize {
		return Value{}, false
	}
	if ngroups > 0 {
		s.Groups = make([]StreamGroup, ngroups)
	}
	for i := range s.Groups {
		if !d.streamGroup(t, s, &s.Groups[i]) {
			return Value{}, false
		}
	}
	if s.invalid() != "" {
		return Value{}, false
	}
	return Value{Kind: Stream, Stream: s}, true
}

func (d *decoder) id() (StreamID, bool) {
	ms, ok := d.length()
	if !ok {
		return StreamID{}, false
	}
	seq, ok := d.length()
	return StreamID{ms, seq}, ok
}

// rawID reads a 16-byte rax key.
func (d *decoder) rawID() (StreamID, bool) {
	b, ok := d.take(16)
	if !ok {
		return StreamID{}, false
	}
	return rawID(b), true
}

func (d *decoder) msTime() (int64, bool) {
	b, ok := d.take(8)
	if !ok {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b)), true
}

// streamGroup reads a consumer group: its global PEL with the delivery
// data, then its consumers, each with the IDs of the pending entries it
// owns.
func (d *decoder) streamGroup(t byte, s *StreamValue, g *StreamGroup) bool {
	var ok bool
	if g.Name, ok = d.str(); !ok {
		return false
	}
	if g.LastID, ok = d.id(); !ok {
		return false
	}
	if t == typeStreamListpacks {
		g.EntriesRead = estimateEntriesRead(s, g.LastID)
	} else {
		n, ok := d.length()
		if !ok {
			return false
		}
		g.EntriesRead = int64(n)
	}
	npel, ok := d.length()
	if !ok || npel > d.left()/minPendingSize {
		return false
	}
	if npel > 0 {
		g.Pending = make([]StreamPending, npel)
	}
	for i := range g.Pending {
		p := &g.Pending[i]
		if p.ID, ok = d.rawID(); !ok {
			return false
		}
		if p.DeliveryMs, ok = d.msTime(); !ok {
			return false
		}
		if p.DeliveryCount, ok = d.length(); !ok {
			return false
		}
	}
	// Redis writes its PEL in ID order; it would load any order.
	byID := func(a, b StreamPending) int { return cmpID(a.ID, b.ID) }
	if !slices.IsSortedFunc(g.Pending, byID) {
		slices.SortFunc(g.Pending, byID)
	}
	for i := 1; i < len(g.Pending); i++ {
		if g.Pending[i-1].ID == g.Pending[i].ID {
			return false
		}
	}
	minSize := uint64(minConsumerSize)
	if t == typeStreamListpacks3 {
		minSize += 8
	}
	ncons, ok := d.length()
	if !ok || ncons > d.left()/minSize {
		return false
	}
	if ncons > 0 {
		g.Consumers = make([]StreamConsumer, ncons)
	}
	owned := make([]bool, len(g.Pending))
	for i := range g.Consumers {
		c := &g.Consumers[i]
		if c.Name, ok = d.str(); !ok {
			return false
		}
		if c.SeenMs, ok = d.msTime(); !ok {
			return false
		}
		c.ActiveMs = c.SeenMs
		if t == typeStreamListpacks3 {
			if c.ActiveMs, ok = d.msTime(); !ok {
				return false
			}
		}
		n, ok := d.length()
		if !ok || n > d.left()/16 {
			return false
		}
		for range n {
			id, ok := d.rawID()
			if !ok {
				return false
			}
			j, found := slices.BinarySearchFunc(g.Pending, id, func(p StreamPending, id StreamID) int { return cmpID(p.ID, id) })
			// Each pending entry belongs to exactly one consumer.
			if !found || owned[j] {
				return false
			}
			owned[j] = true
			g.Pending[j].Consumer = c.Name
		}
	}
	return !slices.Contains(owned, false)
}

// estimateEntriesRead is how Redis 7.0 fills in a group's entries_read when
// it loads a stream saved before it had them (streamEstimateDistanceFrom-
// FirstEverEntry, for a stream with no deletions recorded).
func estimateEntriesRead(s *StreamValue, id StreamID) int64 {
	if s.EntriesAdded == 0 {
		return 0
	}
	length := uint64(len(s.Entries))
	switch c := cmpID(id, s.LastID); {
	case length == 0 && c <= 0:
		return int64(s.EntriesAdded)
	case c == 0:
		return int64(s.EntriesAdded)
	case c > 0:
		return -1
	}
	if s.MaxDeletedID == (StreamID{}) || cmpID(s.MaxDeletedID, s.FirstID) < 0 {
		switch cmpID(id, s.FirstID) {
		case -1:
			return int64(s.EntriesAdded - length)
		case 0:
			return int64(s.EntriesAdded - length + 1)
		}
	}
	return -1
}

// streamListpack reads one node: a master entry (live count, deleted
// count, the field names, 0), then entries, each flags, the ID's
// differences from the node's key, the values alone (SAMEFIELDS) or the
// field count and the pairs, then its element count. It appends the live
// entries to out, each checked to come after the one before.
func (d *decoder) streamListpack(lp []byte, key StreamID, out *[]StreamEntry) bool {
	r, ok := newListpackReader(lp)
	if !ok {
		return false
	}
	elem := func() (s []byte, n int64, isInt, ok bool) {
		s, n, isInt, more, ok := r.next()
		return s, n, isInt, ok && more
	}
	// Redis reads these with lpGetIntegerIfValid: an integer, or a string
	// that is one's canonical decimal form.
	integer := func() (int64, bool) {
		s, n, isInt, ok := elem()
		if !ok || isInt {
			return n, ok
		}
		return canonicalInt64(s)
	}
	// Every listpack element takes at least 2 bytes.
	fits := func(n int64) bool { return n > 0 && n <= int64(len(lp)-r.p)/2 }

	live, ok1 := integer()
	deleted, ok2 := integer()
	nf, ok3 := integer()
	if !ok1 || !ok2 || !ok3 || live < 0 || deleted < 0 || !fits(nf) {
		return false
	}
	master := make([][]byte, nf)
	for i := range master {
		s, n, isInt, ok := elem()
		if !ok {
			return false
		}
		master[i] = d.entryBytes(s, n, isInt)
	}
	if zero, ok := integer(); !ok || zero != 0 {
		return false
	}
	var seenLive, seenDeleted int64
	for {
		if r.atEnd() {
			break
		}
		flags, ok1 := integer()
		msd, ok2 := integer()
		seqd, ok3 := integer()
		if !ok1 || !ok2 || !ok3 || flags&^(streamDeleted|streamSameFields) != 0 {
			return false
		}
		dead := flags&streamDeleted != 0
		n := nf
		if flags&streamSameFields == 0 {
			if n, ok = integer(); !ok || !fits(2*n) {
				return false
			}
		}
		var fields [][]byte
		if !dead {
			if !fits(n) {
				return false
			}
			fields = make([][]byte, 2*n)
		}
		for j := range 2 * n {
			if flags&streamSameFields != 0 && j%2 == 0 {
				if !dead {
					fields[j] = master[j/2]
				}
				continue
			}
			s, v, isInt, ok := elem()
			if !ok {
				return false
			}
			if !dead {
				fields[j] = d.entryBytes(s, v, isInt)
			}
		}
		want := n + 3
		if flags&streamSameFields == 0 {
			want += n + 1
		}
		if count, ok := integer(); !ok || count != want {
			return false
		}
		if dead {
			seenDeleted++
			continue
		}
		seenLive++
		id := StreamID{key.Ms + uint64(msd), key.Seq + uint64(seqd)}
		if cmpID(id, key) < 0 {
			return false
		}
		if k := len(*out); k > 0 && cmpID(id, (*out)[k-1].ID) <= 0 {
			return false
		}
		*out = append(*out, StreamEntry{ID: id, Fields: fields})
	}
	_, _, _, _, ok = r.next()
	return ok && seenLive == live && seenDeleted == deleted
}

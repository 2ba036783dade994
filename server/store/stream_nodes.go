package store

import (
	"sort"

	"github.com/zaris-io/zaris/internal/kv"
)

// Redis keeps a stream's entries in radix-tree nodes, each a listpack of at
// most stream-node-max-entries entries (live and deleted) and
// stream-node-max-bytes bytes, and "~" trimming (XADD/XTRIM MAXLEN|MINID ~)
// only ever removes whole nodes: `XADD s MAXLEN ~ 555 …` over ten thousand
// entries leaves 600 of them, not 555. Zaris stores entries differently
// (idSeq), so streamNodes models where Redis's node boundaries would fall —
// the nodes' first and last ids, live and deleted counts and listpack sizes,
// computed as Redis 7.0's t_stream.c and listpack.c compute them — and "~"
// trims by it (D119). A stream's model is rebuilt from its entries when it
// is decoded (a replica's copy, a snapshot, RESTORE), so it can differ from
// the owner's after deletions: the owner therefore logs a "~" trim as the
// exact length it left (xadd, xtrim), and replicas converge whatever their
// model says.

// Redis 7.0's defaults: stream-node-max-entries and stream-node-max-bytes.
const (
	streamNodeMaxEntries = 100
	streamNodeMaxBytes   = 4096
	// approxTrimDefaultLimit is the work cap of a "~" trim without LIMIT:
	// 100 nodes' worth of entries (Redis: 100 × stream-node-max-entries).
	approxTrimDefaultLimit = 100 * streamNodeMaxEntries
)

// streamNode is one modelled listpack.
type streamNode struct {
	master  streamID // the node's key: its first entry's id
	last    streamID // its last entry's id, deleted or not
	live    int64    // the master entry's count of live entries
	deleted int64    // … and of entries marked deleted
	bytes   int64    // lpBytes of the listpack
	fields  [][]byte // the master entry's field names
}

// streamNodes is the model: the nodes in id order.
type streamNodes struct{ nodes []streamNode }

// lpHeaderBytes is a listpack's header (total bytes, element count) and
// end marker.
const lpHeaderBytes = 4 + 2 + 1

// lpBacklen is the size of an element's back-length field for an element
// whose encoding takes l bytes.
func lpBacklen(l int64) int64 {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// lpIntBytes is the size of an integer element, back-length included.
func lpIntBytes(v int64) int64 {
	var enc int64
	switch {
	case v >= 0 && v <= 127:
		enc = 1
	case v >= -4096 && v <= 4095:
		enc = 2
	case v >= -32768 && v <= 32767:
		enc = 3
	case v >= -8388608 && v <= 8388607:
		enc = 4
	case v >= -2147483648 && v <= 2147483647:
		enc = 5
	default:
		enc = 9
	}
	return enc + lpBacklen(enc)
}

// lpStringBytes is the size of a string element: a string Redis reads as
// an integer (string2ll: the canonical decimal form of an int64) is stored
// as one.
func lpStringBytes(b []byte) int64 {
	if v, ok := kv.ParseInt(b); ok { // string2ll, which listpack uses too
		return lpIntBytes(v)
	}
	n := int64(len(b))
	var enc int64
	switch {
	case n < 64:
		enc = 1 + n
	case n < 4096:
		enc = 2 + n
	default:
		enc = 5 + n
	}
	return enc + lpBacklen(enc)
}

// sameFields reports whether an entry's fields are the master entry's.
func (nd *streamNode) sameFields(fields [][]byte) bool {
	if len(fields)/2 != len(nd.fields) {
		return false
	}
	for i, f := range nd.fields {
		if string(fields[2*i]) != string(f) {
			return false
		}
	}
	return true
}

// entryBytes is the listpack size of an entry appended to nd: flags,
// ms and seq deltas from the master id, the fields (or only the values
// when they are the master's), and the entry's element count.
func (nd *streamNode) entryBytes(id streamID, fields [][]byte) int64 {
	same := nd.sameFields(fields)
	flags, count := int64(0), int64(len(fields)/2+3)
	if same {
		flags = 2 // STREAM_ITEM_FLAG_SAMEFIELDS
	} else {
		count = int64(len(fields)) + 4
	}
	b := lpIntBytes(flags) + lpIntBytes(int64(id.ms-nd.master.ms)) + lpIntBytes(int64(id.seq-nd.master.seq))
	if !same {
		b += lpIntBytes(int64(len(fields) / 2))
	}
	for i, f := range fields {
		if same && i%2 == 0 {
			continue
		}
		b += lpStringBytes(f)
	}
	return b + lpIntBytes(count)
}

// needsNode reports whether appending an entry of these fields opens a
// new node, as streamAppendItem decides: the last node's bytes plus the
// entry's field and value lengths reach the byte cap, or it holds the
// maximum of entries, live and deleted.
func (m *streamNodes) needsNode(fields [][]byte) bool {
	if len(m.nodes) == 0 {
		return true
	}
	last := &m.nodes[len(m.nodes)-1]
	var raw int64
	for _, f := range fields {
		raw += int64(len(f))
	}
	return last.bytes+raw >= streamNodeMaxBytes || last.live+last.deleted >= streamNodeMaxEntries
}

// append models an entry added at the end of the stream.
func (m *streamNodes) append(id streamID, fields [][]byte) {
	if m.needsNode(fields) {
		nd := streamNode{master: id, last: id, live: 1}
		nd.fields = make([][]byte, len(fields)/2)
		for i := range nd.fields {
			nd.fields[i] = append([]byte(nil), fields[2*i]...)
		}
		// The master entry: count, deleted, the number of fields, the
		// fields, a zero terminator; then the entry itself.
		nd.bytes = lpHeaderBytes + lpIntBytes(1) + lpIntBytes(0) + lpIntBytes(int64(len(nd.fields))) + lpIntBytes(0)
		for _, f := range nd.fields {
			nd.bytes += lpStringBytes(f)
		}
		nd.bytes += nd.entryBytes(id, fields)
		m.nodes = append(m.nodes, nd)
		return
	}
	nd := &m.nodes[len(m.nodes)-1]
	nd.bytes += nd.entryBytes(id, fields)
	nd.setCounts(nd.live+1, nd.deleted)
	nd.last = id
}

// setCounts rewrites the master entry's two counters (their integers may
// change size).
func (nd *streamNode) setCounts(live, deleted int64) {
	nd.bytes += lpIntBytes(live) - lpIntBytes(nd.live) + lpIntBytes(deleted) - lpIntBytes(nd.deleted)
	nd.live, nd.deleted = live, deleted
}

// find is the index of the node holding id (the last whose master is not
// above it), or -1.
func (m *streamNodes) find(id streamID) int {
	i := sort.Search(len(m.nodes), func(i int) bool { return id.less(m.nodes[i].master) })
	return i - 1
}

// remove models an XDEL of a live entry: marked deleted in its node, and
// the node dropped once it holds no live entry.
func (m *streamNodes) remove(id streamID) {
	i := m.find(id)
	if i < 0 {
		return
	}
	nd := &m.nodes[i]
	if nd.live <= 1 {
		m.nodes = append(m.nodes[:i], m.nodes[i+1:]...)
		return
	}
	nd.setCounts(nd.live-1, nd.deleted+1)
}

// trimFront models the removal of the n oldest live entries, as an exact
// trim makes it: whole nodes while n covers them, then entries marked
// deleted inside the next.
func (m *streamNodes) trimFront(n int64) {
	drop := 0
	for drop < len(m.nodes) && n >= m.nodes[drop].live {
		n -= m.nodes[drop].live
		drop++
	}
	m.nodes = append(m.nodes[:0], m.nodes[drop:]...)
	if n > 0 && len(m.nodes) > 0 {
		nd := &m.nodes[0]
		nd.setCounts(nd.live-n, nd.deleted+n)
	}
}

// approxTrim is how many of the oldest live entries a "~" trim removes:
// whole nodes from the front while the stream keeps at least maxLen
// entries (MAXLEN) or while a node's last id is below min (MINID), and
// while the entries removed stay within limit (0: none). length is the
// stream's live entries; extra, when set, is an entry about to be
// appended (XADD trims after it appends), counted where it would land.
func (m *streamNodes) approxTrim(t *trimSpec, length int64, extra *streamID, extraFields [][]byte) int64 {
	limit := t.limit
	if !t.limitGiven {
		limit = approxTrimDefaultLimit
	}
	lastLive := int64(-1) // the last node's live count once extra lands in it
	newNode := false
	if extra != nil {
		length++
		newNode = m.needsNode(extraFields)
		if !newNode {
			lastLive = m.nodes[len(m.nodes)-1].live + 1
		}
	}
	var removed int64
	count := len(m.nodes)
	if newNode {
		count++
	}
	for i := 0; i < count; i++ {
		if !t.minID && length <= t.maxLen {
			break
		}
		var live int64
		var last streamID
		switch {
		case i == len(m.nodes): // the new entry's own node
			live, last = 1, *extra
		case i == len(m.nodes)-1 && lastLive >= 0:
			live, last = lastLive, *extra
		default:
			live, last = m.nodes[i].live, m.nodes[i].last
		}
		if limit > 0 && removed+live > limit {
			break
		}
		if t.minID && !last.less(t.min) || !t.minID && length-live < t.maxLen {
			break
		}
		length -= live
		removed += live
	}
	return removed
}

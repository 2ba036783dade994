package store

import (
	"container/heap"
	"math"
	"strconv"

	"github.com/zaris-io/zaris/internal/glob"
	"github.com/zaris-io/zaris/internal/kv"
)

// SSCAN and HSCAN (issue #13 item 5). A collection Redis 7.0 keeps compact
// (an intset; a listpack hash) is returned whole with cursor 0, whatever
// the cursor, as Redis does. A larger one is walked with a stateless
// cursor, like SCAN's (server/resp/scan.go): members are visited in the
// order of a fixed 63-bit hash of the member, and the cursor is the
// smallest hash not returned yet; a page never splits members of equal
// hash. So a member present for a whole iteration is returned exactly
// once, and the iteration ends with cursor 0. COUNT is the number of
// members examined per call (MATCH filters after), but a call examines at
// least 1/64 of the collection (up to 16384 members), so that a full
// iteration costs O(n) per page over at most 64 pages even with COUNT 1:
// Redis lets a reply hold more than COUNT.

// collScan is a parsed SSCAN/HSCAN request.
type collScan struct {
	cursor uint64
	count  int
	match  []byte
}

// parseScanCursor parses SSCAN/HSCAN/ZSCAN's cursor as Redis reads it
// (kv.ParseCursor: strtoul over a C string, "-1" is 2^64-1, "" is 0).
func parseScanCursor(b []byte) (uint64, bool) { return kv.ParseCursor(b) }

// parseCollScan parses [MATCH pattern] [COUNT n] with Redis's errors
// (COUNT < 1 is a syntax error). Redis reads them after the key's type:
// a missing key answers an empty scan whatever they are.
func parseCollScan(cursor uint64, args [][]byte) (collScan, kv.Reply, bool) {
	req := collScan{cursor: cursor, count: 10}
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return req, errSyntax, false
		}
		switch v := args[i+1]; {
		case optEq(args[i], "COUNT"):
			n, ok := argInt(v)
			if !ok {
				return req, errNotInteger, false
			}
			if n < 1 {
				return req, errSyntax, false
			}
			req.count = int(min(n, math.MaxInt32))
		case optEq(args[i], "MATCH"):
			req.match = v
		default:
			return req, errSyntax, false
		}
	}
	return req, kv.Reply{}, true
}

// collScanStart checks a scan's cursor and the key's kind, in Redis's
// order; done is set when the reply is already decided (an error, or the
// empty scan of a missing key).
func collScanStart(x *execCtx, kind ValueKind) (req collScan, reply kv.Reply, done bool) {
	if r, ok := arity(x, 1, -1); !ok {
		return req, r, true
	}
	cursor, ok := parseScanCursor(x.cmd.Args[0])
	if !ok {
		return req, kv.BadRequest("invalid cursor"), true
	}
	if x.wrongKind(kind) {
		return req, kv.StatusReply(kv.StatusWrongType), true
	}
	if x.rec == nil {
		return req, collScanReply(0, nil), true
	}
	req, r, ok := parseCollScan(cursor, x.cmd.Args[1:])
	if !ok {
		return req, r, true
	}
	return req, kv.Reply{}, false
}

// filter keeps the items (groups of stride: a member, or a field and its
// value) whose first element matches the pattern.
func (req collScan) filter(items []string, stride int) []string {
	if req.match == nil || len(req.match) == 1 && req.match[0] == '*' {
		return items
	}
	out := items[:0:0]
	for i := 0; i+stride <= len(items); i += stride {
		if glob.Match(string(req.match), items[i]) {
			out = append(out, items[i:i+stride]...)
		}
	}
	return out
}

func collScanReply(next uint64, items []string) kv.Reply {
	out := make([]kv.Reply, len(items))
	for i, it := range items {
		out[i] = kv.BulkReply([]byte(it))
	}
	return kv.ArrayReply([]kv.Reply{kv.BulkReply(strconv.AppendUint(nil, next, 10)), kv.ArrayReply(out)})
}

// memberHash is a member's position in the scan order: FNV-1a, 63 bits (a
// cursor any client parses as a signed or unsigned 64-bit number).
func memberHash(m string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(m); i++ {
		h ^= uint64(m[i])
		h *= 1099511628211
	}
	return h & math.MaxInt64
}

type hashed struct {
	h uint64
	m string
}

// maxHashHeap keeps the smallest hashes seen: its root is the largest.
type maxHashHeap []hashed

func (q maxHashHeap) Len() int           { return len(q) }
func (q maxHashHeap) Less(i, j int) bool { return q[i].h > q[j].h }
func (q maxHashHeap) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *maxHashHeap) Push(v any)        { *q = append(*q, v.(hashed)) }
func (q *maxHashHeap) Pop() any {
	old := *q
	v := old[len(old)-1]
	*q = old[:len(old)-1]
	return v
}

// scanByHash runs one step over n members (each yielded by each): the
// members whose hash is at or past the cursor, the page's worth with the
// smallest hashes (ties kept together), and the next cursor (0: done).
func scanByHash(n int, each func(yield func(string)), req collScan) (uint64, []string) {
	want := max(req.count, min(n/64, 16384))
	q := make(maxHashHeap, 0, min(want, n)+1)
	var ties []hashed // members hashing like the heap's root once it was cut
	more := false     // a member past the page exists
	each(func(m string) {
		h := memberHash(m)
		if h < req.cursor {
			return
		}
		switch {
		case len(q) < want:
			heap.Push(&q, hashed{h, m})
		case h < q[0].h:
			more = true
			top := heap.Pop(&q).(hashed)
			heap.Push(&q, hashed{h, m})
			ties = keepTies(ties, top, q[0].h)
		case h == q[0].h:
			ties = append(ties, hashed{h, m})
		default:
			more = true
		}
	})
	if len(q) == 0 {
		return 0, nil
	}
	last := q[0].h
	out := make([]string, 0, len(q)+len(ties))
	for _, e := range q {
		out = append(out, e.m)
	}
	for _, e := range ties {
		if e.h == last {
			out = append(out, e.m)
		}
	}
	if !more || last == math.MaxInt64 {
		return 0, out
	}
	return last + 1, out
}

// keepTies keeps, of the members cut from the page, those that hash like
// its new largest (they must come with it).
func keepTies(ties []hashed, cut hashed, root uint64) []hashed {
	out := ties[:0]
	for _, e := range append(ties, cut) {
		if e.h == root {
			out = append(out, e)
		}
	}
	return out
}

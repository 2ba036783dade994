package store

// Scan (R-DS-8): iterate the keys of a range, one page at a time, in three
// layers (the SCAN article of seed 003).
//
//  1. A segment keeps an immutable sorted snapshot of its keys, built at a
//     revision and rebuilt lazily when the segment has moved on. A scan walks
//     that slice without holding any lock; each candidate key is then checked
//     against the live record (a brief read lock), so tombstones, expired
//     keys and keys deleted since the snapshot never surface.
//  2. The node k-way merges the sorted snapshots of its owned segments
//     (container/heap) behind a session: the session holds the merge cursor,
//     a page advances it, and the resume token names the session and its
//     position. Sessions live in a per-store table, bounded in number and
//     dropped after an idle TTL; an expired or unknown session is a loud
//     ErrScanSessionNotFound, never a silently restarted scan.
//  3. The client fans out to every owner and merges their pages (sdk/scan.go).
//
// Guarantee — the same family as Redis SCAN, not snapshot isolation:
//   - per-owner key order: a node returns keys in ascending byte order;
//   - completeness on a quiescent range: every key that is live in the range
//     for the whole scan is returned exactly once;
//   - a key created after the session started is not returned (it is not in
//     the session's snapshots); a key deleted or expired before its turn is
//     not returned; a value updated before its turn is returned as updated.
//     There is no point-in-time view across segments or nodes.
//   - a scan does not count as an access for LRU eviction.
//
// Only owned segments are scanned (R-MEM-4): a replica copy is its owner's to
// report.

import (
	"container/heap"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zaris-io/zaris/internal/mpsafe"

	"github.com/zaris-io/zaris/internal/kv"
)

// Scan defaults and limits.
const (
	// DefaultScanPageSize is the page size when a request leaves it zero.
	DefaultScanPageSize = 100
	// MaxScanPageSize bounds one page, so one request cannot make a node
	// materialize its whole keyspace in a reply.
	MaxScanPageSize = 10_000
	// DefaultScanIdleTTL is how long a session survives without a request.
	DefaultScanIdleTTL = 60 * time.Second
	// DefaultMaxScanSessions bounds the open sessions of one store.
	DefaultMaxScanSessions = 1024
)

// Scan errors. Callers branch on them with errors.Is; CmdScan carries them
// as a status and the error's text (see scanErrorReply).
var (
	// ErrScanSessionNotFound: the resume token names a session this store
	// does not hold — it expired (idle TTL), finished, was closed, belongs
	// to another node or store, or the token is malformed. The scan must be
	// restarted; it is never silently restarted for the caller. BadRequest.
	ErrScanSessionNotFound = errors.New("scan session not found (expired or unknown): restart the scan")
	// ErrScanTokenStale: the token names a live session but not its current
	// position — a page was fetched twice or out of order. BadRequest.
	ErrScanTokenStale = errors.New("scan token out of order: fetch the pages of a session one after the other, each with the latest token")
	// ErrTooManyScans: the store already holds ScanConfig.MaxSessions open
	// sessions. Finish or close scans, or retry after the idle TTL.
	// CapacityExceeded.
	ErrTooManyScans = errors.New("too many open scan sessions: finish or close scans, or retry after the idle TTL")
	// ErrBadScanRequest: an invalid page size or limit. BadRequest.
	ErrBadScanRequest = errors.New("invalid scan request")
)

// ScanConfig configures the scan sessions of one store.
type ScanConfig struct {
	// IdleTTL: a session without a request for this long is dropped and its
	// token answers ErrScanSessionNotFound. Default 60 s; must be positive.
	IdleTTL time.Duration
	// MaxSessions bounds the open sessions; a new scan that needs a session
	// beyond it gets ErrTooManyScans. A scan answered in one page never
	// holds a session. Default 1024; must be positive.
	MaxSessions int
}

// DefaultScanConfig returns the documented defaults.
func DefaultScanConfig() ScanConfig {
	return ScanConfig{IdleTTL: DefaultScanIdleTTL, MaxSessions: DefaultMaxScanSessions}
}

// Validate checks the fields.
func (c ScanConfig) Validate() error {
	switch {
	case c.IdleTTL <= 0:
		return fmt.Errorf("store: scan idle TTL must be positive, got %v", c.IdleTTL)
	case c.MaxSessions <= 0:
		return fmt.Errorf("store: scan max sessions must be positive, got %d", c.MaxSessions)
	}
	return nil
}

// KeyRange selects keys: Start (inclusive), End (exclusive) and Prefix, each
// optional ("" = unbounded / any). They combine: a key is in the range when
// it is ≥ Start, < End and starts with Prefix. Keys compare as bytes.
type KeyRange struct {
	Start, End, Prefix string
}

// bounds turns the range into one half-open interval [lo, hi); hasHi false
// means unbounded above.
func (r KeyRange) bounds() (lo, hi string, hasHi bool) {
	lo = max(r.Start, r.Prefix)
	hi, hasHi = r.End, r.End != ""
	if r.Prefix != "" {
		if pe, ok := prefixEnd(r.Prefix); ok && (!hasHi || pe < hi) {
			hi, hasHi = pe, true
		}
	}
	return lo, hi, hasHi
}

// prefixEnd is the least string greater than every string with prefix p
// (false when there is none: p is all 0xff bytes).
func prefixEnd(p string) (string, bool) {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// ScanRequest asks for one page.
//
// Without ResumeToken it starts a scan of Range. With one it continues that
// session: the Range and LimitCount the scan started with apply; PageSize,
// IncludeValues and IncludeMetadata are taken from each request.
type ScanRequest struct {
	Range KeyRange
	// PageSize is the most items one page returns. 0 = DefaultScanPageSize;
	// at most MaxScanPageSize.
	PageSize int
	// IncludeValues returns the value of string keys (a collection's
	// elements are read with its own commands; its Value stays nil).
	IncludeValues bool
	// IncludeMetadata returns the record's Metadata (content type, labels).
	// Kind, Version, Revision and TTL are always filled at this layer; the
	// CmdScan reply ships them only with IncludeMetadata.
	IncludeMetadata bool
	// LimitCount caps the items of the whole scan (0 = no cap).
	LimitCount int
	// ResumeToken continues a session ("" = start a new scan).
	ResumeToken string
}

// ScanItem is one key of a scan page. Value and Meta are shared with the
// store and must not be modified.
type ScanItem struct {
	Key      string
	Kind     ValueKind
	Value    []byte // with IncludeValues, string keys only (non-nil then)
	Version  uint64
	Revision uint64
	TTL      time.Duration // 0 = no expiry
	Meta     *Metadata     // with IncludeMetadata; nil when the key has none
}

// ScanPage is one page of a scan: items in ascending key order and the token
// that continues after them ("" when the scan is done).
type ScanPage struct {
	Items       []ScanItem
	ResumeToken string
}

// Done reports whether the scan has nothing more to return.
func (p ScanPage) Done() bool { return p.ResumeToken == "" }

// --- layer 1: the segment's sorted-key snapshot ---

// keySnapshot is the sorted keys of one segment as of a revision. Immutable
// once published: scans walk it without a lock; a rebuild publishes a new
// one.
type keySnapshot struct {
	// The segment state it was built from. A new key always moves an
	// owner's revision; n and items also catch a replica-style install
	// (an out-of-order record, InstallSnapshot swapping the table) that does
	// not. A change in any of them triggers a rebuild.
	rev   uint64
	n     int
	items uint64   // the table's ident
	keys  []string // live at build time, ascending
}

// sortedKeys returns the segment's cached snapshot, rebuilding it when the
// segment changed since it was built. The keys are copied under the read
// lock and sorted outside it.
func (st *scanState) sortedKeys(g *Segment, now int64) *keySnapshot {
	g.mu.RLock()
	rev, n, id := g.revision, g.items.len(), g.items.ident
	if c := st.snaps[g.id].Load(); c != nil && c.rev == rev && c.n == n && c.items == id {
		g.mu.RUnlock()
		return c
	}
	keys := make([]string, 0, g.live)
	for r := range g.items.all() {
		// A record dead now stays dead until a write, which moves the
		// revision: leaving it out keeps the snapshot small and correct.
		if r.liveAt(now) {
			keys = append(keys, r.Key())
		}
	}
	g.mu.RUnlock()
	slices.Sort(keys)
	snap := &keySnapshot{rev: rev, n: n, items: id, keys: keys}
	st.snaps[g.id].Store(snap) // a concurrent rebuild may win: both are valid
	return snap
}

// scanRead checks a candidate key against the live record and copies out
// what the scan returns. It does not touch the LRU stamp.
func (g *Segment) scanRead(key string, now int64, values, meta bool) (ScanItem, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r := g.items.get(key)
	if r == nil || !r.liveAt(now) {
		return ScanItem{}, false
	}
	it := ScanItem{Key: r.Key(), Kind: r.Kind, Version: r.Version(), Revision: r.Revision, TTL: ttlLeft(r, now)}
	if values && r.coll() == nil {
		it.Value = r.Value()
		if it.Value == nil {
			it.Value = []byte{} // an empty value, told apart from "not requested"
		}
	}
	if meta {
		it.Meta = r.Meta()
	}
	return it, true
}

// --- layer 2: the node's k-way merge ---

// segCursor walks one segment's snapshot from keys[i]; key caches keys[i]
// for the heap's comparisons.
type segCursor struct {
	key  string
	keys []string
	i    int
	seg  uint16
}

// cursorHeap orders the cursors by their current key. Segments hold
// disjoint keys, so no two cursors ever show the same key.
type cursorHeap []*segCursor

func (h cursorHeap) Len() int           { return len(h) }
func (h cursorHeap) Less(i, j int) bool { return h[i].key < h[j].key }
func (h cursorHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)        { *h = append(*h, x.(*segCursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return c
}

// merger is the merge cursor over [lo, hi) of every owned segment: the
// state a session keeps between pages.
type merger struct {
	hi    string
	hasHi bool
	heap  cursorHeap
}

func newMerger(s *Store, st *scanState, req ScanRequest, now int64) *merger {
	lo, hi, hasHi := req.Range.bounds()
	m := &merger{hi: hi, hasHi: hasHi}
	if hasHi && lo >= hi {
		return m // empty range
	}
	for _, g := range s.segments {
		if !g.Owned() {
			continue
		}
		keys := st.sortedKeys(g, now).keys
		i := sort.SearchStrings(keys, lo)
		if i < len(keys) && m.inRange(keys[i]) {
			m.heap = append(m.heap, &segCursor{key: keys[i], seg: g.id, keys: keys, i: i})
		}
	}
	heap.Init(&m.heap)
	return m
}

func (m *merger) inRange(k string) bool { return !m.hasHi || k < m.hi }

// advance moves the smallest cursor past its key.
func (m *merger) advance() {
	c := m.heap[0]
	c.i++
	if c.i < len(c.keys) && m.inRange(c.keys[c.i]) {
		c.key = c.keys[c.i]
		heap.Fix(&m.heap, 0)
	} else {
		heap.Pop(&m.heap)
	}
}

// next returns the next live item in key order (false when none is left).
func (m *merger) next(s *Store, now int64, values, meta bool) (ScanItem, bool) {
	for len(m.heap) > 0 {
		c := m.heap[0]
		key, seg := c.key, c.seg
		m.advance()
		if it, ok := s.segments[seg].scanRead(key, now, values, meta); ok {
			return it, true
		}
	}
	return ScanItem{}, false
}

// more reports whether a live item is left, discarding dead candidates at
// the head. It looks ahead so that the page that returns the last item says
// "done" instead of handing out a token to an empty page. The live head is
// read again (and re-checked) when the next page pops it.
func (m *merger) more(s *Store, now int64) bool {
	for len(m.heap) > 0 {
		c := m.heap[0]
		if _, ok := s.segments[c.seg].scanRead(c.key, now, false, false); ok {
			return true
		}
		m.advance()
	}
	return false
}

// scanSession is one scan in progress on this node.
type scanSession struct {
	id       string
	lastUsed atomic.Int64 // clock reading of the latest request; read by the purge

	mu sync.Mutex // guards every field below; held for a whole page
	m  *merger
	// pos counts the items returned so far: the position a valid token
	// names. remaining is what LimitCount still allows (-1: no limit).
	pos       uint64
	remaining int
	closed    bool // finished or closed: a request that raced in stops
}

// page fills one page and reports whether the scan is done.
func (ss *scanSession) pageLocked(s *Store, req ScanRequest, size int, now int64) ([]ScanItem, bool) {
	n := size
	if ss.remaining >= 0 {
		n = min(n, ss.remaining)
	}
	items := make([]ScanItem, 0, min(n, 1024))
	for len(items) < n {
		it, ok := ss.m.next(s, now, req.IncludeValues, req.IncludeMetadata)
		if !ok {
			break
		}
		items = append(items, it)
	}
	ss.pos += uint64(len(items))
	if ss.remaining >= 0 {
		ss.remaining -= len(items)
	}
	done := ss.remaining == 0 || !ss.m.more(s, now)
	return items, done
}

// scanState is the scan machinery of one store: the sorted-key snapshots of
// its segments and its session table.
//
// Lock order: scanSession.mu → Segment.mu, and scanSession.mu → scanState.mu.
// scanState.mu is a leaf: nothing else is locked while it is held, which is
// why the purge only unlinks sessions and never locks one.
type scanState struct {
	nonce string                        // random per store: tokens of another store or process never match
	snaps []atomic.Pointer[keySnapshot] // by segment id

	mu        sync.Mutex // guards every field below
	cfg       ScanConfig
	sessions  map[string]*scanSession
	seq       uint64
	lastPurge int64
}

func newScanState(segments int) *scanState {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return &scanState{
		nonce:    hex.EncodeToString(b[:]),
		snaps:    make([]atomic.Pointer[keySnapshot], segments),
		cfg:      DefaultScanConfig(),
		sessions: make(map[string]*scanSession),
	}
}

func (s *Store) scanState() *scanState { return s.scan }

// purgeLocked drops the sessions idle for longer than the TTL.
func (st *scanState) purgeLocked(now int64) {
	ttl := int64(st.cfg.IdleTTL)
	for id, ss := range st.sessions {
		if now-ss.lastUsed.Load() > ttl {
			delete(st.sessions, id)
		}
	}
	st.lastPurge = now
}

// register adds a session that needs more pages, within the bound.
func (st *scanState) register(ss *scanSession, now int64) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.purgeLocked(now)
	if len(st.sessions) >= st.cfg.MaxSessions {
		return fmt.Errorf("%w (%d open)", ErrTooManyScans, len(st.sessions))
	}
	st.seq++
	ss.id = st.nonce + strconv.FormatUint(st.seq, 16)
	ss.lastUsed.Store(now)
	st.sessions[ss.id] = ss
	return nil
}

// lookup finds a live session and marks it used.
func (st *scanState) lookup(id string, now int64) (*scanSession, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if now-st.lastPurge > int64(st.cfg.IdleTTL) {
		st.purgeLocked(now)
	}
	ss := st.sessions[id]
	if ss != nil && now-ss.lastUsed.Load() > int64(st.cfg.IdleTTL) {
		delete(st.sessions, id)
		ss = nil
	}
	if ss == nil {
		return nil, fmt.Errorf("%w (session %s)", ErrScanSessionNotFound, id)
	}
	ss.lastUsed.Store(now)
	return ss, nil
}

func (st *scanState) drop(id string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	_, ok := st.sessions[id]
	delete(st.sessions, id)
	return ok
}

// A node resume token is "<session id>.<position>" (opaque to callers).
func formatScanToken(id string, pos uint64) string {
	return id + "." + strconv.FormatUint(pos, 10)
}

func parseScanToken(tok string) (id string, pos uint64, err error) {
	i := strings.LastIndexByte(tok, '.')
	if i <= 0 {
		return "", 0, fmt.Errorf("%w (malformed token %q)", ErrScanSessionNotFound, tok)
	}
	pos, perr := strconv.ParseUint(tok[i+1:], 10, 64)
	if perr != nil {
		return "", 0, fmt.Errorf("%w (malformed token %q)", ErrScanSessionNotFound, tok)
	}
	return tok[:i], pos, nil
}

func scanPageSize(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultScanPageSize, nil
	case n < 0 || n > MaxScanPageSize:
		return 0, fmt.Errorf("%w: page size %d out of 1..%d", ErrBadScanRequest, n, MaxScanPageSize)
	}
	return n, nil
}

// --- the public API ---

// ScanPage returns one page of a scan. The first request (no ResumeToken)
// starts the scan; while the returned page is not Done, pass its ResumeToken
// to get the next page, one page after the other (a token used twice is
// ErrScanTokenStale). A session left idle for the ScanConfig idle TTL is
// dropped: its token then fails with ErrScanSessionNotFound — the scan must
// be restarted, it is never restarted silently. A scan answered in one page
// holds no session.
//
// The guarantee is the same family as Redis SCAN, not snapshot isolation:
//   - key order: items come in ascending byte order of their keys (per owner:
//     this node's owned segments; replica segments are not scanned);
//   - completeness on a quiescent range: every key live in the range for the
//     whole scan is returned exactly once;
//   - under concurrent writes: a key created after the scan started is not
//     returned; a key deleted or expired before its turn is not returned
//     (tombstones and expired keys never are); a value updated before its
//     turn is returned as updated. There is no point-in-time view across
//     segments, let alone nodes.
//   - a scan does not count as an access for LRU eviction.
func (s *Store) ScanPage(req ScanRequest) (ScanPage, error) {
	size, err := scanPageSize(req.PageSize)
	if err != nil {
		return ScanPage{}, err
	}
	st := s.scanState()
	now := s.clock.NowNano()
	if req.ResumeToken != "" {
		return s.resumeScan(st, req, size, now)
	}
	if req.LimitCount < 0 {
		return ScanPage{}, fmt.Errorf("%w: negative limit %d", ErrBadScanRequest, req.LimitCount)
	}
	ss := &scanSession{m: newMerger(s, st, req, now), remaining: -1}
	if req.LimitCount > 0 {
		ss.remaining = req.LimitCount
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	items, done := ss.pageLocked(s, req, size, now)
	if done {
		return ScanPage{Items: items}, nil // answered in one page: no session held
	}
	if err := st.register(ss, now); err != nil {
		return ScanPage{}, err
	}
	return ScanPage{Items: items, ResumeToken: formatScanToken(ss.id, ss.pos)}, nil
}

func (s *Store) resumeScan(st *scanState, req ScanRequest, size int, now int64) (ScanPage, error) {
	id, pos, err := parseScanToken(req.ResumeToken)
	if err != nil {
		return ScanPage{}, err
	}
	ss, err := st.lookup(id, now)
	if err != nil {
		return ScanPage{}, err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	switch {
	case ss.closed:
		return ScanPage{}, fmt.Errorf("%w (session %s)", ErrScanSessionNotFound, id)
	case pos != ss.pos:
		return ScanPage{}, fmt.Errorf("%w (token at %d, session at %d)", ErrScanTokenStale, pos, ss.pos)
	}
	items, done := ss.pageLocked(s, req, size, now)
	ss.lastUsed.Store(s.clock.NowNano())
	if done {
		ss.closed = true
		ss.m = nil
		st.drop(id)
		return ScanPage{Items: items}, nil
	}
	return ScanPage{Items: items, ResumeToken: formatScanToken(id, ss.pos)}, nil
}

// CloseScan releases the session of a resume token before the scan is done
// (an abandoned iteration, a client-side limit reached). It reports whether a
// session was open. Closing is optional: an idle session expires by itself.
func (s *Store) CloseScan(token string) bool {
	id, _, err := parseScanToken(token)
	if err != nil {
		return false
	}
	st := s.scanState()
	st.mu.Lock()
	ss := st.sessions[id]
	delete(st.sessions, id)
	st.mu.Unlock()
	if ss == nil {
		return false
	}
	ss.mu.Lock()
	ss.closed, ss.m = true, nil
	ss.mu.Unlock()
	return true
}

// ScanEach walks req.Range in key order in one go, without a session, and
// calls fn for each item until fn returns false or LimitCount items were
// seen. PageSize and ResumeToken are ignored. It is the shape of the RESP
// front end's KEYS and one-shot SCAN. Same guarantee as ScanPage.
func (s *Store) ScanEach(req ScanRequest, fn func(ScanItem) bool) error {
	if req.LimitCount < 0 {
		return fmt.Errorf("%w: negative limit %d", ErrBadScanRequest, req.LimitCount)
	}
	now := s.clock.NowNano()
	m := newMerger(s, s.scanState(), req, now)
	for n := 0; req.LimitCount == 0 || n < req.LimitCount; n++ {
		it, ok := m.next(s, now, req.IncludeValues, req.IncludeMetadata)
		if !ok || !fn(it) {
			return nil
		}
	}
	return nil
}

// SetScanConfig replaces the scan configuration. Open sessions stay; the
// new TTL and bound apply from the next request.
func (s *Store) SetScanConfig(cfg ScanConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	st := s.scanState()
	st.mu.Lock()
	st.cfg = cfg
	st.mu.Unlock()
	return nil
}

// ScanStats is a point-in-time view of the scan sessions (STYLE 12).
type ScanStats struct {
	OpenSessions int
	MaxSessions  int
	IdleTTL      time.Duration
}

// ScanStats returns the scan counters.
func (s *Store) ScanStats() ScanStats {
	st := s.scanState()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.purgeLocked(s.clock.NowNano())
	return ScanStats{OpenSessions: len(st.sessions), MaxSessions: st.cfg.MaxSessions, IdleTTL: st.cfg.IdleTTL}
}

// --- CmdScan: the command form (native protocol, embedded SDK) ---

// ScanArgs is the argument of CmdScan: Args[0] is its msgpack encoding
// (short field names below; absent = zero). Cmd.Key is ignored.
//
//	s Start  e End  p Prefix          the KeyRange
//	n PageSize                        0 = 100
//	v IncludeValues  m IncludeMetadata
//	l LimitCount                      0 = no limit
//	t ResumeToken                     "" = start a scan
//	c Close                           release the session of t; reply Int 1/0
type ScanArgs struct {
	Start           string `msgpack:"s,omitempty"`
	End             string `msgpack:"e,omitempty"`
	Prefix          string `msgpack:"p,omitempty"`
	PageSize        int    `msgpack:"n,omitempty"`
	IncludeValues   bool   `msgpack:"v,omitempty"`
	IncludeMetadata bool   `msgpack:"m,omitempty"`
	LimitCount      int    `msgpack:"l,omitempty"`
	ResumeToken     string `msgpack:"t,omitempty"`
	Close           bool   `msgpack:"c,omitempty"`
}

// ScanCmd builds the CmdScan command for a request.
func ScanCmd(req ScanRequest) kv.Cmd {
	return scanArgsCmd(ScanArgs{
		Start: req.Range.Start, End: req.Range.End, Prefix: req.Range.Prefix,
		PageSize: req.PageSize, IncludeValues: req.IncludeValues, IncludeMetadata: req.IncludeMetadata,
		LimitCount: req.LimitCount, ResumeToken: req.ResumeToken,
	})
}

// CloseScanCmd builds the CmdScan command that releases a session.
func CloseScanCmd(token string) kv.Cmd {
	return scanArgsCmd(ScanArgs{ResumeToken: token, Close: true})
}

func scanArgsCmd(a ScanArgs) kv.Cmd {
	b, err := msgpack.Marshal(&a)
	if err != nil {
		panic(fmt.Sprintf("store: encoding scan arguments cannot fail: %v", err))
	}
	return kv.Cmd{Op: kv.CmdScan, Args: [][]byte{b}}
}

// The CmdScan reply is
//
//	Array[ token: Bulk (Nil when done), items: Array[ item, ... ] ]
//
// and each item an Array whose length depends on the request:
//
//	[ key Bulk ]                                     keys only
//	[ key Bulk, value Bulk|Nil ]                     IncludeValues
//	[ key, value|Nil, kind Int, version Int, revision Int, ttl-ms Int,
//	  content-type Bulk|Nil, labels Array[k, v, ...]|Nil ]   IncludeMetadata
//
// ttl-ms is rounded up (a key about to expire never reads as "no TTL"); 0 =
// no expiry. Close answers Int 1 (closed) or 0 (no such session). Errors are
// statuses with the error's text as Message (scanErrorReply).
func scanReply(p ScanPage, values, meta bool) kv.Reply {
	items := make([]kv.Reply, len(p.Items))
	width := 1
	switch {
	case meta:
		width = 8
	case values:
		width = 2
	}
	for i, it := range p.Items {
		f := make([]kv.Reply, width)
		f[0] = kv.BulkReply([]byte(it.Key))
		if width > 1 {
			f[1] = kv.NilReply()
			if it.Value != nil {
				f[1] = kv.BulkReply(it.Value)
			}
		}
		if width > 2 {
			f[2] = kv.IntReply(int64(it.Kind))
			f[3] = kv.IntReply(int64(it.Version))
			f[4] = kv.IntReply(int64(it.Revision))
			f[5] = kv.IntReply(int64((it.TTL + time.Millisecond - 1) / time.Millisecond))
			f[6], f[7] = kv.NilReply(), kv.NilReply()
			if it.Meta != nil {
				if it.Meta.ContentType != "" {
					f[6] = kv.BulkReply([]byte(it.Meta.ContentType))
				}
				if len(it.Meta.Labels) > 0 {
					f[7] = labelsReply(it.Meta.Labels)
				}
			}
		}
		items[i] = kv.ArrayReply(f)
	}
	tok := kv.NilReply()
	if p.ResumeToken != "" {
		tok = kv.BulkReply([]byte(p.ResumeToken))
	}
	return kv.ArrayReply([]kv.Reply{tok, kv.ArrayReply(items)})
}

func labelsReply(labels map[string]string) kv.Reply {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys) // deterministic replies
	a := make([]kv.Reply, 0, 2*len(keys))
	for _, k := range keys {
		a = append(a, kv.BulkReply([]byte(k)), kv.BulkReply([]byte(labels[k])))
	}
	return kv.ArrayReply(a)
}

// DecodeScanReply decodes a successful CmdScan page reply. Items carry what
// the reply carries: Value only for IncludeValues, Kind, Version, Revision,
// TTL (in whole milliseconds) and Meta only for IncludeMetadata.
func DecodeScanReply(r kv.Reply) (ScanPage, error) {
	bad := func(what string) (ScanPage, error) {
		return ScanPage{}, fmt.Errorf("store: malformed scan reply: %s", what)
	}
	if r.Type != kv.ReplyArray || len(r.Array) != 2 || r.Array[1].Type != kv.ReplyArray {
		return bad("not [token, items]")
	}
	var p ScanPage
	switch tok := r.Array[0]; tok.Type {
	case kv.ReplyNil:
	case kv.ReplyBulk:
		if len(tok.Bulk) == 0 {
			return bad("empty token")
		}
		p.ResumeToken = string(tok.Bulk)
	default:
		return bad("token is neither Bulk nor Nil")
	}
	p.Items = make([]ScanItem, len(r.Array[1].Array))
	for i, ir := range r.Array[1].Array {
		f := ir.Array
		if ir.Type != kv.ReplyArray || (len(f) != 1 && len(f) != 2 && len(f) != 8) || f[0].Type != kv.ReplyBulk {
			return bad(fmt.Sprintf("item %d", i))
		}
		it := ScanItem{Key: string(f[0].Bulk)}
		if len(f) > 1 && f[1].Type == kv.ReplyBulk {
			it.Value = f[1].Bulk
			if it.Value == nil {
				it.Value = []byte{}
			}
		}
		if len(f) == 8 {
			for _, x := range f[2:6] {
				if x.Type != kv.ReplyInt || x.Int < 0 {
					return bad(fmt.Sprintf("item %d metadata", i))
				}
			}
			it.Kind, it.Version, it.Revision = ValueKind(f[2].Int), uint64(f[3].Int), uint64(f[4].Int)
			it.TTL = time.Duration(f[5].Int) * time.Millisecond
			var m Metadata
			if f[6].Type == kv.ReplyBulk {
				m.ContentType = string(f[6].Bulk)
			}
			if f[7].Type == kv.ReplyArray {
				if len(f[7].Array)%2 != 0 {
					return bad(fmt.Sprintf("item %d labels", i))
				}
				m.Labels = make(map[string]string, len(f[7].Array)/2)
				for j := 0; j < len(f[7].Array); j += 2 {
					m.Labels[string(f[7].Array[j].Bulk)] = string(f[7].Array[j+1].Bulk)
				}
			}
			if m.ContentType != "" || m.Labels != nil {
				it.Meta = &m
			}
		}
		p.Items[i] = it
	}
	return p, nil
}

// scanErrorReply maps a scan error to its status; the Message is the error's
// text, which starts with the sentinel's text so that a remote caller can
// recognise it (sdk.ErrScanSessionNotFound).
func scanErrorReply(err error) kv.Reply {
	st := kv.StatusBadRequest
	if errors.Is(err, ErrTooManyScans) {
		st = kv.StatusCapacityExceeded
	}
	return kv.Reply{Status: st, Message: err.Error()}
}

func execScan(s *Store, cmd kv.Cmd) kv.Reply {
	if len(cmd.Args) != 1 {
		return kv.BadRequest("SCAN takes one argument: the msgpack-encoded ScanArgs")
	}
	var a ScanArgs
	if err := mpsafe.Unmarshal(cmd.Args[0], &a); err != nil {
		return kv.BadRequest("SCAN: undecodable arguments: " + err.Error())
	}
	if a.Close {
		if s.CloseScan(a.ResumeToken) {
			return kv.IntReply(1)
		}
		return kv.IntReply(0)
	}
	req := ScanRequest{
		Range:    KeyRange{Start: a.Start, End: a.End, Prefix: a.Prefix},
		PageSize: a.PageSize, IncludeValues: a.IncludeValues, IncludeMetadata: a.IncludeMetadata,
		LimitCount: a.LimitCount, ResumeToken: a.ResumeToken,
	}
	p, err := s.ScanPage(req)
	if err != nil {
		return scanErrorReply(err)
	}
	return scanReply(p, a.IncludeValues, a.IncludeMetadata)
}

func init() {
	registerNode(kv.CmdScan, execScan)
}

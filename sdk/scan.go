package sdk

// Scan (R-DS-8), layer three: the client fans out to every owner, opens one
// node scan session on each, merges their pages in key order and enforces
// LimitCount as a hard total across owners. Layers one and two (the
// segment's sorted-key snapshot, the node's k-way merge behind a session)
// are in server/store/scan.go.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zaris-io/zaris/internal/mpsafe"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/store"
)

// KeyRange selects the keys of a scan: Start (inclusive), End (exclusive)
// and Prefix, each optional ("" = unbounded / any prefix). They combine: a
// key is in the range when it is ≥ Start, < End and starts with Prefix. Keys
// compare as bytes.
type KeyRange struct {
	Start, End, Prefix string
}

// ScanOptions say how a scan delivers its keys.
type ScanOptions struct {
	// PageSize is how many items one request to an owner returns (and how
	// many items Scanner.Page returns). Default 100; at most
	// store.MaxScanPageSize.
	PageSize int
	// IncludeValues returns the value of string keys. A collection key
	// (hash, list, …) has no byte value: its Value stays nil.
	IncludeValues bool
	// IncludeMetadata fills Version, Revision, TTL, Type, ContentType and
	// Labels.
	IncludeMetadata bool
	// ResumeToken continues an earlier scan: a ScanIterator.ResumeToken or a
	// ScanPage.ResumeToken. With a token, the KeyRange, IncludeValues,
	// IncludeMetadata and LimitCount of the scan that produced it apply and
	// the arguments are ignored; PageSize may change.
	ResumeToken string
	// LimitCount caps the items of the whole scan, across every owner and
	// across resumes (0 = no cap). It is a hard cap: never one item more.
	LimitCount int
}

// ScanItem is one key of a scan.
type ScanItem struct {
	Key string
	// Value is set with IncludeValues, for string keys ([]byte{} for an
	// empty value); nil otherwise.
	Value []byte
	// With IncludeMetadata: the per-key version, the per-segment revision of
	// the last write, the time to live left (0 = none, whole milliseconds),
	// the kind of value ("string", "hash", "list", "set", "zset",
	// "stream") and the key's optional content type and labels.
	Version     uint64
	Revision    uint64
	TTL         time.Duration
	Type        string
	ContentType string
	Labels      map[string]string
}

// ScanPage is one page of Scanner.Page: at most PageSize items in ascending
// key order, and the token that continues after them ("" when the scan is
// done).
type ScanPage struct {
	Items       []ScanItem
	ResumeToken string
}

// Done reports whether the scan has nothing more to return.
func (p ScanPage) Done() bool { return p.ResumeToken == "" }

// Scan errors, for errors.Is.
var (
	// ErrScanSessionNotFound: an owner no longer holds the session a resume
	// token continues — it expired after the owner's idle TTL (60 s by
	// default), or the owner restarted. Restart the scan.
	ErrScanSessionNotFound = store.ErrScanSessionNotFound
	// ErrScanTokenStale: a resume token was used twice, or an older one after
	// a newer one. Continue with the latest token or restart.
	ErrScanTokenStale = store.ErrScanTokenStale
	// ErrTooManyScans: an owner holds its maximum of open scan sessions.
	ErrTooManyScans = store.ErrTooManyScans
	// ErrBadScanToken: a ResumeToken that no scanner produced, or one
	// produced for other owners.
	ErrBadScanToken = errors.New("zaris: malformed scan resume token")
)

// Scanner runs scans over the owners of a keyspace.
//
// What a scan guarantees (the same family as Redis SCAN, not snapshot
// isolation): every key live in the range for the whole scan is returned
// exactly once; keys come in ascending byte order, across owners too; a key
// deleted or expired before its turn is not returned; tombstones and expired
// keys never are; a key created after an owner's session started may be
// missed. A resume token is valid while the owners keep the sessions it
// names (idle TTL 60 s by default); after that it fails with
// ErrScanSessionNotFound, never with a silently restarted scan.
type Scanner struct {
	owners []scanOwner
}

// Scan returns the client's scanner. An embedded or single-node client has
// one owner; a cluster client lists the nodes that own a segment in its
// current routing table (scanRouter) and the scanner fans out to each. A
// scan spans the owners of the table it started on: its resume token names
// them, and a token from before an ownership change that added or removed
// an owner fails with ErrBadScanToken (restart the scan).
func (c *Client) Scan() *Scanner {
	return &Scanner{owners: ownersOf(c)}
}

// NewScanner returns a scanner that fans out over several clients, each the
// owner of part of the keyspace (a client-side sharded deployment). A key
// held by more than one of them is returned once.
func NewScanner(clients ...*Client) *Scanner {
	s := &Scanner{}
	for _, c := range clients {
		s.owners = append(s.owners, ownersOf(c)...)
	}
	return s
}

// scanOwner is one node answering CmdScan for its slice of the keyspace.
type scanOwner interface {
	// scanOwnerID names the owner in resume tokens.
	scanOwnerID() string
	// doOn sends a node-level command to this owner.
	doOn(ctx context.Context, cmd kv.Cmd) (kv.Reply, error)
}

// scanRouter is implemented by a backend that knows several owners.
type scanRouter interface {
	scanOwners() []scanOwner
}

func ownersOf(c *Client) []scanOwner {
	if r, ok := c.be.(scanRouter); ok {
		return r.scanOwners()
	}
	return []scanOwner{clientOwner{c}}
}

// clientOwner is the one owner behind a single-connection client.
type clientOwner struct{ c *Client }

func (o clientOwner) scanOwnerID() string {
	cs := o.c.conn
	if cs.Inproc {
		return "inproc/" + cs.Store
	}
	return strings.Join(cs.Endpoints, ",") + "/" + cs.Store
}

func (o clientOwner) doOn(ctx context.Context, cmd kv.Cmd) (kv.Reply, error) {
	return o.c.Do(ctx, cmd)
}

// Scan starts (or, with opts.ResumeToken, continues) a scan. It does no I/O:
// the iterator fetches pages as Next needs them, and reports bad options or
// a bad token from Err after the first Next.
//
//	it := c.Scan().Scan(ctx, sdk.KeyRange{Prefix: "user:"}, sdk.ScanOptions{})
//	for it.Next(ctx) {
//		use(it.Item())
//	}
//	if err := it.Err(); err != nil { … }
func (s *Scanner) Scan(ctx context.Context, r KeyRange, opts ScanOptions) *ScanIterator {
	it := &ScanIterator{token: opts.ResumeToken}
	it.err = it.init(ctx, s, r, opts)
	return it
}

// Page returns one page of at most opts.PageSize items and the token of the
// next page ("" when done): the shape for a stateless caller (an HTTP
// handler handing the token to its client).
func (s *Scanner) Page(ctx context.Context, r KeyRange, opts ScanOptions) (ScanPage, error) {
	it := s.Scan(ctx, r, opts)
	var p ScanPage
	for len(p.Items) < it.pageSize && it.Next(ctx) {
		p.Items = append(p.Items, it.Item())
	}
	if err := it.Err(); err != nil {
		return ScanPage{}, err
	}
	p.ResumeToken = it.ResumeToken()
	it.releaseLeftovers(ctx) // the token re-reads them; their sessions are not named in it
	return p, nil
}

// All runs the scan to its end and returns every item. Mind the memory: use
// LimitCount or iterate with Scan for a large keyspace.
func (s *Scanner) All(ctx context.Context, r KeyRange, opts ScanOptions) ([]ScanItem, error) {
	it := s.Scan(ctx, r, opts)
	var items []ScanItem
	for it.Next(ctx) {
		items = append(items, it.Item())
	}
	return items, it.Err()
}

// ScanIterator walks a scan. It is not safe for concurrent use.
type ScanIterator struct {
	owners   []*ownerCursor
	rng      KeyRange
	pageSize int
	values   bool
	meta     bool
	limit    int // 0 = none
	emitted  int
	last     string // the last key returned (one key held by two owners surfaces once)
	hasLast  bool

	item    ScanItem
	err     error
	done    bool // Next returns false from now on
	closed  bool // the owners' sessions were released: no token
	started bool
	token   string // the token it started from
}

// ownerCursor is one owner's part of a scan: its main session, the page
// being consumed and, after a resume, the leftover of the page the previous
// iterator had fetched but not returned.
//
// The leftover is re-read rather than replayed: a resume token records it
// as the key interval (after, leftUpTo], which a short scan of its own reads
// again before the main session continues after leftUpTo.
type ownerCursor struct {
	o   scanOwner
	buf []ScanItem // fetched, not yet returned, ascending

	after    string // the last key consumed from this owner
	hasAfter bool

	left     bool // the leftover (after, leftUpTo] is still to be read
	leftUpTo string
	leftTok  string // its session, once opened ("" when it ended in one page)
	leftOpen bool

	mainOpen bool
	main     string // the main session's token; "" once it is done
}

func (o *ownerCursor) finished() bool {
	return o.mainOpen && o.main == "" && !o.left && len(o.buf) == 0
}

func (it *ScanIterator) init(ctx context.Context, s *Scanner, r KeyRange, opts ScanOptions) error {
	if ctx == nil {
		return errors.New("zaris: nil context")
	}
	switch {
	case opts.PageSize == 0:
		it.pageSize = store.DefaultScanPageSize
	case opts.PageSize < 0 || opts.PageSize > store.MaxScanPageSize:
		return fmt.Errorf("%w: scan page size %d out of 1..%d", ErrBadRequest, opts.PageSize, store.MaxScanPageSize)
	default:
		it.pageSize = opts.PageSize
	}
	if opts.LimitCount < 0 {
		return fmt.Errorf("%w: negative scan limit %d", ErrBadRequest, opts.LimitCount)
	}
	if len(s.owners) == 0 {
		return fmt.Errorf("%w: a scanner without owners", ErrBadRequest)
	}
	it.owners = make([]*ownerCursor, len(s.owners))
	for i, o := range s.owners {
		it.owners[i] = &ownerCursor{o: o}
	}
	if opts.ResumeToken == "" {
		it.rng, it.values, it.meta, it.limit = r, opts.IncludeValues, opts.IncludeMetadata, opts.LimitCount
		return nil
	}
	return it.decodeToken(opts.ResumeToken)
}

// Next advances to the next item. It returns false at the end of the scan,
// when LimitCount items were returned, or on an error (see Err).
func (it *ScanIterator) Next(ctx context.Context) bool {
	if it.err != nil || it.done {
		return false
	}
	if err := ctx.Err(); err != nil {
		it.err = err
		return false
	}
	it.started = true
	if it.limit > 0 && it.emitted >= it.limit {
		it.done = true
		return false
	}
	for {
		if err := it.fill(ctx); err != nil {
			it.err = err
			return false
		}
		var best *ownerCursor
		for _, o := range it.owners {
			if len(o.buf) > 0 && (best == nil || o.buf[0].Key < best.buf[0].Key) {
				best = o
			}
		}
		if best == nil {
			it.done = true
			return false
		}
		item := best.buf[0]
		best.buf[0] = ScanItem{}
		best.buf = best.buf[1:]
		best.after, best.hasAfter = item.Key, true
		if it.hasLast && item.Key == it.last {
			continue // the same key from a second owner (a move in flight)
		}
		it.item, it.last, it.hasLast = item, item.Key, true
		it.emitted++
		if it.limit > 0 && it.emitted >= it.limit {
			// The hard cap: nothing more will be returned, so release the
			// owners' sessions now (best effort: they expire anyway).
			_ = it.Close(ctx)
			it.done = true
		}
		return true
	}
}

// Item returns the current item (valid after Next returned true).
func (it *ScanIterator) Item() ScanItem { return it.item }

// Err returns the error that stopped the iteration, if any.
func (it *ScanIterator) Err() error { return it.err }

// ResumeToken returns a token that continues the scan right after the last
// item returned ("" when the scan is done). Pass it as
// ScanOptions.ResumeToken to a later Scan or Page, within the owners' idle
// TTL. After an error it still names that position, so a transient failure
// (a cancelled context, a dropped connection) can be retried from it; a
// request that reached an owner but whose answer was lost makes the retry
// fail with ErrScanTokenStale. Do not Close an iterator whose token you
// intend to use.
func (it *ScanIterator) ResumeToken() string {
	if !it.started {
		return it.token
	}
	if it.closed || (it.limit > 0 && it.emitted >= it.limit) {
		return ""
	}
	all := true
	for _, o := range it.owners {
		all = all && o.finished()
	}
	if all {
		return ""
	}
	return it.encodeToken()
}

// Close releases the owners' sessions of an iteration abandoned before its
// end. It is optional (sessions expire after the idle TTL) and safe to call
// more than once; the iterator returns nothing after it. To abandon a paged
// scan, Close an iterator made from its last token:
//
//	s.Scan(ctx, r, sdk.ScanOptions{ResumeToken: tok}).Close(ctx)
func (it *ScanIterator) Close(ctx context.Context) error {
	it.done, it.closed = true, true
	var first error
	for _, o := range it.owners {
		for _, tok := range []*string{&o.main, &o.leftTok} {
			if *tok == "" {
				continue
			}
			if _, err := o.o.doOn(ctx, store.CloseScanCmd(*tok)); err != nil && first == nil {
				first = err
			}
			*tok = ""
		}
	}
	return first
}

// releaseLeftovers closes the leftover sessions, which a token does not name.
func (it *ScanIterator) releaseLeftovers(ctx context.Context) {
	for _, o := range it.owners {
		if o.leftTok != "" {
			_, _ = o.o.doOn(ctx, store.CloseScanCmd(o.leftTok))
			o.leftTok, o.leftOpen = "", false // were it used again, it re-reads the leftover
		}
	}
}

// fill fetches a page for every owner whose buffer ran dry, in parallel when
// several do (the first round of a scan).
func (it *ScanIterator) fill(ctx context.Context) error {
	var need []*ownerCursor
	for _, o := range it.owners {
		if len(o.buf) == 0 && !o.finished() {
			need = append(need, o)
		}
	}
	switch len(need) {
	case 0:
		return nil
	case 1:
		return it.fillOwner(ctx, need[0])
	}
	errs := make([]error, len(need))
	var wg sync.WaitGroup
	for i, o := range need {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = it.fillOwner(ctx, o) // writes only o; reads the iterator's settings
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// fillOwner fetches pages from one owner until it has an item or is done:
// first the leftover, then the main session.
func (it *ScanIterator) fillOwner(ctx context.Context, o *ownerCursor) error {
	for len(o.buf) == 0 && !o.finished() {
		req := store.ScanRequest{PageSize: it.pageSize, IncludeValues: it.values, IncludeMetadata: it.meta}
		switch {
		case o.left && o.leftOpen:
			req.ResumeToken = o.leftTok
		case o.left:
			req.Range, req.LimitCount = it.leftoverRange(o), it.remaining()
		case !o.mainOpen:
			req.Range, req.LimitCount = it.storeRange(), it.remaining()
			if o.hasAfter { // a token from before the main session opened
				req.Range.Start = max(req.Range.Start, successor(o.after))
			}
		default:
			req.ResumeToken = o.main
		}
		p, err := it.fetch(ctx, o.o, req)
		if err != nil {
			return err
		}
		if o.left {
			o.leftOpen, o.leftTok = true, p.ResumeToken
			if p.Done() {
				o.left, o.leftOpen = false, false
			}
		} else {
			o.mainOpen, o.main = true, p.ResumeToken
		}
		o.buf = make([]ScanItem, len(p.Items))
		for i, item := range p.Items {
			o.buf[i] = it.convert(item)
		}
	}
	return nil
}

func (it *ScanIterator) remaining() int {
	if it.limit == 0 {
		return 0
	}
	return it.limit - it.emitted
}

func (it *ScanIterator) storeRange() store.KeyRange {
	return store.KeyRange{Start: it.rng.Start, End: it.rng.End, Prefix: it.rng.Prefix}
}

// successor is the least key greater than k.
func successor(k string) string { return k + "\x00" }

// leftoverRange is the scan range restricted to (after, leftUpTo].
func (it *ScanIterator) leftoverRange(o *ownerCursor) store.KeyRange {
	r := it.storeRange()
	if o.hasAfter {
		r.Start = max(r.Start, successor(o.after))
	}
	if end := successor(o.leftUpTo); r.End == "" || end < r.End {
		r.End = end
	}
	return r
}

func (it *ScanIterator) fetch(ctx context.Context, o scanOwner, req store.ScanRequest) (store.ScanPage, error) {
	r, err := o.doOn(ctx, store.ScanCmd(req))
	if err != nil {
		return store.ScanPage{}, fmt.Errorf("zaris: scan of %s: %w", o.scanOwnerID(), err)
	}
	if !r.OK() {
		return store.ScanPage{}, fmt.Errorf("zaris: scan of %s: %w", o.scanOwnerID(), scanError(r))
	}
	p, err := store.DecodeScanReply(r)
	if err != nil {
		return store.ScanPage{}, fmt.Errorf("zaris: scan of %s: %w", o.scanOwnerID(), err)
	}
	return p, nil
}

// scanError turns a refused scan into an error that matches both the scan
// sentinel (recognised by the message, which is all the wire carries) and
// the status's.
func scanError(r kv.Reply) error {
	for _, sentinel := range []error{store.ErrScanSessionNotFound, store.ErrScanTokenStale, store.ErrTooManyScans, store.ErrBadScanRequest} {
		if text := sentinel.Error(); strings.HasPrefix(r.Message, text) {
			return fmt.Errorf("%w%s [%w]", sentinel, strings.TrimPrefix(r.Message, text), r.Status.Err())
		}
	}
	return r.Err()
}

func (it *ScanIterator) convert(s store.ScanItem) ScanItem {
	out := ScanItem{Key: s.Key, Value: s.Value}
	if it.meta {
		out.Version, out.Revision, out.TTL, out.Type = s.Version, s.Revision, s.TTL, s.Kind.String()
		if s.Meta != nil {
			out.ContentType, out.Labels = s.Meta.ContentType, s.Meta.Labels
		}
	}
	return out
}

// --- resume tokens ---

// scanToken is the client resume token: the scan's parameters, what was
// returned so far, and one entry per owner. Encoded as "zs1." followed by
// the unpadded base64url of its msgpack form.
type scanToken struct {
	Start   string       `msgpack:"s,omitempty"`
	End     string       `msgpack:"e,omitempty"`
	Prefix  string       `msgpack:"p,omitempty"`
	Values  bool         `msgpack:"v,omitempty"`
	Meta    bool         `msgpack:"m,omitempty"`
	Limit   int          `msgpack:"l,omitempty"`
	Emitted int          `msgpack:"n,omitempty"`
	Last    string       `msgpack:"k,omitempty"`
	HasLast bool         `msgpack:"h,omitempty"`
	Owners  []ownerToken `msgpack:"o"`
}

// ownerToken is one owner's position: the last key consumed from it, the
// leftover interval (After, UpTo] to re-read, and its main session's token.
type ownerToken struct {
	ID       string `msgpack:"i"`
	After    string `msgpack:"a,omitempty"`
	HasAfter bool   `msgpack:"b,omitempty"`
	Left     bool   `msgpack:"l,omitempty"`
	UpTo     string `msgpack:"u,omitempty"`
	Open     bool   `msgpack:"o,omitempty"`
	Main     string `msgpack:"m,omitempty"`
}

const scanTokenPrefix = "zs1."

func (it *ScanIterator) encodeToken() string {
	t := scanToken{
		Start: it.rng.Start, End: it.rng.End, Prefix: it.rng.Prefix, Values: it.values, Meta: it.meta,
		Limit: it.limit, Emitted: it.emitted, Last: it.last, HasLast: it.hasLast,
		Owners: make([]ownerToken, len(it.owners)),
	}
	for i, o := range it.owners {
		ot := ownerToken{ID: o.o.scanOwnerID(), After: o.after, HasAfter: o.hasAfter, Open: o.mainOpen, Main: o.main}
		switch {
		case o.left:
			ot.Left, ot.UpTo = true, o.leftUpTo
		case len(o.buf) > 0:
			ot.Left, ot.UpTo = true, o.buf[len(o.buf)-1].Key
		}
		t.Owners[i] = ot
	}
	b, err := msgpack.Marshal(&t)
	if err != nil {
		panic(fmt.Sprintf("zaris: encoding a scan token cannot fail: %v", err))
	}
	return scanTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

func (it *ScanIterator) decodeToken(tok string) error {
	body, ok := strings.CutPrefix(tok, scanTokenPrefix)
	if !ok {
		return fmt.Errorf("%w: unknown format", ErrBadScanToken)
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadScanToken, err)
	}
	var t scanToken
	if err := mpsafe.Unmarshal(b, &t); err != nil {
		return fmt.Errorf("%w: %v", ErrBadScanToken, err)
	}
	if t.Limit < 0 || t.Emitted < 0 || (t.Limit > 0 && t.Emitted > t.Limit) {
		return fmt.Errorf("%w: bad counts", ErrBadScanToken)
	}
	if len(t.Owners) != len(it.owners) {
		return fmt.Errorf("%w: made for %d owners, this scanner has %d", ErrBadScanToken, len(t.Owners), len(it.owners))
	}
	for i, ot := range t.Owners {
		o := it.owners[i]
		if id := o.o.scanOwnerID(); ot.ID != id {
			return fmt.Errorf("%w: owner %d is %q, the token names %q", ErrBadScanToken, i, id, ot.ID)
		}
		o.after, o.hasAfter, o.left, o.leftUpTo, o.mainOpen, o.main = ot.After, ot.HasAfter, ot.Left, ot.UpTo, ot.Open, ot.Main
	}
	it.rng = KeyRange{Start: t.Start, End: t.End, Prefix: t.Prefix}
	it.values, it.meta, it.limit, it.emitted = t.Values, t.Meta, t.Limit, t.Emitted
	it.last, it.hasLast = t.Last, t.HasLast
	return nil
}

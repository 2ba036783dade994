package resp

import (
	"bytes"
	"errors"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/panics"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/server/store"
)

// Client-side caching (issue #14 item 6): Redis 6+'s CLIENT TRACKING, with
// its replies, errors and invalidation messages, over a whole cluster.
//
// Default mode: each read-only command of a tracking client remembers its
// keys in the node's tracking table (key → client ids; bounded by
// tracking-table-max-keys: past it random keys are evicted and their
// clients told, as Redis does). BCAST mode keeps no table: a client
// subscribes to key prefixes. OPTIN/OPTOUT with CLIENT CACHING, NOLOOP and
// REDIRECT (a RESP2 client's invalidations go to a connection subscribed
// in RESP2 as "message __redis__:invalidate [keys]") follow Redis 7.0.
//
// Where changes come from: while anyone in the cluster tracks, every node
// follows its own store with a watch (the same source as keyspace
// notifications) and, for each change of a key it owns — whoever made it:
// RESP, the native SDK, HTTP, expiry, eviction —, invalidates the key in its
// own tracking table and prefixes, and sends the key over the cluster bus
// (server/bus, KindInvalidate) to every member that announced tracking
// clients, whose own table and prefixes decide whom to tell. A member
// announces its interest as the bus setting "tracking@<node id>", so a node
// with no tracking client anywhere runs no watch and sends nothing.
//
// Delivery is at most once, as Redis's; what may be lost is turned into a
// flush (a null invalidation: the client drops its whole cache) so that no
// stale value is served for ever: when a peer's bus link to this node ends,
// when the node's watch falls behind, when a link had to drop queued
// invalidations (the peer receives a flush first when it is back), and when
// a partition changes hands on this node (a write just before the cut-over
// may have been judged by neither owner). FLUSHALL/FLUSHDB send one null
// invalidation, as Redis does.

// trackChannel is the pub/sub channel of RESP2 redirected invalidations.
const trackChannel = "__redis__:invalidate"

// trackBusSetting prefixes the bus setting a node announces its interest
// with: "tracking@<node id>" = "1" while it has tracking clients.
const trackBusSetting = "tracking@"

// trackWatchBuffer: events the invalidation watch may fall behind by before
// it ends (the node then flushes every tracking client and watches again).
const trackWatchBuffer = 1 << 16

// trackOwnerCheck: how often the watch loop looks for partitions that
// changed hands on this node.
const trackOwnerCheck = 100 * time.Millisecond

// trackMaxWindows bounds the NOLOOP write windows a connection keeps. A
// window stays until the invalidator has judged its changes (tracker.
// judged); the bound only matters when the invalidator lags that many of
// the connection's writes behind, and then costs extra invalidations of
// the client's own writes, never a missing one. At 64 a starved
// invalidator (a CPU hog) fell behind the windows of a pipelined client
// and sent it its own writes back.
const trackMaxWindows = 4096

// tracker is the node's client-side-caching state.
type tracker struct {
	maxKeys atomic.Int64 // tracking-table-max-keys (0: unbounded)

	mu       sync.Mutex                    // guards the fields below and every conn's trackConn guarded fields
	conns    map[int64]*conn               // connections with tracking on, by id
	keys     map[string]map[int64]uint64   // default mode: key → ids of the clients that read it → since (readRevs)
	items    int                           // (key, client) pairs in keys, stale ids included (Redis's count)
	prefixes map[string]map[*conn]struct{} // BCAST prefix → clients
	judged   []uint64                      // per segment: the highest revision the invalidator has judged

	peers atomic.Pointer[map[string]bool] // members with tracking clients (copy on write)

	lmu       sync.Mutex // guards the watch's life and the announced interest
	announced bool
	running   bool
	stop      chan struct{}
	done      chan struct{}
	closed    bool
}

// trackConn is a connection's tracking state.
type trackConn struct {
	active  bool // reader-owned: tracking is on (mirrors on)
	caching bool // reader-owned: CLIENT CACHING YES/NO applies to the next command
	held    bool // reader-owned: hold() was called since the last flush

	on          atomic.Bool // tracking on (read by INFO, CLIENT LIST)
	gone        atomic.Bool // the connection closed: a redirect to it is broken
	brokenRedir atomic.Bool

	// Written by the reader under tracker.mu, read by others under it.
	bcast, optin, optout, noloop bool
	redirID                      int64
	redir                        *conn
	prefixes                     []string // sorted
	windows                      []trackWindow

	// readRevs, reader-owned: for a NOLOOP client's read, the revision of
	// each key's segment before the read ran, by key position. Its own
	// change at or below it was applied before the read, which saw it: the
	// invalidator, which lags the writes, must then keep the key tracked
	// for the client (it sends no message for the client's own change, and
	// dropping the registration the read made would leave the client's
	// cache stale at the next change by another client).
	readRevs []uint64

	// Invalidations for a connection executing commands wait until its
	// replies are flushed (Redis sends a client's own invalidations after
	// the reply of the command that caused them).
	smu     sync.Mutex
	busy    bool
	pending []byte
}

// trackWindow: segment revisions (lo, hi] written while a NOLOOP client's
// command ran: the changes of its keys in that range are its own.
type trackWindow struct {
	seg    uint16
	lo, hi uint64
}

func init() {
	cl := commandTable["client"]
	flags := flagNoScript | flagLoading | flagStale
	for _, sub := range []*command{
		{name: "tracking", arity: -3, flags: flags, since: "6.0.0", summary: "Controls server-assisted client-side caching for the connection (ON|OFF, REDIRECT, PREFIX, BCAST, OPTIN, OPTOUT, NOLOOP); invalidations come from every node of the cluster.", run: cmdClientTracking},
		{name: "caching", arity: 3, flags: flags, since: "6.0.0", summary: "Instructs the server whether to track the keys in the next request (OPTIN/OPTOUT).", run: cmdClientCaching},
		{name: "getredir", arity: 2, flags: flags, since: "6.0.0", summary: "Returns the client ID to which the connection's tracking notifications are redirected.", run: cmdClientGetRedir},
		{name: "trackinginfo", arity: 2, flags: flags, since: "6.2.0", summary: "Returns information about server-assisted client-side caching for the connection.", run: cmdClientTrackingInfo},
	} {
		sub.parent = cl
		sub.name = "client|" + sub.name
		sub.group = cl.group
		cl.subs = append(cl.subs, sub)
	}
}

// trackOptions is a parsed CLIENT TRACKING.
type trackOptions struct {
	on                           bool
	redirect                     int64 // 0: none
	bcast, optin, optout, noloop bool
	prefixes                     []string
}

// parseTrackingArgs parses CLIENT TRACKING's arguments (ON|OFF and the
// options: the command's args[2:]) with Redis 7.0's checks in Redis's
// order: the option loop first — a syntax error, a second REDIRECT ("A
// client can only redirect to a single other client"), a REDIRECT that is
// not an integer or names no open connection (exists) — then ON|OFF. It
// returns Redis's error text, or "".
func parseTrackingArgs(args [][]byte, exists func(id int64) bool) (trackOptions, string) {
	var o trackOptions
	for j := 1; j < len(args); j++ {
		more := len(args) - 1 - j
		switch a := args[j]; {
		case eq(a, "redirect") && more > 0:
			j++
			if o.redirect != 0 {
				return o, "ERR A client can only redirect to a single other client"
			}
			n, ok := parseInt(args[j])
			if !ok {
				return o, msgNotInteger
			}
			if !exists(n) {
				return o, "ERR The client ID you want redirect to does not exist"
			}
			o.redirect = n
		case eq(a, "bcast"):
			o.bcast = true
		case eq(a, "optin"):
			o.optin = true
		case eq(a, "optout"):
			o.optout = true
		case eq(a, "noloop"):
			o.noloop = true
		case eq(a, "prefix") && more > 0:
			j++
			o.prefixes = append(o.prefixes, string(args[j]))
		default:
			return o, msgSyntax
		}
	}
	switch {
	case eq(args[0], "on"):
		o.on = true
	case eq(args[0], "off"):
	default:
		return o, msgSyntax
	}
	return o, ""
}

// prefixOverlap reports whether one of a, b is a prefix of the other
// (Redis's stringCheckPrefix).
func prefixOverlap(a, b string) bool {
	n := min(len(a), len(b))
	return a[:n] == b[:n]
}

func cmdClientTracking(c *conn, args [][]byte) {
	o, msg := parseTrackingArgs(args[2:], func(id int64) bool { return id > 0 && c.srv.clientByID(id) != nil })
	if msg != "" {
		c.err(msg)
		return
	}
	var redir *conn
	if o.redirect != 0 {
		if redir = c.srv.clientByID(o.redirect); redir == nil {
			c.err("ERR The client ID you want redirect to does not exist") // it closed meanwhile
			return
		}
	}
	if !o.on {
		c.srv.trackDisable(c)
		c.out.OK()
		return
	}
	t := &c.trk
	switch {
	case !o.bcast && len(o.prefixes) > 0:
		c.err("ERR PREFIX option requires BCAST mode to be enabled")
		return
	case t.active && t.bcast != o.bcast:
		c.err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
		return
	case o.bcast && (o.optin || o.optout):
		c.err("ERR OPTIN and OPTOUT are not compatible with BCAST")
		return
	case o.optin && o.optout:
		c.err("ERR You can't specify both OPTIN mode and OPTOUT mode")
		return
	case t.active && (o.optin && t.optout || o.optout && t.optin):
		c.err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
		return
	}
	if o.bcast {
		if msg := c.prefixCollision(o.prefixes); msg != "" {
			c.err(msg)
			return
		}
	}
	c.srv.trackEnable(c, o, redir)
	c.out.OK()
}

// prefixCollision is Redis's checkPrefixCollisionsOrReply: a new prefix may
// not overlap one the client has, nor another new one. (Redis 7.0 answers
// an overlap among new prefixes after the first with an error and then
// enables tracking and answers OK as well — two replies to one command;
// Zaris answers the error alone and changes nothing.)
func (c *conn) prefixCollision(prefixes []string) string {
	for i, p := range prefixes {
		for _, have := range c.trk.prefixes {
			if prefixOverlap(have, p) {
				return "ERR Prefix '" + cString(p) + "' overlaps with an existing prefix '" + cString(have) + "'. Prefixes for a single client must not overlap."
			}
		}
		for _, q := range prefixes[i+1:] {
			if prefixOverlap(p, q) {
				return "ERR Prefix '" + cString(p) + "' overlaps with another provided prefix '" + cString(q) + "'. Prefixes for a single client must not overlap."
			}
		}
	}
	return ""
}

func cmdClientCaching(c *conn, args [][]byte) {
	t := &c.trk
	if !t.active {
		c.err("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch {
	case eq(args[2], "yes"):
		if !t.optin {
			c.err("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
	case eq(args[2], "no"):
		if !t.optout {
			c.err("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
	default:
		c.err(msgSyntax)
		return
	}
	t.caching = true
	c.out.OK()
}

func cmdClientGetRedir(c *conn, _ [][]byte) {
	if !c.trk.active {
		c.out.Int(-1)
		return
	}
	c.out.Int(c.trk.redirID)
}

func cmdClientTrackingInfo(c *conn, _ [][]byte) {
	t := &c.trk
	c.out.Map(3)
	c.out.BulkString("flags")
	flags := []string{"off"}
	if t.active {
		flags[0] = "on"
	}
	if t.active && t.bcast {
		flags = append(flags, "bcast")
	}
	if t.active && t.optin {
		flags = append(flags, "optin")
		if t.caching {
			flags = append(flags, "caching-yes")
		}
	}
	if t.active && t.optout {
		flags = append(flags, "optout")
		if t.caching {
			flags = append(flags, "caching-no")
		}
	}
	if t.active && t.noloop {
		flags = append(flags, "noloop")
	}
	if t.active && t.brokenRedir.Load() {
		flags = append(flags, "broken_redirect")
	}
	c.out.Set(len(flags))
	for _, f := range flags {
		c.out.BulkString(f)
	}
	c.out.BulkString("redirect")
	if t.active {
		c.out.Int(t.redirID)
	} else {
		c.out.Int(-1)
	}
	c.out.BulkString("prefixes")
	c.srv.trk.mu.Lock()
	prefixes := slices.Clone(t.prefixes)
	c.srv.trk.mu.Unlock()
	c.out.Array(len(prefixes))
	for _, p := range prefixes {
		c.out.BulkString(p)
	}
}

// clientByID finds an open connection of this node.
func (s *Server) clientByID(id int64) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.clients {
		if c.id == id {
			return c
		}
	}
	return nil
}

// --- enabling and disabling ---

func (s *Server) trackEnable(c *conn, o trackOptions, redir *conn) {
	tr := &s.trk
	t := &c.trk
	tr.mu.Lock()
	if tr.conns == nil {
		tr.conns = map[int64]*conn{}
		tr.keys = map[string]map[int64]uint64{}
		tr.prefixes = map[string]map[*conn]struct{}{}
	}
	first := len(tr.conns) == 0
	tr.conns[c.id] = c
	t.active = true
	t.on.Store(true)
	t.brokenRedir.Store(false)
	t.optin, t.optout, t.noloop = o.optin, o.optout, o.noloop
	t.redirID, t.redir = 0, nil
	if redir != nil {
		t.redirID, t.redir = o.redirect, redir
	}
	if o.bcast {
		t.bcast = true
		add := o.prefixes
		if len(add) == 0 {
			add = []string{""}
		}
		for _, p := range add {
			if !slices.Contains(t.prefixes, p) {
				t.prefixes = append(t.prefixes, p)
			}
			if tr.prefixes[p] == nil {
				tr.prefixes[p] = map[*conn]struct{}{}
			}
			tr.prefixes[p][c] = struct{}{}
		}
		slices.Sort(t.prefixes)
	}
	tr.mu.Unlock()
	if first {
		s.trackInterest()
	}
}

// trackDisable turns tracking off for c (CLIENT TRACKING OFF, RESET, close).
// Its ids stay in the table until their keys are invalidated, as in Redis.
func (s *Server) trackDisable(c *conn) {
	tr := &s.trk
	t := &c.trk
	tr.mu.Lock()
	if !t.on.Load() {
		tr.mu.Unlock()
		return
	}
	for _, p := range t.prefixes {
		delete(tr.prefixes[p], c)
		if len(tr.prefixes[p]) == 0 {
			delete(tr.prefixes, p)
		}
	}
	delete(tr.conns, c.id)
	last := len(tr.conns) == 0
	t.active, t.caching = false, false
	t.on.Store(false)
	t.brokenRedir.Store(false)
	t.bcast, t.optin, t.optout, t.noloop = false, false, false, false
	t.prefixes, t.windows = nil, nil
	tr.mu.Unlock()
	if last {
		s.trackInterest()
	}
}

// trackForget is called when c closes: a redirect to it is now broken.
func (s *Server) trackForget(c *conn) {
	c.trk.gone.Store(true)
	s.trackDisable(c)
}

// trackReset: RESET disables tracking.
func (c *conn) trackReset() { c.srv.trackDisable(c) }

// --- the reader's side ---

// trackBefore runs before a command of a tracking client: its
// invalidations wait for its replies, and a NOLOOP client's write records
// the revisions of the segments it may write, so that the changes it makes
// are recognised as its own.
func (c *conn) trackBefore(cmd *command, args [][]byte) []trackWindow {
	t := &c.trk
	t.smu.Lock()
	t.busy = true
	t.smu.Unlock()
	t.held = true
	t.readRevs = t.readRevs[:0]
	if !t.noloop || c.tx != nil { // inside EXEC the segments are locked: EXEC itself recorded them
		return nil
	}
	if cmd.flags&flagReadonly != 0 && !isScriptCmd(cmd) {
		for _, i := range cmd.keyIndexes(args) {
			seg := placement.SegmentOf(view(args[i]), c.srv.segs)
			t.readRevs = append(t.readRevs, c.srv.store.Segment(seg).Revision())
		}
		return nil
	}
	var segs []uint16
	switch {
	case cmd.name == "exec" && c.txn.multi:
		segs = c.txn.segs
	case cmd.flags&flagWrite != 0 || isScriptCmd(cmd):
		for _, i := range cmd.keyIndexes(args) {
			if seg := placement.SegmentOf(view(args[i]), c.srv.segs); !slices.Contains(segs, seg) {
				segs = append(segs, seg)
			}
		}
	}
	if len(segs) == 0 {
		return nil
	}
	w := make([]trackWindow, len(segs))
	for i, seg := range segs {
		w[i] = trackWindow{seg: seg, lo: c.srv.store.Segment(seg).Revision(), hi: windowOpen}
	}
	// The windows are open from now on: the store may report the
	// command's change to the tracker before trackAfter runs, and that
	// change must already be known as this client's own.
	c.srv.trk.mu.Lock()
	t.windows = pruneWindows(append(t.windows, w...), c.srv.trk.judged, trackMaxWindows)
	c.srv.trk.mu.Unlock()
	return w
}

// pruneWindows drops the closed windows whose changes the invalidator has
// already judged (judged: per segment, the highest revision it has seen),
// then, past max, the oldest ones.
func pruneWindows(ws []trackWindow, judged []uint64, max int) []trackWindow {
	ws = slices.DeleteFunc(ws, func(w trackWindow) bool {
		return w.hi != windowOpen && int(w.seg) < len(judged) && w.hi <= judged[w.seg]
	})
	if n := len(ws) - max; n > 0 {
		ws = append(ws[:0], ws[n:]...)
	}
	return ws
}

// windowOpen is the upper bound of a NOLOOP window while its command runs.
const windowOpen = ^uint64(0)

// trackBlocking runs when a command blocks: its open NOLOOP windows go (open
// for the whole wait, they would claim other clients' writes as its own),
// so a blocked command's own change comes back to it: one invalidation too
// many, never one missing.
func (c *conn) trackBlocking() {
	if !c.trk.noloop {
		return
	}
	c.srv.trk.mu.Lock()
	c.trk.windows = slices.DeleteFunc(c.trk.windows, func(w trackWindow) bool { return w.hi == windowOpen })
	c.srv.trk.mu.Unlock()
}

func isScriptCmd(cmd *command) bool { return cmd.group == "scripting" && cmd.keys != nil }

// trackAfter runs after a command of a tracking client: it closes the
// NOLOOP windows and remembers the keys a read-only command read.
func (c *conn) trackAfter(cmd *command, args [][]byte, windows []trackWindow) {
	t := &c.trk
	if len(windows) > 0 {
		// Close the command's open windows at the revisions it reached; a
		// command that wrote nothing, or that blocked (its window would
		// span the wait and claim other clients' writes), leaves none.
		c.srv.trk.mu.Lock()
		for _, w := range windows {
			i := slices.IndexFunc(t.windows, func(o trackWindow) bool { return o.seg == w.seg && o.lo == w.lo && o.hi == windowOpen })
			if i < 0 {
				continue // trimmed meanwhile (trackMaxWindows) or reset
			}
			if hi := c.srv.store.Segment(w.seg).Revision(); hi > w.lo && !c.wasBlocked {
				t.windows[i].hi = hi
			} else {
				t.windows = slices.Delete(t.windows, i, i+1)
			}
		}
		c.srv.trk.mu.Unlock()
	}
	if !t.active {
		return
	}
	if t.bcast || c.status == kv.StatusMoved || cmd.flags&flagReadonly == 0 && !isScriptCmd(cmd) {
		return
	}
	if t.optin && !t.caching || t.optout && t.caching {
		return
	}
	idx := cmd.keyIndexes(args)
	if len(idx) == 0 {
		return
	}
	keys := make([]string, len(idx))
	for i, j := range idx {
		keys[i] = string(args[j])
	}
	var since []uint64
	if len(t.readRevs) == len(keys) {
		since = t.readRevs
	}
	c.srv.trackRemember(c, keys, since)
}

// trackCommandDone runs after each top-level command of a tracking client:
// CLIENT CACHING applies to the next command only (outside MULTI, and
// unless the command was another CLIENT subcommand, as in Redis).
func (c *conn) trackCommandDone(args [][]byte) {
	if !c.txn.multi && !eq(args[0], "client") {
		c.trk.caching = false
	}
}

// trackFlushed runs after the reader flushed its replies: the
// invalidations held meanwhile follow them.
func (c *conn) trackFlushed() {
	t := &c.trk
	t.held = false
	t.smu.Lock()
	t.busy = false
	p := t.pending
	t.pending = nil
	if len(p) > 0 {
		c.send(p)
	}
	t.smu.Unlock()
}

// deliver queues an invalidation message for c: behind its pending replies
// when it is executing commands.
func (c *conn) deliver(b []byte) {
	t := &c.trk
	t.smu.Lock()
	if t.busy {
		t.pending = append(t.pending, b...)
	} else {
		c.send(b)
	}
	t.smu.Unlock()
}

// trackRemember records that c read keys, evicting keys past
// tracking-table-max-keys (their clients are told, as Redis does).
func (s *Server) trackRemember(c *conn, keys []string, since []uint64) {
	tr := &s.trk
	var out outbox
	tr.mu.Lock()
	for i, k := range keys {
		ids := tr.keys[k]
		if ids == nil {
			ids = map[int64]uint64{}
			tr.keys[k] = ids
		}
		old, ok := ids[c.id]
		if !ok {
			tr.items++
		}
		if since != nil {
			old = max(old, since[i])
		}
		ids[c.id] = old
	}
	s.trimLocked(&out)
	tr.mu.Unlock()
	out.send()
}

// trimLocked evicts keys past tracking-table-max-keys, telling their
// clients.
func (s *Server) trimLocked(out *outbox) {
	tr := &s.trk
	max := tr.maxKeys.Load()
	if max <= 0 {
		return
	}
	for k := range tr.keys { // Go's map order: a random key, as Redis's random walk
		if int64(len(tr.keys)) <= max {
			break
		}
		s.invalidateKeyLocked(out, k, nil)
	}
}

// trackSetMaxKeys applies CONFIG SET tracking-table-max-keys: a smaller
// bound evicts at once.
func (s *Server) trackSetMaxKeys(n int64) {
	tr := &s.trk
	tr.maxKeys.Store(n)
	var out outbox
	tr.mu.Lock()
	s.trimLocked(&out)
	tr.mu.Unlock()
	out.send()
}

// --- invalidation ---

// change is one key changed on this node (its segment revision tells a
// NOLOOP client's own write), or from a peer (seg < 0).
type change struct {
	key string
	seg int
	rev uint64
}

// outbox gathers the messages of one pass, sent once tracker.mu is
// released.
type outbox struct {
	msgs []outMsg
}

type outMsg struct {
	to *conn
	b  []byte
}

func (o *outbox) add(to *conn, b []byte) { o.msgs = append(o.msgs, outMsg{to, b}) }

func (o *outbox) send() {
	for _, m := range o.msgs {
		m.to.deliver(m.b)
	}
}

// own reports whether the change was made by c's own command (NOLOOP);
// windows a later revision of their segment has passed are dropped.
func (t *trackConn) own(ch change) bool {
	if ch.seg < 0 {
		return false
	}
	mine := false
	keep := t.windows[:0]
	for _, w := range t.windows {
		if int(w.seg) == ch.seg {
			if ch.rev > w.lo && ch.rev <= w.hi {
				mine = true
			}
			if ch.rev > w.hi {
				continue // past it: no later change of this segment is in it
			}
		}
		keep = append(keep, w)
	}
	t.windows = keep
	return mine
}

// invalidateKeyLocked tells the clients that read key (default mode) and
// forgets it; ch, when known, is the change (for NOLOOP).
func (s *Server) invalidateKeyLocked(out *outbox, key string, ch *change) {
	tr := &s.trk
	ids, ok := tr.keys[key]
	if !ok {
		return
	}
	for id, since := range ids {
		c := tr.conns[id]
		switch {
		case c == nil || c.trk.bcast:
		case c.trk.noloop && ch != nil && c.trk.own(*ch):
			if ch.rev <= since {
				continue // its own change, applied before its latest read of the key: still tracked (readRevs)
			}
		default:
			s.messageLocked(out, c, []string{key}, false)
		}
		delete(ids, id)
		tr.items--
	}
	if len(ids) == 0 {
		delete(tr.keys, key)
	}
}

// invalidate handles a batch of changes: the default table, then the BCAST
// prefixes (one message per client and prefix with the prefix's keys,
// sorted and distinct, as Redis sends them once per event-loop turn).
func (s *Server) invalidate(changes []change) {
	tr := &s.trk
	var out outbox
	tr.mu.Lock()
	if tr.judged == nil {
		tr.judged = make([]uint64, s.segs)
	}
	for _, ch := range changes {
		if ch.seg >= 0 && ch.seg < len(tr.judged) {
			tr.judged[ch.seg] = max(tr.judged[ch.seg], ch.rev)
		}
	}
	if len(tr.conns) == 0 {
		// Nobody tracks here: only forget the keys (ids of closed clients).
		for _, ch := range changes {
			if ids, ok := tr.keys[ch.key]; ok {
				tr.items -= len(ids)
				delete(tr.keys, ch.key)
			}
		}
		tr.mu.Unlock()
		return
	}
	for i := range changes {
		s.invalidateKeyLocked(&out, changes[i].key, &changes[i])
	}
	if len(tr.prefixes) > 0 {
		type target struct {
			c      *conn
			prefix string
		}
		var order []target
		keys := map[target][]string{}
		for _, ch := range changes {
			for p, conns := range tr.prefixes {
				if !strings.HasPrefix(ch.key, p) {
					continue
				}
				for c := range conns {
					if c.trk.noloop && c.trk.own(ch) {
						continue
					}
					tg := target{c, p}
					if _, ok := keys[tg]; !ok {
						order = append(order, tg)
					}
					keys[tg] = append(keys[tg], ch.key)
				}
			}
		}
		for _, tg := range order {
			ks := keys[tg]
			slices.Sort(ks)
			s.messageLocked(&out, tg.c, slices.Compact(ks), false)
		}
	}
	tr.mu.Unlock()
	out.send()
}

// flushAll sends every tracking client a null invalidation and empties the
// table (FLUSHALL, or invalidations that may have been lost).
func (s *Server) flushAll() {
	tr := &s.trk
	var out outbox
	tr.mu.Lock()
	for _, c := range tr.conns {
		s.messageLocked(&out, c, nil, true)
	}
	clear(tr.keys)
	tr.items = 0
	tr.mu.Unlock()
	out.send()
}

// messageLocked builds the invalidation of keys (or a flush) for tracking
// client c, to c itself or to its redirect target, in the target's
// protocol — what Redis's sendTrackingMessage writes.
func (s *Server) messageLocked(out *outbox, c *conn, keys []string, flush bool) {
	t := &c.trk
	to, redirected := c, false
	if t.redirID != 0 {
		if t.redir == nil || t.redir.trk.gone.Load() {
			t.brokenRedir.Store(true)
			if c.proto.Load() == 3 {
				w := Writer{Proto: 3}
				w.Push(2)
				w.BulkString("tracking-redir-broken")
				w.Int(t.redirID)
				out.add(c, w.B)
			}
			return
		}
		to, redirected = t.redir, true
	}
	w := Writer{Proto: int(to.proto.Load())}
	switch {
	case w.Proto == 3:
		w.Push(2)
		w.BulkString("invalidate")
	case redirected && to.inPubSub():
		w.Array(3)
		w.BulkString("message")
		w.BulkString(trackChannel)
	default:
		return // RESP2 without a subscribed redirect: nothing can carry it
	}
	if flush {
		// Redis writes the null of the tracking client's protocol.
		if c.proto.Load() == 3 {
			w.B = append(w.B, "_\r\n"...)
		} else {
			w.B = append(w.B, "$-1\r\n"...)
		}
	} else {
		w.Array(len(keys))
		for _, k := range keys {
			w.BulkString(k)
		}
	}
	out.add(to, w.B)
}

// inPubSub reports whether the connection has a subscription (Redis's
// CLIENT_PUBSUB), from any goroutine.
func (c *conn) inPubSub() bool {
	if sp := c.subShared.Load(); sp != nil && sp.Count() > 0 {
		return true
	}
	if sp := c.ssubShared.Load(); sp != nil && sp.Count() > 0 {
		return true
	}
	return false
}

// --- FLUSHALL ---

// trackFlushCommand: FLUSHALL/FLUSHDB that deleted nothing still sends its
// null invalidation (a flush that deleted keys is sent by the watch loop,
// whoever ran it).
func (s *Server) trackFlushCommand(deleted int) {
	if deleted == 0 {
		s.flushAll()
	}
}

// --- the cluster ---

// trackInterest starts or stops the watch and announces this node's
// interest to the cluster when either changed.
func (s *Server) trackInterest() {
	tr := &s.trk
	tr.lmu.Lock()
	defer tr.lmu.Unlock()
	tr.mu.Lock()
	local := len(tr.conns) > 0
	tr.mu.Unlock()
	need := local
	if p := tr.peers.Load(); p != nil && len(*p) > 0 {
		need = true
	}
	if local != tr.announced && s.cfg.Bus != nil {
		v := "0"
		if local {
			v = "1"
		}
		s.cfg.Bus.Set(trackBusSetting+s.cfg.NodeID, v)
	}
	tr.announced = local
	switch {
	case need && !tr.running && !tr.closed:
		// Watch before returning: CLIENT TRACKING ON's reply comes after
		// the watch sees every change.
		w, _, err := s.store.Watch(store.WatchOptions{Buffer: trackWatchBuffer})
		if err != nil {
			s.log.Error("client tracking: cannot watch the store", "err", err)
			return
		}
		tr.stop, tr.done = make(chan struct{}), make(chan struct{})
		tr.running = true
		go s.trackLoop(w, tr.stop, tr.done)
	case !need && tr.running:
		close(tr.stop)
		<-tr.done
		tr.running = false
	}
}

// stopTracking ends the watch (Shutdown, Close).
func (s *Server) stopTracking() {
	tr := &s.trk
	tr.lmu.Lock()
	defer tr.lmu.Unlock()
	tr.closed = true
	if tr.running {
		close(tr.stop)
		<-tr.done
		tr.running = false
	}
}

// trackPeerSetting applies a member's "tracking@<id>" setting.
func (s *Server) trackPeerSetting(id, value string) {
	tr := &s.trk
	if id == s.cfg.NodeID {
		// Our own interest, as the cluster remembers it from before a
		// restart: say what is true now.
		tr.lmu.Lock()
		if s.cfg.Bus != nil && (value == "1") != tr.announced {
			v := "0"
			if tr.announced {
				v = "1"
			}
			s.cfg.Bus.Set(trackBusSetting+s.cfg.NodeID, v)
		}
		tr.lmu.Unlock()
		return
	}
	tr.lmu.Lock()
	next := map[string]bool{}
	if p := tr.peers.Load(); p != nil {
		for k, v := range *p {
			next[k] = v
		}
	}
	if value == "1" {
		next[id] = true
	} else {
		delete(next, id)
	}
	tr.peers.Store(&next)
	tr.lmu.Unlock()
	s.trackInterest()
}

// peerTracks is the bus's filter: members with tracking clients.
func (s *Server) peerTracks(id string) bool {
	p := s.trk.peers.Load()
	return p != nil && (*p)[id]
}

// sendPeers sends this node's changes (or a flush) to the members that
// track.
func (s *Server) sendPeers(keys []string, flush bool) {
	b := s.cfg.Bus
	if b == nil {
		return
	}
	if p := s.trk.peers.Load(); p == nil || len(*p) == 0 {
		return
	}
	b.Invalidate(keys, flush, s.peerTracks)
}

// ApplyInvalidation applies a member's invalidations (the bus calls it).
func (s *Server) ApplyInvalidation(keys []string, flush bool) {
	if flush {
		s.flushAll()
		return
	}
	changes := make([]change, len(keys))
	for i, k := range keys {
		changes[i] = change{key: k, seg: -1}
	}
	s.invalidate(changes)
}

// LinkLost is called when a member's bus link to this node ended: what it
// had queued for us is lost, so every tracking client here flushes.
func (s *Server) LinkLost() {
	s.trk.mu.Lock()
	n := len(s.trk.conns)
	s.trk.mu.Unlock()
	if n > 0 {
		s.flushAll()
	}
}

// trackLoop follows the store and invalidates what changes on this node,
// until stop. A panic (a bug) is logged, every tracking client flushed,
// and the loop goes on.
func (s *Server) trackLoop(w *store.Watch, stop, done chan struct{}) {
	defer close(done)
	st := &trackLoopState{w: w, owned: s.ownedSegments()}
	defer func() { st.w.Close() }()
	for !s.trackLoopRun(st, stop) {
	}
}

type trackLoopState struct {
	w        *store.Watch
	owned    []byte // the segments owned at the last check
	flushRun bool   // in a run of a flush's deletes
}

// trackLoopRun runs the loop until stop (true) or a contained panic
// (false).
func (s *Server) trackLoopRun(st *trackLoopState, stop chan struct{}) (stopped bool) {
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("panic in the client-tracking invalidator; tracking clients are flushed",
				"panic", panics.Describe(v), "stack", string(debug.Stack()))
			s.flushEverywhere()
			stopped = false
		}
	}()
	tick := time.NewTicker(trackOwnerCheck)
	defer tick.Stop()
	batch := make([]store.Event, 0, 256)
	for {
		select {
		case <-stop:
			return true
		case <-tick.C:
			if now := s.ownedSegments(); !bytes.Equal(now, st.owned) {
				st.owned = now
				s.flushEverywhere()
			}
		case ev, ok := <-st.w.Events():
			if !ok {
				if !errors.Is(st.w.Err(), store.ErrWatchOverflow) {
					<-stop // the store closed
					return true
				}
				s.log.Warn("client tracking fell behind the writes; tracking clients are flushed", "buffer", trackWatchBuffer)
				w, _, err := s.store.Watch(store.WatchOptions{Buffer: trackWatchBuffer})
				s.flushEverywhere()
				if err != nil {
					s.log.Error("client tracking: cannot watch the store", "err", err)
					<-stop
					return true
				}
				st.w = w
				continue
			}
			batch = append(batch[:0], ev)
		more:
			for len(batch) < cap(batch) {
				select {
				case ev, ok := <-st.w.Events():
					if !ok {
						break more
					}
					batch = append(batch, ev)
				default:
					break more
				}
			}
			s.trackEvents(batch, &st.flushRun)
		}
	}
}

// flushEverywhere flushes this node's tracking clients and the members'.
func (s *Server) flushEverywhere() {
	s.flushAll()
	s.sendPeers(nil, true)
}

// ownedSegments is a bitmap of the segments this node owns.
func (s *Server) ownedSegments() []byte {
	b := make([]byte, (s.segs+7)/8)
	for i := 0; i < s.segs; i++ {
		if s.store.Segment(uint16(i)).Owned() {
			b[i/8] |= 1 << (i % 8)
		}
	}
	return b
}

// trackEvents invalidates a batch of store events: the changes of owned
// segments (a replica's apply is its owner's to send), a run of a flush's
// deletes as one flush.
func (s *Server) trackEvents(batch []store.Event, flushRun *bool) {
	var changes []change
	var keys []string
	emit := func() {
		if len(changes) > 0 {
			s.invalidate(changes)
			s.sendPeers(keys, false)
			changes, keys = nil, nil
		}
	}
	for _, ev := range batch {
		if !s.store.Segment(ev.Segment).Owned() {
			continue
		}
		if ev.Origin == kv.CmdFlush {
			if !*flushRun {
				*flushRun = true
				emit()
				s.flushEverywhere()
			}
			continue
		}
		*flushRun = false
		changes = append(changes, change{key: ev.Key, seg: int(ev.Segment), rev: ev.Revision})
		keys = append(keys, ev.Key)
	}
	emit()
}

// --- reports ---

// trackingStats are INFO's tracking_clients and tracking_total_*.
func (s *Server) trackingStats() (clients, keys, items, prefixes int) {
	tr := &s.trk
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.conns), len(tr.keys), tr.items, len(tr.prefixes)
}

// trackFlags are CLIENT LIST's tracking flags (t, R, B) and its redir.
func (c *conn) trackFlags() (flags string, redir string) {
	t := &c.trk
	if !t.on.Load() {
		return "", "-1"
	}
	flags = "t"
	if t.brokenRedir.Load() {
		flags += "R"
	}
	c.srv.trk.mu.Lock()
	bcast, id := t.bcast, t.redirID
	c.srv.trk.mu.Unlock()
	if bcast {
		flags += "B"
	}
	return flags, strconv.FormatInt(id, 10)
}

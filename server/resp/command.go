package resp

import (
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/server/metrics"
	"github.com/zaris-io/zaris/server/store"
)

// cmdFlags are the properties of a command, named as COMMAND reports them.
type cmdFlags uint32

const (
	flagWrite cmdFlags = 1 << iota
	flagReadonly
	flagDenyOOM
	flagAdmin
	flagNoScript
	flagLoading
	flagStale
	flagFast
	flagNoAuth
	flagAllowBusy
	flagNoMandatoryKeys
	flagMovableKeys
	flagBlocking
	flagPubSub
	flagSkipMonitor
	flagSkipSlowlog
	flagAsking
	flagNoAsyncLoading
	flagNoMulti
)

var flagNames = []struct {
	f    cmdFlags
	name string
}{
	{flagWrite, "write"}, {flagReadonly, "readonly"}, {flagDenyOOM, "denyoom"}, {flagAdmin, "admin"}, {flagPubSub, "pubsub"},
	{flagNoScript, "noscript"}, {flagBlocking, "blocking"}, {flagLoading, "loading"}, {flagStale, "stale"},
	{flagSkipMonitor, "skip_monitor"}, {flagSkipSlowlog, "skip_slowlog"}, {flagAsking, "asking"}, {flagFast, "fast"},
	{flagNoAuth, "no_auth"}, {flagNoMandatoryKeys, "no_mandatory_keys"}, {flagNoAsyncLoading, "no_async_loading"},
	{flagNoMulti, "no_multi"}, {flagMovableKeys, "movablekeys"}, {flagAllowBusy, "allow_busy"},
}

func (f cmdFlags) names() []string {
	var out []string
	for _, n := range flagNames {
		if f&n.f != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// command is one entry of the command table: what COMMAND reports, what
// docs/RESP.md lists, and the handler. Arity follows Redis: positive = exact
// number of arguments including the name, negative = at least that many.
// Keys are at positions first..last (last < 0 counts from the end) every
// step; 0,0,0 = no key.
type command struct {
	name    string // lower case; "parent|sub" for a subcommand
	arity   int
	flags   cmdFlags
	first   int
	last    int
	step    int
	group   string // Redis's command group: string, generic, hash, …
	since   string // the Redis version that introduced it
	summary string
	tips    []string
	metric  metrics.Op
	// keys finds the keys of a command whose keys move (XREAD … STREAMS);
	// nil = the first/last/step positions.
	keys   func(args [][]byte) []int
	run    func(c *conn, args [][]byte)
	subs   []*command // subcommands, dispatched on args[1]
	parent *command
	idx    int  // position in indexedCmds: the per-server statistics slot
	aclID  int  // the acl catalog id (acl.go)
	onLoop bool // may run on an event loop (loop.go)
	// slotLocked: with several keys of one slot the command runs under
	// that segment's lock, as a command of several slots does (multikey.go):
	// one lock, and no reader sees it half done (D117).
	slotLocked bool
	// refused: the command only answers why it is not served (SAVE on a
	// node that keeps no files); docs_coverage.go counts it left out.
	refused bool
}

// commandTable is the table of every command the front end serves, by
// lower-case name. Built once at package initialisation and never mutated
// afterwards.
var commandTable = map[string]*command{}

func register(cmds ...*command) {
	for _, c := range cmds {
		if _, dup := commandTable[c.name]; dup {
			panic("resp: command " + c.name + " registered twice")
		}
		if c.run == nil && len(c.subs) == 0 {
			panic("resp: command " + c.name + " has no handler")
		}
		if c.keys != nil {
			c.flags |= flagMovableKeys // COMMAND says the range is not the whole story
		}
		for _, s := range c.subs {
			s.parent = c
			s.name = c.name + "|" + s.name
			if s.group == "" {
				s.group = c.group
			}
			if s.since == "" {
				s.since = c.since
			}
		}
		commandTable[c.name] = c
	}
}

// sortedCommands returns the table in name order.
func sortedCommands() []*command {
	out := make([]*command, 0, len(commandTable))
	for _, c := range commandTable {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// lookupCommand finds a command by its name in any case, without allocating.
func lookupCommand(name []byte) *command {
	var tmp [32]byte
	if len(name) > len(tmp) {
		return nil
	}
	for i, c := range name {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		tmp[i] = c
	}
	return commandTable[string(tmp[:len(name)])]
}

// lookup is lookupCommand remembering the connection's last command: a
// pipeline repeats one name, and the table's map hashed it every time (1 %
// of a pipelined LPUSH's CPU). The name is compared as sent (the case
// included), so a hit is exactly what the table would answer.
func (c *conn) lookup(name []byte) *command {
	if c.named != nil && string(name) == string(c.lastName[:c.lastNameLen]) {
		return c.named
	}
	cmd := lookupCommand(name)
	if cmd != nil && len(name) <= len(c.lastName) {
		c.named, c.lastNameLen = cmd, uint8(copy(c.lastName[:], name))
	}
	return cmd
}

func (cmd *command) lookupSub(name []byte) *command {
	for _, s := range cmd.subs {
		if strings.EqualFold(s.name[len(cmd.name)+1:], string(name)) {
			return s
		}
	}
	return nil
}

func (cmd *command) arityOK(n int) bool {
	if cmd.arity >= 0 {
		return n == cmd.arity
	}
	return n >= -cmd.arity
}

// keyIndexes returns the positions of the keys in args.
func (cmd *command) keyIndexes(args [][]byte) []int { return cmd.appendKeyIndexes(nil, args) }

// appendKeyIndexes is keyIndexes into dst's room when the command's keys
// are a range (a caller's stack buffer: MSET's ten keys without an
// allocation).
func (cmd *command) appendKeyIndexes(dst []int, args [][]byte) []int {
	if cmd.keys != nil {
		return cmd.keys(args)
	}
	if cmd.step <= 0 || cmd.first <= 0 || cmd.first >= len(args) {
		return nil
	}
	last := cmd.last
	if last < 0 {
		last += len(args)
	}
	last = min(last, len(args)-1)
	if last < cmd.first {
		return nil
	}
	out := dst[:0]
	if n := (last-cmd.first)/cmd.step + 1; n > cap(dst) {
		out = make([]int, 0, n)
	}
	for i := cmd.first; i <= last; i += cmd.step {
		out = append(out, i)
	}
	return out
}

// multiKey reports whether the command may name more than one key.
func (cmd *command) multiKey() bool {
	return cmd.keys != nil || cmd.step > 0 && (cmd.last < 0 || cmd.last > cmd.first)
}

// execute runs one command and appends its reply (processCommand's order:
// unknown command, arity, authentication, cluster rules, execution).
func (c *conn) execute(args [][]byte) {
	cmd := c.lookup(args[0])
	if cmd == nil {
		c.refuse(unknownCommandError(args))
		return
	}
	if len(cmd.subs) > 0 && len(args) >= 2 {
		sub := cmd.lookupSub(args[1])
		if sub == nil {
			c.refuse("ERR unknown subcommand '" + truncate(args[1], 128) + "'. Try " + strings.ToUpper(cmd.name) + " HELP.")
			return
		}
		cmd = sub
	}
	if !cmd.onLoop && c.onLoop() {
		c.leaveLoop() // what it does may wait: not on the loop
	}
	if !cmd.arityOK(len(args)) {
		if cmd.name == "exec" {
			c.abortExec(cmd, "wrong number of arguments for 'exec' command")
			return
		}
		c.rejectCmd(cmd, "ERR wrong number of arguments for '"+cmd.name+"' command")
		return
	}
	if !c.authed && cmd.flags&flagNoAuth == 0 {
		c.rejectCmd(cmd, "NOAUTH Authentication required.")
		return
	}
	if !c.aclCheck(cmd, args, "toplevel") {
		return
	}
	if cmd.flags&flagWrite != 0 && c.readOnly() {
		c.rejectCmd(cmd, msgReadOnly)
		return
	}
	if c.tx == nil && c.deniedOOM(cmd) {
		if cmd.name == "exec" {
			c.abortExec(cmd, msgOOM)
			return
		}
		c.rejectCmd(cmd, msgOOM)
		return
	}
	if c.srv.scripts.busy.Load() > 0 && cmd.flags&flagAllowBusy == 0 {
		// A script runs past the time limit: only what may stop it runs.
		if msg := c.srv.scripts.busyError(c); msg != "" {
			if cmd.name == "exec" && c.txn.multi {
				c.abortExec(cmd, msg) // Redis's rejectCommand: EXEC refused discards the transaction
				return
			}
			c.refuse(msg)
			return
		}
	}
	if c.out.Proto == 2 && (c.sub != nil || c.ssub != nil) && !subscribedModeCommands[baseName(cmd)] && c.subscribed() {
		c.rejectCmd(cmd, subscribedModeError(cmd.name))
		return
	}
	var lockSegs []uint16 // keys of several slots, all served here: run under their locks
	// Inside EXEC (c.tx set) the queue was checked when queued and the
	// transaction's locks are held: no check (it would take them again).
	if cmd.multiKey() && len(args) > cmd.first+1 && c.tx == nil {
		var plan keysPlan
		switch plan, lockSegs = c.keysPlanOf(cmd, args); plan {
		case planCrossSlot:
			c.rejectCmd(cmd, msgCrossSlot)
			return
		}
	}
	if c.txn.multi && !txControl[baseName(cmd)] {
		c.txQueue(cmd, args)
		return
	}
	c.setCurKey(nil) // the key a Moved status redirects for
	if cmd.keys != nil {
		if idx := cmd.keys(args); len(idx) > 0 {
			c.setCurKey(args[idx[0]])
		}
	} else if cmd.step > 0 && cmd.first > 0 && cmd.first < len(args) {
		c.setCurKey(args[cmd.first])
	}
	if !c.txn.multi && !c.waitPause(cmd) {
		c.closing = true
		return
	}
	c.tally.lastCmd = cmd
	if cmd.flags&flagFast == 0 {
		c.publishTally() // it may read the counters, or wait (tally.go)
	}
	c.status = kv.StatusSuccess
	errsBefore := c.errReplies
	// The command starts where the previous one of the batch ended, or
	// where the read returned: began after the batch's anchor.
	anchorAt, anchor, began := c.clock, c.clockGen, c.since
	mark, flushes := len(c.out.B), c.flushes
	c.multiSeg, c.oneSegLocked = len(lockSegs) > 1, len(lockSegs) == 1
	var windows []trackWindow
	if c.trk.active {
		windows = c.trackBefore(cmd, args)
	}
	if cmd.flags&(flagWrite|flagBlocking) == flagWrite && c.tx == nil && c.srv.blocked.waiting.Load() > 0 {
		// Blocked clients wait: no turn on the keys while the write runs,
		// and a mark once it has landed, so they are served in the order
		// they blocked (blockQueue.begin) rather than when the store's
		// watch tells. A blocking command is left out: it would hold its
		// keys while it waits; so is a command inside EXEC, which holds
		// its segments' locks (EXEC began its writes before taking them).
		var keys [][]byte
		for _, i := range cmd.keyIndexes(args) {
			keys = append(keys, args[i])
		}
		if begun := c.srv.blocked.begin(keys); begun != nil {
			defer c.srv.blocked.end(begun) // a panic too: contained, the keys must not stay held
		}
	}
	if lockSegs != nil {
		c.runLocked(cmd, args, lockSegs)
	} else {
		cmd.run(c, args)
	}
	if c.trk.active {
		c.trackAfter(cmd, args, windows)
	}
	switch c.reply {
	case replyOff, replySkip:
		// Pub/sub confirmations are pushes, not replies: Redis delivers
		// them whatever CLIENT REPLY says (its CLIENT_PUSHING, set in
		// RESP2 too).
		if !pushReplies[baseName(cmd)] {
			c.out.B = c.out.B[:min(mark, len(c.out.B))] // a reply already flushed (blocking, pub/sub) stays sent
		}
		if c.reply == replySkip {
			c.reply = replyOn
		}
	case replySkipNext:
		c.reply = replySkip
	}
	if c.srv.cfg.WriteBarrier != nil && cmd.flags&flagWrite != 0 && c.status == kv.StatusSuccess {
		c.hold(mark, flushes)
	}
	if c.srv.cfg.Replicas != nil && cmd.flags&flagWrite != 0 && c.status == kv.StatusSuccess {
		c.noteWrite()
	}
	// One clock read per command, and it also starts the next one's: the
	// monotonic clock only, as an offset from the read that brought the
	// batch (whose time.Now anchors the wall reading) — time.Now reads two
	// clocks, 4 % of a pipelined LPUSH's CPU, and time.Time arithmetic per
	// command another 1.5 % of a GET's.
	el := time.Since(c.clock)
	d := el - began
	if c.clockGen != anchor { // it read more (it waited): the anchor moved under it
		d = time.Since(anchorAt) - began
	}
	c.since = el
	c.count(cmd, c.status, d, c.errReplies != errsBefore, c.clockUnix+int64(el))
	c.observe(cmd, args, d, el)
}

// rejectCmd refuses a known command before it runs (rejected_calls).
func (c *conn) rejectCmd(cmd *command, msg string) {
	c.srv.cmdStats.reject(c.id, cmd)
	c.refuse(msg)
}

// refuse answers an error for a command that does not run; while MULTI
// queues, it also makes EXEC abort (Redis's flagTransaction).
func (c *conn) refuse(msg string) {
	c.out.Error(msg)
	if c.txn.multi {
		c.txn.dirty = true
	}
}

// deniedOOM is Redis's denyoom rule: a command that may add data — or an
// EXEC whose queue holds one — is refused before it runs (or is queued)
// while the store is out of memory (store.OutOfMemory).
func (c *conn) deniedOOM(cmd *command) bool {
	denyoom := cmd.flags&flagDenyOOM != 0 || cmd.name == "exec" && c.txn.denyOOM
	return denyoom && c.srv.store.OutOfMemory()
}

// abortExec is Redis's rejectCommand for EXEC: the transaction is
// discarded and EXEC answers why.
func (c *conn) abortExec(cmd *command, why string) {
	c.srv.cmdStats.reject(c.id, cmd)
	c.out.Error("EXECABORT Transaction discarded because of: " + why)
	c.txReset()
}

// pushReplies are the commands whose answers are pub/sub pushes (in RESP2
// too: arrays written as Redis writes its pushes).
var pushReplies = map[string]bool{
	"subscribe": true, "unsubscribe": true, "psubscribe": true, "punsubscribe": true,
	"ssubscribe": true, "sunsubscribe": true,
}

// baseName is a command's top-level name.
func baseName(cmd *command) string {
	if cmd.parent != nil {
		return cmd.parent.name
	}
	return cmd.name
}

// unknownCommandError is Redis's text, byte for byte: the name cut to 128
// bytes, then the first arguments quoted, up to 128 bytes in all.
func unknownCommandError(args [][]byte) string {
	var sb strings.Builder
	for i := 1; i < len(args) && sb.Len() < 128; i++ {
		room := 128 - sb.Len()
		sb.WriteByte('\'')
		sb.WriteString(truncate(args[i], room))
		sb.WriteString("' ")
	}
	return "ERR unknown command '" + truncate(args[0], 128) + "', with args beginning with: " + sb.String()
}

// cString is s as Redis's %s formats an argument into an error: up to its
// first NUL byte.
func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}

// view returns a string sharing b's memory, for store calls that retain
// nothing of the key (Get, Delete, Expire, Persist, TimeToLive, Exec).
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// ops are the store operations a command handler makes on a key. A
// *store.Segment provides them; inside EXEC the connection's *store.Atomic
// does (the view of the transaction's segment under its write lock), so the
// queued commands run their ordinary handlers atomically.
type ops interface {
	Get(key string) kv.Result
	GetValue(key string) ([]byte, kv.Status)
	Put(key string, value []byte, opts *kv.PutOptions) kv.Result
	PutStatus(key string, value []byte, opts *kv.PutOptions) kv.Status
	Delete(key string) kv.Result
	Expire(key string, ttl time.Duration) kv.Result
	Persist(key string) kv.Result
	TimeToLive(key string) kv.Result
	Exec(cmd kv.Cmd) kv.Reply
}

var (
	_ ops = (*store.Segment)(nil)
	_ ops = (*store.Atomic)(nil)
	_ ops = store.Untouched{}
)

// setCurKey sets the command's first key; its segment is computed again
// when asked (curSegment).
func (c *conn) setCurKey(k []byte) { c.curKey, c.curSeg = k, -1 }

// curSegment is curKey's segment (curKey set): computed once per key, where
// the command's run, its write barrier and WAIT's record each placed it
// (a CRC16 of the key each, three per write).
func (c *conn) curSegment() uint16 {
	if c.curSeg < 0 {
		c.curSeg = int32(placement.SegmentOf(view(c.curKey), c.srv.segs))
	}
	return uint16(c.curSeg)
}

// segmentOf is key's segment, from curSegment when key is curKey itself.
func (c *conn) segmentOf(key string) uint16 {
	if k := c.curKey; len(k) == len(key) && len(k) > 0 && unsafe.StringData(key) == &k[0] {
		return c.curSegment()
	}
	return placement.SegmentOf(key, c.srv.segs)
}

// segment is where the handlers read and write key: its segment, or the
// transaction's atomic view while EXEC runs.
func (c *conn) segment(key string) ops {
	if c.tx != nil {
		c.tx.SetNoTouch(c.untouched())
		return c.tx
	}
	g := c.srv.store.Segment(c.segmentOf(key))
	if c.untouched() {
		return g.Untouched()
	}
	return g
}

// --- replies ---

// errorf writes an error reply and marks the command as a bad request.
func (c *conn) err(msg string) {
	c.out.Error(msg)
	if c.status == kv.StatusSuccess {
		c.status = kv.StatusBadRequest
	}
}

const (
	msgSyntax      = "ERR syntax error"
	msgNotInteger  = "ERR value is not an integer or out of range"
	msgNotFloat    = "ERR value is not a valid float"
	msgWrongType   = "WRONGTYPE Operation against a key holding the wrong kind of value"
	msgNoSuchKey   = "ERR no such key"
	msgOOM         = "OOM command not allowed when used memory > 'maxmemory'."
	msgCrossSlot   = "CROSSSLOT Keys in request don't hash to the same slot"
	msgInvalidKey  = "ERR invalid key: empty or longer than the maximum key size"
	msgTryAgainTx  = "TRYAGAIN key reserved by a transaction in progress"
	msgInvalidExpr = "ERR invalid expire time in '%s' command"
)

// storeError writes the Redis error for a non-success store status.
func (c *conn) storeError(st kv.Status, message string) {
	c.status = st
	if code, _, _ := strings.Cut(message, " "); codedErrors[code] {
		c.out.Error(message)
		return
	}
	switch st {
	case kv.StatusWrongType:
		c.out.Error(msgWrongType)
	case kv.StatusBadRequest:
		if message == "" {
			c.out.Error(msgInvalidKey)
			return
		}
		if strings.HasPrefix(message, "CROSSSLOT") {
			c.out.Error(msgCrossSlot)
			return
		}
		c.out.Error("ERR " + message)
	case kv.StatusItemTooLarge:
		if message == "" {
			message = "value exceeds the maximum item size of " + strconv.Itoa(c.srv.store.MaxItemBytes()) + " bytes"
		}
		c.out.Error("OOM " + message)
	case kv.StatusCapacityExceeded:
		c.out.Error(msgOOM)
	case kv.StatusNotFound:
		if message != "" {
			c.out.Error("ERR " + message)
			return
		}
		c.out.Error(msgNoSuchKey)
	case kv.StatusConflict:
		if message == "" {
			message = "key changed concurrently"
		}
		c.out.Error("TRYAGAIN " + message)
	case kv.StatusMoved:
		if c.curKey != nil {
			c.out.Error(c.movedError(c.curKey))
			return
		}
		c.out.Error("TRYAGAIN the key's segment is not served by this node")
	case kv.StatusMigrating:
		// A live migration's write fence (milliseconds): go-redis and
		// redis-cli retry TRYAGAIN.
		c.out.Error("TRYAGAIN the key's slot is moving to another node; retry")
	case kv.StatusUnavailable:
		c.out.Error("CLUSTERDOWN The cluster is down")
	case kv.StatusUnauthorized:
		c.out.Error("NOAUTH Authentication required.")
	case kv.StatusTimeout:
		c.out.Error("ERR timeout")
	default:
		if st.Redirect() {
			c.out.Error("TRYAGAIN " + st.String())
			return
		}
		c.out.Error("ERR " + st.String())
	}
}

// codedErrors are the error codes the store puts at the start of a
// message (stream groups), passed through as the reply's code.
var codedErrors = map[string]bool{"NOGROUP": true, "BUSYGROUP": true}

// shape says how a store reply maps onto RESP types beyond the obvious.
type shape uint8

const (
	shapePlain     shape = iota
	shapeMap             // a flat field, value, … array is a map (HGETALL)
	shapeSet             // an array is a set (SMEMBERS)
	shapeDouble          // a bulk is a double (ZSCORE, ZINCRBY)
	shapeScores          // member, score, … pairs (WITHSCORES): RESP3 [member, double] pairs
	shapeNullArray       // a nil is a null array (LPOP key count)
	shapeStream          // stream entries: a nil inside is a null array (a deleted entry)
)

// writeReply writes a store reply.
func (c *conn) writeReply(r kv.Reply, sh shape) { c.writeReplyAt(&r, sh) }

// writeReplyAt is writeReply reading the reply where it is: an array's
// elements, 96 bytes each, are not copied one by one (D121).
func (c *conn) writeReplyAt(r *kv.Reply, sh shape) {
	if r.Status != kv.StatusSuccess {
		c.storeError(r.Status, r.Message)
		return
	}
	switch r.Type {
	case kv.ReplyNil:
		if sh == shapeNullArray || sh == shapeStream {
			c.out.NullArray()
		} else {
			c.out.Null()
		}
	case kv.ReplyOK:
		c.out.OK()
	case kv.ReplyInt:
		c.out.Int(r.Int)
	case kv.ReplyBulk:
		if sh == shapeDouble {
			c.out.DoubleText(redisFloatText(r.Bulk))
			return
		}
		c.out.Bulk(r.Bulk)
	case kv.ReplyArray:
		switch sh {
		case shapeMap:
			c.out.Map(len(r.Array) / 2)
		case shapeSet:
			c.out.Set(len(r.Array))
		case shapeScores:
			if c.out.Proto == 3 {
				c.out.Array(len(r.Array) / 2)
				for i := 0; i+1 < len(r.Array); i += 2 {
					c.out.Array(2)
					c.writeReplyAt(&r.Array[i], shapePlain)
					c.writeReplyAt(&r.Array[i+1], shapeDouble)
				}
				return
			}
			c.out.Array(len(r.Array))
		default:
			c.out.Array(len(r.Array))
		}
		inner := shapePlain
		if sh == shapeStream {
			inner = shapeStream
		}
		for i := range r.Array {
			c.writeReplyAt(&r.Array[i], inner)
		}
	}
}

// redisFloatText rewrites Go's spelling of infinities the way Redis prints
// them.
func redisFloatText(b []byte) []byte {
	switch string(b) {
	case "+Inf":
		return []byte("inf")
	case "-Inf":
		return []byte("-inf")
	}
	return b
}

// exec runs a data-structure command on the store and writes its reply.
// It returns the reply's status and type.
func (c *conn) exec(op kv.CmdOp, key []byte, args [][]byte, sh shape) (kv.Status, kv.ReplyType) {
	k := view(key)
	r := c.segment(k).Exec(kv.Cmd{Op: op, Key: k, Args: args, Out: &c.replyRoom})
	c.writeReplyAt(&r, sh)
	// Written: an idle connection must not keep the values it returned
	// reachable. A reply's array built in the room holds zero replies
	// after this.
	kv.ResetOut(&c.replyRoom)
	return r.Status, r.Type
}

// execRaw runs a store command without writing anything.
func (c *conn) execRaw(op kv.CmdOp, key []byte, args ...[]byte) kv.Reply {
	k := view(key)
	// The arguments are copied into the connection's room, so the caller's
	// variadic slice stays on its stack: the command escapes to the store,
	// and a slice of it was an allocation per call (ZPOPMIN's only one).
	if len(args) > len(c.rawArgs) || c.rawArgsBusy {
		return c.segment(k).Exec(kv.Cmd{Op: op, Key: k, Args: append([][]byte(nil), args...)})
	}
	c.rawArgsBusy = true // a store callback that runs a command of this connection must not reuse the room
	n := copy(c.rawArgs[:], args)
	r := c.segment(k).Exec(kv.Cmd{Op: op, Key: k, Args: c.rawArgs[:n:n]})
	clear(c.rawArgs[:n]) // holds no argument buffer past the call
	c.rawArgsBusy = false
	return r
}

// --- argument parsing ---

func parseInt64(b []byte) (int64, bool) { return parseInt(b) }

// parseFloat parses a float argument like Redis's getDoubleFromObject:
// "inf", "+inf", "-inf" accepted, NaN, overflow and trailing garbage
// refused.
func parseFloat(b []byte) (float64, bool) { return kv.ParseDouble(b) }

// eq reports whether argument b is the option name s (kv.IsOption:
// Redis's strcasecmp, without copying b).
func eq(b []byte, s string) bool { return kv.IsOption(b, s) }

func itoa(n int64) []byte { return strconv.AppendInt(nil, n, 10) }

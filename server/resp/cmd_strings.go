package resp

import (
	"math"
	"strconv"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/metrics"
)

// String commands. Plain reads and writes go straight to the key's segment
// (Get/Put); counters and in-place edits run through store.Exec, so the
// one implementation in the store engine serves RESP, the native protocol
// and embedded mode alike.
//
// Atomicity of the conditional SET forms: the store's Put takes
// preconditions (IfAbsent, IfMatchVersion). SET … NX/XX/GET/KEEPTTL reads
// the key's version (and value, TTL) first, decides, then writes with
// IfMatchVersion (key existed) or IfAbsent (it did not); if another writer
// got in between, the Put fails with Conflict and the command starts over
// from the read. So each form is linearizable against every other write of
// the key, without a lock held across the two steps.

const writeFlags = flagWrite | flagDenyOOM

var (
	posInf = math.Inf(1)
	negInf = math.Inf(-1)
)

// maxAttempts bounds the read-decide-write retries of a conditional write
// that keeps losing to concurrent writers (or meets a transaction's
// reservation): after that the client gets TRYAGAIN.
const maxAttempts = 64

func init() {
	s := func(c *command) *command { c.group = "string"; return c }
	register(
		s(&command{name: "get", arity: 2, flags: flagReadonly | flagFast, first: 1, last: 1, step: 1, since: "1.0.0",
			summary: "Returns the string value of a key.", metric: metrics.OpGet, run: cmdGet}),
		s(&command{name: "set", arity: -3, flags: writeFlags, first: 1, last: 1, step: 1, since: "1.0.0",
			summary: "Sets the string value of a key, ignoring its type ([NX|XX] [GET] [EX|PX|EXAT|PXAT|KEEPTTL]).", metric: metrics.OpPut, run: cmdSet}),
		s(&command{name: "getset", arity: 3, flags: writeFlags | flagFast, first: 1, last: 1, step: 1, since: "1.0.0",
			summary: "Returns the previous string value of a key after setting it to a new value.", metric: metrics.OpPut, run: cmdGetSet}),
		s(&command{name: "setnx", arity: 3, flags: writeFlags | flagFast, first: 1, last: 1, step: 1, since: "1.0.0",
			summary: "Sets the string value of a key only when the key does not exist.", metric: metrics.OpPut, run: cmdSetNX}),
		s(&command{name: "setex", arity: 4, flags: writeFlags, first: 1, last: 1, step: 1, since: "2.0.0",
			summary: "Sets the string value and expiration time (seconds) of a key.", metric: metrics.OpPut, run: cmdSetEX}),
		s(&command{name: "psetex", arity: 4, flags: writeFlags, first: 1, last: 1, step: 1, since: "2.6.0",
			summary: "Sets the string value and expiration time (milliseconds) of a key.", metric: metrics.OpPut, run: cmdSetEX}),
		s(&command{name: "mget", arity: -2, flags: flagReadonly | flagFast, first: 1, last: -1, step: 1, since: "1.0.0",
			summary: "Atomically returns the string values of one or more keys.", metric: metrics.OpGet, run: cmdMGet, slotLocked: true}),
		s(&command{name: "mset", arity: -3, flags: writeFlags, first: 1, last: -1, step: 2, since: "1.0.1",
			summary: "Sets the string values of one or more keys.", metric: metrics.OpPut, run: cmdMSet, slotLocked: true}),
		s(&command{name: "msetnx", arity: -3, flags: writeFlags, first: 1, last: -1, step: 2, since: "1.0.1",
			summary: "Sets the string values of one or more keys only when none of them exists.", metric: metrics.OpPut, run: cmdMSetNX, slotLocked: true}),
		s(&command{name: "getdel", arity: 2, flags: flagWrite | flagFast, first: 1, last: 1, step: 1, since: "6.2.0",
			summary: "Returns the string value of a key after deleting the key.", metric: metrics.OpDelete, run: cmdGetDel}),
		s(&command{name: "getex", arity: -2, flags: flagWrite | flagFast, first: 1, last: 1, step: 1, since: "6.2.0",
			summary: "Returns the string value of a key after setting its expiration time ([EX|PX|EXAT|PXAT|PERSIST]).", metric: metrics.OpGet, run: cmdGetEX}),
		s(&command{name: "append", arity: 3, flags: writeFlags | flagFast, first: 1, last: 1, step: 1, since: "2.0.0",
			summary: "Appends a string to the value of a key. Creates the key if it doesn't exist.", run: execCmd(kv.CmdAppend, shapePlain)}),
		s(&command{name: "strlen", arity: 2, flags: flagReadonly | flagFast, first: 1, last: 1, step: 1, since: "2.2.0",
			summary: "Returns the length of a string value.", run: execCmd(kv.CmdStrLen, shapePlain)}),
		s(&command{name: "getrange", arity: 4, flags: flagReadonly, first: 1, last: 1, step: 1, since: "2.4.0",
			summary: "Returns a substring of the string stored at a key.", run: execCmd(kv.CmdGetRange, shapePlain)}),
		s(&command{name: "setrange", arity: 4, flags: writeFlags, first: 1, last: 1, step: 1, since: "2.2.0",
			summary: "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", run: execCmd(kv.CmdSetRange, shapePlain)}),
		s(&command{name: "incr", arity: 2, flags: writeFlags | flagFast, first: 1, last: 1, step: 1, since: "1.0.0",
			summary: "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", run: cmdIncr(1)}),
		s(&command{name: "decr", arity: 2, flags: writeFlags | flagFast, first: 1, last: 1, step: 1, since: "1.0.0",
			summary: "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", run: cmdIncr(-1)}),
		s(&command{name: "incrby", arity: 3, flags: writeFlags | flagFast, first: 1, last: 1, step: 1, since: "1.0.0",
			summary: "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", run: cmdIncrBy(false)}),
		s(&command{name: "decrby", arity: 3, flags: writeFlags | flagFast, first: 1, last: 1, step: 1, since: "1.0.0",
			summary: "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", run: cmdIncrBy(true)}),
		s(&command{name: "incrbyfloat", arity: 3, flags: writeFlags | flagFast, first: 1, last: 1, step: 1, since: "2.6.0",
			summary: "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", run: execCmd(kv.CmdIncrByFloat, shapePlain)}),
	)
}

// execCmd maps a command onto the store command op with the key at args[1]
// and the rest as its arguments.
func execCmd(op kv.CmdOp, sh shape) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) { c.exec(op, args[1], args[2:], sh) }
}

func cmdGet(c *conn, args [][]byte) {
	key := view(args[1])
	v, st := c.segment(key).GetValue(key)
	switch st {
	case kv.StatusSuccess:
		c.tally.hits++
		c.out.Bulk(v)
	case kv.StatusNotFound:
		c.tally.misses++
		c.status = kv.StatusNotFound
		c.out.Null()
	default:
		c.storeError(st, "")
	}
}

// put writes key and value, views of the read buffer: the store copies
// both into the record.
func (c *conn) put(key, value []byte, opts *kv.PutOptions) kv.Status {
	if len(value) > c.srv.store.MaxItemBytes() {
		return kv.StatusItemTooLarge
	}
	k := view(key) // the store copies key and value into the record
	return c.segment(k).PutStatus(k, value, opts)
}

// setOpts are the parsed options of SET and its relatives.
type setOpts struct {
	nx, xx, get, keepTTL, persist bool
	hasExpire                     bool
	// ttl is the relative expiry when hasExpire; <= 0 means the absolute
	// time given is already past: the key is written and expires at once.
	ttl time.Duration
	// atMs is the instant of EXAT/PXAT, Unix milliseconds (0 for EX/PX):
	// the store keeps it as given rather than a TTL counted again from when
	// the write reaches it.
	atMs int64
	// The EX/PX/EXAT/PXAT option as given: Redis checks the syntax of all
	// options before it reads the number (GETEX: after the key lookup).
	expUnit string
	expArg  []byte
}

// resolveExpire reads the expiry option's number into ttl.
func (o *setOpts) resolveExpire(c *conn, name string, now time.Time) bool {
	if !o.hasExpire {
		return true
	}
	ttl, ok := parseExpire(c, name, o.expUnit, o.expArg, now)
	o.ttl = ttl
	if ok && (o.expUnit == "EXAT" || o.expUnit == "PXAT") {
		o.atMs, _ = parseInt(o.expArg) // checked by parseExpire
		if o.expUnit == "EXAT" {
			o.atMs *= 1000
		}
	}
	return ok
}

// nanosOfMs is an instant in Unix milliseconds as the store keeps expiries:
// beyond int64 nanoseconds (2262-04-11) at that last instant.
func nanosOfMs(ms int64) int64 {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return ms * int64(time.Millisecond)
}

// parseExpire converts an EX/PX/EXAT/PXAT argument to a relative TTL, with
// Redis's checks and error text.
func parseExpire(c *conn, name string, unit string, arg []byte, now time.Time) (time.Duration, bool) {
	n, ok := parseInt(arg)
	if !ok {
		c.err(msgNotInteger)
		return 0, false
	}
	ms := n
	seconds := unit == "EX" || unit == "EXAT"
	if n <= 0 || seconds && n > math.MaxInt64/1000 {
		c.err("ERR invalid expire time in '" + name + "' command")
		return 0, false
	}
	if seconds {
		ms = n * 1000
	}
	if unit == "EX" || unit == "PX" {
		// Redis's bound: the absolute time must fit in int64 milliseconds.
		if ms > math.MaxInt64-now.UnixMilli() {
			c.err("ERR invalid expire time in '" + name + "' command")
			return 0, false
		}
		return ttlOf(ms, false, now), true
	}
	return ttlOf(ms, true, now), true
}

// ttlOf converts an expiry in milliseconds (relative, or absolute Unix ms)
// to a TTL from now. A TTL beyond the range of time.Duration (292 years)
// saturates: the store then keeps the key to the last instant it can
// represent (year 2262) instead of wrapping into the past.
func ttlOf(ms int64, absolute bool, now time.Time) time.Duration {
	if absolute {
		return time.UnixMilli(ms).Sub(now) // Sub saturates
	}
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms) * time.Millisecond
}

// parseSetOpts parses SET's options from args[from:] (Redis's
// parseExtendedStringArgumentsOrReply; getex selects GETEX's subset).
func parseSetOpts(c *conn, args [][]byte, from int, name string, getex bool) (setOpts, bool) {
	var o setOpts
	now := time.Now()
	expireSet := false
	for j := from; j < len(args); j++ {
		a := args[j]
		hasNext := j+1 < len(args)
		switch {
		case !getex && eq(a, "NX") && !o.xx:
			o.nx = true
		case !getex && eq(a, "XX") && !o.nx:
			o.xx = true
		case !getex && eq(a, "GET"):
			o.get = true
		case !getex && eq(a, "KEEPTTL") && !expireSet:
			o.keepTTL = true
		case getex && eq(a, "PERSIST") && !expireSet:
			o.persist = true
		case hasNext && !o.keepTTL && !o.persist && !expireSet &&
			(eq(a, "EX") || eq(a, "PX") || eq(a, "EXAT") || eq(a, "PXAT")):
			o.hasExpire, o.expUnit, o.expArg, expireSet = true, expireUnit(a), args[j+1], true
			j++
		default:
			c.err(msgSyntax)
			return o, false
		}
	}
	if getex {
		return o, true // GETEX reads the number once the key is found
	}
	return o, o.resolveExpire(c, name, now)
}

// expireUnit is the expiry option a (EX, PX, EXAT or PXAT, any case) as
// its name: a constant, where an upper-cased copy was an allocation per
// SET … EX.
func expireUnit(a []byte) string {
	for _, u := range [...]string{"EX", "PX", "EXAT", "PXAT"} {
		if eq(a, u) {
			return u
		}
	}
	return ""
}

func cmdSet(c *conn, args [][]byte) {
	if len(args) == 3 {
		if st := c.put(args[1], args[2], nil); st != kv.StatusSuccess {
			c.storeError(st, "")
			return
		}
		c.out.OK()
		return
	}
	o, ok := parseSetOpts(c, args, 3, "set", false)
	if !ok {
		return
	}
	c.set(args[1], args[2], o)
}

func cmdGetSet(c *conn, args [][]byte) {
	c.set(args[1], args[2], setOpts{get: true})
}

// set runs SET with options: read, decide, write with a precondition,
// retry on conflict (see the file comment).
func (c *conn) set(key, value []byte, o setOpts) {
	k := view(key)
	g := c.segment(k)
	conditional := o.nx || o.xx || o.get || o.keepTTL
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var (
			exists  bool
			version uint64
			old     []byte
		)
		if conditional {
			var cur kv.Result
			if o.get {
				cur = g.Get(k)
				if cur.Status == kv.StatusWrongType {
					c.storeError(cur.Status, "")
					return
				}
			} else {
				cur = g.TimeToLive(k)
			}
			exists = cur.Status == kv.StatusSuccess
			version, old = cur.Version, cur.Value
		}
		reply := func() {
			if o.get {
				if exists {
					c.out.Bulk(old)
				} else {
					c.out.Null()
				}
				return
			}
			c.out.OK()
		}
		if o.nx && exists || o.xx && !exists {
			if o.get {
				reply()
				return
			}
			c.status = kv.StatusConflict
			c.out.Null()
			return
		}
		if o.hasExpire && o.ttl <= 0 {
			// An absolute expiry already past: Redis writes and expires the
			// key at once, which leaves no key.
			g.Delete(k)
			reply()
			return
		}
		// The connection's own options: through the ops interface a local
		// escaped, an allocation per SET with an option (the store copies
		// them on entry).
		opts := &c.putOpts
		*opts = kv.PutOptions{}
		if conditional {
			if exists {
				opts.IfMatchVersion = version
			} else {
				opts.IfAbsent = true
			}
		}
		switch {
		case o.keepTTL && exists:
			// The expiry of the version read, kept to the instant by the
			// store (the version is the write's precondition).
			opts.KeepTTL = true
		case o.hasExpire && o.atMs != 0:
			opts.ExpireAt = nanosOfMs(o.atMs)
		case o.hasExpire:
			opts.TTL = o.ttl
		}
		st := c.put(key, value, opts)
		switch st {
		case kv.StatusSuccess:
			reply()
			return
		case kv.StatusConflict:
			if !conditional {
				c.storeError(st, msgTxReserved)
				return
			}
			continue // the key changed under us: decide again
		default:
			c.storeError(st, "")
			return
		}
	}
	c.storeError(kv.StatusConflict, "")
}

const msgTxReserved = "key reserved by a transaction in progress"

func cmdSetNX(c *conn, args [][]byte) {
	st := c.put(args[1], args[2], &kv.PutOptions{IfAbsent: true})
	switch st {
	case kv.StatusSuccess:
		c.out.Int(1)
	case kv.StatusConflict:
		if k := view(args[1]); c.segment(k).TimeToLive(k).Status == kv.StatusNotFound {
			c.storeError(kv.StatusConflict, msgTxReserved)
			return
		}
		c.out.Int(0)
	default:
		c.storeError(st, "")
	}
}

func cmdSetEX(c *conn, args [][]byte) {
	name, unit := "setex", "EX"
	if eq(args[0], "PSETEX") {
		name, unit = "psetex", "PX"
	}
	ttl, ok := parseExpire(c, name, unit, args[2], time.Now())
	if !ok {
		return
	}
	if st := c.put(args[1], args[3], &kv.PutOptions{TTL: ttl}); st != kv.StatusSuccess {
		c.storeError(st, "")
		return
	}
	c.out.OK()
}

func cmdMGet(c *conn, args [][]byte) {
	c.prefetch(args[1:], 1)
	c.out.Array(len(args) - 1)
	for _, kb := range args[1:] {
		k := view(kb)
		if v, st := c.segment(k).GetValue(k); st == kv.StatusSuccess {
			c.tally.hits++
			c.out.Bulk(v)
			continue
		}
		c.tally.misses++
		c.out.Null()
	}
}

func cmdMSet(c *conn, args [][]byte) {
	if len(args)%2 != 1 {
		c.err("ERR wrong number of arguments for '" + lowerName(args[0]) + "' command")
		return
	}
	if !c.pairsWritable(args) {
		return
	}
	c.prefetch(args[1:], 2)
	for j := 1; j < len(args); j += 2 {
		if st := c.put(args[j], args[j+1], nil); st != kv.StatusSuccess {
			c.storeError(st, "")
			return
		}
	}
	c.out.OK()
}

// pairsWritable checks every key and value of an MSET or MSETNX before the
// first is written, and answers the refusal: a key the store refuses or a
// value over --max-item-bytes after the first pair left that pair written
// (MSET is all or nothing in Redis).
func (c *conn) pairsWritable(args [][]byte) bool {
	maxItem := c.srv.store.MaxItemBytes()
	for j := 1; j+1 < len(args); j += 2 {
		switch {
		case !c.srv.store.ValidKey(view(args[j])):
			c.storeError(kv.StatusBadRequest, "")
			return false
		case len(args[j+1]) > maxItem:
			c.storeError(kv.StatusItemTooLarge, "")
			return false
		}
	}
	return true
}

// cmdMSetNX writes the pairs only if none of the keys exists. With several
// keys it runs under their segments' locks (slotLocked, or several slots'
// plan), so no writer comes between the check and the writes; each key is
// still created with IfAbsent, and should one exist after all the keys
// this command already created are removed again, so the reply (0) stays
// true of what the command leaves behind.
func cmdMSetNX(c *conn, args [][]byte) {
	if len(args)%2 != 1 {
		c.err("ERR wrong number of arguments for 'msetnx' command")
		return
	}
	if !c.pairsWritable(args) {
		return
	}
	for j := 1; j < len(args); j += 2 {
		k := view(args[j])
		if c.segment(k).TimeToLive(k).Status != kv.StatusNotFound {
			c.out.Int(0)
			return
		}
	}
	last := make(map[string]int, len(args)/2) // a key named twice takes its last value, as in Redis
	for j := 1; j < len(args); j += 2 {
		last[string(args[j])] = j
	}
	for j := 1; j < len(args); j += 2 {
		if last[string(args[j])] != j {
			continue
		}
		st := c.put(args[j], args[j+1], &kv.PutOptions{IfAbsent: true})
		if st == kv.StatusSuccess {
			continue
		}
		for i := 1; i < j; i += 2 {
			k := view(args[i])
			c.segment(k).Delete(k)
		}
		if st == kv.StatusConflict {
			c.out.Int(0)
			return
		}
		c.storeError(st, "")
		return
	}
	c.out.Int(1)
}

func cmdGetDel(c *conn, args [][]byte) {
	st, typ := c.exec(kv.CmdGetDel, args[1], nil, shapePlain)
	if st == kv.StatusSuccess {
		if typ == kv.ReplyNil {
			c.tally.misses++
		} else {
			c.tally.hits++
		}
	}
}

func cmdGetEX(c *conn, args [][]byte) {
	o, ok := parseSetOpts(c, args, 2, "getex", true)
	if !ok {
		return
	}
	k := view(args[1])
	g := c.segment(k)
	res := g.Get(k)
	switch res.Status {
	case kv.StatusSuccess:
		c.tally.hits++
	case kv.StatusNotFound:
		c.tally.misses++
		c.out.Null()
		return
	default:
		c.storeError(res.Status, "")
		return
	}
	if !o.resolveExpire(c, "getex", time.Now()) {
		return
	}
	switch {
	case o.hasExpire && o.ttl <= 0:
		g.Delete(k)
	case o.hasExpire && o.atMs != 0:
		g.Exec(kv.Cmd{Op: kv.CmdPExpireAt, Key: k, Args: [][]byte{itoa(o.atMs)}}) // the instant as given
	case o.hasExpire:
		g.Expire(k, o.ttl)
	case o.persist:
		g.Persist(k)
	}
	c.out.Bulk(res.Value)
}

func cmdIncr(delta int64) func(c *conn, args [][]byte) {
	arg := [][]byte{[]byte(strconv.FormatInt(delta, 10))}
	return func(c *conn, args [][]byte) { c.exec(kv.CmdIncrBy, args[1], arg, shapePlain) }
}

func cmdIncrBy(negate bool) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		n, ok := parseInt(args[2])
		if !ok {
			c.err(msgNotInteger)
			return
		}
		if negate {
			if n == math.MinInt64 {
				c.err("ERR decrement would overflow")
				return
			}
			n = -n
		}
		var tmp [20]byte
		c.exec(kv.CmdIncrBy, args[1], [][]byte{strconv.AppendInt(tmp[:0], n, 10)}, shapePlain)
	}
}

// lowerName is a command name as Redis prints it in errors.
func lowerName(b []byte) string {
	out := make([]byte, len(b))
	for i, ch := range b {
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		out[i] = ch
	}
	return string(out)
}

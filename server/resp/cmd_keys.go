package resp

import (
	"strconv"

	"github.com/zaris-io/zaris/internal/glob"
	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/metrics"
	"github.com/zaris-io/zaris/server/store"
)

// Generic key commands: DEL, UNLINK, EXISTS, TYPE, TOUCH, RENAME,
// RENAMENX, the EXPIRE and TTL families, PERSIST, KEYS, SCAN, RANDOMKEY,
// OBJECT.

func init() {
	g := func(c *command) *command { c.group = "generic"; return c }
	register(
		g(&command{name: "del", arity: -2, flags: flagWrite, first: 1, last: -1, step: 1, since: "1.0.0",
			summary: "Deletes one or more keys.", metric: metrics.OpDelete, run: cmdDel, slotLocked: true}),
		g(&command{name: "unlink", arity: -2, flags: flagWrite | flagFast, first: 1, last: -1, step: 1, since: "4.0.0",
			summary: "Deletes one or more keys; the same as DEL.", metric: metrics.OpDelete, run: cmdDel, slotLocked: true}),
		g(&command{name: "exists", arity: -2, flags: flagReadonly | flagFast, first: 1, last: -1, step: 1, since: "1.0.0",
			summary: "Determines whether one or more keys exist; counts repeated keys again.", run: cmdExists, slotLocked: true}),
		g(&command{name: "type", arity: 2, flags: flagReadonly | flagFast, first: 1, last: 1, step: 1, since: "1.0.0",
			summary: "Determines the type of value stored at a key.", run: cmdType}),
		g(&command{name: "touch", arity: -2, flags: flagReadonly | flagFast, first: 1, last: -1, step: 1, since: "3.2.1",
			summary: "Updates the last access time of one or more keys; returns how many exist.", run: cmdTouch, slotLocked: true}),
		g(&command{name: "rename", arity: 3, flags: flagWrite, first: 1, last: 2, step: 1, since: "1.0.0",
			summary: "Renames a key and overwrites the destination.", run: cmdRename, slotLocked: true}),
		g(&command{name: "renamenx", arity: 3, flags: flagWrite | flagFast, first: 1, last: 2, step: 1, since: "1.0.0",
			summary: "Renames a key only when the target key name doesn't exist.", run: cmdRename, slotLocked: true}),
		g(&command{name: "expire", arity: -3, flags: flagWrite | flagFast, first: 1, last: 1, step: 1, since: "1.0.0",
			summary: "Sets the expiration time of a key in seconds ([NX|XX|GT|LT]).", metric: metrics.OpExpire, run: cmdExpire(kv.CmdExpire)}),
		g(&command{name: "pexpire", arity: -3, flags: flagWrite | flagFast, first: 1, last: 1, step: 1, since: "2.6.0",
			summary: "Sets the expiration time of a key in milliseconds ([NX|XX|GT|LT]).", metric: metrics.OpExpire, run: cmdExpire(kv.CmdPExpire)}),
		g(&command{name: "expireat", arity: -3, flags: flagWrite | flagFast, first: 1, last: 1, step: 1, since: "1.2.0",
			summary: "Sets the expiration time of a key to a Unix timestamp in seconds ([NX|XX|GT|LT]).", metric: metrics.OpExpire, run: cmdExpire(kv.CmdExpireAt)}),
		g(&command{name: "pexpireat", arity: -3, flags: flagWrite | flagFast, first: 1, last: 1, step: 1, since: "2.6.0",
			summary: "Sets the expiration time of a key to a Unix timestamp in milliseconds ([NX|XX|GT|LT]).", metric: metrics.OpExpire, run: cmdExpire(kv.CmdPExpireAt)}),
		g(&command{name: "ttl", arity: 2, flags: flagReadonly | flagFast, first: 1, last: 1, step: 1, since: "1.0.0",
			summary: "Returns the expiration time in seconds of a key (-1 none, -2 no key).", metric: metrics.OpTTL, run: cmdTTL(kv.CmdPTTL, true)}),
		g(&command{name: "pttl", arity: 2, flags: flagReadonly | flagFast, first: 1, last: 1, step: 1, since: "2.6.0",
			summary: "Returns the expiration time in milliseconds of a key (-1 none, -2 no key).", metric: metrics.OpTTL, run: cmdTTL(kv.CmdPTTL, false)}),
		g(&command{name: "expiretime", arity: 2, flags: flagReadonly | flagFast, first: 1, last: 1, step: 1, since: "7.0.0",
			summary: "Returns the expiration time of a key as a Unix timestamp in seconds.", metric: metrics.OpTTL, run: cmdTTL(kv.CmdPExpireTime, true)}),
		g(&command{name: "pexpiretime", arity: 2, flags: flagReadonly | flagFast, first: 1, last: 1, step: 1, since: "7.0.0",
			summary: "Returns the expiration time of a key as a Unix timestamp in milliseconds.", metric: metrics.OpTTL, run: cmdTTL(kv.CmdPExpireTime, false)}),
		g(&command{name: "persist", arity: 2, flags: flagWrite | flagFast, first: 1, last: 1, step: 1, since: "2.2.0",
			summary: "Removes the expiration time of a key.", metric: metrics.OpPersist, run: cmdPersist}),
		g(&command{name: "keys", arity: 2, flags: flagReadonly, since: "1.0.0",
			summary: "Returns all key names that match a pattern.",
			tips:    []string{"request_policy:all_shards", "nondeterministic_output_order"}, run: cmdKeys}),
		g(&command{name: "scan", arity: -2, flags: flagReadonly, since: "2.8.0",
			summary: "Iterates over the key names in the database ([MATCH pattern] [COUNT n] [TYPE type]).",
			tips:    []string{"nondeterministic_output", "request_policy:special", "response_policy:special"}, run: cmdScan}),
		g(&command{name: "randomkey", arity: 1, flags: flagReadonly, since: "1.0.0",
			summary: "Returns a random key name from the database.",
			tips:    []string{"request_policy:all_shards", "response_policy:special", "nondeterministic_output"}, run: cmdRandomKey}),
		g(&command{name: "object", arity: -2, since: "2.2.3",
			summary: "A container for object introspection commands.", subs: objectSubcommands()}),
	)
}

func cmdDel(c *conn, args [][]byte) {
	n := 0
	for _, kb := range args[1:] {
		k := view(kb)
		switch res := c.segment(k).Delete(k); res.Status {
		case kv.StatusSuccess:
			n++
		case kv.StatusNotFound:
		default:
			c.storeError(res.Status, "")
			return
		}
	}
	c.out.Int(int64(n))
}

func (c *conn) exists(kb []byte) bool {
	k := view(kb)
	return c.segment(k).TimeToLive(k).Status == kv.StatusSuccess
}

func cmdExists(c *conn, args [][]byte) {
	n := 0
	for _, kb := range args[1:] {
		if c.exists(kb) {
			n++
		}
	}
	c.out.Int(int64(n))
}

// keyType is the type of a key ("none" when absent); reading it counts as
// an access for the LRU sampler unless the command peeks (TYPE).
func (c *conn) keyType(kb []byte) string {
	r := c.execRaw(kv.CmdType, kb)
	if r.Status != kv.StatusSuccess {
		return "none"
	}
	return string(r.Bulk)
}

// cmdType answers TYPE, which leaves the key's access time as it was
// (TTL and EXISTS do too), as Redis's does.
func cmdType(c *conn, args [][]byte) {
	c.mon.peeking = true
	defer func() { c.mon.peeking = false }()
	c.out.Simple(c.keyType(args[1]))
}

func cmdTouch(c *conn, args [][]byte) {
	c.mon.touching = true // TOUCH stamps even in CLIENT NO-TOUCH mode, as Redis 7.2
	defer func() { c.mon.touching = false }()
	n := 0
	for _, kb := range args[1:] {
		if c.keyType(kb) != "none" {
			n++
		}
	}
	c.out.Int(int64(n))
}

// cmdRename moves a key to another name (CROSSSLOT is checked before).
//
// The store has no rename primitive, so the value is copied: a string with
// Put (keeping the TTL), a collection element by element through the same
// commands a client would use, then the source is deleted. It runs under
// the keys' segment locks (slotLocked, or the plan of several slots), so
// no other command comes between the read and the writes; a stream is
// copied whole by the store (renameStream).
func cmdRename(c *conn, args [][]byte) {
	nx := eq(args[0], "RENAMENX")
	src, dst := args[1], args[2]
	sk := view(src)
	g := c.segment(sk)
	info := g.TimeToLive(sk)
	if info.Status != kv.StatusSuccess {
		c.storeError(kv.StatusNotFound, "")
		return
	}
	if string(src) == string(dst) {
		if nx {
			c.out.Int(0)
		} else {
			c.out.OK()
		}
		return
	}
	if nx && c.exists(dst) {
		c.out.Int(0)
		return
	}
	// Only the read of the value counts as the source's access, as Redis
	// looks the key up once.
	peeking := c.mon.peeking
	c.mon.peeking = true
	typ := c.keyType(src)
	c.mon.peeking = peeking
	g = c.segment(sk) // a locked view is shared: its no-touch mode set back for the read below
	var fill []kv.Cmd // commands that rebuild a collection at dst
	switch typ {
	case "string":
		cur := g.Get(sk)
		if cur.Status != kv.StatusSuccess {
			c.storeError(kv.StatusNotFound, "")
			return
		}
		if st := c.put(dst, cur.Value, &kv.PutOptions{TTL: cur.TTL}); st != kv.StatusSuccess {
			c.storeError(st, "")
			return
		}
	case "hash":
		fill = rebuild(c.execRaw(kv.CmdHGetAll, src), kv.CmdHSet, 2, false)
	case "list":
		fill = rebuild(c.execRaw(kv.CmdLRange, src, []byte("0"), []byte("-1")), kv.CmdRPush, 1, false)
	case "set":
		fill = rebuild(c.execRaw(kv.CmdSMembers, src), kv.CmdSAdd, 1, false)
	case "zset":
		fill = rebuild(c.execRaw(kv.CmdZRange, src, []byte("0"), []byte("-1"), []byte("WITHSCORES")), kv.CmdZAdd, 2, true)
	case "stream":
		c.renameStream(src, dst, nx)
		return
	default:
		c.err("ERR RENAME of a " + typ + " key is not supported")
		return
	}
	if typ != "string" {
		dk := view(dst)
		if res := c.segment(dk).Delete(dk); res.Status != kv.StatusSuccess && res.Status != kv.StatusNotFound {
			c.storeError(res.Status, "")
			return
		}
		for _, cmd := range fill {
			cmd.Key = dk
			if r := c.segment(dk).Exec(cmd); r.Status != kv.StatusSuccess {
				c.storeError(r.Status, r.Message)
				return
			}
		}
		if info.TTL > 0 {
			c.segment(dk).Expire(dk, info.TTL)
		}
	}
	// The key keeps its idle time or counter, as Redis moves the object.
	switch s := c.segment(sk).(type) {
	case *store.Atomic:
		s.CarryAccess(sk, view(dst))
	case *store.Segment:
		s.CarryAccess(sk, view(dst))
	}
	g.Delete(sk)
	if nx {
		c.out.Int(1)
	} else {
		c.out.OK()
	}
}

// renameStream renames a stream under both keys' locks: the store copies
// its encoding whole — entries, groups, consumers, pending entries, TTL —
// over whatever dst held, then the source is deleted.
func (c *conn) renameStream(src, dst []byte, nx bool) {
	c.atomically(true, [][]byte{src, dst}, func() {
		copied, res := c.tx.Copy(view(src), view(dst), true)
		switch {
		case res.Status != kv.StatusSuccess:
			c.storeError(res.Status, "")
			return
		case !copied:
			c.storeError(kv.StatusNotFound, "")
			return
		}
		c.tx.CarryAccess(view(src), view(dst))
		c.tx.Delete(view(src))
		if nx {
			c.out.Int(1)
		} else {
			c.out.OK()
		}
	})
}

// rebuild turns a collection's content (an array reply) into the commands
// that recreate it, in batches. With swap, pairs are (member, score) and the
// command wants (score, member).
func rebuild(r kv.Reply, op kv.CmdOp, per int, swap bool) []kv.Cmd {
	const batch = 512
	var out []kv.Cmd
	var args [][]byte
	for i := 0; i+per <= len(r.Array); i += per {
		if swap {
			args = append(args, r.Array[i+1].Bulk, r.Array[i].Bulk)
		} else {
			for j := 0; j < per; j++ {
				args = append(args, r.Array[i+j].Bulk)
			}
		}
		if len(args) >= batch*per {
			out = append(out, kv.Cmd{Op: op, Args: args})
			args = nil
		}
	}
	if len(args) > 0 {
		out = append(out, kv.Cmd{Op: op, Args: args})
	}
	return out
}

// cmdExpire implements EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT with the
// NX/XX/GT/LT conditions of Redis 7: the store runs the command whole
// (store/expire.go) — the time converted to absolute milliseconds with the
// store's clock, compared with the key's expiry and written under the
// segment's lock — as it does for the native protocol's commands.
func cmdExpire(op kv.CmdOp) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) { c.exec(op, args[1], args[2:], shapePlain) }
}

// cmdTTL implements TTL, PTTL, EXPIRETIME and PEXPIRETIME: -2 for a missing
// key, -1 for a key without a TTL. The store answers in milliseconds from
// one reading of the key and its clock; seconds round as Redis's
// ttlGenericCommand does ((ms+500)/1000).
func cmdTTL(op kv.CmdOp, seconds bool) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		k := view(args[1])
		r := c.segment(k).Exec(kv.Cmd{Op: op, Key: k})
		switch {
		case r.Status != kv.StatusSuccess:
			c.storeError(r.Status, r.Message)
		case seconds && r.Int >= 0:
			c.out.Int((r.Int + 500) / 1000)
		default:
			c.out.Int(r.Int)
		}
	}
}

func cmdPersist(c *conn, args [][]byte) {
	k := view(args[1])
	g := c.segment(k)
	cur := g.TimeToLive(k)
	if cur.Status != kv.StatusSuccess || cur.TTL == 0 {
		c.out.Int(0)
		return
	}
	switch res := g.Persist(k); res.Status {
	case kv.StatusSuccess:
		c.out.Int(1)
	case kv.StatusNotFound:
		c.out.Int(0)
	default:
		c.storeError(res.Status, "")
	}
}

func cmdKeys(c *conn, args [][]byte) {
	pat := args[1]
	if isLiteralPattern(pat) {
		if len(pat) > 0 && c.exists(pat) {
			c.out.Array(1)
			c.out.Bulk(pat)
		} else {
			c.out.Array(0)
		}
		return
	}
	var keys []string
	c.srv.eachKey(store.KeyRange{Prefix: literalPrefix(pat)}, func(it store.ScanItem) bool {
		if glob.Match(view(pat), it.Key) {
			keys = append(keys, it.Key)
		}
		return true
	})
	c.out.Array(len(keys))
	for _, k := range keys {
		c.out.BulkString(k)
	}
}

// parseCursor reads a SCAN cursor as Redis's strtoul does (kv.ParseCursor,
// shared with the store's SSCAN/HSCAN/ZSCAN).
func parseCursor(b []byte) (uint64, bool) { return kv.ParseCursor(b) }

func cmdScan(c *conn, args [][]byte) {
	cursor, ok := parseCursor(args[1])
	if !ok {
		c.err("ERR invalid cursor")
		return
	}
	count := 10
	var (
		match   []byte
		typ     store.ValueKind
		typeSet bool
		typeOK  = true
	)
	for j := 2; j < len(args); j += 2 {
		if j+1 >= len(args) {
			c.err(msgSyntax)
			return
		}
		v := args[j+1]
		switch {
		case eq(args[j], "COUNT"):
			n, ok := parseInt(v)
			if !ok {
				c.err(msgNotInteger)
				return
			}
			if n < 1 {
				c.err(msgSyntax)
				return
			}
			count = int(min(n, 1<<20))
		case eq(args[j], "MATCH"):
			match = v
		case eq(args[j], "TYPE"):
			typ, typeOK = kindByName(string(v))
			typeSet = true
		default:
			c.err(msgSyntax)
			return
		}
	}
	next, keys := c.srv.scan(cursor, count, func(e *keyEntry) bool {
		if typeSet && (!typeOK || e.kind != typ) {
			return false
		}
		return match == nil || glob.Match(view(match), e.key)
	})
	c.out.Array(2)
	c.out.BulkString(strconv.FormatUint(next, 10))
	c.out.Array(len(keys))
	for _, k := range keys {
		c.out.BulkString(k)
	}
}

func kindByName(name string) (store.ValueKind, bool) {
	for k := store.KindString; k <= store.KindStream; k++ {
		if eq([]byte(name), k.String()) {
			return k, true
		}
	}
	return 0, false
}

func cmdRandomKey(c *conn, _ [][]byte) {
	if k, ok := c.srv.randomKey(); ok {
		c.out.BulkString(k)
		return
	}
	c.out.Null()
}

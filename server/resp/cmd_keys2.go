package resp

import (
	"bytes"
	"context"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/rdb"
	"github.com/zaris-io/zaris/server/store"
)

// Keyspace commands of issue #13 item 5: OBJECT's subcommands, MEMORY
// USAGE, COPY, SORT/SORT_RO, WAIT, and DUMP/RESTORE (the payload codec is
// internal/rdb).

func init() {
	g := func(c *command) *command { c.group = "generic"; return c }
	register(
		g(&command{name: "copy", arity: -3, flags: writeFlags, first: 1, last: 2, step: 1, since: "6.2.0",
			summary: "Copies the value of a key to a new key ([DB 0] [REPLACE]); keys of any slot on one node.", run: cmdCopy, slotLocked: true}),
		g(&command{name: "sort", arity: -2, flags: writeFlags | flagMovableKeys, first: 1, last: 1, step: 1, since: "1.0.0",
			summary: "Sorts the elements in a list, a set, or a sorted set, optionally storing the result ([BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA] [STORE destination]).",
			keys:    sortKeys, run: cmdSort(false)}),
		g(&command{name: "sort_ro", arity: -2, flags: flagReadonly | flagMovableKeys, first: 1, last: 1, step: 1, since: "7.0.0",
			summary: "Returns the sorted elements of a list, a set, or a sorted set (SORT without STORE).", run: cmdSort(true)}),
		g(&command{name: "wait", arity: 3, flags: flagNoScript, since: "3.0.0",
			summary: "Blocks until this connection's writes are applied by numreplicas replicas or the timeout (ms, 0 = none) passes; answers how many applied them.",
			tips:    []string{"request_policy:all_shards", "response_policy:agg_min"}, run: cmdWait}),
		g(&command{name: "dump", arity: 2, flags: flagReadonly, first: 1, last: 1, step: 1, since: "2.6.0",
			summary: "Returns the serialized value of a key in Redis's DUMP format (RDB version 10 with its CRC64).", run: cmdDump}),
		g(&command{name: "restore", arity: -4, flags: writeFlags, first: 1, last: 1, step: 1, since: "2.6.0",
			summary: "Creates a key from a DUMP payload of Zaris or Redis (RDB versions up to 12: strings, lists, sets, sorted sets, hashes, streams) ([REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]).", run: cmdRestore}),
		g(&command{name: "restore-asking", arity: -4, flags: writeFlags | flagAsking, first: 1, last: 1, step: 1, since: "3.0.0",
			summary: "RESTORE as a Redis Cluster node's MIGRATE sends it: MIGRATE from a Redis Cluster into Zaris.", run: cmdRestore}),
		&command{name: "memory", arity: -2, group: "server", since: "4.0.0",
			summary: "A container for memory diagnostics commands.", subs: []*command{
				{name: "usage", arity: -3, flags: flagReadonly, first: 2, last: 2, step: 1,
					summary: "Estimates the memory usage of a key: the bytes it is charged against the node's memory budget.", run: cmdMemoryUsage},
				{name: "help", arity: 2, flags: flagLoading | flagStale, summary: "Returns helpful text about the different subcommands.", run: cmdMemoryHelp},
			}},
	)
}

func objectSubcommands() []*command {
	return []*command{
		{name: "encoding", arity: 3, flags: flagReadonly, first: 2, last: 2, step: 1,
			summary: "Returns the internal encoding of a Redis object (decided by Redis 7.0's default thresholds).", run: cmdObject},
		{name: "freq", arity: 3, flags: flagReadonly, first: 2, last: 2, step: 1,
			summary: "Returns the logarithmic access frequency counter of a Redis object (under an LFU maxmemory-policy).", run: cmdObject},
		{name: "idletime", arity: 3, flags: flagReadonly, first: 2, last: 2, step: 1,
			summary: "Returns the time since the last access to a Redis object.", run: cmdObject},
		{name: "refcount", arity: 3, flags: flagReadonly, first: 2, last: 2, step: 1,
			summary: "Returns the reference count of a value of a key.", run: cmdObject},
		{name: "help", arity: 2, flags: flagLoading | flagStale, summary: "Returns helpful text about the different subcommands.", run: cmdObjectHelp},
	}
}

// inspect describes a key without counting as an access.
func (c *conn) inspect(kb []byte) (store.KeyInfo, kv.Status) {
	k := view(kb)
	switch s := c.segment(k).(type) {
	case *store.Segment:
		return s.Inspect(k)
	case *store.Atomic:
		return s.Inspect(k)
	}
	return store.KeyInfo{}, kv.StatusInternal
}

const (
	msgNoLFU = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
	msgLFU   = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
)

func cmdObject(c *conn, args [][]byte) {
	info, st := c.inspect(args[2])
	switch st {
	case kv.StatusSuccess:
	case kv.StatusNotFound:
		c.out.Null()
		return
	default:
		c.setCurKey(args[2])
		c.storeError(st, "")
		return
	}
	switch {
	case eq(args[1], "ENCODING"):
		c.out.BulkString(info.Encoding)
	case eq(args[1], "FREQ"):
		if !info.LFU {
			c.err(msgNoLFU)
			return
		}
		c.out.Int(int64(info.Freq))
	case eq(args[1], "IDLETIME"):
		if info.LFU {
			c.err(msgLFU)
			return
		}
		c.out.Int(info.IdleMillis / 1000)
	default: // REFCOUNT
		if info.SharedInt {
			c.out.Int(math.MaxInt32) // Redis's shared small integers
		} else {
			c.out.Int(1)
		}
	}
}

// writeHelpText writes a HELP reply of Redis 7.0's shape: a header, the
// lines, and the HELP entry.
func writeHelpText(c *conn, cmd string, lines ...string) {
	c.out.Array(len(lines) + 3)
	c.out.Simple(cmd + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		c.out.Simple(l)
	}
	c.out.Simple("HELP")
	c.out.Simple("    Prints this help.")
}

func cmdObjectHelp(c *conn, _ [][]byte) {
	writeHelpText(c, "OBJECT",
		"ENCODING <key>",
		"    Return the kind of internal representation used in order to store the value",
		"    associated with a <key>.",
		"FREQ <key>",
		"    Return the access frequency index of the <key>. The returned integer is",
		"    proportional to the logarithm of the recent access frequency of the key.",
		"IDLETIME <key>",
		"    Return the idle time of the <key>, that is the approximated number of",
		"    seconds elapsed since the last access to the key.",
		"REFCOUNT <key>",
		"    Return the number of references of the value associated with the specified",
		"    <key>.")
}

func cmdMemoryHelp(c *conn, _ [][]byte) {
	writeHelpText(c, "MEMORY",
		"USAGE <key> [SAMPLES <count>]",
		"    Return memory in bytes used by <key> and its value. Nested values are",
		"    sampled up to <count> times (default: 5, 0 means sample all).")
}

// cmdMemoryUsage answers the bytes the key is charged against the memory
// budget (key, value or elements, and the record's bookkeeping): the
// number eviction and the memory cap act on. SAMPLES is parsed as Redis
// does and ignored (the size is kept exactly, not sampled).
func cmdMemoryUsage(c *conn, args [][]byte) {
	for j := 3; j < len(args); j++ {
		if !eq(args[j], "SAMPLES") || j+1 >= len(args) {
			c.err(msgSyntax)
			return
		}
		n, ok := parseInt(args[j+1])
		if !ok {
			c.err(msgNotInteger)
			return
		}
		if n < 0 {
			c.err(msgSyntax)
			return
		}
		j++
	}
	info, st := c.inspect(args[2])
	switch st {
	case kv.StatusSuccess:
		c.out.Int(info.Bytes)
	case kv.StatusNotFound:
		c.out.Null()
	default:
		c.setCurKey(args[2])
		c.storeError(st, "")
	}
}

// cmdCopy is COPY: the store copies the record (value or collection, TTL)
// under both keys' locks.
func cmdCopy(c *conn, args [][]byte) {
	replace, otherDB := false, false
	for j := 3; j < len(args); j++ {
		switch {
		case eq(args[j], "REPLACE"):
			replace = true
		case eq(args[j], "DB") && j+1 < len(args):
			db, ok := parseInt(args[j+1])
			if !ok {
				c.err(msgNotInteger)
				return
			}
			if db < math.MinInt32 || db > math.MaxInt32 {
				c.err("ERR value is out of range, value must between -2147483648 and 2147483647")
				return
			}
			if db < 0 || db >= 16 {
				c.err("ERR DB index is out of range")
				return
			}
			otherDB = otherDB || db != 0
			j++
		default:
			c.err(msgSyntax)
			return
		}
	}
	// Zaris has database 0 only, as Redis Cluster (D28): another database
	// gets Redis Cluster's answer, after every option was read as Redis does.
	if otherDB {
		c.err("ERR Copying to another database is not allowed in cluster mode")
		return
	}
	if bytes.Equal(args[1], args[2]) {
		c.err("ERR source and destination objects are the same")
		return
	}
	c.atomically(true, args[1:3], func() {
		copied, res := c.tx.Copy(string(args[1]), string(args[2]), replace)
		if res.Status != kv.StatusSuccess {
			c.setCurKey(args[2])
			c.storeError(res.Status, "")
			return
		}
		if copied {
			c.out.Int(1)
		} else {
			c.out.Int(0)
		}
	})
}

// cmdDump is DUMP key: the value as Redis serializes it (internal/rdb), so
// that RESTORE on Zaris or on Redis rebuilds it.
func cmdDump(c *conn, args [][]byte) {
	c.atomically(false, args[1:2], func() {
		v, ok, res := c.tx.Dump(string(args[1]))
		switch {
		case res.Status != kv.StatusSuccess:
			c.setCurKey(args[1])
			c.storeError(res.Status, res.Detail)
		case !ok:
			c.out.Null()
		default:
			c.out.Bulk(rdb.Dump(v))
		}
	})
}

// cmdRestore is RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s]
// [FREQ f], its checks in Redis's order: the options, the key's existence,
// the TTL, the payload. IDLETIME counts under a recency policy, FREQ under
// a frequency one; each is ignored under the other, as in Redis.
func cmdRestore(c *conn, args [][]byte) {
	var o store.RestoreOptions
	idleSet, freqSet := false, false
	for j := 4; j < len(args); j++ {
		more := j+1 < len(args)
		switch {
		case eq(args[j], "REPLACE"):
			o.Replace = true
		case eq(args[j], "ABSTTL"):
			o.AbsTTL = true
		case eq(args[j], "IDLETIME") && more && !freqSet:
			n, ok := parseInt(args[j+1])
			if !ok {
				c.err(msgNotInteger)
				return
			}
			if n < 0 {
				c.err("ERR Invalid IDLETIME value, must be >= 0")
				return
			}
			if n > math.MaxInt64/1000 {
				o.IdleMillis = math.MaxInt64
			} else {
				o.IdleMillis = n * 1000
			}
			idleSet = true
			j++
		case eq(args[j], "FREQ") && more && !idleSet:
			n, ok := parseInt(args[j+1])
			if !ok {
				c.err(msgNotInteger)
				return
			}
			if n < 0 || n > 255 {
				c.err("ERR Invalid FREQ value, must be >= 0 and <= 255")
				return
			}
			o.Freq, o.HasFreq = uint8(n), true
			freqSet = true
			j++
		default:
			c.err(msgSyntax)
			return
		}
	}
	// The TTL and the payload are read before the key's lock is taken (a
	// big payload takes a while to decode); their errors are answered
	// after BUSYKEY's, in Redis's order.
	ttl, ttlOK := parseInt(args[2])
	v, decodeErr := rdb.Restore(args[3])
	c.atomically(true, args[1:2], func() {
		key := string(args[1])
		if !o.Replace {
			if _, st := c.tx.Inspect(key); st == kv.StatusSuccess {
				c.out.Error("BUSYKEY Target key name already exists.")
				return
			}
		}
		switch {
		case !ttlOK:
			c.err(msgNotInteger)
			return
		case ttl < 0:
			c.err("ERR Invalid TTL value, must be >= 0")
			return
		case decodeErr != nil:
			c.err("ERR " + decodeErr.Error())
			return
		}
		o.TTLMillis = ttl
		busy, res := c.tx.Restore(key, v, o)
		switch {
		case res.Status != kv.StatusSuccess:
			c.setCurKey(args[1])
			c.storeError(res.Status, res.Detail)
		case busy:
			c.out.Error("BUSYKEY Target key name already exists.")
		default:
			c.out.OK()
		}
	})
}

// --- SORT ---

// sortKeys are SORT's keys: the sorted key and the STORE destination.
func sortKeys(args [][]byte) []int {
	if len(args) < 2 {
		return nil
	}
	out := []int{1}
	store := 0
	for j := 2; j < len(args); j++ {
		switch {
		case eq(args[j], "STORE") && j+1 < len(args):
			store = j + 1 // the last STORE is the one SORT writes (Redis's sortGetKeys)
			j++
		case (eq(args[j], "BY") || eq(args[j], "GET")) && j+1 < len(args):
			j++
		case eq(args[j], "LIMIT") && j+2 < len(args):
			j += 2
		}
	}
	if store > 0 {
		out = append(out, store)
	}
	return out
}

// sortSpec is a parsed SORT.
type sortSpec struct {
	desc, alpha, dontSort bool
	start, count          int64
	by                    []byte
	gets                  [][]byte
	store                 []byte
}

// servesAll reports whether the committed map gives this node every
// segment (or there is no map: a lone node), where SORT's BY and GET
// patterns may name keys of any slot. It reads no segment lock: SORT may
// run inside EXEC, under the transaction's locks.
func (c *conn) servesAll() bool {
	src := c.srv.cfg.Routing
	if src == nil {
		return true
	}
	m := src.RoutingMap()
	if m == nil || len(m.SegmentOwner) == 0 {
		return true
	}
	for _, owner := range m.SegmentOwner {
		if owner < 0 || int(owner) >= len(m.Nodes) || m.Nodes[owner].ID != c.srv.cfg.NodeID {
			return false
		}
	}
	return true
}

func parseSort(c *conn, args [][]byte, readonly bool) (sortSpec, bool) {
	sp := sortSpec{count: -1}
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch {
		case eq(args[j], "ASC"):
			sp.desc = false
		case eq(args[j], "DESC"):
			sp.desc = true
		case eq(args[j], "ALPHA"):
			sp.alpha = true
		case eq(args[j], "LIMIT") && left >= 2:
			var ok1, ok2 bool
			sp.start, ok1 = parseInt(args[j+1])
			sp.count, ok2 = parseInt(args[j+2])
			if !ok1 || !ok2 {
				c.err(msgNotInteger)
				return sp, false
			}
			j += 2
		case !readonly && eq(args[j], "STORE") && left >= 1:
			sp.store = args[j+1]
			j++
		case eq(args[j], "BY") && left >= 1:
			sp.by = args[j+1]
			if bytes.IndexByte(sp.by, '*') < 0 {
				sp.dontSort = true
			} else if !c.servesAll() {
				// Keys named by a pattern may live on any node: refused as
				// Redis Cluster refuses them.
				c.err("ERR BY option of SORT denied in Cluster mode.")
				return sp, false
			}
			j++
		case eq(args[j], "GET") && left >= 1:
			if !c.servesAll() {
				c.err("ERR GET option of SORT denied in Cluster mode.")
				return sp, false
			}
			sp.gets = append(sp.gets, args[j+1])
			j++
		default:
			c.err(msgSyntax)
			return sp, false
		}
	}
	return sp, true
}

// patternKey substitutes subst for the first '*' of pattern (Redis's
// lookupKeyByPattern): the key, and the hash field after "->" if any; ok
// false when the pattern has no '*'.
func patternKey(pattern, subst []byte) (key, field []byte, ok bool) {
	star := bytes.IndexByte(pattern, '*')
	if star < 0 {
		return nil, nil, false
	}
	post := pattern[star+1:]
	if arrow := bytes.Index(post, []byte("->")); arrow >= 0 && arrow+2 < len(post) {
		field = post[arrow+2:]
		post = post[:arrow]
	}
	key = make([]byte, 0, star+len(subst)+len(post))
	key = append(append(append(key, pattern[:star]...), subst...), post...)
	return key, field, true
}

// errOutsideLocks: a pattern named a key of a segment the sort does not
// hold; the sort retries holding it too.
type sortNeeds struct{ segs []uint16 }

// sortLookup resolves a BY or GET pattern for one element: the value (a
// string key's, or a hash field's) or nil. Keys of segments not held are
// collected in needs.
func (c *conn) sortLookup(pattern, elem []byte, needs *sortNeeds) []byte {
	if len(pattern) == 1 && pattern[0] == '#' {
		return elem
	}
	key, field, ok := patternKey(pattern, elem)
	if !ok || len(key) == 0 {
		return nil
	}
	k := view(key)
	if field == nil {
		res := c.segment(k).Get(k)
		if res.Status == kv.StatusBadRequest {
			needs.segs = append(needs.segs, placement.SegmentOf(k, c.srv.segs))
		}
		if res.Status != kv.StatusSuccess {
			return nil
		}
		return res.Value
	}
	r := c.segment(k).Exec(kv.Cmd{Op: kv.CmdHGet, Key: k, Args: [][]byte{field}})
	if r.Status == kv.StatusBadRequest && strings.HasPrefix(r.Message, "CROSSSLOT") {
		needs.segs = append(needs.segs, placement.SegmentOf(k, c.srv.segs))
	}
	if r.Status != kv.StatusSuccess || r.Type != kv.ReplyBulk {
		return nil
	}
	return r.Bulk
}

// strtod parses a sort weight as Redis's strtod-based check does
// (kv.Strtod: leading blanks allowed, the rest a number, the empty string
// 0, text after a NUL byte ignored, as C reads the string); NaN and
// out-of-range values refused.
func strtod(b []byte) (float64, bool) {
	f, ok, overflow, underflow := kv.Strtod(b)
	if !ok || overflow || underflow || math.IsNaN(f) { // any ERANGE, as sort.c checks errno
		return 0, false
	}
	return f, true
}

func cmdSort(readonly bool) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		sp, ok := parseSort(c, args, readonly)
		if !ok {
			return
		}
		if c.tx != nil { // inside EXEC: the transaction's view, whatever it holds
			var needs sortNeeds
			mark := len(c.out.B)
			c.sortLocked(args[1], sp, &needs)
			if len(needs.segs) > 0 {
				// A pattern named a key of a slot the transaction does not
				// hold (its locks were taken before SORT ran).
				c.out.B = c.out.B[:mark]
				c.err("ERR SORT inside MULTI/EXEC: a BY or GET pattern names a key of a slot the transaction does not include")
			}
			return
		}
		// Lock the source's and destination's segments, then those the
		// patterns reach; if the elements name keys of segments not held,
		// start again holding those too.
		keys := [][]byte{args[1]}
		if sp.store != nil {
			keys = append(keys, sp.store)
		}
		var segs []uint16
		for _, k := range keys {
			segs = append(segs, placement.SegmentOf(view(k), c.srv.segs))
		}
		for attempt := 0; attempt < 8; attempt++ {
			var needs sortNeeds
			mark := len(c.out.B)
			c.srv.store.AtomicallyMany(segs, func(a *store.Atomic) {
				if sp.store != nil && a.Fenced() {
					c.out.Error("TRYAGAIN a key's slot is moving to another node; retry")
					return
				}
				c.tx = a
				defer func() { c.tx = nil }()
				c.sortLocked(args[1], sp, &needs)
			})
			if len(needs.segs) == 0 {
				return
			}
			c.out.B = c.out.B[:mark] // the attempt's reply: it is answered again
			c.status = kv.StatusSuccess
			segs = append(segs, needs.segs...)
			slices.Sort(segs)
			segs = slices.Compact(segs)
		}
		c.storeError(kv.StatusConflict, "the keys SORT's patterns name keep changing")
	}
}

// sortLocked runs SORT through c.tx. With needs non-empty on return the
// caller discards the reply and retries with more segments held.
func (c *conn) sortLocked(src []byte, sp sortSpec, needs *sortNeeds) {
	typ := c.keyType(src)
	var elems [][]byte
	switch typ {
	case "none":
	case "list":
		elems = bulks(c.execRaw(kv.CmdLRange, src, []byte("0"), []byte("-1")))
	case "set":
		elems = bulks(c.execRaw(kv.CmdSMembers, src))
	case "zset":
		elems = bulks(c.execRaw(kv.CmdZRange, src, []byte("0"), []byte("-1")))
	default:
		c.storeError(kv.StatusWrongType, "")
		return
	}
	dontSort, alpha, by := sp.dontSort, sp.alpha, sp.by
	if dontSort && typ == "set" && (sp.store != nil || c.inScript) {
		// An unordered set stored, or handed to a script, must come out
		// the same on a replica: sorted, as Redis forces it.
		dontSort, alpha, by = false, true, nil
	}
	n := int64(len(elems))
	start := max(sp.start, 0)
	end := n - 1
	if sp.count >= 0 && start <= math.MaxInt64-max(sp.count-1, 0) { // an end past int64 is the last element
		end = start + sp.count - 1
	}
	if start >= n {
		start, end = n-1, n-2
	}
	end = min(end, n-1)
	if dontSort && (typ == "list" || typ == "zset") && sp.desc {
		slices.Reverse(elems)
	}
	if !dontSort {
		type item struct {
			elem  []byte
			score float64
			cmp   []byte
		}
		items := make([]item, len(elems))
		convErr := false
		for i, e := range elems {
			items[i].elem = e
			w := e
			if by != nil {
				if w = c.sortLookup(by, e, needs); w == nil {
					continue
				}
			}
			if alpha {
				if by != nil {
					items[i].cmp = w
				}
				continue
			}
			f, ok := strtod(w)
			if !ok {
				convErr = true
			}
			items[i].score = f
		}
		if len(needs.segs) > 0 {
			return
		}
		if convErr {
			c.err("ERR One or more scores can't be converted into double")
			return
		}
		// ALPHA compares bytes with STORE and, without it, as C strings up
		// to their first NUL byte — Redis's strcoll (under the C locale a
		// server runs with), so "a\x00b" and "a" tie there.
		collate := bytes.Compare
		if sp.store == nil {
			collate = cStringCompare
		}
		sort.SliceStable(items, func(i, j int) bool {
			a, b := items[i], items[j]
			var cmp int
			switch {
			case !alpha:
				switch {
				case a.score < b.score:
					cmp = -1
				case a.score > b.score:
					cmp = 1
				default:
					cmp = bytes.Compare(a.elem, b.elem)
				}
			case by != nil:
				switch {
				case a.cmp == nil && b.cmp == nil:
				case a.cmp == nil:
					cmp = -1
				case b.cmp == nil:
					cmp = 1
				default:
					cmp = collate(a.cmp, b.cmp)
				}
			default:
				cmp = collate(a.elem, b.elem)
			}
			if sp.desc {
				cmp = -cmp
			}
			return cmp < 0
		})
		for i := range items {
			elems[i] = items[i].elem
		}
	}
	var picked [][]byte
	if end >= start {
		picked = elems[start : end+1]
	}
	// The output: the elements, or each GET pattern's value per element.
	var out [][]byte
	var found []bool
	for _, e := range picked {
		if len(sp.gets) == 0 {
			out = append(out, e)
			found = append(found, true)
			continue
		}
		for _, pat := range sp.gets {
			v := c.sortLookup(pat, e, needs)
			out = append(out, v)
			found = append(found, v != nil)
		}
	}
	if len(needs.segs) > 0 {
		return
	}
	if sp.store == nil {
		c.out.Array(len(out))
		for i, v := range out {
			if found[i] {
				c.out.Bulk(v)
			} else {
				c.out.Null()
			}
		}
		return
	}
	c.sortStore(sp.store, out)
}

func bulks(r kv.Reply) [][]byte {
	out := make([][]byte, len(r.Array))
	for i, e := range r.Array {
		out[i] = e.Bulk
	}
	return out
}

// sortStore replaces dst with a list of vals (a missing GET value stored
// as an empty string), or deletes it for an empty result; the caps are
// checked first, so a refused store changes nothing.
func (c *conn) sortStore(dst []byte, vals [][]byte) {
	for i, v := range vals {
		if v == nil {
			vals[i] = []byte{}
		}
	}
	if !c.srv.store.ListFits(vals) {
		c.setCurKey(dst)
		c.storeError(kv.StatusItemTooLarge, "")
		return
	}
	dk := view(dst)
	seg := c.segment(dk)
	if res := seg.Delete(dk); res.Status != kv.StatusSuccess && res.Status != kv.StatusNotFound {
		c.setCurKey(dst)
		c.storeError(res.Status, "")
		return
	}
	const batch = 512
	for i := 0; i < len(vals); i += batch {
		r := seg.Exec(kv.Cmd{Op: kv.CmdRPush, Key: dk, Args: vals[i:min(i+batch, len(vals))]})
		if r.Status != kv.StatusSuccess {
			c.setCurKey(dst)
			c.storeError(r.Status, r.Message)
			return
		}
	}
	c.out.Int(int64(len(vals)))
}

// --- WAIT ---

// ReplicaWaiter tells WAIT how far the replicas of a segment got.
type ReplicaWaiter interface {
	// WaitReplicas returns, as soon as want replicas of seg's partition
	// have applied revision rev or ctx ends, how many have.
	WaitReplicas(ctx context.Context, seg uint16, rev uint64, want int) int
}

// cmdWait is WAIT numreplicas timeout: the number of replicas that have
// applied every write this connection made, the smallest over the
// segments it wrote (each segment's partition has its own replicas).
// Without replication (a one-node cluster) that is 0, answered at once.
// Inside EXEC it does not block, as in Redis.
func cmdWait(c *conn, args [][]byte) {
	want, ok := parseInt(args[1])
	if !ok {
		c.err(msgNotInteger)
		return
	}
	ms, ok := parseInt(args[2])
	if !ok {
		c.err("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		c.err("ERR timeout is negative")
		return
	}
	waiter := c.srv.cfg.Replicas
	if waiter == nil || !c.written.any {
		c.out.Int(0)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	switch {
	case c.tx != nil:
		cancel() // no blocking under a transaction's locks
	case ms > 0:
		ctx, cancel = context.WithTimeout(ctx, time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond)))*time.Millisecond)
		defer cancel()
	}
	unblocked := func() (bool, bool) { return false, false }
	if c.tx == nil {
		c.resolveWritten()
		unblocked = c.guardWait(cancel)
	}
	need := int(min(max(want, 0), math.MaxInt32))
	least := -1
	for seg, rev := range c.written.revs {
		if rev == 0 {
			continue
		}
		if rev == writtenUnresolved {
			rev = 0 // under a transaction's locks: not resolved, as before
		}
		if n := waiter.WaitReplicas(ctx, uint16(seg), rev, need); least < 0 || n < least {
			least = n
		}
	}
	if ended, withError := unblocked(); ended && withError {
		c.err("UNBLOCKED client unblocked via CLIENT UNBLOCK")
		return
	}
	c.out.Int(int64(max(least, 0))) // CLIENT UNBLOCK … TIMEOUT too: the count so far
}

// writtenSegments are the segments a client wrote, for WAIT: per segment
// 0 (not written), writtenUnresolved (written; its revision is read when
// WAIT runs) or the revision WAIT resolved. An array indexed by segment,
// not a map: noteWrite runs after every write (a map assignment there was
// 5 % of an INCR -P 16's CPU).
type writtenSegments struct {
	revs []uint64 // by segment; nil until the first write
	all  bool     // a write whose segments are not known one by one (keys of several segments, or keyless)
	any  bool
}

const writtenUnresolved = 1 << 63

// noteWrite records the segment a successful write command wrote, for
// WAIT. The revision is read later (resolveWritten): under a transaction's
// locks it cannot be read now, and a later revision only waits for more.
func (c *conn) noteWrite() {
	w := &c.written
	w.any = true
	if c.curKey != nil && !c.multiSeg {
		if w.revs == nil {
			w.revs = make([]uint64, c.srv.segs)
		}
		w.revs[c.curSegment()] = writtenUnresolved
		return
	}
	w.all = true
}

// resolveWritten gives every written segment without a revision the
// segment's current one (which includes the write).
func (c *conn) resolveWritten() {
	w := &c.written
	if w.revs == nil {
		w.revs = make([]uint64, c.srv.segs)
	}
	if w.all {
		w.all = false
		for s := range w.revs {
			if c.served(uint16(s)) {
				w.revs[s] = writtenUnresolved
			}
		}
	}
	for s, rev := range w.revs {
		if rev == writtenUnresolved {
			w.revs[s] = c.srv.store.Segment(uint16(s)).Revision()
		}
	}
}

// cStringCompare orders a and b as C's strcmp does: each up to its first
// NUL byte, bytes unsigned.
func cStringCompare(a, b []byte) int {
	if i := bytes.IndexByte(a, 0); i >= 0 {
		a = a[:i]
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return bytes.Compare(a, b)
}

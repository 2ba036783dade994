package resp

import (
	"strings"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/store"
)

// Bitmap and string-algorithm commands (issue #13 item 5). The one-key
// commands run in the store engine (server/store/bits.go); BITOP and LCS,
// which read several keys, run here under the keys' segment locks
// (atomically), following the multi-key rule of multikey.go.

func init() {
	b := func(c *command) *command { c.group = "bitmap"; return c }
	s := func(c *command) *command { c.group = "string"; return c }
	register(
		b(&command{name: "setbit", arity: 4, flags: writeFlags, first: 1, last: 1, step: 1, since: "2.2.0",
			summary: "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", run: execCoded(kv.CmdSetBit, shapePlain)}),
		b(&command{name: "getbit", arity: 3, flags: flagReadonly | flagFast, first: 1, last: 1, step: 1, since: "2.2.0",
			summary: "Returns a bit value by offset.", run: execCoded(kv.CmdGetBit, shapePlain)}),
		b(&command{name: "bitcount", arity: -2, flags: flagReadonly, first: 1, last: 1, step: 1, since: "2.6.0",
			summary: "Counts the number of set bits (population counting) in a string ([start end [BYTE|BIT]]).", run: execCoded(kv.CmdBitCount, shapePlain)}),
		b(&command{name: "bitpos", arity: -3, flags: flagReadonly, first: 1, last: 1, step: 1, since: "2.8.7",
			summary: "Finds the first set (1) or clear (0) bit in a string ([start [end [BYTE|BIT]]]).", run: execCoded(kv.CmdBitPos, shapePlain)}),
		b(&command{name: "bitfield", arity: -2, flags: writeFlags, first: 1, last: 1, step: 1, since: "3.2.0",
			summary: "Performs arbitrary bitfield integer operations on strings (GET, SET, INCRBY, OVERFLOW WRAP|SAT|FAIL).", run: execCoded(kv.CmdBitField, shapePlain)}),
		b(&command{name: "bitfield_ro", arity: -2, flags: flagReadonly | flagFast, first: 1, last: 1, step: 1, since: "6.0.0",
			summary: "Performs arbitrary read-only bitfield integer operations on strings (GET only).", run: execCoded(kv.CmdBitFieldRO, shapePlain)}),
		b(&command{name: "bitop", arity: -4, flags: writeFlags, first: 2, last: -1, step: 1, since: "2.6.0",
			summary: "Performs bitwise operations (AND, OR, XOR, NOT) on multiple strings, and stores the result; keys of any slot on one node.", run: cmdBitOp}),
		s(&command{name: "lcs", arity: -3, flags: flagReadonly, first: 1, last: 2, step: 1, since: "7.0.0",
			summary: "Finds the longest common substring ([LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]).", run: cmdLCS}),
		s(&command{name: "substr", arity: 4, flags: flagReadonly, first: 1, last: 1, step: 1, since: "1.0.0",
			summary: "Returns a substring from a string value (the old name of GETRANGE).", run: execCmd(kv.CmdGetRange, shapePlain)}),
	)
}

// execCoded is execCmd for store commands whose errors carry their own
// Redis error code (WRONGTYPE with a specific text, INVALIDOBJ).
func execCoded(op kv.CmdOp, sh shape) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		c.writeCoded(c.execRaw(op, args[1], args[2:]...), sh)
	}
}

// writeCoded writes a store reply, passing through an error message that
// starts with its own Redis code.
func (c *conn) writeCoded(r kv.Reply, sh shape) {
	if r.Status != kv.StatusSuccess {
		if code, _, _ := strings.Cut(r.Message, " "); code == "WRONGTYPE" || code == "INVALIDOBJ" {
			c.status = r.Status
			c.out.Error(r.Message)
			return
		}
	}
	c.writeReply(r, sh)
}

// getString reads a string key for a multi-key command: its value (nil
// and true when missing), or false after writing the error.
func (c *conn) getString(kb []byte) ([]byte, bool) {
	k := view(kb)
	res := c.segment(k).Get(k)
	switch res.Status {
	case kv.StatusSuccess:
		return res.Value, true
	case kv.StatusNotFound:
		return nil, true
	}
	c.setCurKey(kb)
	c.storeError(res.Status, "")
	return nil, false
}

func cmdBitOp(c *conn, args [][]byte) {
	var op byte
	switch {
	case eq(args[1], "AND"):
		op = '&'
	case eq(args[1], "OR"):
		op = '|'
	case eq(args[1], "XOR"):
		op = '^'
	case eq(args[1], "NOT"):
		op = '~'
	default:
		c.err(msgSyntax)
		return
	}
	if op == '~' && len(args) != 4 {
		c.err("ERR BITOP NOT must be called with a single source key.")
		return
	}
	c.atomically(true, args[2:], func() {
		srcs := make([][]byte, 0, len(args)-3)
		n := 0
		for _, k := range args[3:] {
			v, ok := c.getString(k)
			if !ok {
				return
			}
			srcs = append(srcs, v)
			n = max(n, len(v))
		}
		dst := args[2]
		if n == 0 {
			dk := view(dst)
			if res := c.segment(dk).Delete(dk); res.Status != kv.StatusSuccess && res.Status != kv.StatusNotFound {
				c.storeError(res.Status, "")
				return
			}
			c.out.Int(0)
			return
		}
		out := make([]byte, n)
		at := func(v []byte, i int) byte {
			if i < len(v) {
				return v[i]
			}
			return 0
		}
		for i := range out {
			acc := at(srcs[0], i)
			for _, v := range srcs[1:] {
				switch op {
				case '&':
					acc &= at(v, i)
				case '|':
					acc |= at(v, i)
				case '^':
					acc ^= at(v, i)
				}
			}
			if op == '~' {
				acc = ^acc
			}
			out[i] = acc
		}
		dk := view(dst)
		if res := c.segment(dk).Put(string(dst), out, nil); res.Status != kv.StatusSuccess {
			c.setCurKey(dst)
			c.storeError(res.Status, "")
			return
		}
		c.out.Int(int64(n))
	})
}

// lcsMaxTable bounds LCS's dynamic-programming table (4 bytes a cell), as
// Redis bounds it by proto-max-bulk-len.
const lcsMaxTable = store.MaxStringBytes

func cmdLCS(c *conn, args [][]byte) {
	var a, b []byte
	ok := true
	c.atomically(false, args[1:3], func() {
		for i, kb := range args[1:3] {
			k := view(kb)
			res := c.segment(k).Get(k)
			switch res.Status {
			case kv.StatusSuccess:
				if i == 0 {
					a = res.Value
				} else {
					b = res.Value
				}
			case kv.StatusNotFound:
			case kv.StatusWrongType:
				c.err("ERR The specified keys must contain string values")
				ok = false
				return
			default:
				c.setCurKey(kb)
				c.storeError(res.Status, "")
				ok = false
				return
			}
		}
	})
	if !ok {
		return
	}
	var getLen, getIdx, withLen bool
	var minLen int64
	for j := 3; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eq(args[j], "IDX"):
			getIdx = true
		case eq(args[j], "LEN"):
			getLen = true
		case eq(args[j], "WITHMATCHLEN"):
			withLen = true
		case eq(args[j], "MINMATCHLEN") && more > 0:
			n, ok := parseInt(args[j+1])
			if !ok {
				c.err(msgNotInteger)
				return
			}
			minLen = max(n, 0)
			j++
		default:
			c.err(msgSyntax)
			return
		}
	}
	if getIdx && getLen {
		c.err("ERR If you want both the length and indexes, please just use IDX.")
		return
	}
	if (uint64(len(a))+1)*(uint64(len(b))+1)*4 > lcsMaxTable {
		c.err("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
		return
	}
	w := len(b) + 1
	t := make([]uint32, (len(a)+1)*w)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			if a[i-1] == b[j-1] {
				t[i*w+j] = t[(i-1)*w+j-1] + 1
			} else {
				t[i*w+j] = max(t[(i-1)*w+j], t[i*w+j-1])
			}
		}
	}
	total := t[len(a)*w+len(b)]
	if getLen {
		c.out.Int(int64(total))
		return
	}
	// Walk back from the end, building the string and the matching ranges
	// (latest first, as Redis emits them).
	type match struct{ a0, a1, b0, b1 int }
	var matches []match
	res := make([]byte, total)
	idx := int(total)
	cur, open := match{}, false
	emit := func() {
		if n := cur.a1 - cur.a0 + 1; minLen == 0 || int64(n) >= minLen {
			matches = append(matches, cur)
		}
		open = false
	}
	for i, j := len(a), len(b); i > 0 && j > 0; {
		if a[i-1] == b[j-1] {
			res[idx-1] = a[i-1]
			if !open {
				cur, open = match{i - 1, i - 1, j - 1, j - 1}, true
			} else {
				cur.a0, cur.b0 = i-1, j-1
			}
			idx--
			i--
			j--
			if cur.a0 == 0 || cur.b0 == 0 {
				emit()
			}
			continue
		}
		if t[(i-1)*w+j] > t[i*w+j-1] {
			i--
		} else {
			j--
		}
		if open {
			emit()
		}
	}
	if !getIdx {
		c.out.Bulk(res)
		return
	}
	c.out.Map(2)
	c.out.BulkString("matches")
	c.out.Array(len(matches))
	for _, m := range matches {
		if withLen {
			c.out.Array(3)
		} else {
			c.out.Array(2)
		}
		c.out.Array(2)
		c.out.Int(int64(m.a0))
		c.out.Int(int64(m.a1))
		c.out.Array(2)
		c.out.Int(int64(m.b0))
		c.out.Int(int64(m.b1))
		if withLen {
			c.out.Int(int64(m.a1 - m.a0 + 1))
		}
	}
	c.out.BulkString("len")
	c.out.Int(int64(total))
}

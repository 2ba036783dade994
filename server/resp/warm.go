package resp

import (
	"bytes"

	"github.com/zaris-io/zaris/server/store"
)

// Read-ahead of a pipeline's keys (issue #17). A pipelined batch's commands
// each begin with a lookup whose cache misses (the index slot, the record)
// the CPU would otherwise wait for one command at a time; before the first
// of a batch runs, the connection hands the store the keys of the commands
// already buffered behind it, so that those misses overlap (store.WarmAhead).
// A lone command is never scanned: nothing follows it to overlap with.

// warmAhead reads ahead the keys of the command just parsed (args) and of
// the complete commands buffered after it, up to store.WarmBatch of them,
// and remembers how far it looked so that the commands it covered do not
// trigger another pass.
func (c *conn) warmAhead(args [][]byte) {
	keys, fields, lasts := c.warmKeys[:0], c.warmFields[:0], c.warmLasts[:0]
	if len(args) > 1 {
		keys = append(keys, args[1])
		var field, last []byte
		if len(args) > 2 {
			field, last = args[2], args[len(args)-1]
		}
		fields, lasts = append(fields, field), append(lasts, last)
	}
	at := c.r
	for len(keys) < store.WarmBatch {
		key, field, last, n := keyAhead(c.buf[at:c.w])
		if n == 0 {
			break
		}
		at += n
		if key != nil {
			keys, fields, lasts = append(keys, key), append(fields, field), append(lasts, last)
		}
	}
	c.warmTo = at
	if len(keys) > 1 {
		c.warmSum += c.srv.store.WarmAheadFields(keys, fields, lasts)
	}
}

// keyAhead reads the complete multibulk command at the start of buf without
// the parser's state or limits: its second and third arguments and, when
// it has a third, its last (nil when it has fewer), and its length in
// bytes. n is 0 when buf does not start with a
// complete, well-formed multibulk command of sane sizes — the read-ahead
// then stops there and the parser, which owns the errors, meets it in turn.
func keyAhead(buf []byte) (key, field, last []byte, n int) {
	count, at := aheadLen(buf, '*')
	if at == 0 || count > 1<<20 {
		return nil, nil, nil, 0
	}
	for i := range count {
		size, hdr := aheadLen(buf[n+at:], '$')
		if hdr == 0 {
			return nil, nil, nil, 0
		}
		lo := n + at + hdr
		end := lo + size
		if size > len(buf) || end+2 > len(buf) || buf[end] != '\r' || buf[end+1] != '\n' {
			return nil, nil, nil, 0
		}
		switch {
		case i == 1:
			key = buf[lo:end:end]
		case i == 2:
			field = buf[lo:end:end]
		}
		if i >= 2 && i == count-1 {
			last = buf[lo:end:end]
		}
		n, at = end+2, 0
	}
	if count == 0 {
		n = at
	}
	return key, field, last, n
}

// aheadLen reads a "<lead><count>\r\n" header: the count and the header's
// length, which is 0 unless buf starts with such a header whose count the
// parser would read too and that is at most 2³⁰.
func aheadLen(buf []byte, lead byte) (v, n int) {
	if len(buf) < 4 || buf[0] != lead {
		return 0, 0
	}
	if x, n, ok := shortHeader(buf); ok {
		if x > 1<<30 {
			return 0, 0
		}
		return int(x), n
	}
	cr := bytes.IndexByte(buf[1:min(len(buf), 12)], '\r') + 1
	if cr < 2 || cr+1 >= len(buf) || buf[cr+1] != '\n' {
		return 0, 0
	}
	x, ok := parseInt(buf[1:cr])
	if !ok || x < 0 || x > 1<<30 {
		return 0, 0
	}
	return int(x), cr + 2
}

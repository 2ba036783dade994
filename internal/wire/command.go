package wire

import (
	"unsafe"

	"github.com/zaris-io/zaris/internal/kv"
)

// viewString returns a string sharing b's memory. A decoded command's key
// aliases the body like every other decoded key: whoever keeps it copies it.
func viewString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// AppendCommandRequest appends an OpCommand body:
//
//	[Op uint, Key str, Args array of bin]   (all required)
func AppendCommandRequest(dst []byte, c *kv.Cmd) []byte {
	dst = appendArrayHeader(dst, 3)
	dst = appendUint(dst, uint64(c.Op))
	dst = appendStr(dst, c.Key)
	dst = appendArrayHeader(dst, len(c.Args))
	for _, a := range c.Args {
		dst = appendBytes(dst, a)
	}
	return dst
}

// DecodeCommandRequest decodes an OpCommand body into c. The key (a string
// sharing body's memory) and the arguments alias body: valid only while body
// is. c.Args is reused when large enough.
func DecodeCommandRequest(body []byte, c *kv.Cmd) error {
	d := decoder{b: body, body: "command request"}
	n, err := d.beginStruct(3)
	if err != nil {
		return err
	}
	d.field = "op"
	op, err := d.readUint(0xffff)
	if err != nil {
		return err
	}
	d.field = "key"
	key, err := d.readBytes()
	if err != nil {
		return err
	}
	d.field = "args"
	na, err := d.readArrayHeader()
	if err != nil {
		return err
	}
	if na > d.remaining() { // every argument takes at least one byte
		return d.truncated(na)
	}
	args := c.Args[:0]
	for range na {
		a, err := d.readBytes()
		if err != nil {
			return err
		}
		args = append(args, a)
	}
	if err := d.endStruct(n, 3); err != nil {
		return err
	}
	if err := d.finish(); err != nil {
		return err
	}
	c.Op, c.Key, c.Args = kv.CmdOp(op), viewString(key), args
	return nil
}

// MaxReplyDepth bounds the nesting of a Reply (a stream reply is three
// levels deep), so a hostile body cannot exhaust the decoder's stack.
const MaxReplyDepth = 8

// AppendReply appends a Reply body:
//
//	[Status uint, Type uint]                                   (required)
//	[Int int, Bulk bin|nil, Array array of Reply|nil,
//	 Version uint, Revision uint, Message str]                 (optional)
func AppendReply(dst []byte, r *kv.Reply) []byte {
	fields := 8
	switch {
	case r.Message != "":
	case r.Revision != 0:
		fields = 7
	case r.Version != 0:
		fields = 6
	case r.Array != nil:
		fields = 5
	case r.Bulk != nil:
		fields = 4
	case r.Int != 0:
		fields = 3
	default:
		fields = 2
	}
	dst = appendArrayHeader(dst, fields)
	dst = appendUint(dst, uint64(r.Status))
	dst = appendUint(dst, uint64(r.Type))
	if fields > 2 {
		dst = appendInt(dst, r.Int)
	}
	if fields > 3 {
		if r.Bulk == nil {
			dst = appendNil(dst)
		} else {
			dst = appendBytes(dst, r.Bulk)
		}
	}
	if fields > 4 {
		if r.Array == nil {
			dst = appendNil(dst)
		} else {
			dst = appendArrayHeader(dst, len(r.Array))
			for i := range r.Array {
				dst = AppendReply(dst, &r.Array[i])
			}
		}
	}
	if fields > 5 {
		dst = appendUint(dst, r.Version)
	}
	if fields > 6 {
		dst = appendUint(dst, r.Revision)
	}
	if fields > 7 {
		dst = appendStr(dst, r.Message)
	}
	return dst
}

// DecodeReply decodes a Reply body. Bulk values alias body.
func DecodeReply(body []byte, r *kv.Reply) error {
	d := decoder{b: body, body: "reply"}
	if err := decodeReply(&d, r, 0); err != nil {
		return err
	}
	return d.finish()
}

func decodeReply(d *decoder, r *kv.Reply, depth int) error {
	if depth > MaxReplyDepth {
		return d.fail("reply nested deeper than %d", MaxReplyDepth)
	}
	*r = kv.Reply{}
	n, err := d.beginStruct(2)
	if err != nil {
		return err
	}
	d.field = "status"
	st, err := d.readUint(0xff)
	if err != nil {
		return err
	}
	d.field = "type"
	typ, err := d.readUint(0xff)
	if err != nil {
		return err
	}
	r.Status, r.Type = kv.Status(st), kv.ReplyType(typ)
	if n > 2 {
		d.field = "int"
		if r.Int, err = d.readInt(); err != nil {
			return err
		}
	}
	if n > 3 {
		d.field = "bulk"
		if !d.consumeNil() {
			if r.Bulk, err = d.readBytes(); err != nil {
				return err
			}
		}
	}
	if n > 4 {
		d.field = "array"
		if !d.consumeNil() {
			na, err := d.readArrayHeader()
			if err != nil {
				return err
			}
			if na > d.remaining()/3 { // a reply takes at least three bytes
				return d.truncated(na * 3)
			}
			r.Array = make([]kv.Reply, na)
			for i := range r.Array {
				if err := decodeReply(d, &r.Array[i], depth+1); err != nil {
					return err
				}
			}
		}
	}
	if n > 5 {
		d.field = "version"
		if r.Version, err = d.readUint(^uint64(0)); err != nil {
			return err
		}
	}
	if n > 6 {
		d.field = "revision"
		if r.Revision, err = d.readUint(^uint64(0)); err != nil {
			return err
		}
	}
	if n > 7 {
		d.field = "message"
		if r.Message, err = d.readString(); err != nil {
			return err
		}
	}
	return d.endStruct(n, 8)
}

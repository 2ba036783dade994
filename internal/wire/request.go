package wire

import (
	"fmt"
	"math"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// Request bodies. Field lists give the positional order; "required" fields
// must be present, the others may be left out (trailing) or nil and then take
// their zero value. Encoders leave out trailing fields at their zero value, so
// an unconditional Put without options is [key, value].
//
// Decoded keys and values are views of the body: no copy, valid as long as
// the body is (for FrameReader, until the next Next). A server that stores a
// value must copy it; looking a key up as m[string(key)] does not allocate.

// ---------------------------------------------------------------- key requests

// AppendKeyRequest appends the body shared by Get, Delete, Persist and TTL:
//
//	[Key str]   (required)
func AppendKeyRequest(dst []byte, key string) []byte {
	dst = append(dst, mpFixArray|1)
	return appendStr(dst, key)
}

// DecodeKeyRequest decodes the body of a Get, Delete, Persist or TTL
// request. The key aliases body. It does not allocate unless body is
// malformed.
func DecodeKeyRequest(body []byte) (key []byte, err error) {
	d := decoder{b: body, body: "key request"}
	n, err := d.beginStruct(1)
	if err != nil {
		return nil, err
	}
	d.field = "key"
	if key, err = d.readBytes(); err != nil {
		return nil, err
	}
	if err := d.endStruct(n, 1); err != nil {
		return nil, err
	}
	if err := d.finish(); err != nil {
		return nil, err
	}
	return key, nil
}

// ---------------------------------------------------------------- put

// PutRequest is a decoded Put body.
type PutRequest struct {
	Key     []byte // aliases the body
	Value   []byte // aliases the body; nil when sent as nil
	Options kv.PutOptions
}

// AppendPutRequest appends a Put body; a nil opts is the zero PutOptions.
//
//	[Key str, Value bin|nil]                       (required)
//	[IfMatchVersion uint, IfAbsent bool, TTL int (nanoseconds),
//	 ContentType str, Labels map{str:str}|nil,
//	 KeepTTL bool, ExpireAt int (Unix nanoseconds)] (optional)
//
// It does not allocate beyond growing dst.
func AppendPutRequest(dst []byte, key string, value []byte, opts *kv.PutOptions) []byte {
	k := putOptionFields(opts)
	dst = append(dst, mpFixArray|byte(2+k))
	dst = appendStr(dst, key)
	dst = appendBytes(dst, value)
	return appendPutOptions(dst, opts, k)
}

// DecodePutRequest decodes a Put body into req, overwriting every field.
// Key and Value alias body. It allocates only for a content type and labels,
// when present.
func DecodePutRequest(body []byte, req *PutRequest) error {
	*req = PutRequest{}
	d := decoder{b: body, body: "put request"}
	n, err := d.beginStruct(2)
	if err != nil {
		return err
	}
	d.field = "key"
	if req.Key, err = d.readBytes(); err != nil {
		return err
	}
	d.field = "value"
	if req.Value, err = d.readBytes(); err != nil {
		return err
	}
	if err := d.readPutOptions(&req.Options, n-2); err != nil {
		return err
	}
	if err := d.endStruct(n, 2+putOptionCount); err != nil {
		return err
	}
	return d.finish()
}

// putOptionCount is the number of PutOptions fields on the wire.
const putOptionCount = 7

// putOptionFields returns how many PutOptions fields must be written: the
// trailing ones at their zero value are left out.
func putOptionFields(o *kv.PutOptions) int {
	switch {
	case o == nil:
		return 0
	case o.ExpireAt != 0:
		return 7
	case o.KeepTTL:
		return 6
	case len(o.Labels) > 0:
		return 5
	case o.ContentType != "":
		return 4
	case o.TTL != 0:
		return 3
	case o.IfAbsent:
		return 2
	case o.IfMatchVersion != 0:
		return 1
	}
	return 0
}

// appendPutOptions appends the first k PutOptions fields.
func appendPutOptions(dst []byte, o *kv.PutOptions, k int) []byte {
	if k > 0 {
		dst = appendUint(dst, o.IfMatchVersion)
	}
	if k > 1 {
		dst = appendBool(dst, o.IfAbsent)
	}
	if k > 2 {
		dst = appendInt(dst, int64(o.TTL))
	}
	if k > 3 {
		dst = appendStr(dst, o.ContentType)
	}
	if k > 4 {
		dst = appendStringMap(dst, o.Labels)
	}
	if k > 5 {
		dst = appendBool(dst, o.KeepTTL)
	}
	if k > 6 {
		dst = appendInt(dst, o.ExpireAt)
	}
	return dst
}

// readPutOptions reads the PutOptions fields among the next avail fields of
// the enclosing struct; o must be zero on entry.
func (d *decoder) readPutOptions(o *kv.PutOptions, avail int) error {
	var err error
	if avail > 0 {
		d.field = "if-match version"
		if o.IfMatchVersion, err = d.readUint(math.MaxUint64); err != nil {
			return err
		}
	}
	if avail > 1 {
		d.field = "if-absent"
		if o.IfAbsent, err = d.readBool(); err != nil {
			return err
		}
	}
	if avail > 2 {
		d.field = "ttl"
		ttl, err := d.readInt()
		if err != nil {
			return err
		}
		o.TTL = time.Duration(ttl)
	}
	if avail > 3 {
		d.field = "content type"
		if o.ContentType, err = d.readString(); err != nil {
			return err
		}
	}
	if avail > 4 {
		d.field = "labels"
		if o.Labels, err = d.readStringMap(); err != nil {
			return err
		}
	}
	if avail > 5 {
		d.field = "keep ttl"
		if o.KeepTTL, err = d.readBool(); err != nil {
			return err
		}
	}
	if avail > 6 {
		d.field = "expire at"
		if o.ExpireAt, err = d.readInt(); err != nil {
			return err
		}
	}
	return nil
}

// ---------------------------------------------------------------- expire

// AppendExpireRequest appends an Expire body:
//
//	[Key str, TTL int (nanoseconds)]   (required)
func AppendExpireRequest(dst []byte, key string, ttl time.Duration) []byte {
	dst = append(dst, mpFixArray|2)
	dst = appendStr(dst, key)
	return appendInt(dst, int64(ttl))
}

// DecodeExpireRequest decodes an Expire body. The key aliases body. The TTL
// is returned as sent: rejecting a negative one is the server's decision.
func DecodeExpireRequest(body []byte) (key []byte, ttl time.Duration, err error) {
	d := decoder{b: body, body: "expire request"}
	n, err := d.beginStruct(2)
	if err != nil {
		return nil, 0, err
	}
	d.field = "key"
	if key, err = d.readBytes(); err != nil {
		return nil, 0, err
	}
	d.field = "ttl"
	t, err := d.readInt()
	if err != nil {
		return nil, 0, err
	}
	if err := d.endStruct(n, 2); err != nil {
		return nil, 0, err
	}
	if err := d.finish(); err != nil {
		return nil, 0, err
	}
	return key, time.Duration(t), nil
}

// ---------------------------------------------------------------- batch

// BatchOp is the operation of one batch item. The values are part of the
// protocol: append only.
type BatchOp uint8

const (
	BatchGet BatchOp = iota
	BatchPut
	BatchDelete

	batchOpEnd // keep last
)

var batchOpNames = [...]string{BatchGet: "Get", BatchPut: "Put", BatchDelete: "Delete"}

func (op BatchOp) String() string {
	if op.Valid() {
		return batchOpNames[op]
	}
	return fmt.Sprintf("BatchOp(%d)", uint8(op))
}

// Valid reports whether op is a batch operation this build knows. Decoders
// keep unknown operations as they are, so that a server can answer that one
// item with StatusBadRequest instead of failing the whole batch.
func (op BatchOp) Valid() bool { return op < batchOpEnd }

// BatchItem is one decoded batch item.
type BatchItem struct {
	Op      BatchOp
	Key     []byte // aliases the body
	Value   []byte // aliases the body; nil unless sent
	Options kv.PutOptions
}

// AppendBatchRequestHeader starts a Batch body of n items; append exactly n
// items with AppendBatchItem after it.
//
//	[Items array of item]   (required)
func AppendBatchRequestHeader(dst []byte, n int) []byte {
	dst = append(dst, mpFixArray|1)
	return appendArrayHeader(dst, n)
}

// AppendBatchItem appends one batch item; value and opts matter only for
// BatchPut and may be nil otherwise.
//
//	[Op uint, Key str]                              (required)
//	[Value bin|nil, then the PutOptions fields as in a Put request] (optional)
func AppendBatchItem(dst []byte, op BatchOp, key string, value []byte, opts *kv.PutOptions) []byte {
	k := putOptionFields(opts)
	n := 2
	switch {
	case k > 0:
		n = 3 + k
	case value != nil:
		n = 3
	}
	dst = append(dst, mpFixArray|byte(n))
	dst = appendUint(dst, uint64(op))
	dst = appendStr(dst, key)
	if n > 2 {
		dst = appendBytes(dst, value)
	}
	return appendPutOptions(dst, opts, k)
}

// minBatchItemSize is the smallest encoded item: [op, ""] takes 3 bytes.
const minBatchItemSize = 3

// maxPrealloc caps the slice capacity a batch decoder reserves up front from
// a declared count; beyond it the slice grows with the items actually decoded.
const maxPrealloc = 4096

// DecodeBatchRequest decodes a Batch body, appending the items to
// items[:0] (pass the previous result to reuse its memory). Keys and values
// alias body. A malformed item fails the whole body: nothing of a batch is
// executed unless all of it decodes.
func DecodeBatchRequest(body []byte, items []BatchItem) ([]BatchItem, error) {
	items = items[:0]
	d := decoder{b: body, body: "batch request"}
	n, err := d.beginStruct(1)
	if err != nil {
		return items, err
	}
	d.field = "items"
	count, err := d.readArrayHeader()
	if err != nil {
		return items, err
	}
	if count > d.remaining()/minBatchItemSize {
		return items, d.fail("%d items in %d remaining bytes", count, d.remaining())
	}
	if cap(items) < count {
		items = make([]BatchItem, 0, min(count, maxPrealloc))
	}
	for i := range count {
		items = append(items, BatchItem{})
		if err := d.readBatchItem(&items[i]); err != nil {
			return items[:0], err
		}
	}
	if err := d.endStruct(n, 1); err != nil {
		return items[:0], err
	}
	if err := d.finish(); err != nil {
		return items[:0], err
	}
	return items, nil
}

func (d *decoder) readBatchItem(it *BatchItem) error {
	d.field = "item"
	n, err := d.beginStruct(2)
	if err != nil {
		return err
	}
	d.field = "item op"
	op, err := d.readUint(math.MaxUint8)
	if err != nil {
		return err
	}
	it.Op = BatchOp(op)
	d.field = "item key"
	if it.Key, err = d.readBytes(); err != nil {
		return err
	}
	if n > 2 {
		d.field = "item value"
		if it.Value, err = d.readBytes(); err != nil {
			return err
		}
	}
	if err := d.readPutOptions(&it.Options, n-3); err != nil {
		return err
	}
	return d.endStruct(n, 3+putOptionCount)
}

package wire

import (
	"fmt"
	"math"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// Response bodies. A Result's Value, once decoded, aliases the body: a client
// that hands it to a caller beyond the next FrameReader.Next must copy it.

// ---------------------------------------------------------------- result

// AppendResult appends the body answering Get, Put, Delete, Expire, Persist
// and TTL, which is also the encoding of each element of a batch result:
//
//	[Status uint]                                   (required)
//	[Value bin|nil, Version uint, Revision uint,
//	 TTL int (nanoseconds), Detail str]             (optional)
//
// Detail (why a request was refused, with the limit) was appended after the
// first release; an older peer skips it. Trailing zero fields are left out, so a miss is the two bytes [1]. It does
// not allocate beyond growing dst.
func AppendResult(dst []byte, r kv.Result) []byte {
	n := 1
	switch {
	case r.Detail != "":
		n = 6
	case r.TTL != 0:
		n = 5
	case r.Revision != 0:
		n = 4
	case r.Version != 0:
		n = 3
	case r.Value != nil:
		n = 2
	}
	dst = append(dst, mpFixArray|byte(n))
	dst = appendUint(dst, uint64(r.Status))
	if n > 1 {
		dst = appendBytes(dst, r.Value)
	}
	if n > 2 {
		dst = appendUint(dst, r.Version)
	}
	if n > 3 {
		dst = appendUint(dst, r.Revision)
	}
	if n > 4 {
		dst = appendInt(dst, int64(r.TTL))
	}
	if n > 5 {
		dst = appendStr(dst, r.Detail)
	}
	return dst
}

// DecodeResult decodes a Result body into r, overwriting every field. Value
// aliases body. A status this build does not know is kept as is (a newer
// server may send it); kv.Status.Err reports it as unknown. It does not
// allocate unless body is malformed.
func DecodeResult(body []byte, r *kv.Result) error {
	d := decoder{b: body, body: "result"}
	if err := d.readResult(r); err != nil {
		return err
	}
	return d.finish()
}

const resultFieldCount = 6

func (d *decoder) readResult(r *kv.Result) error {
	*r = kv.Result{}
	n, err := d.beginStruct(1)
	if err != nil {
		return err
	}
	d.field = "status"
	st, err := d.readUint(math.MaxUint8)
	if err != nil {
		return err
	}
	r.Status = kv.Status(st)
	if n > 1 {
		d.field = "value"
		if r.Value, err = d.readBytes(); err != nil {
			return err
		}
	}
	if n > 2 {
		d.field = "version"
		if r.Version, err = d.readUint(math.MaxUint64); err != nil {
			return err
		}
	}
	if n > 3 {
		d.field = "revision"
		if r.Revision, err = d.readUint(math.MaxUint64); err != nil {
			return err
		}
	}
	if n > 4 {
		d.field = "ttl"
		ttl, err := d.readInt()
		if err != nil {
			return err
		}
		r.TTL = time.Duration(ttl)
	}
	if n > 5 {
		d.field = "detail"
		if r.Detail, err = d.readString(); err != nil {
			return err
		}
	}
	return d.endStruct(n, resultFieldCount)
}

// ---------------------------------------------------------------- batch result

// AppendBatchResultHeader starts a batch result of n results; append exactly
// n results with AppendResult after it, in the order of the request's items.
//
//	[Results array of Result]   (required)
func AppendBatchResultHeader(dst []byte, n int) []byte {
	dst = append(dst, mpFixArray|1)
	return appendArrayHeader(dst, n)
}

// minResultSize is the smallest encoded Result: [status] takes 2 bytes.
const minResultSize = 2

// DecodeBatchResult decodes a batch result, appending the results to
// results[:0] (pass the previous result to reuse its memory). Values alias
// body.
func DecodeBatchResult(body []byte, results []kv.Result) ([]kv.Result, error) {
	results = results[:0]
	d := decoder{b: body, body: "batch result"}
	n, err := d.beginStruct(1)
	if err != nil {
		return results, err
	}
	d.field = "results"
	count, err := d.readArrayHeader()
	if err != nil {
		return results, err
	}
	if count > d.remaining()/minResultSize {
		return results, d.fail("%d results in %d remaining bytes", count, d.remaining())
	}
	if cap(results) < count {
		results = make([]kv.Result, 0, min(count, maxPrealloc))
	}
	for i := range count {
		results = append(results, kv.Result{})
		if err := d.readResult(&results[i]); err != nil {
			return results[:0], err
		}
	}
	if err := d.endStruct(n, 1); err != nil {
		return results[:0], err
	}
	if err := d.finish(); err != nil {
		return results[:0], err
	}
	return results, nil
}

// ---------------------------------------------------------------- errors

// ErrorResponse is the body of a frame flagged FlagError: the request could
// not be executed at all. It is an error itself, for which errors.Is(err,
// kv.ErrBadRequest) (or the sentinel of its status) holds.
//
//	[Status uint]       (required)
//	[Message str]       (optional)
type ErrorResponse struct {
	Status  kv.Status
	Message string
}

func (e *ErrorResponse) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("zaris: protocol error: %v", e.Status)
	}
	return fmt.Sprintf("zaris: protocol error: %v: %s", e.Status, e.Message)
}

// Unwrap returns the sentinel of the status (nil for StatusSuccess).
func (e *ErrorResponse) Unwrap() error { return e.Status.Err() }

// AppendErrorResponse appends an error body.
func AppendErrorResponse(dst []byte, status kv.Status, message string) []byte {
	dst = append(dst, mpFixArray|2)
	dst = appendUint(dst, uint64(status))
	return appendStr(dst, message)
}

// DecodeErrorResponse decodes an error body into e, overwriting every field.
func DecodeErrorResponse(body []byte, e *ErrorResponse) error {
	*e = ErrorResponse{}
	d := decoder{b: body, body: "error response"}
	n, err := d.beginStruct(1)
	if err != nil {
		return err
	}
	d.field = "status"
	st, err := d.readUint(math.MaxUint8)
	if err != nil {
		return err
	}
	e.Status = kv.Status(st)
	if n > 1 {
		d.field = "message"
		if e.Message, err = d.readString(); err != nil {
			return err
		}
	}
	if err := d.endStruct(n, 2); err != nil {
		return err
	}
	return d.finish()
}

package sdk

import (
	"context"
	"fmt"
	"strconv"

	"github.com/zaris-io/zaris/internal/kv"
)

// Hashes is the hash surface (R-DS-1): a server-side map of fields to byte
// values under one key; each call touches only the fields it names. A
// missing key reads as an empty hash.
type Hashes struct{ c *Client }

// Hashes returns the hash surface of c.
func (c *Client) Hashes() *Hashes { return &Hashes{c: c} }

// Set writes the fields (HSET) and returns how many were new. An empty map
// is a BadRequest, as in Redis.
func (h *Hashes) Set(ctx context.Context, key string, fieldValues map[string][]byte) (added int, err error) {
	args := make([][]byte, 0, 2*len(fieldValues))
	for f, v := range fieldValues {
		args = append(args, []byte(f), v)
	}
	return dsCount(h.c.runDS(ctx, kv.Cmd{Op: kv.CmdHSet, Key: key, Args: args}))
}

// SetField writes one field (HSET key field value) and reports whether it
// was new.
func (h *Hashes) SetField(ctx context.Context, key, field string, value []byte) (added bool, err error) {
	return dsBool(h.c.runDS(ctx, kv.Cmd{Op: kv.CmdHSet, Key: key, Args: [][]byte{[]byte(field), value}}))
}

// SetNX writes field only if it does not exist yet (HSETNX) and reports
// whether it did.
func (h *Hashes) SetNX(ctx context.Context, key, field string, value []byte) (set bool, err error) {
	return dsBool(h.c.runDS(ctx, kv.Cmd{Op: kv.CmdHSetNX, Key: key, Args: [][]byte{[]byte(field), value}}))
}

// Get reads one field (HGET); found is false when the field or the key is
// missing.
func (h *Hashes) Get(ctx context.Context, key, field string) (value []byte, found bool, err error) {
	return dsBulk(h.c.runDS(ctx, kv.Cmd{Op: kv.CmdHGet, Key: key, Args: [][]byte{[]byte(field)}}))
}

// MGet reads several fields (HMGET); values[i] answers fields[i] and is nil
// for a missing field (a present empty value is non-nil and empty).
func (h *Hashes) MGet(ctx context.Context, key string, fields ...string) (values [][]byte, err error) {
	return dsBulks(h.c.runDS(ctx, kv.Cmd{Op: kv.CmdHMGet, Key: key, Args: dsStrArgs(fields)}))
}

// GetAll reads every field (HGETALL); empty for a missing key.
func (h *Hashes) GetAll(ctx context.Context, key string) (map[string][]byte, error) {
	r, err := h.c.runDS(ctx, kv.Cmd{Op: kv.CmdHGetAll, Key: key})
	if err != nil {
		return nil, err
	}
	if r.Type != kv.ReplyArray || len(r.Array)%2 != 0 {
		return nil, r.shapeErr()
	}
	m := make(map[string][]byte, len(r.Array)/2)
	for i := 0; i < len(r.Array); i += 2 {
		m[string(r.Array[i].Bulk)] = dsNonNil(r.Array[i+1].Bulk)
	}
	return m, nil
}

// Del removes fields (HDEL) and returns how many existed. Removing the last
// field removes the key.
func (h *Hashes) Del(ctx context.Context, key string, fields ...string) (removed int, err error) {
	return dsCount(h.c.runDS(ctx, kv.Cmd{Op: kv.CmdHDel, Key: key, Args: dsStrArgs(fields)}))
}

// IncrBy adds delta to the integer in field (HINCRBY; a missing field counts
// as 0) and returns the new value. A non-integer field or an overflow is a
// BadRequest.
func (h *Hashes) IncrBy(ctx context.Context, key, field string, delta int64) (int64, error) {
	return dsInt(h.c.runDS(ctx, kv.Cmd{Op: kv.CmdHIncrBy, Key: key, Args: [][]byte{[]byte(field), dsIntArg(delta)}}))
}

// IncrByFloat adds delta to the number in field (HINCRBYFLOAT) and returns
// the new value.
func (h *Hashes) IncrByFloat(ctx context.Context, key, field string, delta float64) (float64, error) {
	f, _, err := dsFloat(h.c.runDS(ctx, kv.Cmd{Op: kv.CmdHIncrByFloat, Key: key, Args: [][]byte{[]byte(field), kv.FormatFloat(delta)}}))
	return f, err
}

// Len is the number of fields (HLEN); 0 for a missing key.
func (h *Hashes) Len(ctx context.Context, key string) (int, error) {
	return dsCount(h.c.runDS(ctx, kv.Cmd{Op: kv.CmdHLen, Key: key}))
}

// Exists reports whether field exists (HEXISTS).
func (h *Hashes) Exists(ctx context.Context, key, field string) (bool, error) {
	return dsBool(h.c.runDS(ctx, kv.Cmd{Op: kv.CmdHExists, Key: key, Args: [][]byte{[]byte(field)}}))
}

// Keys lists the field names (HKEYS), in no particular order.
func (h *Hashes) Keys(ctx context.Context, key string) ([]string, error) {
	return dsStrings(h.c.runDS(ctx, kv.Cmd{Op: kv.CmdHKeys, Key: key}))
}

// Values lists the field values (HVALS), in no particular order.
func (h *Hashes) Values(ctx context.Context, key string) ([][]byte, error) {
	return dsBulks(h.c.runDS(ctx, kv.Cmd{Op: kv.CmdHVals, Key: key}))
}

// --- shared by the typed surfaces (Hashes, Lists, Sets, SortedSets,
// Counters, Locks) ---
//
// Every typed method is a thin shell: it builds the command (each command is
// implemented once, in the store engine: STYLE 11), runs it through Do — the
// same path on the embedded and the remote backend — and decodes the reply.
//
// How outcomes surface: a status other than Success (WrongType, BadRequest,
// ItemTooLarge, …) is returned as a *CommandError, for which errors.Is(err,
// ErrWrongType) etc. hold, because these calls return decoded values, not
// Results. A missing key is not an error: it reads as the empty collection
// (zero, false, nil), as in Redis.

// CommandError is a data-structure command that the store refused: its
// Status says why (errors.Is(err, ErrWrongType), ErrBadRequest,
// ErrItemTooLarge, …) and Message carries the store's explanation, if any.
// Op is CmdNone for a plain read (Counters.Get).
type CommandError struct {
	Op      CmdOp
	Key     string
	Status  Status
	Message string
}

func (e *CommandError) Error() string {
	op := e.Op.String()
	if e.Op == kv.CmdNone {
		op = "GET"
	}
	s := "zaris: " + op + " " + strconv.Quote(e.Key) + ": " + e.Status.String()
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns the status's sentinel (ErrWrongType, …).
func (e *CommandError) Unwrap() error { return e.Status.Err() }

// dsReply is a successful reply and the command it answers.
type dsReply struct {
	kv.Reply
	op kv.CmdOp
}

// runDS runs cmd and turns a refused command into a *CommandError.
func (c *Client) runDS(ctx context.Context, cmd kv.Cmd) (dsReply, error) {
	r, err := c.Do(ctx, cmd)
	if err != nil {
		return dsReply{op: cmd.Op}, err
	}
	if r.Status != kv.StatusSuccess {
		return dsReply{op: cmd.Op}, &CommandError{Op: cmd.Op, Key: cmd.Key, Status: r.Status, Message: r.Message}
	}
	return dsReply{Reply: r, op: cmd.Op}, nil
}

// shapeErr: a successful reply of a shape the command never produces (a
// server of another version, a broken transport).
func (r dsReply) shapeErr() error {
	return fmt.Errorf("zaris: %v: unexpected reply of type %d", r.op, r.Type)
}

// The decoders take runDS's results directly, so a method reads
// `return dsInt(x.c.runDS(ctx, cmd))`. They check the reply's shape, never
// trust it.

func dsInt(r dsReply, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	if r.Type != kv.ReplyInt {
		return 0, r.shapeErr()
	}
	return r.Int, nil
}

func dsCount(r dsReply, err error) (int, error) {
	n, err := dsInt(r, err)
	return int(n), err
}

func dsBool(r dsReply, err error) (bool, error) {
	n, err := dsInt(r, err)
	return n != 0, err
}

func dsOK(r dsReply, err error) error {
	if err != nil {
		return err
	}
	if r.Type != kv.ReplyOK {
		return r.shapeErr()
	}
	return nil
}

// dsNonNil makes a present value non-nil, so that an empty value differs
// from a missing one.
func dsNonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// dsBulk decodes a Bulk-or-Nil reply.
func dsBulk(r dsReply, err error) ([]byte, bool, error) {
	if err != nil {
		return nil, false, err
	}
	switch r.Type {
	case kv.ReplyNil:
		return nil, false, nil
	case kv.ReplyBulk:
		return dsNonNil(r.Bulk), true, nil
	}
	return nil, false, r.shapeErr()
}

// dsFloat decodes a number formatted as a bulk string (or Nil).
func dsFloat(r dsReply, err error) (float64, bool, error) {
	b, ok, err := dsBulk(r, err)
	if err != nil || !ok {
		return 0, ok, err
	}
	f, perr := strconv.ParseFloat(string(b), 64)
	if perr != nil {
		return 0, false, fmt.Errorf("zaris: undecodable number %q in a reply: %w", b, perr)
	}
	return f, true, nil
}

// dsBulks decodes an array of Bulk-or-Nil replies (Nil → nil element). A
// Nil reply (an empty pop with a count) decodes as an empty result.
func dsBulks(r dsReply, err error) ([][]byte, error) {
	if err != nil {
		return nil, err
	}
	if r.Type == kv.ReplyNil {
		return nil, nil
	}
	if r.Type != kv.ReplyArray {
		return nil, r.shapeErr()
	}
	out := make([][]byte, len(r.Array))
	for i, e := range r.Array {
		if e.Type == kv.ReplyBulk {
			out[i] = dsNonNil(e.Bulk)
		}
	}
	return out, nil
}

func dsStrings(r dsReply, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	if r.Type != kv.ReplyArray {
		return nil, r.shapeErr()
	}
	out := make([]string, len(r.Array))
	for i, e := range r.Array {
		out[i] = string(e.Bulk)
	}
	return out, nil
}

func dsIntArg(n int64) []byte { return strconv.AppendInt(nil, n, 10) }

// dsStrArgs converts strings to arguments in one allocation for the bytes.
func dsStrArgs(ss []string) [][]byte {
	n := 0
	for _, s := range ss {
		n += len(s)
	}
	buf := make([]byte, 0, n)
	args := make([][]byte, len(ss))
	for i, s := range ss {
		start := len(buf)
		buf = append(buf, s...)
		args[i] = buf[start:len(buf):len(buf)]
	}
	return args
}

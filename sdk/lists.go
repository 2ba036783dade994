package sdk

import (
	"context"

	"github.com/zaris-io/zaris/internal/kv"
)

// Lists is the list surface (R-DS-1): a server-side sequence of byte values
// under one key, O(1) at both ends. Indexes are zero-based; a negative index
// counts from the end (-1 is the last element). A missing key reads as an
// empty list, and popping the last element removes the key.
type Lists struct{ c *Client }

// Lists returns the list surface of c.
func (c *Client) Lists() *Lists { return &Lists{c: c} }

// LPush inserts values at the head (LPUSH; the last value ends up first) and
// returns the new length.
func (l *Lists) LPush(ctx context.Context, key string, values ...[]byte) (length int, err error) {
	return dsCount(l.c.runDS(ctx, kv.Cmd{Op: kv.CmdLPush, Key: key, Args: values}))
}

// RPush appends values at the tail (RPUSH) and returns the new length.
func (l *Lists) RPush(ctx context.Context, key string, values ...[]byte) (length int, err error) {
	return dsCount(l.c.runDS(ctx, kv.Cmd{Op: kv.CmdRPush, Key: key, Args: values}))
}

// LPop removes and returns the first element (LPOP); ok is false when the
// list is empty.
func (l *Lists) LPop(ctx context.Context, key string) (value []byte, ok bool, err error) {
	return dsBulk(l.c.runDS(ctx, kv.Cmd{Op: kv.CmdLPop, Key: key}))
}

// RPop removes and returns the last element (RPOP).
func (l *Lists) RPop(ctx context.Context, key string) (value []byte, ok bool, err error) {
	return dsBulk(l.c.runDS(ctx, kv.Cmd{Op: kv.CmdRPop, Key: key}))
}

// LPopCount removes and returns up to count elements from the head (LPOP
// key count); empty when the list is. A negative count is a BadRequest.
func (l *Lists) LPopCount(ctx context.Context, key string, count int) ([][]byte, error) {
	return dsBulks(l.c.runDS(ctx, kv.Cmd{Op: kv.CmdLPop, Key: key, Args: [][]byte{dsIntArg(int64(count))}}))
}

// RPopCount removes and returns up to count elements from the tail (RPOP
// key count), last element first.
func (l *Lists) RPopCount(ctx context.Context, key string, count int) ([][]byte, error) {
	return dsBulks(l.c.runDS(ctx, kv.Cmd{Op: kv.CmdRPop, Key: key, Args: [][]byte{dsIntArg(int64(count))}}))
}

// Range returns the elements from start to stop inclusive (LRANGE; 0, -1 is
// the whole list). Out-of-range bounds are clamped, as in Redis.
func (l *Lists) Range(ctx context.Context, key string, start, stop int) ([][]byte, error) {
	return dsBulks(l.c.runDS(ctx, kv.Cmd{Op: kv.CmdLRange, Key: key, Args: [][]byte{dsIntArg(int64(start)), dsIntArg(int64(stop))}}))
}

// Len is the number of elements (LLEN); 0 for a missing key.
func (l *Lists) Len(ctx context.Context, key string) (int, error) {
	return dsCount(l.c.runDS(ctx, kv.Cmd{Op: kv.CmdLLen, Key: key}))
}

// Index returns the element at index (LINDEX); ok is false when index is
// out of range or the key is missing.
func (l *Lists) Index(ctx context.Context, key string, index int) (value []byte, ok bool, err error) {
	return dsBulk(l.c.runDS(ctx, kv.Cmd{Op: kv.CmdLIndex, Key: key, Args: [][]byte{dsIntArg(int64(index))}}))
}

// Rem removes elements equal to value (LREM): the first count from the head
// when count > 0, the last -count from the tail when count < 0, all when 0.
// It returns how many were removed.
func (l *Lists) Rem(ctx context.Context, key string, count int, value []byte) (removed int, err error) {
	return dsCount(l.c.runDS(ctx, kv.Cmd{Op: kv.CmdLRem, Key: key, Args: [][]byte{dsIntArg(int64(count)), value}}))
}

// Trim keeps only the elements from start to stop inclusive (LTRIM).
func (l *Lists) Trim(ctx context.Context, key string, start, stop int) error {
	return dsOK(l.c.runDS(ctx, kv.Cmd{Op: kv.CmdLTrim, Key: key, Args: [][]byte{dsIntArg(int64(start)), dsIntArg(int64(stop))}}))
}

// Set replaces the element at index (LSET). An index out of range is a
// BadRequest and a missing key a NotFound (errors.Is(err, ErrNotFound)), as
// in Redis: there is no element to replace.
func (l *Lists) Set(ctx context.Context, key string, index int, value []byte) error {
	return dsOK(l.c.runDS(ctx, kv.Cmd{Op: kv.CmdLSet, Key: key, Args: [][]byte{dsIntArg(int64(index)), value}}))
}

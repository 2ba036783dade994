package sdk

import (
	"context"
	"math"
	"strconv"

	"github.com/zaris-io/zaris/internal/kv"
)

// Counters is the counter surface (R-DS-3): atomic increments on a string
// key holding a decimal number, as in Redis, so a counter also reads with
// Client.Get ("42"). A missing key counts as 0. An increment keeps the key's
// TTL (Client.Expire sets one). Overflow and a non-numeric value are
// BadRequest.
type Counters struct{ c *Client }

// Counters returns the counter surface of c.
func (c *Client) Counters() *Counters { return &Counters{c: c} }

// Incr adds 1 (INCR) and returns the new value.
func (n *Counters) Incr(ctx context.Context, key string) (int64, error) {
	return n.IncrBy(ctx, key, 1)
}

// Decr subtracts 1 (DECR) and returns the new value.
func (n *Counters) Decr(ctx context.Context, key string) (int64, error) {
	return n.IncrBy(ctx, key, -1)
}

// IncrBy adds delta (INCRBY) and returns the new value.
func (n *Counters) IncrBy(ctx context.Context, key string, delta int64) (int64, error) {
	return dsInt(n.c.runDS(ctx, kv.Cmd{Op: kv.CmdIncrBy, Key: key, Args: [][]byte{dsIntArg(delta)}}))
}

// DecrBy subtracts delta (DECRBY) and returns the new value.
func (n *Counters) DecrBy(ctx context.Context, key string, delta int64) (int64, error) {
	if delta == math.MinInt64 { // -delta overflows
		return 0, &CommandError{Op: kv.CmdIncrBy, Key: key, Status: StatusBadRequest, Message: "decrement would overflow"}
	}
	return n.IncrBy(ctx, key, -delta)
}

// IncrByFloat adds delta (INCRBYFLOAT) and returns the new value. The
// counter is stored as the shortest decimal that round-trips ("10.5").
func (n *Counters) IncrByFloat(ctx context.Context, key string, delta float64) (float64, error) {
	f, _, err := dsFloat(n.c.runDS(ctx, kv.Cmd{Op: kv.CmdIncrByFloat, Key: key, Args: [][]byte{kv.FormatFloat(delta)}}))
	return f, err
}

// Get reads an integer counter (GET); 0 for a missing key. A value that is
// not an integer is a BadRequest, a collection key a WrongType.
func (n *Counters) Get(ctx context.Context, key string) (int64, error) {
	b, ok, err := n.read(ctx, key)
	if err != nil || !ok {
		return 0, err
	}
	v, perr := strconv.ParseInt(string(b), 10, 64)
	if perr != nil {
		return 0, &CommandError{Op: kv.CmdNone, Key: key, Status: StatusBadRequest, Message: "value is not an integer"}
	}
	return v, nil
}

// GetFloat reads a counter as a float (GET); 0 for a missing key. Integer
// counters read too.
func (n *Counters) GetFloat(ctx context.Context, key string) (float64, error) {
	b, ok, err := n.read(ctx, key)
	if err != nil || !ok {
		return 0, err
	}
	v, perr := strconv.ParseFloat(string(b), 64)
	if perr != nil {
		return 0, &CommandError{Op: kv.CmdNone, Key: key, Status: StatusBadRequest, Message: "value is not a number"}
	}
	return v, nil
}

func (n *Counters) read(ctx context.Context, key string) ([]byte, bool, error) {
	r, err := n.c.Get(ctx, key)
	switch {
	case r.Status != StatusSuccess && r.Status != StatusNotFound: // a refusal (err is its Err())
		return nil, false, &CommandError{Op: kv.CmdNone, Key: key, Status: r.Status, Message: r.Detail}
	case err != nil:
		return nil, false, err
	case r.Status == StatusNotFound:
		return nil, false, nil
	}
	return r.Value, true, nil
}

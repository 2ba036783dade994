package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// ErrClosed is returned by every call on a closed Client.
var ErrClosed = errors.New("zaris: client closed")

// Client is a connection to one Zaris store, embedded or remote. It is safe
// for concurrent use; share one per store and process.
type Client struct {
	conn       ConnString
	be         backend
	serializer Serializer
	log        *slog.Logger
	closed     atomic.Bool
	tel        *telemetry // nil unless a tracer or meter provider was given
}

// Connect opens a client for the connection string (see the package doc).
func Connect(ctx context.Context, connString string, opts ...Option) (*Client, error) {
	cs, err := ParseConnString(connString)
	if err != nil {
		return nil, err
	}
	o := clientOptions{serializer: MsgpackSerializer{}, logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	cs.clientName = o.clientName
	c := &Client{conn: cs, serializer: o.serializer, log: o.logger}
	if c.tel, err = newTelemetry(o, cs.Inproc); err != nil {
		return nil, err
	}
	o.observed = c.tel != nil
	if cs.Inproc {
		c.be, err = newEmbeddedBackend(cs.Store, o.storeConfig)
	} else {
		c.be, err = connectRemote(ctx, cs, o)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Close releases the client. Safe to call more than once.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.be.close()
}

// ConnString returns the parsed connection string the client was opened with.
func (c *Client) ConnString() ConnString { return c.conn }

// Embedded reports whether the client runs the store in this process.
func (c *Client) Embedded() bool { return c.conn.Inproc }

func (c *Client) check(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if ctx == nil {
		return errors.New("zaris: nil context")
	}
	return nil
}

// refusal adds the error of a call that did not do what it was asked: every
// status but Success and NotFound (a miss is an answer, not a failure)
// comes back as its Result and as Result.Err(), so `if err != nil` catches a
// refused write with its reason and errors.Is(err, ErrConflict) etc. branch.
func refusal(r Result, err error) (Result, error) {
	if err == nil && r.Status != StatusSuccess && r.Status != StatusNotFound {
		err = r.Err()
	}
	return r, err
}

// Get reads key. A miss is StatusNotFound with a nil error; any other
// failure returns the Result and its Err().
func (c *Client) Get(ctx context.Context, key string) (Result, error) {
	if err := c.check(ctx); err != nil {
		return Result{}, err
	}
	if c.tel != nil {
		return c.observeResult(ctx, "get", func(ctx context.Context) (Result, error) { return c.be.get(ctx, key) })
	}
	return refusal(c.be.get(ctx, key))
}

// Put writes value under key. opts may be nil (unconditional, no TTL). A
// write that did not happen returns its Result and a non-nil error:
// errors.Is(err, ErrConflict) for a failed IfMatchVersion/IfAbsent,
// ErrItemTooLarge with the size and the limit, ErrBadRequest with the reason…
func (c *Client) Put(ctx context.Context, key string, value []byte, opts *PutOptions) (Result, error) {
	if err := c.check(ctx); err != nil {
		return Result{}, err
	}
	if c.tel != nil {
		return c.observeResult(ctx, "put", func(ctx context.Context) (Result, error) { return c.be.put(ctx, key, value, opts) })
	}
	return refusal(c.be.put(ctx, key, value, opts))
}

// Delete removes key; StatusNotFound (nil error) if it was absent.
func (c *Client) Delete(ctx context.Context, key string) (Result, error) {
	if err := c.check(ctx); err != nil {
		return Result{}, err
	}
	if c.tel != nil {
		return c.observeResult(ctx, "delete", func(ctx context.Context) (Result, error) { return c.be.delete(ctx, key) })
	}
	return refusal(c.be.delete(ctx, key))
}

// Expire sets a positive time to live on an existing key.
func (c *Client) Expire(ctx context.Context, key string, ttl time.Duration) (Result, error) {
	if err := c.check(ctx); err != nil {
		return Result{}, err
	}
	if c.tel != nil {
		return c.observeResult(ctx, "expire", func(ctx context.Context) (Result, error) { return c.be.expire(ctx, key, ttl) })
	}
	return refusal(c.be.expire(ctx, key, ttl))
}

// Persist removes the time to live of an existing key.
func (c *Client) Persist(ctx context.Context, key string) (Result, error) {
	if err := c.check(ctx); err != nil {
		return Result{}, err
	}
	if c.tel != nil {
		return c.observeResult(ctx, "persist", func(ctx context.Context) (Result, error) { return c.be.persist(ctx, key) })
	}
	return refusal(c.be.persist(ctx, key))
}

// TimeToLive reports the remaining time to live in Result.TTL (0 = none).
func (c *Client) TimeToLive(ctx context.Context, key string) (Result, error) {
	if err := c.check(ctx); err != nil {
		return Result{}, err
	}
	if c.tel != nil {
		return c.observeResult(ctx, "ttl", func(ctx context.Context) (Result, error) { return c.be.timeToLive(ctx, key) })
	}
	return refusal(c.be.timeToLive(ctx, key))
}

// ExecuteBatch runs mixed operations. results[i] answers items[i]; every item
// has its own status and partial success is normal — a batch is never a
// transaction (R-CLIENT-4). On a cluster, one request goes to each owner in
// parallel; the items of an owner that cannot be reached answer Unavailable
// (not sent) or Timeout (sent, answer lost: it may have been applied), and
// the call fails with the transport error only when no item got an answer.
func (c *Client) ExecuteBatch(ctx context.Context, items []BatchItem) ([]ItemResult, error) {
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return []ItemResult{}, nil
	}
	if c.tel != nil {
		ctx, ci := c.tel.begin(ctx, "batch")
		out, err := c.be.batch(ctx, items)
		c.tel.end(ci, "batch", StatusSuccess, err, AttrItems.Int(len(items)))
		return out, err
	}
	return c.be.batch(ctx, items)
}

// GetMany reads keys; results[i] answers keys[i].
func (c *Client) GetMany(ctx context.Context, keys []string) ([]ItemResult, error) {
	items := make([]BatchItem, len(keys))
	for i, k := range keys {
		items[i] = BatchItem{Op: BatchGet, Key: k}
	}
	return c.ExecuteBatch(ctx, items)
}

// PutMany writes items; results[i] answers items[i].
func (c *Client) PutMany(ctx context.Context, items []KV) ([]ItemResult, error) {
	batch := make([]BatchItem, len(items))
	for i, it := range items {
		batch[i] = BatchItem{Op: BatchPut, Key: it.Key, Value: it.Value}
		if it.TTL != 0 {
			batch[i].Options = &PutOptions{TTL: it.TTL}
		}
	}
	return c.ExecuteBatch(ctx, batch)
}

// DeleteMany removes keys; results[i] answers keys[i].
func (c *Client) DeleteMany(ctx context.Context, keys []string) ([]ItemResult, error) {
	items := make([]BatchItem, len(keys))
	for i, k := range keys {
		items[i] = BatchItem{Op: BatchDelete, Key: k}
	}
	return c.ExecuteBatch(ctx, items)
}

// GetAs reads key and decodes it with the client's serializer. On a miss it
// returns the zero T, a NotFound result and no error.
func GetAs[T any](ctx context.Context, c *Client, key string) (T, Result, error) {
	var v T
	r, err := c.Get(ctx, key)
	if err != nil || !r.OK() {
		return v, r, err
	}
	if err := c.serializer.Unmarshal(r.Value, &v); err != nil {
		return v, r, fmt.Errorf("zaris: decode %q: %w", key, err)
	}
	return v, r, nil
}

// PutAs encodes v with the client's serializer and writes it.
func PutAs[T any](ctx context.Context, c *Client, key string, v T, opts *PutOptions) (Result, error) {
	data, err := c.serializer.Marshal(v)
	if err != nil {
		return Result{}, fmt.Errorf("zaris: encode %q: %w", key, err)
	}
	return c.Put(ctx, key, data, opts)
}

// Do runs a data-structure command (R-DS) on its key's owner and returns its
// Reply. The typed surfaces (Hashes, Lists, Sets, SortedSets, Counters, …)
// are built on it; it is exported for commands they do not wrap.
func (c *Client) Do(ctx context.Context, cmd kv.Cmd) (kv.Reply, error) {
	if err := c.check(ctx); err != nil {
		return kv.Reply{}, err
	}
	if !cmd.Op.Valid() {
		return kv.Reply{Status: StatusBadRequest, Message: "unknown command " + cmd.Op.String()}, nil
	}
	if c.tel != nil {
		op := cmd.Op.String()
		ctx, ci := c.tel.begin(ctx, op)
		r, err := c.be.exec(ctx, cmd)
		c.tel.end(ci, op, r.Status, err)
		return r, err
	}
	return c.be.exec(ctx, cmd)
}

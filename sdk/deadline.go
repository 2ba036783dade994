package sdk

import (
	"context"
	"sync"
	"time"
)

// boundCtx is a caller's context under the deadline the SDK gives a call
// whose context has none (the connection string's timeout). It costs one
// allocation and no timer: a request waiting on a connection is expired by
// the connection's own timer (rconn.expire), and only code that has to
// wait on Done for the deadline — a dial, a map refresh, a retry's
// back-off — makes a timed context, on its first Done. context.WithTimeout
// on every call made five allocations and armed and stopped a runtime
// timer; most calls are answered long before the deadline.
type boundCtx struct {
	context.Context // the caller's; its Done and Err stay in force
	deadline        time.Time

	mu     sync.Mutex
	timed  context.Context // WithDeadline(caller's, deadline), made by the first Done
	cancel context.CancelFunc
}

// boundBy returns ctx bounded by timeout from now, and the bound, whose
// release the caller defers (a nil bound, ctx itself, when ctx has a
// deadline). Not a CancelFunc: a method value would cost an allocation.
func boundBy(ctx context.Context, timeout time.Duration) (context.Context, *boundCtx) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, nil
	}
	c := &boundCtx{Context: ctx, deadline: time.Now().Add(timeout)}
	return c, c
}

func (c *boundCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *boundCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timed == nil {
		c.timed, c.cancel = context.WithDeadline(c.Context, c.deadline)
	}
	return c.timed.Done()
}

func (c *boundCtx) Err() error {
	c.mu.Lock()
	timed := c.timed
	c.mu.Unlock()
	if timed != nil {
		return timed.Err()
	}
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// release stops the timed context Done made, if any; nil-safe.
func (c *boundCtx) release() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		c.cancel()
	}
}

func (c *boundCtx) String() string { return "sdk.boundCtx" }

// waitOn splits ctx for a request's wait: the channel that ends the wait
// early (the caller's cancellation) and the deadline the connection
// enforces itself (zero: none, Done covers it).
func waitOn(ctx context.Context) (<-chan struct{}, time.Time) {
	if c, ok := ctx.(*boundCtx); ok {
		return c.Context.Done(), c.deadline
	}
	return ctx.Done(), time.Time{}
}

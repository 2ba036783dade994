package sdk

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// Locks is the distributed lock surface (R-DS-5): named, TTL-based leases.
// A lease auto-expires unless renewed, so a crashed holder never blocks the
// lock for good; only the holder can renew or release it.
//
// A lease is NOT a correctness fence. A holder that pauses — a GC stop, a
// slow syscall, a network partition — for longer than the TTL keeps running
// while it believes it holds the lock, and by then another client may have
// acquired it: two workers in the "critical section" at once. Lock keys can
// also be evicted under memory pressure like any key. Use a lock for
// coarse, best-effort mutual exclusion, where an occasional overlap only
// wastes work (one scheduler running a sweep, one worker running a
// maintenance job). When an overlap would corrupt data, enforce the
// invariant on the data itself with a version check, so that even a stale
// second actor is refused at write time:
//
//	cur, err := c.Get(ctx, "balance:42") // read the value and its version
//	if err != nil || !cur.OK() { … }
//	next := debit(cur.Value)
//	r, err := c.Put(ctx, "balance:42", next, &sdk.PutOptions{IfMatchVersion: cur.Version})
//	// r.Status == StatusConflict: someone wrote first — re-read and retry
//
// (or a transaction when several keys move together). Let the version, not
// the lock, be the thing that says no.
//
// A lock named N is the string key N holding the holder's random token, with
// the lease's TTL: Client.Get(N) shows the token and Client.TimeToLive the
// time left. Pick names that no data uses ("lock:sweep").
type Locks struct{ c *Client }

// Locks returns the lock surface of c.
func (c *Client) Locks() *Locks { return &Locks{c: c} }

var (
	// ErrLockHeld: Acquire found the lock held by another holder.
	ErrLockHeld = errors.New("zaris: lock held by another holder")
	// ErrNotLockHolder: Renew or Release by a lease that no longer holds
	// its lock — it expired (and possibly someone else acquired it since)
	// or was released.
	ErrNotLockHolder = errors.New("zaris: not the lock holder (the lease expired or was released)")
)

// Acquire takes the lock name for ttl (LOCK.ACQUIRE) if nobody holds it.
// When another holder does, it returns ErrLockHeld (errors.Is). ttl is
// rounded up to a whole millisecond; a ttl ≤ 0 is a BadRequest. After a
// transport error the lock may have been taken with a token this call never
// returned: it stays taken until ttl passes.
func (l *Locks) Acquire(ctx context.Context, name string, ttl time.Duration) (*Lease, error) {
	lease := &Lease{c: l.c, name: name, token: rand.Text()}
	start := time.Now()
	ok, err := dsBool(l.c.runDS(ctx, lease.cmd(kv.CmdLockAcquire, ttl)))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrLockHeld, name)
	}
	lease.deadline = start.Add(ttl)
	return lease, nil
}

// AcquireWait is Acquire, retried every retryEvery while the lock is held,
// until it succeeds or ctx ends. When ctx ends first the error matches both
// ctx.Err() and ErrLockHeld. retryEvery must be positive.
func (l *Locks) AcquireWait(ctx context.Context, name string, ttl, retryEvery time.Duration) (*Lease, error) {
	if retryEvery <= 0 {
		return nil, fmt.Errorf("%w: AcquireWait needs a positive retry interval, got %v", ErrBadRequest, retryEvery)
	}
	var timer *time.Timer
	for held := false; ; held = true {
		lease, err := l.Acquire(ctx, name, ttl)
		if held && ctx.Err() != nil && !errors.Is(err, ErrLockHeld) {
			// The deadline fell inside an attempt: the last answer was
			// still "held".
			return nil, fmt.Errorf("zaris: waiting for lock %q: %w (%w)", name, ctx.Err(), ErrLockHeld)
		}
		if !errors.Is(err, ErrLockHeld) {
			return lease, err
		}
		if timer == nil {
			timer = time.NewTimer(retryEvery)
			defer timer.Stop()
		} else {
			timer.Reset(retryEvery)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("zaris: waiting for lock %q: %w (%w)", name, ctx.Err(), ErrLockHeld)
		case <-timer.C:
		}
	}
}

// Lease is a held lock. It is safe for concurrent use (a renewing goroutine
// and a releasing one).
type Lease struct {
	c     *Client
	name  string
	token string

	mu       sync.Mutex // guards deadline and released
	deadline time.Time
	released bool
}

// Name is the lock's name (its key).
func (l *Lease) Name() string { return l.name }

// Token is the holder's random token: the value stored under the lock's key.
func (l *Lease) Token() string { return l.token }

// Deadline is a conservative local estimate of when the lease expires: the
// time the last successful Acquire or Renew was sent, plus its TTL. The
// server's expiry is never earlier, clock drift aside. Past it, assume the
// lock is lost.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Renew sets the lease's time to live to ttl from now (LOCK.RENEW). It fails
// with ErrNotLockHolder when the lease already expired or was released: a
// renewal never re-creates a lost lock.
func (l *Lease) Renew(ctx context.Context, ttl time.Duration) error {
	start := time.Now()
	ok, err := dsBool(l.c.runDS(ctx, l.cmd(kv.CmdLockRenew, ttl)))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotLockHolder, l.name)
	}
	l.mu.Lock()
	l.deadline = start.Add(ttl)
	l.mu.Unlock()
	return nil
}

// Release gives the lock up (LOCK.RELEASE). It fails with ErrNotLockHolder
// when the lease had expired — the critical section outlived it, and another
// holder may have acquired the lock; their lock is left alone. Releasing a
// released lease again is a no-op.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	released := l.released
	l.mu.Unlock()
	if released {
		return nil
	}
	ok, err := dsBool(l.c.runDS(ctx, l.cmd(kv.CmdLockRelease, 0)))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotLockHolder, l.name)
	}
	l.mu.Lock()
	l.released, l.deadline = true, time.Time{}
	l.mu.Unlock()
	return nil
}

// cmd builds a lock command carrying the token and, unless op is a release,
// the TTL in whole milliseconds (rounded up; a ttl ≤ 0 is sent as is for the
// store to refuse).
func (l *Lease) cmd(op kv.CmdOp, ttl time.Duration) kv.Cmd {
	args := [][]byte{[]byte(l.token)}
	if op != kv.CmdLockRelease {
		ms := ttl.Milliseconds()
		if ttl > 0 && ttl%time.Millisecond != 0 {
			ms++
		}
		args = append(args, dsIntArg(ms))
	}
	return kv.Cmd{Op: op, Key: l.name, Args: args}
}

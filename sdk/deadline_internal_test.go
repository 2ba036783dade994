package sdk

import (
	"context"
	"errors"
	"testing"
	"time"
)

type ctxKey struct{}

// TestBoundContextBehavesAsATimeout: the SDK's bound context answers as
// context.WithTimeout would — its deadline, the caller's values and
// cancellation, DeadlineExceeded once the deadline passed, a Done that
// closes at the deadline for the code that waits on it — without a timer
// until Done is asked for.
func TestBoundContextBehavesAsATimeout(t *testing.T) {
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	defer cancel()
	ctx, bound := boundBy(parent, 50*time.Millisecond)
	defer bound.release()
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > 50*time.Millisecond {
		t.Fatalf("deadline %v %v", dl, ok)
	}
	if ctx.Value(ctxKey{}) != "v" {
		t.Fatal("the caller's value is lost")
	}
	if err := ctx.Err(); err != nil {
		t.Fatalf("Err before the deadline: %v", err)
	}
	if bound.timed != nil {
		t.Fatal("a timer was made before anyone waited on Done")
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done did not close at the deadline")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err after the deadline: %v", ctx.Err())
	}

	// Without Done, Err reads the deadline from the clock.
	ctx2, bound2 := boundBy(parent, time.Nanosecond)
	defer bound2.release()
	for deadline := time.Now().Add(10 * time.Second); ctx2.Err() == nil; {
		if time.Now().After(deadline) {
			t.Fatal("Err never reported the passed deadline")
		}
	}
	if !errors.Is(ctx2.Err(), context.DeadlineExceeded) || bound2.timed != nil {
		t.Fatalf("Err %v, timer made %v", ctx2.Err(), bound2.timed != nil)
	}

	// The caller's cancellation wins over the bound.
	ctx3, bound3 := boundBy(parent, time.Hour)
	defer bound3.release()
	done := ctx3.Done()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the caller's cancel did not reach Done")
	}
	if !errors.Is(ctx3.Err(), context.Canceled) {
		t.Fatalf("Err after the caller's cancel: %v", ctx3.Err())
	}

	// A context with a deadline is not bound again.
	withDL, c4 := context.WithTimeout(context.Background(), time.Minute)
	defer c4()
	if got, b := boundBy(withDL, time.Second); got != withDL || b != nil {
		t.Fatal("a context that had a deadline was bound again")
	}
	var none *boundCtx
	none.release() // nil-safe, as deferred after boundBy of such a context
}

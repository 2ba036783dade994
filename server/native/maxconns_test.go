package native_test

import (
	"testing"

	"github.com/zaris-io/zaris/server/native"
)

// TestMaxConnsRefusesOneMore: past MaxConns a new connection is closed
// before anything is read, counted; the open ones keep working, and once
// one closes a new one is served again.
func TestMaxConnsRefusesOneMore(t *testing.T) {
	h := newHarness(t, func(c *native.Config) { c.MaxConns = 2 })
	a, b := h.dialReady(), h.dialReady()
	h.waitConns(2)
	extra := h.dial()
	extra.expectClosed(ioWait)
	if h.srv.RefusedConns() != 1 {
		t.Fatalf("refused %d connections, want 1", h.srv.RefusedConns())
	}
	_ = b
	_ = a.nc.Close()
	h.waitConns(1)
	h.dialReady() // a slot is free again
}

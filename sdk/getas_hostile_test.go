package sdk_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/zaris-io/zaris/internal/mpsafe"
	"github.com/zaris-io/zaris/sdk"
)

// TestGetAsRefusesAValueAnnouncingGigabytes: a cached value is written by
// any client; nine bytes announcing a 1 GiB string must not make a reader's
// GetAs allocate towards it (msgpack.Unmarshal did: ~50 MB per read, 1 MiB
// more kept in its decoder pool each time). The read fails with a decode
// error instead.
func TestGetAsRefusesAValueAnnouncingGigabytes(t *testing.T) {
	ctx := context.Background()
	c, err := sdk.Connect(ctx, "zaris://inproc/getas-hostile")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hostile := []byte{0x81, 0xa1, 'A', 0xdb, 0x40, 0x00, 0x00, 0x00, 'x'}
	if r, err := c.Put(ctx, "k", hostile, nil); err != nil || !r.OK() {
		t.Fatalf("put: %v %v", r, err)
	}
	type doc struct{ A string }
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 20 {
		if _, _, err := sdk.GetAs[doc](ctx, c, "k"); !errors.Is(err, mpsafe.ErrMalformed) {
			t.Fatalf("GetAs = %v, want a decode error wrapping mpsafe.ErrMalformed", err)
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("20 reads of a 9-byte value allocated %d bytes", grew)
	}
	// A well-formed value still decodes.
	if _, err := sdk.PutAs(ctx, c, "ok", doc{A: "fine"}, nil); err != nil {
		t.Fatal(err)
	}
	if v, _, err := sdk.GetAs[doc](ctx, c, "ok"); err != nil || v.A != "fine" {
		t.Fatalf("GetAs of a good value: %+v %v", v, err)
	}
}

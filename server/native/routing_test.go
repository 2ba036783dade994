package native_test

import (
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/native"
)

func TestRoutingMapAnswerAndPush(t *testing.T) {
	m1 := &wire.RoutingMap{Version: 1, TotalSegments: 2, Nodes: []wire.RoutingNode{{ID: "a", Host: "127.0.0.1", ClientPort: 1}}, SegmentOwner: []int32{0, 0}}
	src := native.NewStaticRouting(m1)
	h := newHarness(t, func(c *native.Config) { c.Routing = src })
	c := h.dialReady()

	f := c.call(wire.OpRoutingMap, nil)
	var got wire.RoutingMap
	if err := wire.DecodeRoutingMap(f.Body, &got); err != nil || got.Version != 1 {
		t.Fatalf("map: %+v %v", got, err)
	}

	// A streaming request gets the current map, then every new version.
	id := c.nextID()
	c.write(wire.AppendFrame(nil, id, wire.OpRoutingMap, wire.FlagStream, nil))
	first := c.read()
	if first.ID != id || !first.Flags.Has(wire.FlagStream) {
		t.Fatalf("first push %+v", first)
	}
	m2 := *m1
	m2.Version = 2
	src.Set(&m2)
	next := c.read()
	if err := wire.DecodeRoutingMap(next.Body, &got); err != nil || got.Version != 2 {
		t.Fatalf("pushed map: %+v %v", got, err)
	}
	// Ending the stream answers OK, and the stream sends its last frame;
	// the two may arrive in either order.
	endID := c.nextID()
	c.write(wire.AppendFrame(nil, endID, wire.OpEndStream, 0, wire.AppendEndStreamRequest(nil, id)))
	sawOK, sawLast := false, false
	for range 2 {
		f := c.read()
		switch {
		case f.ID == endID:
			var r kv.Reply
			if err := wire.DecodeReply(f.Body, &r); err != nil || r.Type != kv.ReplyOK {
				t.Fatalf("end stream: %+v %v", r, err)
			}
			sawOK = true
		case f.ID == id && !f.Flags.Has(wire.FlagStream):
			sawLast = true
		default:
			t.Fatalf("unexpected frame %+v", f)
		}
	}
	if !sawOK || !sawLast {
		t.Fatal("missing the OK or the stream's last frame")
	}
}

func TestRoutingMapWithoutSourceIsBadRequest(t *testing.T) {
	h := newHarness(t)
	c := h.dialReady()
	f := c.call(wire.OpRoutingMap, nil)
	var e wire.ErrorResponse
	if !f.Flags.Has(wire.FlagError) || wire.DecodeErrorResponse(f.Body, &e) != nil || e.Status != kv.StatusBadRequest {
		t.Fatalf("%+v %+v", f, e)
	}
}

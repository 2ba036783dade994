package resp

import (
	"testing"

	"github.com/zaris-io/zaris/internal/placement"
)

// The command's key is placed once and the placement reused by its run,
// its write barrier and WAIT's record: a new key (the next command, or a
// command that moves on to its destination) must be placed again, and
// another key of the same length is never taken for it (a reused read
// buffer holds different keys at one address).
func TestCurSegmentFollowsTheKey(t *testing.T) {
	if placement.SegmentOf("user:1000{a}", 256) == placement.SegmentOf("user:1000{b}", 256) {
		t.Fatal("the two keys must sit in different segments for this test")
	}
	c := &conn{srv: &Server{segs: 256}}
	buf := []byte("user:1000{a}")
	c.setCurKey(buf)
	if got, want := c.curSegment(), placement.SegmentOf("user:1000{a}", 256); got != want {
		t.Fatalf("first key: segment %d, want %d", got, want)
	}
	if got, want := c.segmentOf(view(buf)), placement.SegmentOf("user:1000{a}", 256); got != want {
		t.Fatalf("the key itself: segment %d, want %d", got, want)
	}
	if got, want := c.segmentOf("user:1000{b}"), placement.SegmentOf("user:1000{b}", 256); got != want {
		t.Fatalf("another key of the same length: segment %d, want %d", got, want)
	}
	copy(buf, "user:1000{b}") // the read buffer reused for the next command
	c.setCurKey(buf)
	if got, want := c.curSegment(), placement.SegmentOf("user:1000{b}", 256); got != want {
		t.Fatalf("next command's key at the same address: segment %d, want %d", got, want)
	}
}

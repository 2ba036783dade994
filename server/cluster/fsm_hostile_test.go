package cluster

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/zaris-io/zaris/internal/mpsafe"
)

// A metadata snapshot comes from this node's disk or from the raft leader;
// a corrupt one announcing a 1 GiB string must fail to restore, not make
// the node allocate towards it (the stream decoder grew its buffer in
// 1 MiB steps until the input ran out, and kept it pooled; D76).
func TestRestoreRefusesASnapshotAnnouncingGigabytes(t *testing.T) {
	hostile := [][]byte{
		// {"ev": [str32 of 1 GiB]}: an evicted member's id
		{snapshotV2, 0x81, 0xa2, 'e', 'v', 0x91, 0xdb, 0x40, 0x00, 0x00, 0x00, 'x'},
		// the older format, the bare map: {"Partitions": [{"Identity": str32 of 1 GiB}]}
		append(append([]byte{0x81, 0xaa}, "Partitions"...), append(append([]byte{0x91, 0x81, 0xa8}, "identity"...), 0xdb, 0x40, 0x00, 0x00, 0x00, 'x')...),
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		for _, snap := range hostile {
			f := newFSM("s", "")
			if err := f.Restore(io.NopCloser(bytes.NewReader(snap))); !errors.Is(err, mpsafe.ErrMalformed) {
				t.Fatalf("Restore(%x) = %v, want mpsafe.ErrMalformed", snap, err)
			}
			if f.Map() != nil {
				t.Fatal("a refused snapshot left a map")
			}
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Fatalf("20 restores of snapshots of a few bytes allocated %d bytes", grew)
	}
}

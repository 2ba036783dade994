package resp

import "testing"

// TestMigratedAway names the failure each case of MIGRATE's delete rule
// prevents.
func TestMigratedAway(t *testing.T) {
	for _, c := range []struct {
		name       string
		copy, sent bool
		read, now  uint64
		want       bool
	}{
		{"moved: the target holds it, nobody wrote it since", false, true, 7, 7, true},
		{"COPY keeps the source's key", true, true, 7, 7, false},
		{"a key the target refused (BUSYKEY) is not lost", false, false, 7, 7, false},
		{"a write between DUMP and the delete is not lost", false, true, 7, 8, false},
		{"deleted and written again since: the new key stays", false, true, 7, 12, false},
		{"already gone: nothing to delete", false, true, 7, 0, false},
	} {
		if got := migratedAway(c.copy, c.sent, c.read, c.now); got != c.want {
			t.Errorf("%s: migratedAway = %v, want %v", c.name, got, c.want)
		}
	}
}

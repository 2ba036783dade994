package sdk

import (
	"reflect"
	"testing"

	"github.com/zaris-io/zaris/server/store"
)

// regroupCommit after a failover: the failure it prevents is a commit that
// keeps asking the dead (or demoted) owner, or that asks a new owner for
// fewer writes than it answers for, so that the part never confirms.
func TestRegroupCommit(t *testing.T) {
	writes := []store.TxWrite{{Key: "b1"}, {Key: "b2"}, {Key: "c1"}}
	owners := map[string]txOwner{"b1": "n2", "b2": "n2", "c1": "n3"}
	ownerOf := func(k string) txOwner { return owners[k] }
	for _, tc := range []struct {
		name    string
		pending map[txOwner][]int
		want    map[txOwner][]int
	}{
		{"the prepared owner died: each write goes to its new owner",
			map[txOwner][]int{"n1": {0, 1, 2}}, map[txOwner][]int{"n2": {0, 1}, "n3": {2}}},
		{"an owner already confirmed is not asked again",
			map[txOwner][]int{"n1": {2}}, map[txOwner][]int{"n3": {2}}},
		{"an owner is asked for every write of the part it holds, confirmed or not",
			map[txOwner][]int{"n9": {1}}, map[txOwner][]int{"n2": {0, 1}}},
		{"nothing open: nobody to ask", map[txOwner][]int{}, map[txOwner][]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := regroupCommit(tc.pending, writes, ownerOf); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

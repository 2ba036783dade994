package cluster

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
)

// TestCommitRetryable: which failed control-plane commits are sent again,
// each row naming the failure its answer prevents.
func TestCommitRetryable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no leader known during an election: an ACL DELUSER failed at once (TestACLUsersClusterWide under the CPU hog)",
			fmt.Errorf("%w (no leader known yet)", ErrNotLeader), true},
		{"the node asked had stepped down and refused before appending: retrying reaches the new leader",
			fmt.Errorf("%w: ACL asked n2, which is no longer the leader: x", ErrNotLeader), true},
		{"the leader's own check, on the leader path", fmt.Errorf("%w (leader: %q)", ErrNotLeader, ""), true},
		{"leadership lost after the entry was appended: it may still commit, so sending it again could apply it twice",
			raft.ErrLeadershipLost, false},
		{"a refusal of the change itself (a bad rule): asking again cannot succeed",
			errors.New("cluster: ACL change refused by the leader n1: bad rule"), false},
		{"success", nil, false},
	} {
		if got := commitRetryable(tc.err); got != tc.want {
			t.Errorf("%s: commitRetryable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

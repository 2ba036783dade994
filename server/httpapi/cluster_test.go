package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/server/store"
)

func TestClusterEndpoints(t *testing.T) {
	// Without a cluster: 404, not a crash.
	f := newFixture(t)
	require.Equal(t, http.StatusNotFound, f.do("GET", "/v1/cluster", nil).code)
	require.Equal(t, http.StatusNotFound, f.do("POST", "/v1/cluster/rebalance", nil).code)

	leader := true
	calls := 0
	f = newFixture(t, withToken("tok"), func(_ *store.Config, o *Options) {
		o.Cluster = func() any { return map[string]any{"mapVersion": 7, "leader": "n1"} }
		o.Rebalance = func(context.Context) (uint64, error) {
			calls++
			if !leader {
				return 0, fmt.Errorf("%w (leader: %q)", ErrNotLeader, "n1")
			}
			return 8, nil
		}
	})
	r := f.do("GET", "/v1/cluster", nil)
	require.Equal(t, http.StatusOK, r.code)
	require.JSONEq(t, `{"mapVersion":7,"leader":"n1"}`, string(r.body))

	// A live migration loses nothing: nothing to confirm; the moves run in
	// the background.
	r = f.do("POST", "/v1/cluster/rebalance", nil)
	require.Equal(t, http.StatusAccepted, r.code)
	require.JSONEq(t, `{"mapVersion":8,"status":"rebalancing"}`, string(r.body))
	require.Equal(t, 1, calls)

	leader = false
	r = f.do("POST", "/v1/cluster/rebalance", nil)
	require.Equal(t, http.StatusConflict, r.code, "a follower points at the leader")
	require.Contains(t, string(r.body), `\"n1\"`)

	// Protected like /v1/info.
	f.token = ""
	require.Equal(t, http.StatusUnauthorized, f.do("GET", "/v1/cluster", nil).code)
	require.True(t, errors.Is(fmt.Errorf("x: %w", ErrNotLeader), ErrNotLeader))
}

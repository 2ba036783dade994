package httpapi

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/server/store"
)

// POST /v1/node/decommission starts the node's decommission once, answers
// 202 (again on a repeat), is token-protected, and is 404 without a node
// behind it.
func TestDecommissionEndpoint(t *testing.T) {
	f := newFixture(t)
	r := f.do("POST", "/v1/node/decommission", nil)
	require.Equal(t, http.StatusNotFound, r.code)
	require.Equal(t, "NotFound", r.errStatus(t))

	var calls atomic.Int32
	f = newFixture(t, withToken("tok"), func(_ *store.Config, o *Options) {
		o.Decommission = func() { calls.Add(1) }
	})
	r = f.do("POST", "/v1/node/decommission", nil, "Authorization", "Bearer wrong")
	require.Equal(t, http.StatusUnauthorized, r.code)
	require.Zero(t, calls.Load(), "an unauthenticated request must not decommission")

	r = f.do("GET", "/v1/node/decommission", nil)
	require.NotEqual(t, http.StatusAccepted, r.code, "only POST decommissions")
	require.Zero(t, calls.Load())

	for range 2 {
		r = f.do("POST", "/v1/node/decommission", nil)
		require.Equal(t, http.StatusAccepted, r.code)
		require.JSONEq(t, `{"status":"decommissioning"}`, string(r.body))
	}
	require.EqualValues(t, 1, calls.Load(), "a repeated request starts the decommission once")
}

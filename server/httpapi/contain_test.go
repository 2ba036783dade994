package httpapi

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/testenv"
	"github.com/zaris-io/zaris/server/metrics"
	"github.com/zaris-io/zaris/server/store"
)

// TestPanicIsContainedToItsRequest injects a bug into the store (a write of
// key "boom" panics under its segment's write lock) and shows that the
// request alone pays: 500 with status Internal and Connection: close, the
// segment lock released, nothing applied, the other keys and requests
// untouched, the panic counted and logged by route — not by path, which
// holds the key — with the stack.
func TestPanicIsContainedToItsRequest(t *testing.T) {
	var logs testenv.SyncBuffer
	f := newFixture(t, func(_ *store.Config, o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	require.Equal(t, http.StatusCreated, f.do("PUT", key("{boom}neighbour"), strings.NewReader("kept")).code)
	f.store.InjectFault(func(k string) {
		if k == "boom" {
			panic("injected bug holding secret-value")
		}
	})

	r := f.do("PUT", key("boom"), strings.NewReader("secret-value"))
	require.Equal(t, http.StatusInternalServerError, r.code, string(r.body))
	require.Equal(t, kv.StatusInternal.String(), r.errStatus(t))
	require.True(t, r.close, "the request's connection must be closed (Connection: close)")

	require.Equal(t, http.StatusCreated, f.do("PUT", key("{boom}after"), strings.NewReader("ok")).code, "the segment lock was left held")
	require.Equal(t, "kept", string(f.do("GET", key("{boom}neighbour"), nil).body))
	require.Equal(t, http.StatusNotFound, f.do("GET", key("boom"), nil).code, "the panicking write applied something")

	mfs, err := f.rec.Registry().Gather()
	require.NoError(t, err)
	var panics float64
	for _, mf := range mfs {
		if mf.GetName() == metrics.MetricPanics {
			for _, m := range mf.GetMetric() {
				if m.GetLabel()[0].GetValue() == "http" {
					panics = m.GetCounter().GetValue()
				}
			}
		}
	}
	require.Equal(t, float64(1), panics)
	out := logs.String()
	require.Contains(t, out, "route=/v1/keys/*")
	require.Contains(t, out, "stack=")
	require.NotContains(t, out, "secret-value")
	require.NotContains(t, out, "/v1/keys/boom")
}

package resp_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/testenv"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/metrics"
)

// panicCount reads zaris_panics_total{protocol} from the node's registry.
func panicCount(t testing.TB, n *server.Node, protocol string) float64 {
	t.Helper()
	mfs, err := n.Metrics().Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != metrics.MetricPanics {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "protocol" && l.GetValue() == protocol {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("%s{protocol=%q} not exported", metrics.MetricPanics, protocol)
	return 0
}

// TestPanicIsContainedToItsConnection injects a bug into the store (a write
// of key "boom" panics under its segment's write lock) and shows that the
// command's connection alone pays: it gets -ERR internal error and is
// closed, the segment lock is released (a write to a key of the same slot
// goes through), nothing of the write applied, every other connection and
// key is untouched, the panic is counted and logged by command name without
// the key or value.
func TestPanicIsContainedToItsConnection(t *testing.T) {
	var logs testenv.SyncBuffer
	cfg := testConfig()
	n, err := server.NewNode(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	n.Store().InjectFault(func(key string) {
		if key == "boom" {
			panic("injected bug holding secret-value")
		}
	})

	ctx := ctxT(t)
	other := newClient(t, n)
	require.NoError(t, other.Set(ctx, "{boom}neighbour", "kept", 0).Err())
	require.NoError(t, other.Set(ctx, "elsewhere", "kept too", 0).Err())
	require.NoError(t, other.RPush(ctx, "{boom}list", "a", "b").Err())

	// Plain command, pipelined between two others: the one before is
	// answered, the panicking one gets the error, the one after never runs.
	raw := dialRaw(t, n.RESPAddr().String())
	raw.send(cmd("SET", "{boom}before", "1") + cmd("SET", "boom", "secret-value") + cmd("SET", "{boom}after", "1"))
	require.Equal(t, "+OK\r\n", raw.reply())
	require.Equal(t, "-ERR internal error\r\n", raw.reply())
	raw.expectClosed(5 * time.Second)

	// Inside EXEC: the transaction's segment lock is released too.
	tx := dialRaw(t, n.RESPAddr().String())
	require.Equal(t, "+OK\r\n", tx.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", tx.do("LPUSH", "boom", "secret-value"))
	require.Equal(t, "-ERR internal error\r\n", tx.do("EXEC"))
	tx.expectClosed(5 * time.Second)

	// The node serves on, the lock of boom's segment is free, the key space
	// is intact and the failed writes applied nothing.
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	require.NoError(t, other.Set(wctx, "{boom}after-panic", "ok", 0).Err(), "the segment lock was left held")
	require.Equal(t, "kept", other.Get(ctx, "{boom}neighbour").Val())
	require.Equal(t, "kept too", other.Get(ctx, "elsewhere").Val())
	require.Equal(t, []string{"a", "b"}, other.LRange(ctx, "{boom}list", 0, -1).Val())
	require.Equal(t, "1", other.Get(ctx, "{boom}before").Val())
	require.Equal(t, redis.Nil, other.Get(ctx, "{boom}after").Err(), "a command pipelined after the panic must not run")
	require.Equal(t, int64(0), other.Exists(ctx, "boom").Val(), "the panicking write applied something")
	require.Equal(t, int64(5), other.DBSize(ctx).Val())
	fresh := newClient(t, n)
	require.Equal(t, "PONG", fresh.Ping(ctx).Val())

	require.Equal(t, float64(2), panicCount(t, n, "resp"))
	out := logs.String()
	require.Contains(t, out, "command=set")
	require.Contains(t, out, "command=exec")
	require.Contains(t, out, "stack=")
	require.False(t, strings.Contains(out, "secret-value"), "a logged panic leaked a value:\n%s", out)
}

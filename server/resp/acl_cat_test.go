package resp_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// commandCats asks a server COMMAND INFO for every command (and
// subcommand) and returns name → its ACL categories, sorted.
func commandCats(t *testing.T, rdb *redis.Client) map[string]string {
	t.Helper()
	res, err := rdb.Do(context.Background(), "COMMAND", "INFO").Result()
	if err != nil {
		// COMMAND INFO with no name needs 7.0; fall back to COMMAND.
		res, err = rdb.Do(context.Background(), "COMMAND").Result()
	}
	require.NoError(t, err)
	out := map[string]string{}
	var walk func(v []any)
	walk = func(v []any) {
		for _, e := range v {
			info, ok := e.([]any)
			if !ok || len(info) < 7 {
				continue
			}
			name := fmt.Sprint(info[0])
			var cats []string
			if cs, ok := info[6].([]any); ok {
				for _, c := range cs {
					cats = append(cats, fmt.Sprint(c))
				}
			}
			sort.Strings(cats)
			out[name] = strings.Join(cats, " ")
			if len(info) >= 10 {
				if subs, ok := info[9].([]any); ok {
					walk(subs)
				}
			}
		}
	}
	walk(res.([]any))
	return out
}

// TestACLCategoriesMatchRedis: every command Zaris serves has the ACL
// categories redis-server 7.0 gives it (COMMAND INFO of both).
func TestACLCategoriesMatchRedis(t *testing.T) {
	addr := startRedis(t, false)
	oracle := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = oracle.Close() })
	n := startNode(t)
	ours := commandCats(t, newClient(t, n))
	theirs := commandCats(t, oracle)
	var diffs []string
	for name, cats := range ours {
		want, ok := theirs[name]
		if !ok {
			continue // a command Redis 7.0 has not got (Zaris's own or 7.2+)
		}
		if cats != want {
			diffs = append(diffs, fmt.Sprintf("%s: zaris %q redis %q", name, cats, want))
		}
	}
	sort.Strings(diffs)
	require.Empty(t, diffs, "ACL categories differing from redis-server:\n%s", strings.Join(diffs, "\n"))
}

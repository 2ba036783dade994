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
	return commandInfoSets(t, rdb, 6)
}

// commandInfoSets is name → the set at position at of each command's
// COMMAND INFO entry (2: flags, 6: ACL categories), sorted and joined.
func commandInfoSets(t *testing.T, rdb *redis.Client, at int) map[string]string {
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
			var set []string
			if cs, ok := info[at].([]any); ok {
				for _, c := range cs {
					set = append(set, fmt.Sprint(c))
				}
			}
			sort.Strings(set)
			out[name] = strings.Join(set, " ")
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

// TestCommandFlagsMatchRedis: every command Zaris serves has the flags
// redis-server 7.0 gives it in COMMAND INFO — clients and proxies route
// and retry by them (readonly, write, blocking), and Zaris acts on some
// itself (fast: the command's counters may wait for the end of its batch,
// tally.go; allow_busy: served while a script runs).
func TestCommandFlagsMatchRedis(t *testing.T) {
	addr := startRedis(t, false)
	oracle := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = oracle.Close() })
	n := startNode(t)
	ours, theirs := commandInfoSets(t, newClient(t, n), 2), commandInfoSets(t, oracle, 2)
	var diffs []string
	for name, flags := range ours {
		if want, ok := theirs[name]; ok && flags != want {
			diffs = append(diffs, fmt.Sprintf("%s: zaris %q redis %q", name, flags, want))
		}
	}
	sort.Strings(diffs)
	require.Empty(t, diffs, "COMMAND INFO flags differing from redis-server:\n%s", strings.Join(diffs, "\n"))
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

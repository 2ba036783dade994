package resp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/server/resp"
)

// The snapshot the coverage table is generated from is redis-server 7.0's
// own COMMAND DOCS: names, groups and versions of every command and
// subcommand (when the installed redis-server is a 7.0).
func TestRedisCommandSnapshot(t *testing.T) {
	addr := startRedis(t, false)
	rc := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	defer rc.Close()
	ctx := context.Background()
	ver, err := rc.Do(ctx, "INFO", "server").Text()
	require.NoError(t, err)
	if !strings.Contains(ver, "redis_version:7.0.") {
		t.Skip("the snapshot is of Redis 7.0; the installed redis-server is another version")
	}
	docs, err := rc.Do(ctx, "COMMAND", "DOCS").Slice()
	require.NoError(t, err)
	live := map[string][2]string{}
	var walk func(name string, doc []any)
	walk = func(name string, doc []any) {
		var group, since string
		for i := 0; i+1 < len(doc); i += 2 {
			switch doc[i] {
			case "group":
				group, _ = doc[i+1].(string)
			case "since":
				since, _ = doc[i+1].(string)
			case "subcommands":
				subs, _ := doc[i+1].([]any)
				for j := 0; j+1 < len(subs); j += 2 {
					sd, _ := subs[j+1].([]any)
					walk(strings.ToLower(subs[j].(string)), sd)
				}
			}
		}
		live[name] = [2]string{group, since}
	}
	for i := 0; i+1 < len(docs); i += 2 {
		d, _ := docs[i+1].([]any)
		walk(strings.ToLower(docs[i].(string)), d)
	}
	require.Equal(t, live, resp.RedisCommandSnapshot(), "testdata/redis-7.0-commands.tsv differs from this redis-server's COMMAND DOCS")
}

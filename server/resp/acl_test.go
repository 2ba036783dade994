package resp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/resp"
)

// aclScript is run on a fresh redis-server and a fresh Zaris node; the
// replies must be byte-identical. Users are created, shown, refused and
// deleted; a second connection authenticates as them and is refused.
var aclScript = [][]string{
	{"ACL", "SETUSER", "u", "on", ">p1", ">p2", "+@all", "-@dangerous", "~cache:*", "%R~r:*", "%W~w:*", "&ch*", "+config|get"},
	{"ACL", "GETUSER", "u"},
	{"ACL", "SETUSER", "v"}, {"ACL", "GETUSER", "v"},
	{"ACL", "SETUSER", "w", "+@read", "+@write", "-@read", "allkeys", "resetkeys", "~a", "~b", "nopass"},
	{"ACL", "SETUSER", "x", "on", "nopass", "allkeys", "allchannels", "allcommands", "skip-sanitize-payload"},
	{"ACL", "SETUSER", "y", "reset", "-@all", "-set", "+@hash", "-hset", "%RW~rw:*", "%R~rw:*"},
	{"ACL", "SETUSER", "z", "-@all", "+config", "-config|set", "&a", "&b", "resetchannels", "&c", "<nope"},
	{"ACL", "LIST"},
	{"ACL", "USERS"},
	{"ACL", "SETUSER", "b", "xx"}, {"ACL", "SETUSER", "b", "%X~a"}, {"ACL", "SETUSER", "b", "+nosuch"},
	{"ACL", "SETUSER", "b", "+@nosuch"}, {"ACL", "SETUSER", "b", "~a", "allkeys", "%RW~b"}, {"ACL", "SETUSER", "b", "#ABC"},
	{"ACL", "SETUSER", "b", "<nope"}, {"ACL", "SETUSER", "b", "&*", "&x"}, {"ACL", "SETUSER", "bad name", "on"},
	{"ACL", "GETUSER", "b"},
	{"ACL", "SETUSER", "h", "#" + strings.Repeat("ab", 32), "!" + strings.Repeat("ab", 32), "on"},
	{"ACL", "DELUSER", "default"}, {"ACL", "DELUSER", "nosuch", "w", "v"}, {"ACL", "GETUSER", "nosuch"},
	{"ACL", "WHOAMI"}, {"ACL", "CAT"}, {"ACL", "CAT", "nosuch"}, {"ACL", "SETUSER"}, {"ACL", "NOSUCH"},
	{"ACL", "DRYRUN", "u", "get", "k"}, {"ACL", "DRYRUN", "u", "set", "cache:1", "v"}, {"ACL", "DRYRUN", "u", "set", "k", "v"},
	{"ACL", "DRYRUN", "u", "get", "r:1"}, {"ACL", "DRYRUN", "u", "set", "r:1", "v"}, {"ACL", "DRYRUN", "u", "del", "w:1"},
	{"ACL", "DRYRUN", "u", "publish", "ch1", "m"}, {"ACL", "DRYRUN", "u", "publish", "d", "m"}, {"ACL", "DRYRUN", "u", "flushall"},
	{"ACL", "DRYRUN", "nosuch", "get", "k"}, {"ACL", "DRYRUN", "u", "nosuch"}, {"ACL", "DRYRUN", "u", "get"},
	{"ACL", "GENPASS", "0"}, {"ACL", "LOG", "x"}, {"ACL", "LOG", "-1"},
	{"AUTH", "nosuch", "x"}, {"AUTH", "u", "bad"}, {"AUTH", "a", "b", "c"},
	{"HELLO", "3", "AUTH", "u", "bad"},
}

// aclAsUser is run on a second connection after AUTH u p1.
var aclAsUser = [][]string{
	{"AUTH", "u", "p1"}, {"ACL", "WHOAMI"},
	{"SET", "cache:1", "x"}, {"GET", "cache:1"}, {"GET", "other"}, {"GET", "r:1"}, {"SET", "r:1", "v"},
	{"SET", "w:1", "v"}, {"GET", "w:1"}, {"DEL", "w:1"}, {"MSET", "cache:{a}1", "1", "other{a}", "2"},
	{"PUBLISH", "ch1", "m"}, {"PUBLISH", "d", "m"}, {"FLUSHALL"}, {"KEYS", "*"}, {"CONFIG", "SET", "maxmemory", "0"},
	{"ACL", "SETUSER", "q"}, {"ACL", "LIST"},
	{"MULTI"}, {"SET", "cache:2", "v"}, {"FLUSHALL"}, {"EXEC"},
	{"EVAL", "return redis.call('flushall')", "0"},
	{"EVAL", "return redis.call('get', KEYS[1])", "1", "other"},
	{"AUTH", "u", "p2"}, {"AUTH", "u", "nope"}, {"ACL", "WHOAMI"},
	{"HELLO", "2", "AUTH", "z", "x"},
}

// TestACLRepliesMatchRedis is the differential test of the ACL commands,
// AUTH and the NOPERM refusals against redis-server 7.0.
func TestACLRepliesMatchRedis(t *testing.T) {
	oracle := startRedis(t, false)
	n := startNode(t)
	run := func(addr string) []string {
		admin, user := dialRaw(t, addr), dialRaw(t, addr)
		var out []string
		for _, c := range aclScript {
			out = append(out, strings.Join(c, " ")+" → "+admin.do(c...))
		}
		for _, c := range aclAsUser {
			out = append(out, "[u] "+strings.Join(c, " ")+" → "+user.do(c...))
		}
		return out
	}
	want, got := run(oracle), run(n.RESPAddr().String())
	require.Equal(t, len(want), len(got))
	for i := range want {
		require.Equal(t, want[i], got[i], "step %d", i)
	}
}

// aclMatrixUsers are the users of the matrix: command categories × key
// patterns × channels.
var aclMatrixUsers = [][]string{
	{"reader", "on", ">pw", "+@read", "~*"},
	{"cache", "on", ">pw", "+@all", "-@dangerous", "~cache:*", "&news*"},
	{"split", "on", ">pw", "+@all", "-@admin", "%R~r:*", "%W~w:*", "~both:*"},
	{"strings", "on", ">pw", "-@all", "+@string", "+@connection", "~*"},
	{"noflush", "on", ">pw", "+@all", "-flushall", "-flushdb", "-config|set", "allkeys", "allchannels"},
	{"off", "off", ">pw", "+@all", "~*"},
}

// aclMatrixCmds are run by every user of the matrix.
var aclMatrixCmds = [][]any{
	{"GET", "cache:a"}, {"GET", "r:a"}, {"GET", "w:a"}, {"GET", "both:a"}, {"GET", "other"},
	{"SET", "cache:a", "1"}, {"SET", "r:a", "1"}, {"SET", "w:a", "1"}, {"SET", "both:a", "1"}, {"SET", "other", "1"},
	{"SET", "w:a", "1", "GET"}, {"INCR", "w:b"}, {"DEL", "w:a"}, {"DEL", "r:a"}, {"APPEND", "cache:s", "x"},
	{"HSET", "cache:h", "f", "v"}, {"HGET", "cache:h", "f"}, {"LPUSH", "cache:l", "x"}, {"LRANGE", "cache:l", "0", "-1"},
	{"SADD", "both:s", "x"}, {"ZADD", "cache:z", "1", "x"}, {"EXISTS", "r:a"}, {"TTL", "w:a"}, {"EXPIRE", "cache:a", "100"},
	{"PUBLISH", "news1", "m"}, {"PUBLISH", "sport", "m"}, {"PING"}, {"ECHO", "x"},
	{"KEYS", "nomatch*"}, {"CONFIG", "GET", "maxmemory"}, {"CONFIG", "SET", "maxmemory-policy", "noeviction"},
	{"FLUSHDB"}, {"FLUSHALL"}, {"DBSIZE"}, {"INFO", "keyspace"}, {"CLIENT", "ID"}, {"ACL", "WHOAMI"}, {"ACL", "LIST"},
}

// outcome reduces a reply to what the matrix compares: "ok", or the
// error's first word and message for a refusal.
func outcome(err error) string {
	if err == nil || err == redis.Nil {
		return "ok"
	}
	return err.Error()
}

func runMatrix(t *testing.T, addr string) map[string]string {
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = admin.Close() })
	for _, u := range aclMatrixUsers {
		args := []any{"ACL", "SETUSER"}
		for _, a := range u {
			args = append(args, a)
		}
		require.NoError(t, admin.Do(ctx, args...).Err())
	}
	out := map[string]string{}
	for _, u := range aclMatrixUsers {
		c := redis.NewClient(&redis.Options{Addr: addr, Username: u[0], Password: "pw", MaxRetries: -1, Protocol: 2})
		cmds := aclMatrixCmds
		if u[1] == "off" {
			cmds = cmds[:3] // every call is a failed AUTH: stay under the failed-AUTH limiter
		}
		for _, cmd := range cmds {
			out[fmt.Sprintf("%s %v", u[0], cmd)] = outcome(c.Do(ctx, cmd...).Err())
		}
		_ = c.Close()
	}
	return out
}

// TestACLMatrixMatchesRedis runs users × command categories × key
// patterns × channels on redis-server and on a Zaris node with go-redis:
// every allowed/refused outcome and every NOPERM text must be the same.
func TestACLMatrixMatchesRedis(t *testing.T) {
	want := runMatrix(t, startRedis(t, false))
	n := startNode(t)
	got := runMatrix(t, n.RESPAddr().String())
	refused := 0
	for k, w := range want {
		require.Equal(t, w, got[k], k)
		if strings.HasPrefix(w, "NOPERM") {
			refused++
		}
	}
	require.Greater(t, refused, 30, "the matrix exercises refusals")
}

// TestACLTokenIsDefaultPassword: --token stays the default user's
// password; a user created with ACL SETUSER authenticates beside it.
func TestACLTokenIsDefaultPassword(t *testing.T) {
	n := startNode(t, func(c *server.Config) { c.Token = "s3cret" })
	ctx := context.Background()
	anon := newClient(t, n)
	require.EqualError(t, anon.Get(ctx, "k").Err(), "NOAUTH Authentication required.")
	admin := newClient(t, n, func(o *redis.Options) { o.Password = "s3cret" })
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">apppw", "+@read", "+@write", "-@dangerous", "~app:*").Err())
	app := newClient(t, n, func(o *redis.Options) { o.Username, o.Password = "app", "apppw" })
	require.NoError(t, app.Set(ctx, "app:1", "v", 0).Err())
	require.EqualError(t, app.Set(ctx, "other", "v", 0).Err(), "NOPERM this user has no permissions to access one of the keys used as arguments")
	require.EqualError(t, app.FlushAll(ctx).Err(), "NOPERM this user has no permissions to run the 'flushall' command")
	wrong := newClient(t, n, func(o *redis.Options) { o.Username, o.Password = "app", "nope" })
	require.ErrorContains(t, wrong.Ping(ctx).Err(), "WRONGPASS")
	// The stored secret is the SHA-256 of the password, never the password.
	list, err := admin.Do(ctx, "ACL", "LIST").StringSlice()
	require.NoError(t, err)
	require.NotContains(t, strings.Join(list, "\n"), "apppw")
	require.NotContains(t, strings.Join(list, "\n"), "s3cret")
	// A deleted user's connections are closed.
	require.NoError(t, admin.Do(ctx, "ACL", "DELUSER", "app").Err())
	require.Error(t, app.Get(ctx, "app:1").Err())
}

// TestACLFailedAuthLimited: a remote that fails AUTH too often is refused
// even with the right password until its bucket refills, and ACL LOG
// records the failures.
func TestACLFailedAuthLimited(t *testing.T) {
	n := startNode(t, func(c *server.Config) { c.Token = "right" })
	r := dialRaw(t, n.RESPAddr().String())
	limited := false
	for i := 0; i < 100 && !limited; i++ {
		rep := r.do("AUTH", "wrong")
		limited = strings.HasPrefix(rep, "-ERR too many failed authentication attempts")
		if !limited {
			require.Equal(t, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", rep)
		}
	}
	require.True(t, limited, "failed AUTHs are rate limited")
	require.True(t, strings.HasPrefix(r.do("AUTH", "right"), "-ERR too many failed"), "even the right password waits")
	other := dialRaw(t, n.RESPAddr().String())
	require.True(t, strings.HasPrefix(other.do("AUTH", "right"), "-ERR too many failed"), "the limit is per remote host, not per connection")
	log := n.ACL().Log.Entries(-1)
	require.NotEmpty(t, log)
	require.Equal(t, "auth", log[0].Reason)
	require.Greater(t, log[0].Count, 10)
}

// TestAuthTimeoutClosesUnauthenticated: a connection that has not
// authenticated within AuthTimeout is closed; one that has is not.
func TestAuthTimeoutClosesUnauthenticated(t *testing.T) {
	n, _ := startCustom(t, resp.Config{AuthTimeout: 300 * time.Millisecond}, func(c *server.Config) { c.Token = "tok" })
	authed := dialRaw(t, n.RESPAddr().String())
	require.Equal(t, "+OK\r\n", authed.do("AUTH", "tok"))
	idle := dialRaw(t, n.RESPAddr().String())
	idle.expectClosed(testscale.D(10 * time.Second))
	require.Equal(t, "+PONG\r\n", authed.do("PING"), "an authenticated connection outlives the auth timeout")
}

package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/clustertest"
)

// TestACLMatrixNativeMatchesRESP: the same users × commands × key
// patterns through the native protocol (SDK, connection string
// user/password) and through RESP (go-redis): every request the RESP
// front end refuses with NOPERM the native one refuses with
// ErrUnauthorized, and every one it allows runs.
func TestACLMatrixNativeMatchesRESP(t *testing.T) {
	c := clustertest.Start(t, 1, clustertest.Options{Token: "root"})
	nd := c.WaitLeader()
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: nd.RESPAddr().String(), Password: "root", MaxRetries: -1})
	t.Cleanup(func() { _ = admin.Close() })
	users := [][]any{
		{"reader", "on", ">pw", "+@read", "~*"},
		{"cache", "on", ">pw", "+@all", "-@dangerous", "~cache:*"},
		{"split", "on", ">pw", "+@all", "%R~r:*", "%W~w:*"},
		{"strings", "on", ">pw", "-@all", "+@string", "+@keyspace", "~*"},
		{"nohash", "on", ">pw", "+@all", "-@hash", "~*"},
	}
	for _, u := range users {
		if err := admin.Do(ctx, append([]any{"ACL", "SETUSER"}, u...)...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	type step struct {
		resp   []any
		native func(cl *sdk.Client, key string) error
	}
	get := func(cl *sdk.Client, k string) error { _, err := cl.Get(ctx, k); return err }
	put := func(cl *sdk.Client, k string) error { _, err := cl.Put(ctx, k, []byte("1"), nil); return err }
	del := func(cl *sdk.Client, k string) error { _, err := cl.Delete(ctx, k); return err }
	hset := func(cl *sdk.Client, k string) error {
		r, err := cl.Do(ctx, kv.NewCmd(kv.CmdHSet, k, "f", "v"))
		if err == nil {
			err = r.Err()
		}
		return err
	}
	refused := 0
	for _, key := range []string{"cache:a", "r:a", "w:a", "other"} {
		steps := []step{
			{[]any{"GET", key}, get}, {[]any{"SET", key, "1"}, put}, {[]any{"DEL", key}, del}, {[]any{"HSET", key + "h", "f", "v"}, nil},
		}
		for _, u := range users {
			name := u[0].(string)
			rc := redis.NewClient(&redis.Options{Addr: nd.RESPAddr().String(), Username: name, Password: "pw", MaxRetries: -1})
			cl, err := sdk.Connect(ctx, fmt.Sprintf("zaris://%s/default?user=%s&password=pw", nd.ClientAddr(), name))
			if err != nil {
				t.Fatalf("connect as %s: %v", name, err)
			}
			for i, s := range steps {
				native := s.native
				args := s.resp
				if native == nil {
					native = hset
					args = []any{"HSET", key, "f", "v"}
				}
				rerr := rc.Do(ctx, args...).Err()
				respRefused := rerr != nil && strings.HasPrefix(rerr.Error(), "NOPERM")
				nerr := native(cl, key)
				nativeRefused := errors.Is(nerr, sdk.ErrUnauthorized)
				if respRefused != nativeRefused {
					t.Errorf("user %s step %d %v: RESP %v, native %v", name, i, args, rerr, nerr)
				}
				if respRefused {
					refused++
					if !strings.Contains(nerr.Error(), "NOPERM") {
						t.Errorf("native refusal without Redis's words: %v", nerr)
					}
				}
				if args[0] == "SET" && !respRefused {
					_ = native(cl, key) // both protocols wrote: the state stays the same
				}
			}
			_ = rc.Close()
			cl.Close()
		}
	}
	if refused < 15 {
		t.Fatalf("only %d refusals: the matrix does not exercise ACL", refused)
	}
	// A wrong password on the native handshake is refused.
	if _, err := sdk.Connect(ctx, fmt.Sprintf("zaris://%s/default?user=cache&password=nope", nd.ClientAddr())); !errors.Is(err, sdk.ErrUnauthorized) {
		t.Fatalf("native handshake with a wrong password: %v", err)
	}
}

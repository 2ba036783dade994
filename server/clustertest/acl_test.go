package clustertest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
)

// TestACLUsersClusterWide: a user created with ACL SETUSER on a follower
// goes through the raft log (forwarded to the leader) and is enforced by
// every node — including one that joins afterwards; a DELUSER likewise.
func TestACLUsersClusterWide(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.Options{Token: "root"})
	leader := c.WaitLeader()
	var follower *server.Node
	for _, nd := range c.Running() {
		if nd != leader {
			follower = nd
			break
		}
	}
	ctx := context.Background()
	dial := func(nd *server.Node, user, pass string) *redis.Client {
		cl := redis.NewClient(&redis.Options{Addr: nd.RESPAddr().String(), Username: user, Password: pass, MaxRetries: -1})
		t.Cleanup(func() { _ = cl.Close() })
		return cl
	}
	admin := dial(follower, "", "root")
	if err := admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">apppw", "+@all", "-@dangerous", "~app:*").Err(); err != nil {
		t.Fatalf("ACL SETUSER on a follower: %v", err)
	}
	// Read-your-writes on the node that took the change.
	if got, err := admin.Do(ctx, "ACL", "GETUSER", "app").Result(); err != nil || got == nil {
		t.Fatalf("GETUSER right after SETUSER on the same node: %v %v", got, err)
	}
	enforced := func(nd *server.Node) bool {
		app := dial(nd, "app", "apppw")
		defer app.Close()
		if app.Ping(ctx).Err() != nil {
			return false
		}
		err := app.FlushAll(ctx).Err()
		if err == nil || err.Error() != "NOPERM this user has no permissions to run the 'flushall' command" {
			return false
		}
		err = app.Get(ctx, "other").Err()
		return err != nil && strings.HasPrefix(err.Error(), "NOPERM this user has no permissions to access one of the keys")
	}
	for _, nd := range c.Running() {
		testscale.Eventually(t, 10*time.Second, 20*time.Millisecond, "user app enforced on "+nd.Config().NodeID, func() bool { return enforced(nd) })
	}
	late := c.AddNode()
	testscale.Eventually(t, 20*time.Second, 50*time.Millisecond, "user app enforced on a node that joined later", func() bool { return enforced(late) })

	if err := dial(late, "", "root").Do(ctx, "ACL", "DELUSER", "app").Err(); err != nil {
		t.Fatalf("ACL DELUSER on the new node: %v", err)
	}
	for _, nd := range c.Running() {
		testscale.Eventually(t, 10*time.Second, 20*time.Millisecond, "user app gone on "+nd.Config().NodeID, func() bool {
			err := dial(nd, "app", "apppw").Ping(ctx).Err()
			return err != nil && strings.Contains(err.Error(), "WRONGPASS")
		})
	}
}

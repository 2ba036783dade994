package clustertest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/zaris-io/zaris/server/clustertest"
)

// TestACLOverHTTP: the users authenticate HTTP (Basic user:password, or
// Bearer with the default user's password — the --token of old); key
// routes are checked like GET/SET/DEL, the admin routes need @admin.
func TestACLOverHTTP(t *testing.T) {
	c := clustertest.Start(t, 1, clustertest.Options{Token: "root"})
	nd := c.WaitLeader()
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: nd.RESPAddr().String(), Password: "root", MaxRetries: -1})
	t.Cleanup(func() { _ = admin.Close() })
	if err := admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">apppw", "+@all", "-@admin", "~app:*").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do(ctx, "ACL", "SETUSER", "ro", "on", ">ropw", "+@read", "~*").Err(); err != nil {
		t.Fatal(err)
	}
	base := "http://" + nd.HTTPAddr().String()
	do := func(method, path, user, pass, bearer string) int {
		req, err := http.NewRequest(method, base+path, strings.NewReader("v"))
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	cases := []struct {
		method, path, user, pass, bearer string
		want                             int
	}{
		{"GET", "/v1/keys/app:1", "", "", "", http.StatusUnauthorized},
		{"PUT", "/v1/keys/app:1", "app", "apppw", "", http.StatusCreated},
		{"GET", "/v1/keys/app:1", "app", "apppw", "", http.StatusOK},
		{"PUT", "/v1/keys/other", "app", "apppw", "", http.StatusForbidden},
		{"GET", "/v1/keys/app:1", "app", "wrong", "", http.StatusUnauthorized},
		{"GET", "/v1/keys/app:1", "ro", "ropw", "", http.StatusOK},
		{"PUT", "/v1/keys/app:2", "ro", "ropw", "", http.StatusForbidden},
		{"DELETE", "/v1/keys/app:1", "ro", "ropw", "", http.StatusForbidden},
		{"POST", "/v1/cluster/rebalance", "app", "apppw", "", http.StatusForbidden},
		{"POST", "/v1/cluster/evict?node=nosuch", "app", "apppw", "", http.StatusForbidden},
		{"POST", "/v1/node/decommission", "ro", "ropw", "", http.StatusForbidden},
		{"GET", "/v1/info", "ro", "ropw", "", http.StatusForbidden}, // INFO is not @read
		{"GET", "/v1/info", "app", "apppw", "", http.StatusOK},
		{"GET", "/v1/info", "", "", "root", http.StatusOK},
		{"GET", "/v1/keys/app:1", "default", "root", "", http.StatusOK},
		{"POST", "/v1/cluster/evict?node=nosuch", "", "", "root", http.StatusNotFound}, // admin: reaches the handler
	}
	for _, tc := range cases {
		if got := do(tc.method, tc.path, tc.user, tc.pass, tc.bearer); got != tc.want {
			t.Errorf("%s %s as %q/bearer %q: %d, want %d", tc.method, tc.path, tc.user, tc.bearer, got, tc.want)
		}
	}
}

// TestConsoleAccessFollowsUsers: the web console's access is the users'
// (D43): a user who may run every @admin command and signed in with a
// password is admin, a user who may run INFO reads, one who may not sees
// nothing, and a wrong password is nothing (issue #18 item 5: "read-only
// unless authenticated as an admin").
func TestConsoleAccessFollowsUsers(t *testing.T) {
	c := clustertest.Start(t, 1, clustertest.Options{Token: "root"})
	nd := c.WaitLeader()
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: nd.RESPAddr().String(), Password: "root", MaxRetries: -1})
	t.Cleanup(func() { _ = admin.Close() })
	for _, rule := range [][]any{
		{"ACL", "SETUSER", "ops", "on", ">opspw", "+@all", "~*"},
		{"ACL", "SETUSER", "viewer", "on", ">viewpw", "+info", "+@read", "~*"},
		{"ACL", "SETUSER", "app", "on", ">apppw", "+get", "~app:*"},
	} {
		if err := admin.Do(ctx, rule...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	base := "http://" + nd.HTTPAddr().String()
	access := func(user, pass, bearer string) string {
		req, err := http.NewRequest(http.MethodGet, base+"/ui/api/session", nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var s struct {
			Access string `json:"access"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
			t.Fatal(err)
		}
		return s.Access
	}
	for _, tc := range []struct{ user, pass, bearer, want string }{
		{"", "", "", "none"},
		{"", "", "root", "admin"}, // the token is the default user's password
		{"ops", "opspw", "", "admin"},
		{"viewer", "viewpw", "", "read"},
		{"app", "apppw", "", "none"},
		{"ops", "wrong", "", "none"},
	} {
		if got := access(tc.user, tc.pass, tc.bearer); got != tc.want {
			t.Errorf("user %q bearer %q: console access %q, want %q", tc.user, tc.bearer, got, tc.want)
		}
	}
}

package resp

import (
	"testing"

	"github.com/zaris-io/zaris/internal/acl"
)

// BenchmarkACLCheck measures the permission check of one GET on the RESP
// hot path (aclDenial: the command bit, then the key patterns) for users of
// growing restriction; "unrestricted" is the default user, which the hot
// path skips after one pointer comparison.
func BenchmarkACLCheck(b *testing.B) {
	aclReady()
	cmd := lookupCommand([]byte("get"))
	args := [][]byte{[]byte("get"), []byte("app:user:1234")}
	for _, tc := range []struct {
		name  string
		rules []string
	}{
		{"unrestricted", nil},
		{"categories", []string{"on", "+@all", "-@dangerous", "~*"}},
		{"one-pattern", []string{"on", "+@all", "-@dangerous", "~app:*"}},
		{"ten-patterns", []string{"on", "+@all", "-@dangerous", "~a0:*", "~a1:*", "~a2:*", "~a3:*", "~a4:*", "~a5:*", "~a6:*", "~a7:*", "~a8:*", "~app:*"}},
	} {
		set := acl.NewSet("")
		name := "default"
		if tc.rules != nil {
			name = "u"
			next, _, err := set.Apply(acl.Op{Kind: acl.OpSetUser, User: name, Rules: tc.rules})
			if err != nil {
				b.Fatal(err)
			}
			set = next
		}
		u := set.User(name)
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				if u.Unrestricted {
					continue
				}
				if r, _ := aclDenial(u, cmd, args); r != "" {
					b.Fatal("refused")
				}
			}
		})
	}
}

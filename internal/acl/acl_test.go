package acl

import (
	"strings"
	"testing"
)

// testCatalog is a small command table: enough categories and a container
// with subcommands for the parser and the description.
func testCatalog() {
	RegisterCatalog([]Command{
		{Name: "get", Cats: CatRead | CatString | CatFast},
		{Name: "set", Cats: CatWrite | CatString | CatSlow},
		{Name: "del", Cats: CatWrite | CatKeyspace | CatSlow},
		{Name: "hset", Cats: CatWrite | CatHash | CatFast},
		{Name: "hget", Cats: CatRead | CatHash | CatFast},
		{Name: "flushall", Cats: CatWrite | CatKeyspace | CatDangerous | CatSlow},
		{Name: "config", Cats: CatSlow, Subs: []string{"config|get", "config|set"}},
		{Name: "config|get", Cats: CatAdmin | CatDangerous | CatSlow},
		{Name: "config|set", Cats: CatAdmin | CatDangerous | CatSlow},
		{Name: "publish", Cats: CatPubSub | CatFast},
	})
}

// FuzzSetUserRules feeds arbitrary SETUSER rule lists (space-separated)
// to the parser: it never panics, a refused list leaves the set as it
// was, and an accepted user described by ACL LIST and rebuilt from that
// description (what a raft snapshot does) has the same description and
// the same permissions.
func FuzzSetUserRules(f *testing.F) {
	testCatalog()
	for _, seed := range []string{
		"on >p1 >p2 +@all -@dangerous ~cache:* %R~r:* %W~w:* &ch*",
		"reset -@all +get +config|get -config|set &a resetchannels",
		"on nopass allkeys allchannels allcommands skip-sanitize-payload",
		"off #" + strings.Repeat("ab", 32) + " !" + strings.Repeat("ab", 32),
		"~a allkeys %RW~b", "+@nosuch", "%X~a", "<nope", "+config -config|get +@hash -hset",
		"+get|x", "resetpass resetkeys ~* &* nocommands +@read",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, rules string) {
		base := NewSet("tok")
		op := Op{Kind: OpSetUser, User: "u", Rules: strings.Fields(rules)}
		next, _, err := base.Apply(op)
		if err != nil {
			if next != nil {
				t.Fatalf("a refused op returned a set")
			}
			if base.User("u") != nil {
				t.Fatalf("a refused op changed the set")
			}
			return
		}
		u := next.User("u")
		// Normalized (hashed) rules give the same user.
		n2, _, err := base.Apply(Normalize(op))
		if err != nil || n2.User("u").Describe() != u.Describe() {
			t.Fatalf("normalized rules differ: %v %q vs %q", err, u.Describe(), n2.User("u").Describe())
		}
		back, err := FromLines(next.Lines())
		if err != nil {
			t.Fatalf("snapshot lines of %q refused: %v", u.Describe(), err)
		}
		b := back.User("u")
		if b.Describe() != u.Describe() {
			t.Fatalf("round trip: %q became %q", u.Describe(), b.Describe())
		}
		for id := range currentCatalog().cmds {
			if b.CanRun(id) != u.CanRun(id) {
				t.Fatalf("round trip changed command %d", id)
			}
		}
		for _, k := range []string{"cache:1", "r:1", "w:1", "other", ""} {
			for _, p := range []Perm{PermRead, PermWrite, PermRW} {
				if b.CanKey([]byte(k), p) != u.CanKey([]byte(k), p) {
					t.Fatalf("round trip changed key %q perm %d", k, p)
				}
			}
		}
		if u.CheckPassword([]byte("")) && !u.NoPass {
			// only a user holding the hash of "" opens with it
			found := false
			for _, h := range u.Hashes {
				found = found || h == HashPassword("")
			}
			if !found {
				t.Fatalf("empty password opens %q", u.Describe())
			}
		}
	})
}

func TestLimiter(t *testing.T) {
	l := NewLimiter(3, 1)
	now := timeZero
	for i := 0; i < 3; i++ {
		if !l.Allowed("h", now) {
			t.Fatalf("refused within the burst (%d)", i)
		}
		l.Failed("h", now)
	}
	if l.Allowed("h", now) {
		t.Fatal("allowed past the burst")
	}
	if !l.Allowed("other", now) {
		t.Fatal("another host is refused")
	}
	if !l.Allowed("h", now.Add(1500*timeMillisecond)) {
		t.Fatal("not refilled after 1.5 s at 1/s")
	}
}

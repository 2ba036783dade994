// Package acl is Zaris's users and permissions, modelled on Redis 7.0's
// ACL: users with passwords (stored as SHA-256), command rules over
// categories and commands (+@read -@dangerous +get), key patterns (~k*,
// %R~r*, %W~w*) and channel patterns (&c*). A Set is an immutable snapshot
// of the users; a Registry publishes the current Set, applies ACL
// SETUSER/DELUSER operations and keeps the ACL LOG and the failed-AUTH
// limiter. The command catalog (names and categories) is registered by the
// front end that owns the command table (server/resp) at initialisation.
package acl

import (
	"sort"
	"strings"
	"sync"
)

// Cat is a set of command categories (one bit each).
type Cat uint32

// The categories, in the order Redis 7.0's ACL CAT lists them.
const (
	CatKeyspace Cat = 1 << iota
	CatRead
	CatWrite
	CatSet
	CatSortedSet
	CatList
	CatHash
	CatString
	CatBitmap
	CatHyperLogLog
	CatGeo
	CatStream
	CatPubSub
	CatAdmin
	CatFast
	CatSlow
	CatBlocking
	CatDangerous
	CatConnection
	CatTransaction
	CatScripting
)

// CategoryNames are the category names in ACL CAT order; bit i is CategoryNames[i].
var CategoryNames = []string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
	"hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking",
	"dangerous", "connection", "transaction", "scripting",
}

// CategoryByName returns the category named name (any case).
func CategoryByName(name string) (Cat, bool) {
	for i, n := range CategoryNames {
		if strings.EqualFold(n, name) {
			return 1 << i, true
		}
	}
	return 0, false
}

// Names lists the categories in c, in ACL CAT order.
func (c Cat) Names() []string {
	var out []string
	for i, n := range CategoryNames {
		if c&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// Command is one entry of the catalog: a command or a subcommand
// ("config|get"), and its categories.
type Command struct {
	Name string // lower case; "parent|sub" for a subcommand
	Cats Cat
	// Subs are the subcommands' names ("config|get", …) of a container
	// command; a rule on the container covers them.
	Subs []string
}

// catalog is the registered command table: an id (bit position in a
// user's allowed set) per command and subcommand.
type catalog struct {
	ids   map[string]int
	cmds  []Command
	words int // len of an allowed bitset
}

var (
	catMu sync.RWMutex
	cat   = &catalog{ids: map[string]int{}}
)

// RegisterCatalog installs the command table. Called once at the front
// end's initialisation, before any user is built.
func RegisterCatalog(cmds []Command) {
	c := &catalog{ids: map[string]int{}}
	sorted := append([]Command(nil), cmds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, cmd := range sorted {
		c.ids[cmd.Name] = len(c.cmds)
		c.cmds = append(c.cmds, cmd)
	}
	c.words = (len(c.cmds) + 63) / 64
	catMu.Lock()
	cat = c
	catMu.Unlock()
}

func currentCatalog() *catalog {
	catMu.RLock()
	defer catMu.RUnlock()
	return cat
}

// CommandID returns the id of a command ("get", "config|get"), or -1.
func CommandID(name string) int {
	if id, ok := currentCatalog().ids[name]; ok {
		return id
	}
	return -1
}

// CommandsIn lists the names of the commands in category c (ACL CAT <c>),
// subcommands included, sorted.
func CommandsIn(c Cat) []string {
	var out []string
	for _, cmd := range currentCatalog().cmds {
		if cmd.Cats&c != 0 {
			out = append(out, cmd.Name)
		}
	}
	return out
}

package resp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/zaris-io/zaris/internal/acl"
)

// Users and permissions (Redis 7.0 ACL): every command runs as the
// connection's user; a user that is not unrestricted is checked per
// command for the command itself (its catalog bit), its keys (read or
// write, by the command's flags) and its channels. The users come from
// Config.ACL, a registry the node shares with the native protocol and the
// HTTP API (and, in a cluster, folds from the raft log).

// aclGroupCats maps a command group to its data-type category.
var aclGroupCats = map[string]acl.Cat{
	"string": acl.CatString, "list": acl.CatList, "hash": acl.CatHash, "set": acl.CatSet,
	"sorted-set": acl.CatSortedSet, "sorted_set": acl.CatSortedSet, "bitmap": acl.CatBitmap,
	"hyperloglog": acl.CatHyperLogLog, "geo": acl.CatGeo, "stream": acl.CatStream,
	"pubsub": acl.CatPubSub, "transactions": acl.CatTransaction, "scripting": acl.CatScripting,
	"connection": acl.CatConnection, "generic": acl.CatKeyspace,
}

// aclExtra are categories Redis 7.0 gives a command beyond what its group
// and flags imply (checked against redis-server's COMMAND INFO by
// TestACLCategoriesMatchRedis).
var aclExtra = map[string]acl.Cat{
	"asking": acl.CatConnection, "readonly": acl.CatConnection, "readwrite": acl.CatConnection,
	"command": acl.CatConnection, "wait": acl.CatConnection,
	"blmove": acl.CatBlocking, "blmpop": acl.CatBlocking, "blpop": acl.CatBlocking, "brpop": acl.CatBlocking,
	"brpoplpush": acl.CatBlocking, "bzmpop": acl.CatBlocking, "bzpopmax": acl.CatBlocking, "bzpopmin": acl.CatBlocking,
	"xread": acl.CatBlocking, "xreadgroup": acl.CatBlocking,
	"dbsize": acl.CatKeyspace, "flushall": acl.CatKeyspace | acl.CatDangerous, "flushdb": acl.CatKeyspace | acl.CatDangerous,
	"info": acl.CatDangerous, "keys": acl.CatDangerous, "restore": acl.CatDangerous, "restore-asking": acl.CatDangerous, "migrate": acl.CatDangerous,
	"sort":    acl.CatDangerous | acl.CatList | acl.CatSet | acl.CatSortedSet,
	"sort_ro": acl.CatDangerous | acl.CatList | acl.CatSet | acl.CatSortedSet,
	"swapdb":  acl.CatKeyspace | acl.CatDangerous, "move": acl.CatKeyspace,
	"role": acl.CatAdmin | acl.CatDangerous, "lastsave": acl.CatAdmin | acl.CatDangerous,
}

// aclDrop are categories the group or flags imply that Redis 7.0 does not
// give the command.
var aclDrop = map[string]acl.Cat{
	"pubsub|help": acl.CatPubSub, "sort": acl.CatKeyspace, "sort_ro": acl.CatKeyspace, "wait": acl.CatKeyspace,
}

// aclCats derives a command's ACL categories the way Redis 7.0
// does: the group's data type, @write/@read from the flags (@read not for
// scripting commands), @admin and @dangerous for admin commands, @fast or
// @slow, then the per-command additions and removals.
func aclCats(c *command) acl.Cat {
	var cats acl.Cat
	if len(c.subs) == 0 { // a container has only @slow (its subcommands have the rest)
		cats = aclGroupCats[c.group]
	}
	if c.flags&flagWrite != 0 {
		cats |= acl.CatWrite
	}
	if c.flags&flagReadonly != 0 && cats&acl.CatScripting == 0 {
		cats |= acl.CatRead
	}
	if c.parent != nil && c.parent.name == "command" {
		cats |= acl.CatConnection // COMMAND and all its subcommands are @connection in Redis
	}
	if c.flags&flagAdmin != 0 {
		cats |= acl.CatAdmin | acl.CatDangerous
	}
	if c.flags&flagFast != 0 {
		cats |= acl.CatFast
	} else {
		cats |= acl.CatSlow
	}
	cats |= aclExtra[c.name]
	return cats &^ aclDrop[c.name]
}

// aclCatalog is the command table as the acl package needs it.
func aclCatalog() []acl.Command {
	var out []acl.Command
	for _, c := range commandTable {
		ac := acl.Command{Name: c.name, Cats: aclCats(c)}
		for _, s := range c.subs {
			ac.Subs = append(ac.Subs, s.name)
			out = append(out, acl.Command{Name: s.name, Cats: aclCats(s)})
		}
		out = append(out, ac)
	}
	return out
}

var aclOnce sync.Once

// aclReady registers the catalog once every command is registered (the
// first server built) and gives each command its catalog id.
func aclReady() {
	aclOnce.Do(func() {
		acl.RegisterCatalog(aclCatalog())
		for _, c := range commandTable {
			c.aclID = acl.CommandID(c.name)
			for _, s := range c.subs {
				s.aclID = acl.CommandID(s.name)
			}
		}
	})
}

// RegisterACLCatalog installs the RESP command table as the acl package's
// catalog (the native protocol and the HTTP API check their operations by
// the equivalent Redis command). Safe to call more than once.
func RegisterACLCatalog() { aclReady() }

// writeOnlyKeys are write commands that only overwrite or delete their
// keys (Redis's OW/RM key specs): %W~ is enough for them.
var writeOnlyKeys = map[string]bool{
	"del": true, "unlink": true, "mset": true, "msetnx": true, "setex": true, "psetex": true,
}

// keyPerm is the permission a command needs on its keys.
func keyPerm(cmd *command, args [][]byte) acl.Perm {
	switch {
	case cmd.flags&flagWrite == 0:
		return acl.PermRead
	case writeOnlyKeys[cmd.name]:
		return acl.PermWrite
	case cmd.name == "set":
		for _, a := range args[3:] {
			if eq(a, "GET") {
				return acl.PermRW
			}
		}
		return acl.PermWrite
	}
	return acl.PermRW
}

// channelArgs returns the channels a command names and whether they are
// patterns.
func channelArgs(cmd *command, args [][]byte) ([][]byte, bool) {
	switch cmd.name {
	case "publish", "spublish":
		return args[1:2], false
	case "subscribe", "ssubscribe":
		return args[1:], false
	case "psubscribe":
		return args[1:], true
	}
	return nil, false
}

// The NOPERM replies, as Redis 7.0 words them.
const (
	msgNoPermKey     = "NOPERM this user has no permissions to access one of the keys used as arguments"
	msgNoPermChannel = "NOPERM this user has no permissions to access one of the channels used as arguments"
)

func msgNoPermCmd(name string) string {
	return "NOPERM this user has no permissions to run the '" + name + "' command"
}

// aclDenial says why u may not run cmd with args: "" (allowed), or the
// reason ("command", "key", "channel") and the object ACL LOG records.
func aclDenial(u *acl.User, cmd *command, args [][]byte) (reason, object string) {
	if !u.CanRun(cmd.aclID) {
		return "command", cmd.name
	}
	if _, known := redisCommandSpecs[cmd.name]; known && !u.AllKeys {
		// Redis's rule: each key by the flags of the specification that
		// names it (LPUSH inserts: write only; EXISTS: any pattern).
		if hasKeyArgs(cmd) {
			for _, k := range keysAndFlags(cmd, args) {
				if !u.CanKey(args[k.pos], keyPermOf(k.flags)) {
					return "key", string(args[k.pos])
				}
			}
		}
	} else if !u.AllKeys && (cmd.step > 0 || cmd.keys != nil) {
		perm := keyPerm(cmd, args)
		if cmd.keys != nil {
			for _, i := range cmd.keys(args) {
				if !u.CanKey(args[i], perm) {
					return "key", string(args[i])
				}
			}
		} else if cmd.first > 0 && cmd.first < len(args) {
			// keyIndexes without its slice: this runs on every command
			last := cmd.last
			if last < 0 {
				last += len(args)
			}
			for i := cmd.first; i <= min(last, len(args)-1); i += cmd.step {
				if !u.CanKey(args[i], perm) {
					return "key", string(args[i])
				}
			}
		}
	}
	if !u.AllChans {
		chans, pattern := channelArgs(cmd, args)
		for _, ch := range chans {
			if !u.CanChannel(ch, pattern) {
				return "channel", string(ch)
			}
		}
	}
	return "", ""
}

// aclUser is the connection's user when it must be checked, nil when it
// may do anything. A user deleted since it authenticated closes the
// connection (Redis disconnects the clients of a deleted user): ok=false.
func (c *conn) aclUser() (u *acl.User, ok bool) {
	set := c.srv.acl.Users()
	if set != c.aclSet {
		c.aclSet = set
		c.aclU = set.User(c.userName())
	}
	if c.aclU == nil {
		return nil, false
	}
	if c.aclU.Unrestricted {
		return nil, true
	}
	return c.aclU, true
}

// aclCheck refuses a command the connection's user may not run (NOPERM,
// logged in ACL LOG); it reports whether the command may go on.
func (c *conn) aclCheck(cmd *command, args [][]byte, ctx string) bool {
	u, ok := c.aclUser()
	if !ok {
		c.closing = true
		c.srv.log.Info("closing a connection whose user was deleted", "client_id", c.id)
		return false
	}
	if u == nil {
		return true
	}
	reason, object := aclDenial(u, cmd, args)
	if reason == "" {
		return true
	}
	c.srv.acl.Log.Add(reason, ctx, object, u.Name, c.describe(time.Now()), time.Now())
	switch reason {
	case "command":
		c.rejectCmd(cmd, msgNoPermCmd(cmd.name))
	case "key":
		c.rejectCmd(cmd, msgNoPermKey)
	default:
		c.rejectCmd(cmd, msgNoPermChannel)
	}
	return false
}

// aclScriptCheck is aclCheck for a command a script calls: the refusal
// is Redis's script error ("" = allowed), logged with context "lua".
func (c *conn) aclScriptCheck(cmd *command, args [][]byte) string {
	u, ok := c.aclUser()
	if !ok || u == nil {
		return ""
	}
	reason, object := aclDenial(u, cmd, args)
	if reason == "" {
		return ""
	}
	c.srv.acl.Log.Add(reason, "lua", object, u.Name, c.describe(time.Now()), time.Now())
	switch reason {
	case "command":
		return "ERR The user executing the script can't run this command or subcommand"
	case "key":
		return "ERR The user executing the script can't access at least one of the keys mentioned in the command"
	}
	return "ERR The user executing the script can't publish to the channel mentioned in the command"
}

func (c *conn) userName() string {
	if p := c.user.Load(); p != nil {
		return *p
	}
	return "default"
}

func (c *conn) remoteHost() string {
	host, _, err := net.SplitHostPort(c.nc.RemoteAddr().String())
	if err != nil {
		return c.nc.RemoteAddr().String()
	}
	return host
}

// --- ACL ---

const aclFlags = flagNoScript | flagLoading | flagStale
const aclAdminFlags = aclFlags | flagAdmin

func init() {
	sub := func(name string, arity int, flags cmdFlags, summary string, run func(*conn, [][]byte)) *command {
		return &command{name: name, arity: arity, flags: flags, since: "6.0.0", summary: summary, run: run}
	}
	register(&command{name: "acl", arity: -2, group: "server", since: "6.0.0",
		summary: "A container for Access List Control commands.", subs: []*command{
			sub("cat", -2, aclFlags, "Lists the ACL categories, or the commands inside a category.", cmdACLCat),
			sub("deluser", -3, aclAdminFlags, "Deletes ACL users, and terminates their connections.", cmdACLDelUser),
			sub("dryrun", -4, aclAdminFlags, "Simulates the execution of a command by a user, without executing the command.", cmdACLDryRun),
			sub("genpass", -2, aclFlags, "Generates a pseudorandom, secure password that can be used to identify ACL users.", cmdACLGenPass),
			sub("getuser", 3, aclAdminFlags, "Lists the ACL rules of a user.", cmdACLGetUser),
			sub("list", 2, aclAdminFlags, "Dumps the effective rules in ACL file format.", cmdACLList),
			sub("log", -2, aclAdminFlags, "Lists recent security events generated due to ACL rules.", cmdACLLog),
			sub("setuser", -3, aclAdminFlags, "Creates and modifies an ACL user and its rules.", cmdACLSetUser),
			sub("users", 2, aclAdminFlags, "Lists all ACL users.", cmdACLUsers),
			sub("whoami", 2, aclFlags, "Returns the authenticated username of the current connection.", cmdACLWhoAmI),
			sub("help", 2, flagLoading|flagStale, "Returns helpful text about the different subcommands.", cmdACLHelp),
		}})
}

// cmdACLHelp is Redis 7.0's text for the subcommands served (LOAD and SAVE
// are not: users live in the cluster's log, not in a file).
func cmdACLHelp(c *conn, _ [][]byte) {
	writeHelpText(c, "ACL",
		"CAT [<category>]",
		"    List all commands that belong to <category>, or all command categories",
		"    when no category is specified.",
		"DELUSER <username> [<username> ...]",
		"    Delete a list of users.",
		"DRYRUN <username> <command> [<arg> ...]",
		"    Returns whether the user can execute the given command without executing the command.",
		"GETUSER <username>",
		"    Get the user's details.",
		"GENPASS [<bits>]",
		"    Generate a secure 256-bit user password. The optional `bits` argument can",
		"    be used to specify a different size.",
		"LIST",
		"    Show users details in config file format.",
		"LOG [<count> | RESET]",
		"    Show the ACL log entries.",
		"SETUSER <username> <attribute> [<attribute> ...]",
		"    Create or modify a user with the specified attributes.",
		"USERS",
		"    List all the registered usernames.",
		"WHOAMI",
		"    Return the current connection username.")
}

// aclCommitTimeout bounds an ACL change's commit through the cluster log.
const aclCommitTimeout = 10 * time.Second

func (c *conn) aclSubmit(op acl.Op) (int, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), aclCommitTimeout)
	defer cancel()
	n, err := c.srv.acl.Submit(ctx, op)
	if err != nil {
		var re *acl.RuleError
		switch {
		case errors.As(err, &re), errors.Is(err, acl.ErrBadUserName), errors.Is(err, acl.ErrDeleteDefault):
			c.err("ERR " + err.Error())
		default:
			c.err("ERR the ACL change was not committed: " + err.Error())
		}
		return 0, false
	}
	return n, true
}

func cmdACLSetUser(c *conn, args [][]byte) {
	op := acl.Op{Kind: acl.OpSetUser, User: string(args[2])}
	for _, a := range args[3:] {
		op.Rules = append(op.Rules, string(a))
	}
	if _, ok := c.aclSubmit(op); ok {
		c.out.OK()
	}
}

func cmdACLDelUser(c *conn, args [][]byte) {
	op := acl.Op{Kind: acl.OpDelUser}
	for _, a := range args[2:] {
		op.Users = append(op.Users, string(a))
	}
	if n, ok := c.aclSubmit(op); ok {
		c.out.Int(int64(n))
	}
}

func cmdACLGetUser(c *conn, args [][]byte) {
	u := c.srv.acl.Users().User(string(args[2]))
	if u == nil {
		c.out.Null()
		return
	}
	c.out.Map(6)
	c.out.BulkString("flags")
	flags := u.Flags()
	c.out.Array(len(flags))
	for _, f := range flags {
		c.out.BulkString(f)
	}
	c.out.BulkString("passwords")
	c.out.Array(len(u.Hashes))
	for _, h := range u.Hashes {
		c.out.BulkString(h)
	}
	c.out.BulkString("commands")
	c.out.BulkString(u.CommandsString())
	c.out.BulkString("keys")
	c.out.BulkString(u.KeysString())
	c.out.BulkString("channels")
	c.out.BulkString(u.ChannelsString())
	c.out.BulkString("selectors")
	c.out.Array(0)
}

func cmdACLList(c *conn, _ [][]byte) {
	lines := c.srv.acl.Users().List()
	c.out.Array(len(lines))
	for _, l := range lines {
		c.out.BulkString(l)
	}
}

func cmdACLUsers(c *conn, _ [][]byte) {
	names := c.srv.acl.Users().Names()
	c.out.Array(len(names))
	for _, n := range names {
		c.out.BulkString(n)
	}
}

func cmdACLWhoAmI(c *conn, _ [][]byte) { c.out.BulkString(c.userName()) }

func cmdACLCat(c *conn, args [][]byte) {
	if len(args) == 2 {
		c.out.Array(len(acl.CategoryNames))
		for _, n := range acl.CategoryNames {
			c.out.BulkString(n)
		}
		return
	}
	if len(args) > 3 {
		c.err("ERR Unknown subcommand or wrong number of arguments for 'cat'. Try ACL HELP.")
		return
	}
	cat, ok := acl.CategoryByName(string(args[2]))
	if !ok {
		c.err("ERR Unknown category '" + truncate(args[2], 128) + "'")
		return
	}
	names := acl.CommandsIn(cat)
	c.out.Array(len(names))
	for _, n := range names {
		c.out.BulkString(n)
	}
}

func cmdACLGenPass(c *conn, args [][]byte) {
	bits := int64(256)
	if len(args) == 3 {
		v, ok := parseInt(args[2])
		if !ok || v <= 0 || v > 4096 {
			c.err("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
			return
		}
		bits = v
	} else if len(args) > 3 {
		c.err("ERR Unknown subcommand or wrong number of arguments for 'genpass'. Try ACL HELP.")
		return
	}
	b := make([]byte, (bits+7)/8)
	_, _ = rand.Read(b)
	s := hex.EncodeToString(b)
	c.out.BulkString(s[:(bits+3)/4])
}

func cmdACLLog(c *conn, args [][]byte) {
	n := int64(10)
	if len(args) == 3 {
		if eq(args[2], "RESET") {
			c.srv.acl.Log.Reset()
			c.out.OK()
			return
		}
		v, ok := parseInt(args[2])
		if !ok {
			c.err(msgNotInteger)
			return
		}
		n = v // negative: every entry, as in Redis
	} else if len(args) > 3 {
		c.err("ERR Unknown subcommand or wrong number of arguments for 'log'. Try ACL HELP.")
		return
	}
	entries := c.srv.acl.Log.Entries(int(max(min(n, 1<<20), -1)))
	now := time.Now()
	c.out.Array(len(entries))
	for _, e := range entries {
		c.out.Map(7)
		c.out.BulkString("count")
		c.out.Int(int64(e.Count))
		c.out.BulkString("reason")
		c.out.BulkString(e.Reason)
		c.out.BulkString("context")
		c.out.BulkString(e.Context)
		c.out.BulkString("object")
		c.out.BulkString(e.Object)
		c.out.BulkString("username")
		c.out.BulkString(e.Username)
		c.out.BulkString("age-seconds")
		c.out.Double(now.Sub(e.Created).Seconds())
		c.out.BulkString("client-info")
		c.out.BulkString(e.ClientInfo)
	}
}

func cmdACLDryRun(c *conn, args [][]byte) {
	u := c.srv.acl.Users().User(string(args[2]))
	if u == nil {
		c.err("ERR User '" + truncate(args[2], 128) + "' not found")
		return
	}
	rest := args[3:]
	cmd := lookupCommand(rest[0])
	if cmd != nil && len(cmd.subs) > 0 && len(rest) >= 2 {
		cmd = cmd.lookupSub(rest[1])
	}
	if cmd == nil {
		c.err("ERR Command '" + truncate(rest[0], 128) + "' not found")
		return
	}
	if !cmd.arityOK(len(rest)) {
		c.err("ERR wrong number of arguments for '" + cmd.name + "' command")
		return
	}
	switch reason, object := aclDenial(u, cmd, rest); reason {
	case "":
		c.out.OK()
	case "command":
		c.out.BulkString("This user has no permissions to run the '" + cmd.name + "' command")
	case "key":
		c.out.BulkString("This user has no permissions to access the '" + object + "' key")
	default:
		c.out.BulkString("This user has no permissions to access the '" + object + "' channel")
	}
}

// authUser checks a user/password pair (user nil: "default") against the
// registry, with the failed-AUTH limiter of the remote host. It returns
// the reply to give on failure ("" on success).
func (c *conn) authUser(user, pass []byte) string {
	name := "default"
	if user != nil {
		name = string(user)
	}
	reg := c.srv.acl
	now := time.Now()
	host := c.remoteHost()
	if !reg.Limiter.Allowed(host, now) {
		reg.Log.Add("auth", "toplevel", "AUTH", name, c.describe(now), now)
		return msgAuthRate
	}
	if reg.Authenticate(name, pass) == nil {
		reg.Limiter.Failed(host, now)
		reg.Log.Add("auth", "toplevel", "AUTH", name, c.describe(now), now)
		return msgWrongPass
	}
	c.user.Store(&name)
	c.aclSet = nil
	return ""
}

// msgAuthRate answers an AUTH from a host over its failed-AUTH rate.
const msgAuthRate = "ERR too many failed authentication attempts from this address; retry later"

// defaultNoPass: the default user opens without a password, so a new
// connection starts authenticated (as default).
func (s *Server) defaultNoPass() bool {
	u := s.acl.Users().User("default")
	return u != nil && u.On && u.NoPass
}

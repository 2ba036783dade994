package resp

import (
	"strings"
	"time"

	"github.com/zaris-io/zaris/internal/glob"
)

// Server commands: COMMAND, INFO, CONFIG, DBSIZE, FLUSHDB, FLUSHALL, TIME.

const adminFlags = flagAdmin | flagNoScript | flagLoading | flagStale

func init() {
	register(
		&command{name: "command", arity: -1, flags: flagLoading | flagStale, group: "server", since: "2.8.13",
			summary: "Returns detailed information about all commands.",
			tips:    []string{"nondeterministic_output_order"}, run: cmdCommand,
			subs: []*command{
				{name: "count", arity: 2, flags: flagLoading | flagStale, summary: "Returns a count of commands.", run: cmdCommandCount},
				{name: "info", arity: -2, flags: flagLoading | flagStale, summary: "Returns information about one, multiple or all commands.", run: cmdCommandInfo},
				{name: "docs", arity: -2, flags: flagLoading | flagStale, summary: "Returns documentary information about one, multiple or all commands.", run: cmdCommandDocs},
				{name: "list", arity: -2, flags: flagLoading | flagStale, summary: "Returns a list of command names ([FILTERBY PATTERN p | ACLCAT c]).", run: cmdCommandList},
				{name: "getkeys", arity: -4, flags: flagLoading | flagStale, summary: "Extracts the key names from an arbitrary command.", run: cmdCommandGetKeys},
				{name: "getkeysandflags", arity: -4, flags: flagLoading | flagStale, since: "7.0.0", summary: "Extracts the key names and their access flags from an arbitrary command.", run: cmdCommandGetKeysAndFlags},
				{name: "help", arity: 2, flags: flagLoading | flagStale, summary: "Returns helpful text about the COMMAND subcommands.", run: cmdCommandHelp},
			}},
		&command{name: "info", arity: -1, flags: flagLoading | flagStale, group: "server", since: "1.0.0",
			summary: "Returns information and statistics about the server (every Redis 7 section: server, clients, memory, persistence, stats, replication, cpu, modules, commandstats, errorstats, latencystats, cluster, keyspace).",
			tips:    []string{"nondeterministic_output"}, run: cmdInfo},
		&command{name: "config", arity: -2, group: "server", since: "2.0.0",
			summary: "A container for server configuration commands.", subs: []*command{
				{name: "get", arity: -3, flags: adminFlags, summary: "Returns the effective values of configuration parameters.", run: cmdConfigGet},
				{name: "set", arity: -4, flags: adminFlags, summary: "Sets configuration parameters in-flight.", run: cmdConfigSet},
				{name: "resetstat", arity: 2, flags: adminFlags, summary: "Resets the server's statistics.", run: cmdConfigResetStat},
				{name: "rewrite", arity: 2, flags: adminFlags, summary: "Refused: a Zaris node has no Redis config file to rewrite.", run: cmdConfigRewrite},
				{name: "help", arity: 2, flags: flagLoading | flagStale, summary: "Returns helpful text about the CONFIG subcommands.", run: cmdConfigHelp},
			}},
		&command{name: "dbsize", arity: 1, flags: flagReadonly | flagFast, group: "server", since: "1.0.0",
			summary: "Returns the number of keys in the database.",
			tips:    []string{"request_policy:all_shards", "response_policy:agg_sum"}, run: cmdDBSize},
		&command{name: "flushdb", arity: -1, flags: flagWrite, group: "server", since: "1.0.0",
			summary: "Removes all keys from the database ([ASYNC|SYNC]; always synchronous).",
			tips:    []string{"request_policy:all_shards", "response_policy:all_succeeded"}, run: cmdFlush},
		&command{name: "flushall", arity: -1, flags: flagWrite, group: "server", since: "1.0.0",
			summary: "Removes all keys from all databases ([ASYNC|SYNC]; always synchronous).",
			tips:    []string{"request_policy:all_shards", "response_policy:all_succeeded"}, run: cmdFlush},
		&command{name: "time", arity: 1, flags: flagLoading | flagStale | flagFast, group: "server", since: "2.6.0",
			summary: "Returns the server time.", tips: []string{"nondeterministic_output"}, run: cmdTime},
		&command{name: "lolwut", arity: -1, flags: flagReadonly | flagFast, group: "server", since: "5.0.0",
			summary: "Displays the server's version ([VERSION v]; no computer art here).", run: cmdLolwut},
	)
}

// cmdLolwut is LOLWUT [VERSION v]: Redis answers its version line after a
// drawing (versions 5 and 6 draw one); here the line alone, whatever the
// version asked (a number is required, as Redis requires one).
func cmdLolwut(c *conn, args [][]byte) {
	if len(args) >= 3 && eq(args[1], "VERSION") {
		if _, ok := parseInt(args[2]); !ok {
			c.err(msgNotInteger)
			return
		}
	}
	c.out.Verbatim("Redis ver. " + RedisVersion + "\n")
}

// --- COMMAND ---

func cmdCommand(c *conn, _ [][]byte) {
	cmds := sortedCommands()
	c.out.Array(len(cmds))
	for _, cmd := range cmds {
		writeCommandInfo(c, cmd)
	}
}

func cmdCommandCount(c *conn, _ [][]byte) { c.out.Int(int64(len(commandTable))) }

func cmdCommandInfo(c *conn, args [][]byte) {
	if len(args) == 2 {
		cmdCommand(c, args)
		return
	}
	c.out.Array(len(args) - 2)
	for _, name := range args[2:] {
		if cmd := lookupFullName(name); cmd != nil {
			writeCommandInfo(c, cmd)
		} else {
			c.out.Null()
		}
	}
}

// lookupFullName finds "get" or "client|setname".
func lookupFullName(name []byte) *command {
	parent, sub, hasSub := strings.Cut(string(name), "|")
	cmd := lookupCommand([]byte(parent))
	if cmd == nil || !hasSub {
		return cmd
	}
	return cmd.lookupSub([]byte(sub))
}

// writeCommandInfo writes the ten-element COMMAND entry of Redis 7: name,
// arity, flags, first key, last key, step, ACL categories, tips, key
// specifications, subcommands.
func writeCommandInfo(c *conn, cmd *command) {
	c.out.Array(10)
	c.out.BulkString(cmd.name)
	c.out.Int(int64(cmd.arity))
	flags := cmd.flags.names()
	c.out.Set(len(flags))
	for _, f := range flags {
		c.out.Simple(f)
	}
	c.out.Int(int64(cmd.first))
	c.out.Int(int64(cmd.last))
	c.out.Int(int64(cmd.step))
	cats := cmd.aclCategories()
	c.out.Set(len(cats))
	for _, cat := range cats {
		c.out.Simple(cat)
	}
	tips := tipsOf(cmd)
	c.out.Set(len(tips))
	for _, t := range tips {
		c.out.BulkString(t) // bulk, as Redis writes them (flags and categories are simple)
	}
	writeKeySpecs(c, cmd)
	c.out.Array(len(cmd.subs))
	for _, s := range cmd.subs {
		writeCommandInfo(c, s)
	}
}

// aclCategories lists the command's ACL categories as COMMAND INFO does
// (acl.go derives them).
func (cmd *command) aclCategories() []string {
	names := aclCats(cmd).Names()
	for i, n := range names {
		names[i] = "@" + n
	}
	return names
}

func cmdCommandDocs(c *conn, args [][]byte) {
	var cmds []*command
	if len(args) == 2 {
		cmds = sortedCommands()
	} else {
		for _, name := range args[2:] {
			if cmd := lookupFullName(name); cmd != nil {
				cmds = append(cmds, cmd)
			}
		}
	}
	c.out.Map(len(cmds))
	for _, cmd := range cmds {
		writeCommandDocs(c, cmd)
	}
}

func writeCommandDocs(c *conn, cmd *command) {
	c.out.BulkString(cmd.name)
	n := 3
	if len(cmd.subs) > 0 {
		n++
	}
	c.out.Map(n)
	c.out.BulkString("summary")
	c.out.BulkString(cmd.summary)
	c.out.BulkString("since")
	c.out.BulkString(cmd.since)
	c.out.BulkString("group")
	c.out.BulkString(cmd.group)
	if len(cmd.subs) > 0 {
		c.out.BulkString("subcommands")
		c.out.Map(len(cmd.subs))
		for _, s := range cmd.subs {
			writeCommandDocs(c, s)
		}
	}
}

func cmdCommandList(c *conn, args [][]byte) {
	var filter func(*command) bool
	switch {
	case len(args) == 2:
	case len(args) == 5 && eq(args[2], "FILTERBY") && eq(args[3], "PATTERN"):
		// Redis matches without case (stringmatchlen's nocase); names are
		// lower case, so a lower-cased pattern matches the same.
		pat := strings.ToLower(string(args[4]))
		filter = func(cmd *command) bool { return glob.Match(pat, cmd.name) }
	case len(args) == 5 && eq(args[2], "FILTERBY") && eq(args[3], "ACLCAT"):
		cat := "@" + strings.ToLower(string(args[4]))
		filter = func(cmd *command) bool {
			for _, x := range cmd.aclCategories() {
				if x == cat {
					return true
				}
			}
			return false
		}
	case len(args) == 5 && eq(args[2], "FILTERBY") && eq(args[3], "MODULE"):
		filter = func(*command) bool { return false }
	default:
		c.err(msgSyntax)
		return
	}
	var names []string
	for _, cmd := range sortedCommands() {
		for _, x := range append([]*command{cmd}, cmd.subs...) {
			if filter == nil || filter(x) {
				names = append(names, x.name)
			}
		}
	}
	c.out.Array(len(names))
	for _, n := range names {
		c.out.BulkString(n)
	}
}

// cmdCommandGetKeys is COMMAND GETKEYS: the keys GETKEYSANDFLAGS names,
// without their flags (keyspecs.go).
func cmdCommandGetKeys(c *conn, args [][]byte) { commandGetKeys(c, args, false) }

func cmdCommandHelp(c *conn, _ [][]byte) {
	writeHelp(c, "COMMAND", []string{
		"(no subcommand)", "    Return details about all commands.",
		"COUNT", "    Return the total number of commands in this server.",
		"LIST [FILTERBY (MODULE <module-name>|ACLCAT <category>|PATTERN <pattern>)]", "    Return a list of all commands in this server.",
		"INFO [<command-name> ...]", "    Return details about multiple commands.",
		"DOCS [<command-name> ...]", "    Return documentation details about multiple commands.",
		"GETKEYS <full-command>", "    Return the keys from a full command.",
		"GETKEYSANDFLAGS <full-command>", "    Return the keys and the access flags from a full command.",
	})
}

// --- INFO ---

func cmdInfo(c *conn, args [][]byte) {
	sections := make([]string, 0, len(args))
	for _, a := range args[1:] {
		sections = append(sections, strings.ToLower(string(a)))
	}
	c.out.Verbatim(c.srv.info(sections, time.Now()))
}

// --- CONFIG ---

// --- keyspace-wide ---

// cmdDBSize counts the live keys of the segments this node owns (a replica
// copy is its owner's to count), like a Redis Cluster master.
func cmdDBSize(c *conn, _ [][]byte) { c.out.Int(int64(c.srv.store.DBSize())) }

func cmdFlush(c *conn, args [][]byte) {
	switch {
	case len(args) == 1:
	case len(args) == 2 && (eq(args[1], "ASYNC") || eq(args[1], "SYNC")):
	default:
		c.err(msgSyntax)
		return
	}
	n := c.srv.store.Flush() // the owned segments: replicas follow their owner's deletes
	c.srv.trackFlushCommand(n)
	c.out.OK()
}

func cmdTime(c *conn, _ [][]byte) {
	now := time.Now()
	c.out.Array(2)
	c.out.BulkInt(now.Unix())
	c.out.BulkInt(int64(now.Nanosecond() / 1000))
}

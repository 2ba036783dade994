package resp

import (
	"bufio"
	_ "embed"
	"fmt"
	"strings"
)

// The coverage of Redis 7.0's command set (issue #13, "commands supported vs
// Redis 7.0's data-type commands, with the reason for each one left out").
// testdata/redis-7.0-commands.tsv is redis-server 7.0's own COMMAND DOCS,
// flattened to name, group and version (TestRedisCommandSnapshot checks it
// against a live redis-server when one is installed); the reasons below are
// ours. A test fails when a command is neither served nor given a reason,
// and when a reason outlives the command's arrival, so the table in
// docs/RESP.md cannot drift from the code.

//go:embed testdata/redis-7.0-commands.tsv
var redis70Commands string

// redisCommand is one row of the snapshot: a command or a "parent|sub".
type redisCommand struct{ name, group, since string }

func redisCommandSnapshot() []redisCommand {
	var out []redisCommand
	sc := bufio.NewScanner(strings.NewReader(redis70Commands))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) == 3 {
			out = append(out, redisCommand{f[0], f[1], f[2]})
		}
	}
	return out
}

// tableEntry is the command table's entry for name ("parent|sub" for a
// subcommand), nil when there is none.
func tableEntry(name string) *command {
	parent, _, isSub := strings.Cut(name, "|")
	c := commandTable[parent]
	if c == nil || !isSub {
		return c
	}
	for _, s := range c.subs {
		if s.name == name {
			return s
		}
	}
	return nil
}

// served reports whether the command table serves name: it has an entry
// that does more than answer why it is not served (refused).
func served(name string) bool {
	c := tableEntry(name)
	return c != nil && !c.refused
}

const (
	whyNoPersistence = "no persistence: Zaris keeps data in memory and on replicas, there is no RDB or AOF file"
	whyControlPlane  = "slots are placed by the control plane (the raft-replicated partition map); operators use `zarisctl rebalance`, `add` and `drain`"
	whyNoBus         = "there is no cluster bus: membership is memberlist gossip plus raft"
	whyPerPartition  = "replication is per partition and driven by the control plane: a node is owner of some partitions and replica of others, never a whole-node master or replica"
	whyOneDB         = "one database (0), as in Redis Cluster"
	whyNotYet        = "not yet"
)

// leftOut gives the reason for every Redis 7.0 command the front end does
// not serve.
var leftOut = map[string]string{
	"acl|load":                      "not yet (issue #15)",
	"acl|save":                      "not yet (issue #15)",
	"bgrewriteaof":                  whyNoPersistence,
	"bgsave":                        whyNoPersistence,
	"save":                          whyNoPersistence,
	"cluster|addslots":              whyControlPlane,
	"cluster|addslotsrange":         whyControlPlane,
	"cluster|delslots":              whyControlPlane,
	"cluster|delslotsrange":         whyControlPlane,
	"cluster|flushslots":            whyControlPlane,
	"cluster|setslot":               whyControlPlane,
	"cluster|meet":                  whyControlPlane,
	"cluster|forget":                whyControlPlane,
	"cluster|reset":                 whyControlPlane,
	"cluster|saveconfig":            whyControlPlane,
	"cluster|set-config-epoch":      whyControlPlane,
	"cluster|bumpepoch":             whyControlPlane,
	"cluster|failover":              whyPerPartition,
	"cluster|replicate":             whyPerPartition,
	"cluster|replicas":              whyPerPartition,
	"cluster|slaves":                whyPerPartition,
	"cluster|links":                 whyNoBus,
	"cluster|count-failure-reports": whyNoBus,
	"debug":                         "not exposed: DEBUG exists to crash, stall and inspect a Redis process",
	"failover":                      whyPerPartition,
	"replicaof":                     whyPerPartition,
	"slaveof":                       whyPerPartition,
	"psync":                         whyPerPartition,
	"sync":                          whyPerPartition,
	"replconf":                      whyPerPartition,
	"latency|graph":                 whyNotYet,
	"memory|doctor":                 whyNotYet,
	"memory|malloc-stats":           "Zaris runs on Go's allocator, not jemalloc",
	"memory|purge":                  "Zaris runs on Go's allocator, not jemalloc",
	"memory|stats":                  whyNotYet,
	"module":                        "no module system",
	"module|help":                   "no module system",
	"module|list":                   "no module system",
	"module|load":                   "no module system",
	"module|loadex":                 "no module system",
	"module|unload":                 "no module system",
	"move":                          whyOneDB,
	"swapdb":                        whyOneDB,
	"pfdebug":                       "inspects the internals of Redis's HyperLogLog implementation",
	"pfselftest":                    "inspects the internals of Redis's HyperLogLog implementation",
	"script|debug":                  "no Lua debugger",
	"shutdown":                      "a node stops on SIGTERM or `zarisctl drain`, not at a client's request",
}

// refusedNote ends the reason of a command the table answers with an error.
func refusedNote(name string) string {
	if c := tableEntry(name); c != nil && c.refused {
		return " (answered with an error saying so)"
	}
	return ""
}

// dataTypeGroups are the groups the coverage table counts as Redis's data
// types (the rest are connection, server, cluster, scripting, pub/sub and
// transactions).
var dataTypeGroups = map[string]bool{
	"generic": true, "string": true, "bitmap": true, "hyperloglog": true, "hash": true, "list": true,
	"set": true, "sorted-set": true, "geo": true, "stream": true,
}

// docsCoverage renders the coverage section of docs/RESP.md.
func docsCoverage() string {
	type tally struct {
		total, served int
		missing       []string
	}
	byGroup := map[string]*tally{}
	for _, rc := range redisCommandSnapshot() {
		t := byGroup[rc.group]
		if t == nil {
			t = &tally{}
			byGroup[rc.group] = t
		}
		t.total++
		if served(rc.name) {
			t.served++
		} else {
			t.missing = append(t.missing, rc.name)
		}
	}
	var b strings.Builder
	b.WriteString("\n## Coverage of Redis 7.0's commands\n\n")
	b.WriteString("Generated from redis-server 7.0.15's `COMMAND DOCS` (server/resp/testdata) and the\n")
	b.WriteString("command table: every command and subcommand of Redis 7.0, by Redis's group.\n\n")
	b.WriteString("| Group | Redis 7.0 | Zaris serves | Left out |\n|---|---|---|---|\n")
	var dtTotal, dtServed, allTotal, allServed int
	for _, g := range groupTitles {
		t := byGroup[g.group]
		if t == nil {
			continue
		}
		left := "—"
		if len(t.missing) > 0 {
			names := make([]string, len(t.missing))
			for i, m := range t.missing {
				names[i] = "`" + strings.ToUpper(strings.ReplaceAll(m, "|", " ")) + "`"
			}
			left = strings.Join(names, ", ")
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s |\n", g.title, t.total, t.served, left)
		allTotal += t.total
		allServed += t.served
		if dataTypeGroups[g.group] {
			dtTotal += t.total
			dtServed += t.served
		}
	}
	fmt.Fprintf(&b, "\nData-type commands (keys, strings, bitmaps, HyperLogLog, hashes, lists, sets, sorted sets,\n"+
		"geo, streams): **%d of %d**. All commands and subcommands: **%d of %d**.\n", dtServed, dtTotal, allServed, allTotal)
	b.WriteString("\nWhy each one is left out:\n\n| Command | Reason |\n|---|---|\n")
	for _, rc := range redisCommandSnapshot() {
		if !served(rc.name) {
			fmt.Fprintf(&b, "| `%s` | %s%s |\n", strings.ToUpper(strings.ReplaceAll(rc.name, "|", " ")), leftOut[rc.name], refusedNote(rc.name))
		}
	}
	return b.String()
}

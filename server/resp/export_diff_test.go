package resp

import "github.com/zaris-io/zaris/internal/respdiff"

// DiffCommands is the command table as the differential fuzzer reads it at
// run time: every command (subcommands as "parent|sub") with its arity, so
// commands registered later are fuzzed without touching the fuzzer, and
// whether it may name several keys.
func DiffCommands() []respdiff.Command {
	var out []respdiff.Command
	for _, c := range sortedCommands() {
		if len(c.subs) == 0 {
			out = append(out, respdiff.Command{Name: c.name, Arity: c.arity, MultiKey: c.multiKey()})
		}
		for _, s := range c.subs {
			out = append(out, respdiff.Command{Name: s.name, Arity: s.arity, MultiKey: s.multiKey()})
		}
	}
	return out
}

package resp

import (
	"slices"

	"github.com/zaris-io/zaris/internal/acl"
)

// Key specifications (Redis 7): where a command's keys are and what it
// does to each — the flags COMMAND INFO reports and COMMAND
// GETKEYSANDFLAGS answers. For the commands redis-server 7.0 has they are
// its own, generated from its COMMAND INFO (keyspecs_gen.go); a command
// only Zaris serves gets one range from its first, last and step.

// redisSpec is what keyspecs_gen.go holds of one command.
type redisSpec struct {
	tips  []string
	specs []keySpec
}

type keySpec struct {
	notes string
	flags []string
	// begin_search: the key arguments start at index, or after keyword
	// (searched from startFrom: from the end when negative).
	begin     beginSearch
	index     int
	keyword   string
	startFrom int
	// find_keys: a range (lastKey relative to the first key, negative from
	// the end; keyStep; limit: at most 1/limit of what remains) or a count
	// at keyNumIdx followed by the keys from firstKey.
	find                    findKeys
	lastKey, keyStep, limit int
	keyNumIdx, firstKey     int
}

type beginSearch uint8

const (
	beginUnknown beginSearch = iota
	beginIndex
	beginKeyword
)

type findKeys uint8

const (
	findUnknown findKeys = iota
	findRange
	findKeynum
)

// keySpecsOf is cmd's key specifications.
func keySpecsOf(cmd *command) []keySpec {
	if r, ok := redisCommandSpecs[cmd.name]; ok {
		return r.specs
	}
	if cmd.step <= 0 {
		return nil
	}
	flag := "RO"
	if cmd.flags&flagWrite != 0 {
		flag = "RW"
	}
	last := cmd.last
	if last >= 0 {
		last -= cmd.first
	}
	return []keySpec{{flags: []string{flag}, begin: beginIndex, index: cmd.first,
		find: findRange, lastKey: last, keyStep: cmd.step}}
}

// tipsOf is cmd's command tips.
func tipsOf(cmd *command) []string {
	if r, ok := redisCommandSpecs[cmd.name]; ok {
		return r.tips
	}
	return cmd.tips
}

// writeKeySpecs writes cmd's key specifications as COMMAND INFO does.
func writeKeySpecs(c *conn, cmd *command) {
	specs := keySpecsOf(cmd)
	c.out.Array(len(specs))
	for _, s := range specs {
		n := 3
		if s.notes != "" {
			n++
		}
		c.out.Map(n)
		if s.notes != "" {
			c.out.BulkString("notes")
			c.out.BulkString(s.notes)
		}
		c.out.BulkString("flags")
		c.out.Set(len(s.flags))
		for _, f := range s.flags {
			c.out.Simple(f)
		}
		c.out.BulkString("begin_search")
		c.out.Map(2)
		c.out.BulkString("type")
		switch s.begin {
		case beginIndex:
			c.out.BulkString("index")
			c.out.BulkString("spec")
			c.out.Map(1)
			c.out.BulkString("index")
			c.out.Int(int64(s.index))
		case beginKeyword:
			c.out.BulkString("keyword")
			c.out.BulkString("spec")
			c.out.Map(2)
			c.out.BulkString("keyword")
			c.out.BulkString(s.keyword)
			c.out.BulkString("startfrom")
			c.out.Int(int64(s.startFrom))
		default:
			c.out.BulkString("unknown")
			c.out.BulkString("spec")
			c.out.Map(0)
		}
		c.out.BulkString("find_keys")
		c.out.Map(2)
		c.out.BulkString("type")
		switch s.find {
		case findRange:
			c.out.BulkString("range")
			c.out.BulkString("spec")
			c.out.Map(3)
			c.out.BulkString("lastkey")
			c.out.Int(int64(s.lastKey))
			c.out.BulkString("keystep")
			c.out.Int(int64(s.keyStep))
			c.out.BulkString("limit")
			c.out.Int(int64(s.limit))
		case findKeynum:
			c.out.BulkString("keynum")
			c.out.BulkString("spec")
			c.out.Map(3)
			c.out.BulkString("keynumidx")
			c.out.Int(int64(s.keyNumIdx))
			c.out.BulkString("firstkey")
			c.out.Int(int64(s.firstKey))
			c.out.BulkString("keystep")
			c.out.Int(int64(s.keyStep))
		default:
			c.out.BulkString("unknown")
			c.out.BulkString("spec")
			c.out.Map(0)
		}
	}
}

// keyAt is a key argument's position and the flags of the spec that found
// it.
type keyAt struct {
	pos   int
	flags []string
}

// keysBySpecs finds args' keys (args[0] the command name) through specs as
// Redis 7.0's getKeysUsingKeySpecs does; false when a spec does not fit the
// arguments (a count that is not a number, a range past their end), whose
// caller then asks the command's own key finder.
func keysBySpecs(specs []keySpec, args [][]byte) ([]keyAt, bool) {
	argc := len(args)
	var out []keyAt
	for _, s := range specs {
		if slices.Contains(s.flags, "not_key") {
			continue
		}
		if slices.Contains(s.flags, "incomplete") || slices.Contains(s.flags, "variable_flags") {
			return nil, false // the command's own finder knows better, as in Redis
		}
		first := 0
		switch s.begin {
		case beginIndex:
			first = s.index
		case beginKeyword:
			start, end := s.startFrom, argc-1
			if s.startFrom <= 0 {
				start, end = argc+s.startFrom, 0
			}
			for i := start; i != end; {
				if i >= argc || i < 1 {
					break
				}
				if eq(args[i], s.keyword) {
					first = i + 1
					break
				}
				if start <= end {
					i++
				} else {
					i--
				}
			}
			if first == 0 {
				continue // keyword absent: this spec names no key
			}
		default:
			return nil, false
		}
		var last, step int
		switch s.find {
		case findRange:
			step = s.keyStep
			switch {
			case s.lastKey >= 0:
				last = first + s.lastKey
			case s.limit == 0:
				last = argc + s.lastKey
			default:
				last = first + ((argc-first)/s.limit + s.lastKey)
			}
		case findKeynum:
			step = s.keyStep
			if s.keyNumIdx >= argc-first {
				return nil, false
			}
			n, ok := parseInt(args[first+s.keyNumIdx])
			if !ok || n < 0 || n > int64(argc) {
				return nil, false
			}
			first += s.firstKey
			last = first + int(n) - 1
		default:
			return nil, false
		}
		if last >= argc || last < first || first >= argc || step <= 0 {
			return nil, false
		}
		for i := first; i <= last; i += step {
			out = append(out, keyAt{pos: i, flags: s.flags})
		}
	}
	return out, true
}

// keysAndFlags is the keys of args (args[0] the command's name) with their
// flags: through the specifications, or the command's own key finder where
// they do not tell (Redis's getKeysFromCommandWithSpecs).
func keysAndFlags(cmd *command, args [][]byte) []keyAt {
	specs := keySpecsOf(cmd)
	keys, ok := keysBySpecs(specs, args)
	if ok {
		return keys
	}
	keys = keys[:0]
	for _, i := range cmd.keyIndexes(args) {
		keys = append(keys, keyAt{pos: i, flags: fallbackKeyFlags(cmd, specs, args, i)})
	}
	return keys
}

// keyPermOf is the ACL permission a key with these flags needs, as Redis's
// ACLSelectorCheckKey derives it: read to access the value, write to
// insert, update or delete; neither (EXISTS, TYPE) needs only a pattern
// that matches.
func keyPermOf(flags []string) acl.Perm {
	var p acl.Perm
	for _, f := range flags {
		switch f {
		case "access":
			p |= acl.PermRead
		case "insert", "update", "delete":
			p |= acl.PermWrite
		}
	}
	return p
}

// KeyPermOf is the ACL permission Redis command name (lower case) needs
// on its key by Redis 7.0's key specification, for a front end that serves
// it with one key (the native protocol); false when the specification
// alone does not tell (variable flags, the key not first, no key).
func KeyPermOf(name string) (acl.Perm, bool) {
	r, ok := redisCommandSpecs[name]
	if !ok || len(r.specs) == 0 {
		return 0, false
	}
	s := r.specs[0]
	if s.begin != beginIndex || s.index != 1 || slices.Contains(s.flags, "variable_flags") || slices.Contains(s.flags, "not_key") {
		return 0, false
	}
	return keyPermOf(s.flags), true
}

// hasKeyArgs is Redis's doesCommandHaveKeys: a specification that names
// keys, not channels (SPUBLISH's), or a key finder of the command's own.
func hasKeyArgs(cmd *command) bool {
	if _, ok := redisCommandSpecs[cmd.name]; !ok {
		return cmd.step > 0 || cmd.keys != nil
	}
	for _, s := range keySpecsOf(cmd) {
		if !slices.Contains(s.flags, "not_key") {
			return true
		}
	}
	return false
}

// fallbackKeyFlags are the flags of the key at pos when the command's own
// finder named it: SET's and BITFIELD's depend on their options (Redis's
// setGetKeys, bitfieldGetKeys); otherwise the specification that begins at
// pos, or the last one (SORT's STORE destination, MIGRATE's KEYS).
func fallbackKeyFlags(cmd *command, specs []keySpec, args [][]byte, pos int) []string {
	switch cmd.name {
	case "set":
		for _, a := range args[3:] {
			if eq(a, "GET") {
				return []string{"RW", "access", "update"}
			}
		}
		return []string{"OW", "update"}
	case "bitfield":
		if bitfieldReadOnly(args) {
			return []string{"RO", "access"}
		}
		return []string{"RW", "access", "update"}
	}
	for _, s := range specs {
		if s.begin == beginIndex && s.index == pos {
			return s.flags
		}
	}
	if len(specs) > 0 {
		return specs[len(specs)-1].flags
	}
	return nil
}

// bitfieldReadOnly reports whether BITFIELD's operations only read (GET,
// OVERFLOW), walked as Redis's bitfieldGetKeys does: a syntax error counts
// as a write.
func bitfieldReadOnly(args [][]byte) bool {
	for i := 2; i < len(args); i++ {
		rem := len(args) - i - 1
		switch {
		case eq(args[i], "GET") && rem >= 2:
			i += 2
		case eq(args[i], "OVERFLOW") && rem >= 1:
			i++
		default:
			return false
		}
	}
	return true
}

// cmdCommandGetKeysAndFlags is COMMAND GETKEYSANDFLAGS: each key with the
// flags of the key specification that names it. Where the specifications
// do not fit the arguments, the command's own key finder names the keys.
func cmdCommandGetKeysAndFlags(c *conn, args [][]byte) { commandGetKeys(c, args, true) }

// commandGetKeys answers GETKEYS and GETKEYSANDFLAGS as Redis's
// getKeysSubCommandImpl: the command's checks in its order, then the keys.
func commandGetKeys(c *conn, args [][]byte, withFlags bool) {
	target := args[2:]
	cmd := lookupCommand(target[0])
	if cmd != nil && len(cmd.subs) > 0 && len(target) >= 2 {
		cmd = cmd.lookupSub(target[1])
	}
	switch {
	case cmd == nil:
		c.err("ERR Invalid command specified")
		return
	case !hasKeyArgs(cmd):
		c.err("ERR The command has no key arguments")
		return
	case !cmd.arityOK(len(target)):
		c.err("ERR Invalid number of arguments specified for command")
		return
	}
	keys := keysAndFlags(cmd, target)
	if len(keys) == 0 {
		if cmd.flags&flagNoMandatoryKeys != 0 {
			c.out.Array(0)
			return
		}
		c.err("ERR Invalid arguments specified for command")
		return
	}
	c.out.Array(len(keys))
	for _, k := range keys {
		if !withFlags {
			c.out.Bulk(target[k.pos])
			continue
		}
		c.out.Array(2)
		c.out.Bulk(target[k.pos])
		c.out.Set(len(k.flags))
		for _, f := range k.flags {
			c.out.Simple(f)
		}
	}
}

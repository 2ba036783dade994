package store

import (
	"sort"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/mpsafe"
)

// setColl is the materialized form of a set. Beside the map, members lists
// every member once in no particular order, so that SPOP and SRANDMEMBER
// pick uniformly in O(1) a member instead of walking the map (a 100 k-member
// set made SPOP 300 µs); m maps a member to its position in members.
type setColl struct {
	m       map[string]int
	members []string
	bytes   int64 // accounted
	item    int64 // item size
	scan    scanIndex
}

// setMemberOverhead is a member's accounted cost beyond its bytes: its map
// slot (string header and position) and its members entry.
const setMemberOverhead = 48

func newSet() *setColl             { return &setColl{m: map[string]int{}} }
func (s *setColl) kind() ValueKind { return KindSet }
func (s *setColl) size() int64     { return s.bytes }
func (s *setColl) itemSize() int64 { return s.item }
func (s *setColl) count() int      { return len(s.m) }

// encode: the members, sorted.
func (s *setColl) encode() []byte { return mustMarshal(s.sorted()) }

func (s *setColl) sorted() []string {
	out := make([]string, 0, len(s.m))
	for m := range s.m {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

func (s *setColl) decode(b []byte) error {
	var members []string
	if err := mpsafe.Unmarshal(b, &members); err != nil {
		return err
	}
	for _, m := range members {
		s.add(m)
	}
	return nil
}

// has reports whether m is a member (a lookup that makes no string).
func (s *setColl) has(m []byte) bool {
	_, ok := s.m[string(m)]
	return ok
}

func (s *setColl) add(m string) bool {
	if _, ok := s.m[m]; ok {
		return false
	}
	s.insert(m)
	return true
}

// addBytes is add for a member the caller's buffer holds: a string is made
// only for a new member.
func (s *setColl) addBytes(m []byte) bool {
	if s.has(m) {
		return false
	}
	s.insert(string(m))
	return true
}

// insert adds m, which is not a member.
func (s *setColl) insert(m string) {
	s.m[m] = len(s.members)
	s.members = append(s.members, m)
	s.scan.membershipChanged()
	k := setMemberSize(len(m))
	s.bytes += k.acct
	s.item += k.item
}

func (s *setColl) rem(m string) bool {
	i, ok := s.m[m]
	if !ok {
		return false
	}
	delete(s.m, m)
	s.scan.membershipChanged()
	last := len(s.members) - 1
	if i != last {
		moved := s.members[last]
		s.members[i] = moved
		s.m[moved] = i
	}
	s.members[last] = "" // let the member's bytes go
	s.members = s.members[:last]
	if cap(s.members) > 64 && len(s.members) < cap(s.members)/4 {
		s.members = append([]string(nil), s.members...)
	}
	k := setMemberSize(len(m))
	s.bytes -= k.acct
	s.item -= k.item
	return true
}

func setOf(x *execCtx) *setColl {
	if x.coll == nil {
		return nil
	}
	return x.coll.(*setColl)
}

// setsOf reads the sets named by keys (nil for a missing key) from the
// segments the caller holds (multikey.go): keys sharing a hash tag are
// always in one segment (R-PLACE-2); a multi-segment atomic view holds
// several.
func (x *execCtx) setsOf(keys [][]byte) ([]*setColl, kv.Reply, bool) {
	out := make([]*setColl, 0, len(keys))
	for _, k := range keys {
		c, r, ok := x.lookup(k, KindSet)
		if !ok {
			return nil, r, false
		}
		s, _ := c.(*setColl)
		out = append(out, s)
	}
	return out, kv.Reply{}, true
}

func (x *execCtx) membersReply(ms []string) kv.Reply {
	out := x.replies(len(ms))
	for _, m := range ms {
		out = append(out, kv.BulkReply(x.stringBytes(m)))
	}
	return kv.ArrayReply(out)
}

func init() {
	register(kv.CmdSAdd, handler{kind: KindSet, write: true, create: true, run: func(x *execCtx) kv.Reply {
		if r, ok := arity(x, 1, -1); !ok {
			return r
		}
		s := setOf(x)
		if len(x.cmd.Args) == 1 && s.has(x.cmd.Args[0]) {
			// A member already there changes nothing: one lookup answers,
			// with no size check and no string made for the member
			// (redis-benchmark's SADD once its set is full).
			return kv.IntReply(0)
		}
		if !x.fits(setAddGrowth(s, x.cmd.Args)) {
			return x.tooLarge()
		}
		added := 0
		for _, m := range x.cmd.Args {
			if s.addBytes(m) {
				added++
			}
		}
		if added > 0 {
			x.changed()
		}
		return kv.IntReply(int64(added))
	}})
	register(kv.CmdSRem, handler{kind: KindSet, write: true, run: func(x *execCtx) kv.Reply {
		if r, ok := arity(x, 1, -1); !ok {
			return r
		}
		s := setOf(x)
		if s == nil {
			return kv.IntReply(0)
		}
		n := 0
		for _, m := range x.cmd.Args {
			if s.rem(string(m)) {
				n++
			}
		}
		if n > 0 {
			x.changed()
		}
		return kv.IntReply(int64(n))
	}})
	register(kv.CmdSMembers, handler{kind: KindSet, run: func(x *execCtx) kv.Reply {
		s := setOf(x)
		if s == nil {
			return kv.ArrayReply([]kv.Reply{})
		}
		// Redis's order for what it keeps as an intset (ascending numbers),
		// else the set's own order, as a Redis hashtable answers: a sort
		// of every member on every call was most of the command's cost.
		return x.setReply(s.members)
	}})
	register(kv.CmdSIsMember, handler{kind: KindSet, run: func(x *execCtx) kv.Reply {
		if r, ok := arity(x, 1, 1); !ok {
			return r
		}
		if s := setOf(x); s != nil {
			if _, ok := s.m[string(x.cmd.Args[0])]; ok {
				return kv.IntReply(1)
			}
		}
		return kv.IntReply(0)
	}})
	register(kv.CmdSCard, handler{kind: KindSet, run: func(x *execCtx) kv.Reply {
		if s := setOf(x); s != nil {
			return kv.IntReply(int64(len(s.m)))
		}
		return kv.IntReply(0)
	}})
	register(kv.CmdSInter, handler{kind: KindSet, run: func(x *execCtx) kv.Reply {
		others, r, ok := x.setsOf(x.cmd.Args)
		if !ok {
			return r
		}
		first := setOf(x)
		if first == nil {
			return kv.ArrayReply([]kv.Reply{})
		}
		var out []string
	members:
		for m := range first.m {
			for _, o := range others {
				if o == nil {
					return kv.ArrayReply([]kv.Reply{})
				}
				if _, ok := o.m[m]; !ok {
					continue members
				}
			}
			out = append(out, m)
		}
		return x.setReply(out)
	}})
	register(kv.CmdSUnion, handler{kind: KindSet, run: func(x *execCtx) kv.Reply {
		others, r, ok := x.setsOf(x.cmd.Args)
		if !ok {
			return r
		}
		all := map[string]struct{}{}
		for _, s := range append(others, setOf(x)) {
			if s != nil {
				for m := range s.m {
					all[m] = struct{}{}
				}
			}
		}
		out := make([]string, 0, len(all))
		for m := range all {
			out = append(out, m)
		}
		return x.setReply(out)
	}})
}

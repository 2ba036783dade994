package store

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"

	"github.com/zaris-io/zaris/internal/kv"
)

// SMOVE, SPOP, SRANDMEMBER, SDIFF, SDIFFSTORE/SINTERSTORE/SUNIONSTORE,
// SMISMEMBER, SINTERCARD and SSCAN (issue #13 item 5), with Redis 7.0's
// replies and errors. Random choices use the node's generator; SPOP logs
// the members it chose as an SREM, so replicas converge.

// setAlgebra combines sets (nil = a missing key, empty).
type setAlgebra func(sets []*setColl) *setColl

func interOf(sets []*setColl) *setColl { return interLimit(sets, 0) }

// interLimit is the intersection, cut at limit members (0: no limit).
func interLimit(sets []*setColl, limit int) *setColl {
	out := newSet()
	for _, s := range sets {
		if s == nil || s.count() == 0 {
			return out
		}
	}
	// Walk the smallest set, probe the others.
	order := slices.Clone(sets)
	sort.Slice(order, func(i, j int) bool { return order[i].count() < order[j].count() })
members:
	for m := range order[0].members.all {
		for _, o := range order[1:] {
			if !o.hasString(m) {
				continue members
			}
		}
		out.add(m)
		if limit > 0 && out.count() >= limit {
			break
		}
	}
	return out
}

func unionOf(sets []*setColl) *setColl {
	out := newSet()
	for _, s := range sets {
		if s != nil {
			for m := range s.members.all {
				out.add(m)
			}
		}
	}
	return out
}

func diffOf(sets []*setColl) *setColl {
	out := newSet()
	if sets[0] == nil {
		return out
	}
members:
	for m := range sets[0].members.all {
		for _, o := range sets[1:] {
			if o != nil {
				if o.hasString(m) {
					continue members
				}
			}
		}
		out.add(m)
	}
	return out
}

// setStore is SDIFFSTORE/SINTERSTORE/SUNIONSTORE: the command's key is the
// destination (of any kind: it is replaced), the arguments the sources. An
// empty result deletes the destination. The result must fit the item cap
// before the destination is touched.
//
// A factory of handlers is not inlined into the init that registers them:
// there the closure was compiled without its small calls inlined
// (kv.IntReply was a call and a copied 96-byte reply per LPUSH, issue #17).
//
//go:noinline
func setStore(op setAlgebra) func(x *execCtx) kv.Reply {
	return func(x *execCtx) kv.Reply {
		if !arity(x, 1, -1) {
			return arityError(x)
		}
		sets, r, ok := x.setsOf(x.cmd.Args)
		if !ok {
			return r
		}
		res := op(sets)
		dst, r, ok := x.openWrite([]byte(x.cmd.Key), kindAny, false)
		if !ok {
			return r
		}
		if res.count() > 0 && !dst.fitsNew(res) {
			return dst.tooLarge()
		}
		members := res.sorted()
		args := make([][]byte, len(members))
		for i, m := range members {
			args[i] = []byte(m)
		}
		dst.replace(res, &kv.Cmd{Op: kv.CmdSAdd, Args: args})
		x.rec = nil // replaced: execWriteLocked must not report the old record
		return kv.IntReply(int64(res.count()))
	}
}

// randomMembers picks n distinct members of s uniformly (n ≤ s.count()), in
// O(n) when n is small against the set: distinct positions drawn at random;
// a partial shuffle of a copy when the answer is most of the set anyway.
func randomMembers(s *setColl, n int) []string {
	size := s.members.len()
	if n*3 > size {
		all := s.members.clone()
		for i := 0; i < n; i++ {
			j := i + rand.IntN(size-i)
			all[i], all[j] = all[j], all[i]
		}
		return all[:n]
	}
	out := make([]string, n)
	for j, i := range distinctPositions(n, size) {
		out[j] = s.members.at(i)
	}
	return out
}

// distinctPositions draws n distinct positions of [0, size) uniformly, for
// n a small part of size (n*3 ≤ size: few draws are repeats).
func distinctPositions(n, size int) []int {
	return distinctDraws(n, func() int { return rand.IntN(size) })
}

// distinctDraws calls draw until it has n distinct results, in the order
// drawn: every n-subset is as likely as draw makes it. For n a small part
// of what draw ranges over (few draws are repeats). A few are told apart
// by a look at those drawn so far — a map for a handful cost an allocation
// and hashing that outweighed the draws.
func distinctDraws[T comparable](n int, draw func() T) []T {
	out := make([]T, 0, n)
	var seen map[T]struct{}
	if n > distinctByScan {
		seen = make(map[T]struct{}, n)
	}
	for len(out) < n {
		v := draw()
		if seen != nil {
			if _, dup := seen[v]; dup {
				continue
			}
			seen[v] = struct{}{}
		} else if slices.Contains(out, v) {
			continue
		}
		out = append(out, v)
	}
	return out
}

// distinctByScan is the most draws distinctDraws tells apart by a scan.
const distinctByScan = 32

// parseRandomCount parses SRANDMEMBER/HRANDFIELD's count: an integer in
// [−2^63+1, 2^63−1] (Redis's range).
func parseRandomCount(b []byte) (int64, kv.Reply, bool) {
	n, ok := argInt(b)
	if !ok {
		return 0, errNotInteger, false
	}
	if n == math.MinInt64 {
		return 0, kv.BadRequest("value is out of range, value must between -9223372036854775807 and 9223372036854775807"), false
	}
	return n, kv.Reply{}, true
}

var errNotPositive = kv.BadRequest("value is out of range, must be positive")

func init() {
	register(kv.CmdSMove, handler{kind: KindSet, write: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 2, 2) {
			return arityError(x)
		}
		src := setOf(x)
		if src == nil {
			return kv.IntReply(0)
		}
		dstKey, member := x.cmd.Args[0], string(x.cmd.Args[1])
		if string(dstKey) == x.cmd.Key {
			if src.hasString(member) {
				return kv.IntReply(1)
			}
			return kv.IntReply(0)
		}
		dst, r, ok := x.openWrite(dstKey, KindSet, true)
		if !ok {
			return r
		}
		if !src.hasString(member) {
			return kv.IntReply(0)
		}
		ds := dst.coll.(*setColl)
		if !dst.fits(setAddGrowth(ds, x.cmd.Args[1:2])) {
			return dst.tooLarge()
		}
		src.rem(member)
		x.changedAs(kv.CmdSRem, x.cmd.Args[1])
		if ds.add(member) {
			dst.changedAs(kv.CmdSAdd, x.cmd.Args[1])
			dst.commit()
		}
		return kv.IntReply(1)
	}})
	register(kv.CmdSPop, handler{kind: kindAny, write: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 0, 1) {
			return arityError(x)
		}
		withCount := len(x.cmd.Args) == 1
		count := int64(1)
		if withCount {
			var ok bool
			if count, ok = argInt(x.cmd.Args[0]); !ok || count < 0 {
				return errNotPositive
			}
		}
		if x.wrongKind(KindSet) {
			return kv.StatusReply(kv.StatusWrongType)
		}
		s := setOf(x)
		if s == nil || count == 0 {
			if withCount {
				return kv.ArrayReply([]kv.Reply{})
			}
			return kv.NilReply()
		}
		chosen := randomMembers(s, int(min(count, int64(s.count()))))
		slices.Sort(chosen) // the logged SREM is canonical
		args := make([][]byte, len(chosen))
		for i, m := range chosen {
			args[i] = []byte(m)
			s.rem(m)
		}
		x.changedArgs(kv.CmdSRem, args)
		if !withCount {
			return kv.BulkReply(args[0])
		}
		return x.bulksOf(args)
	}})
	register(kv.CmdSRandMember, handler{kind: kindAny, run: func(x *execCtx) kv.Reply {
		if !arity(x, 0, 1) {
			return arityError(x)
		}
		if len(x.cmd.Args) == 0 {
			if x.wrongKind(KindSet) {
				return kv.StatusReply(kv.StatusWrongType)
			}
			if s := setOf(x); s != nil {
				return kv.BulkReply([]byte(randomMembers(s, 1)[0]))
			}
			return kv.NilReply()
		}
		n, r, ok := parseRandomCount(x.cmd.Args[0])
		if !ok {
			return r
		}
		if x.wrongKind(KindSet) {
			return kv.StatusReply(kv.StatusWrongType)
		}
		s := setOf(x)
		if s == nil || n == 0 {
			return kv.ArrayReply([]kv.Reply{})
		}
		if n > 0 {
			return x.membersReply(randomMembers(s, int(min(n, int64(s.count())))))
		}
		if !randomCountFits(uint64(-n), s.count(), s.bytes) {
			return errRandomTooLarge
		}
		out := x.replies(int(-n))[:-n]
		for i := range out {
			out[i] = kv.BulkReply(x.stringBytes(s.members.at(rand.IntN(s.members.len()))))
		}
		return kv.ArrayReply(out)
	}})
	register(kv.CmdSDiff, handler{kind: KindSet, run: func(x *execCtx) kv.Reply {
		sets, r, ok := x.setsOf(x.cmd.Args)
		if !ok {
			return r
		}
		return x.setReply(diffOf(append([]*setColl{setOf(x)}, sets...)).members.view())
	}})
	register(kv.CmdSDiffStore, handler{kind: kindAny, write: true, run: setStore(diffOf)})
	register(kv.CmdSInterStore, handler{kind: kindAny, write: true, run: setStore(interOf)})
	register(kv.CmdSUnionStore, handler{kind: kindAny, write: true, run: setStore(unionOf)})
	register(kv.CmdSMIsMember, handler{kind: KindSet, run: func(x *execCtx) kv.Reply {
		if !arity(x, 1, -1) {
			return arityError(x)
		}
		s := setOf(x)
		out := x.replies(len(x.cmd.Args))[:len(x.cmd.Args)]
		for i, m := range x.cmd.Args {
			out[i] = kv.IntReply(0)
			if s != nil {
				if s.has(m) {
					out[i] = kv.IntReply(1)
				}
			}
		}
		return kv.ArrayReply(out)
	}})
	register(kv.CmdSInterCard, handler{kind: kindAny, run: func(x *execCtx) kv.Reply {
		if !arity(x, 1, -1) {
			return arityError(x)
		}
		limit, ok := argInt(x.cmd.Args[0])
		if !ok || limit < 0 {
			return kv.BadRequest("LIMIT can't be negative")
		}
		if x.wrongKind(KindSet) {
			return kv.StatusReply(kv.StatusWrongType)
		}
		sets, r, ok := x.setsOf(x.cmd.Args[1:])
		if !ok {
			return r
		}
		lim := int(min(limit, math.MaxInt32))
		return kv.IntReply(int64(interLimit(append([]*setColl{setOf(x)}, sets...), lim).count()))
	}})
	register(kv.CmdSScan, handler{kind: kindAny, run: func(x *execCtx) kv.Reply {
		req, r, done := collScanStart(x, KindSet)
		if done {
			return r
		}
		s := setOf(x)
		if ints, ok := intsetOrder(s); ok {
			// Redis keeps such a set compact (an intset) and returns it
			// whole, in order, whatever the cursor.
			return x.collScanReply(0, req.filter(ints, 1))
		}
		next, page := scanFields(&s.scan, req, s.count(), s.t.all, s.hasString)
		return x.collScanReply(next, req.filter(page, 1))
	}})
}

// intsetOrder returns the members of s in ascending numeric order when
// Redis 7.0 would encode it as an intset: at most 512 members (the default
// set-max-intset-entries), each an integer in canonical form.
func intsetOrder(s *setColl) ([]string, bool) {
	if s.count() > 512 {
		return nil, false // not an intset; the view of a long list would be a copy
	}
	return intsetOrdered(s.members.view())
}

// intsetOrdered is members in ascending numeric order when they would make
// an intset (intsetOrder).
func intsetOrdered(members []string) ([]string, bool) {
	if len(members) > 512 {
		return nil, false
	}
	nums := make([]int64, 0, len(members))
	for _, m := range members {
		n, err := strconv.ParseInt(m, 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != m {
			return nil, false
		}
		nums = append(nums, n)
	}
	slices.Sort(nums)
	out := make([]string, len(nums))
	for i, n := range nums {
		out[i] = strconv.FormatInt(n, 10)
	}
	return out, true
}

// setReply answers members as Redis answers a set: an intset in ascending
// numeric order, any other in its own order (no sort per call).
func (x *execCtx) setReply(members []string) kv.Reply {
	if ints, ok := intsetOrdered(members); ok {
		return x.membersReply(ints)
	}
	return x.membersReply(members)
}

// optEq compares an option name.
func optEq(b []byte, s string) bool { return bytes.EqualFold(b, []byte(s)) }

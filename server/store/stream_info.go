package store

import (
	"math"
	"slices"
	"strconv"

	"github.com/zaris-io/zaris/internal/kv"
)

// XINFO and XSETID, and the Redis 7 counters behind them: entries-added,
// max-deleted-entry-id, recorded-first-entry-id, and each group's
// entries-read and lag, kept and derived with Redis 7.0's rules
// (t_stream.c: streamRangeHasTombstones, streamEstimateDistanceFromFirstEverEntry,
// the read counter's update on delivery) so XINFO answers as redis-server.
//
// XSETID is logged as itself, with every option resolved (deterministic).
// The read counter moves on delivery (XREADGROUP ">") and on a replica's
// replay of that delivery (the XCLAIM effect's LASTID), through
// advanceGroup, which derives it from the stream both hold alike.

// firstLive is the first live entry's id, or empty when there is none.
func (s *streamColl) firstLive(empty streamID) streamID {
	for it := range s.entries.all() {
		if !it.dead {
			return it.id
		}
	}
	return empty
}

func (s *streamColl) lastLive() (streamID, bool) {
	if i := s.entries.lastLive(); i >= 0 {
		return s.entries.at(i).id, true
	}
	return streamID{}, false
}

// rangeHasTombstones is Redis's streamRangeHasTombstones for [start, +∞).
func (s *streamColl) rangeHasTombstones(start streamID) bool {
	if s.entries.live == 0 || s.maxDeleted == (streamID{}) {
		return false
	}
	if s.maxDeleted.less(s.firstID) {
		return false
	}
	return !s.maxDeleted.less(start)
}

const invalidEntriesRead = -1

// estimateDistance is Redis's streamEstimateDistanceFromFirstEverEntry.
func (s *streamColl) estimateDistance(id streamID) int64 {
	if s.entriesAdded == 0 {
		return 0
	}
	if s.entries.live == 0 && !s.last.less(id) {
		return int64(s.entriesAdded)
	}
	if id == s.last {
		return int64(s.entriesAdded)
	}
	if s.last.less(id) {
		return invalidEntriesRead
	}
	if s.maxDeleted == (streamID{}) || s.maxDeleted.less(s.firstID) {
		switch {
		case id.less(s.firstID):
			return int64(s.entriesAdded) - int64(s.entries.live)
		case id == s.firstID:
			return int64(s.entriesAdded) - int64(s.entries.live) + 1
		}
	}
	return invalidEntriesRead
}

// advanceGroup moves the group's last delivered id to to, updating its
// read counter for each entry passed as Redis does on delivery.
func (s *streamColl) advanceGroup(g *streamGroup, to streamID) {
	if start, more := g.last.incr(); more {
		for i := s.entries.search(start); i < s.entries.len() && !to.less(s.entries.at(i).id); i++ {
			if s.entries.at(i).dead {
				continue
			}
			id := s.entries.at(i).id
			if g.entriesRead != invalidEntriesRead && !s.rangeHasTombstones(id) {
				g.entriesRead++
			} else if s.entriesAdded > 0 {
				g.entriesRead = s.estimateDistance(id)
			}
		}
	}
	if g.last.less(to) {
		g.last = to
	}
}

// lag is the group's lag (Redis's streamReplyWithCGLag); ok false = null.
func (s *streamColl) lag(g *streamGroup) (int64, bool) {
	switch {
	case s.entriesAdded == 0:
		return 0, true
	case g.entriesRead != invalidEntriesRead && !s.rangeHasTombstones(g.last):
		return int64(s.entriesAdded) - g.entriesRead, true
	}
	if read := s.estimateDistance(g.last); read != invalidEntriesRead {
		return int64(s.entriesAdded) - read, true
	}
	return 0, false
}

func bulkStr(s string) kv.Reply { return kv.BulkReply([]byte(s)) }

func (s *streamColl) entryReply(id streamID) kv.Reply {
	b := newReplies(1)
	b.entry(id, *s.entries.get(id))
	return b.out[0]
}

func nullableInt(v int64, ok bool) kv.Reply {
	if !ok {
		return kv.NilReply()
	}
	return kv.IntReply(v)
}

// streamHeader is XINFO STREAM's common first fields.
func (s *streamColl) streamHeader() []kv.Reply {
	// radix-tree-keys: the modelled nodes (stream_nodes.go); the radix
	// tree's own inner nodes are not modelled: one more.
	keys := int64(len(s.nodes.nodes))
	return []kv.Reply{
		bulkStr("length"), kv.IntReply(int64(s.entries.live)),
		bulkStr("radix-tree-keys"), kv.IntReply(keys),
		bulkStr("radix-tree-nodes"), kv.IntReply(keys + 1),
		bulkStr("last-generated-id"), kv.BulkReply(s.last.bytes()),
		bulkStr("max-deleted-entry-id"), kv.BulkReply(s.maxDeleted.bytes()),
		bulkStr("entries-added"), kv.IntReply(int64(s.entriesAdded)),
		bulkStr("recorded-first-entry-id"), kv.BulkReply(s.firstID.bytes()),
	}
}

func (s *streamColl) sortedGroups() []*streamGroup {
	out := make([]*streamGroup, 0, len(s.groups))
	for _, g := range s.groups {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *streamGroup) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	return out
}

func sortedConsumers(g *streamGroup) []*streamConsumer {
	out := make([]*streamConsumer, 0, len(g.consumers))
	for _, c := range g.consumers {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *streamConsumer) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	return out
}

var errNoSuchKey = kv.Reply{Status: kv.StatusNotFound, Message: "no such key"}

func xinfo(x *execCtx) kv.Reply {
	args := x.cmd.Args
	if len(args) == 0 {
		return kv.BadRequest("wrong number of arguments for XINFO")
	}
	s := streamOf(x)
	sub := args[0]
	switch {
	case isWord(sub, "CONSUMERS"):
		if len(args) != 2 {
			return kv.BadRequest("wrong number of arguments for 'xinfo|consumers' command")
		}
		if s == nil || x.rec == nil {
			return errNoSuchKey
		}
		g := s.groups[string(args[1])]
		if g == nil {
			return kv.Reply{Status: kv.StatusNotFound,
				Message: "NOGROUP No such consumer group '" + string(cString(args[1])) + "' for key name '" + string(cString([]byte(x.cmd.Key))) + "'"}
		}
		now := nowMs(x)
		var out []kv.Reply
		for _, c := range sortedConsumers(g) {
			out = append(out, kv.ArrayReply([]kv.Reply{
				bulkStr("name"), bulkStr(c.name),
				bulkStr("pending"), kv.IntReply(int64(c.pending)),
				bulkStr("idle"), kv.IntReply(max(now-c.seenMs, 0)),
			}))
		}
		return kv.ArrayReply(out)
	case isWord(sub, "GROUPS"):
		if len(args) != 1 {
			return kv.BadRequest("wrong number of arguments for 'xinfo|groups' command")
		}
		if s == nil || x.rec == nil {
			return errNoSuchKey
		}
		var out []kv.Reply
		for _, g := range s.sortedGroups() {
			lag, ok := s.lag(g)
			out = append(out, kv.ArrayReply([]kv.Reply{
				bulkStr("name"), bulkStr(g.name),
				bulkStr("consumers"), kv.IntReply(int64(len(g.consumers))),
				bulkStr("pending"), kv.IntReply(int64(g.pel.live)),
				bulkStr("last-delivered-id"), kv.BulkReply(g.last.bytes()),
				bulkStr("entries-read"), nullableInt(g.entriesRead, g.entriesRead != invalidEntriesRead),
				bulkStr("lag"), nullableInt(lag, ok),
			}))
		}
		return kv.ArrayReply(out)
	case isWord(sub, "STREAM"):
		full, count := false, int64(10)
		rest := args[1:]
		switch {
		case len(rest) == 0:
		case isWord(rest[0], "FULL") && len(rest) == 1:
			full = true
		case isWord(rest[0], "FULL") && len(rest) == 3 && isWord(rest[1], "COUNT"):
			full = true
			n, ok := argInt(rest[2])
			if !ok {
				return errNotInteger
			}
			count = n
		case isWord(rest[0], "FULL"):
			return errSyntax
		default:
			return kv.BadRequest("unknown subcommand or wrong number of arguments for '" + string(sub) + "'. Try XINFO HELP.")
		}
		if s == nil || x.rec == nil {
			return errNoSuchKey
		}
		if count <= 0 {
			count = math.MaxInt64 // COUNT 0: everything
		}
		if full {
			return s.infoFull(x, count)
		}
		out := s.streamHeader()
		out = append(out, bulkStr("groups"), kv.IntReply(int64(len(s.groups))))
		first, last := kv.NilReply(), kv.NilReply()
		if s.entries.live > 0 {
			first = s.entryReply(s.firstLive(streamID{}))
			id, _ := s.lastLive()
			last = s.entryReply(id)
		}
		out = append(out, bulkStr("first-entry"), first, bulkStr("last-entry"), last)
		return kv.ArrayReply(out)
	}
	return kv.BadRequest("unknown subcommand '" + string(sub) + "'. Try XINFO HELP.")
}

// infoFull is XINFO STREAM FULL: up to count entries, and every group with
// up to count PEL entries and each consumer's up to count PEL entries.
func (s *streamColl) infoFull(x *execCtx, count int64) kv.Reply {
	out := s.streamHeader()
	var entries []kv.Reply
	for it := range s.entries.all() {
		if int64(len(entries)) >= count {
			break
		}
		if !it.dead {
			entries = append(entries, s.entryReply(it.id))
		}
	}
	out = append(out, bulkStr("entries"), kv.ArrayReply(entries))
	var groups []kv.Reply
	for _, g := range s.sortedGroups() {
		lag, ok := s.lag(g)
		var pel []kv.Reply
		byConsumer := map[*streamConsumer][]kv.Reply{}
		for it := range g.pel.all() {
			if it.dead {
				continue
			}
			pe := it.val
			if int64(len(pel)) < count {
				pel = append(pel, kv.ArrayReply([]kv.Reply{kv.BulkReply(it.id.bytes()), bulkStr(pe.consumer.name),
					kv.IntReply(pe.deliveredMs), kv.IntReply(int64(pe.deliveries))}))
			}
			if int64(len(byConsumer[pe.consumer])) < count {
				byConsumer[pe.consumer] = append(byConsumer[pe.consumer], kv.ArrayReply([]kv.Reply{
					kv.BulkReply(it.id.bytes()), kv.IntReply(pe.deliveredMs), kv.IntReply(int64(pe.deliveries))}))
			}
		}
		var consumers []kv.Reply
		for _, c := range sortedConsumers(g) {
			consumers = append(consumers, kv.ArrayReply([]kv.Reply{
				bulkStr("name"), bulkStr(c.name),
				bulkStr("seen-time"), kv.IntReply(c.seenMs),
				bulkStr("pel-count"), kv.IntReply(int64(c.pending)),
				bulkStr("pending"), kv.ArrayReply(nonNil(byConsumer[c])),
			}))
		}
		groups = append(groups, kv.ArrayReply([]kv.Reply{
			bulkStr("name"), bulkStr(g.name),
			bulkStr("last-delivered-id"), kv.BulkReply(g.last.bytes()),
			bulkStr("entries-read"), nullableInt(g.entriesRead, g.entriesRead != invalidEntriesRead),
			bulkStr("lag"), nullableInt(lag, ok),
			bulkStr("pel-count"), kv.IntReply(int64(g.pel.live)),
			bulkStr("pending"), kv.ArrayReply(nonNil(pel)),
			bulkStr("consumers"), kv.ArrayReply(nonNil(consumers)),
		}))
	}
	out = append(out, bulkStr("groups"), kv.ArrayReply(nonNil(groups)))
	return kv.ArrayReply(out)
}

func nonNil(r []kv.Reply) []kv.Reply {
	if r == nil {
		return []kv.Reply{}
	}
	return r
}

// xsetidSpec is XSETID's id and options.
type xsetidSpec struct {
	id           streamID
	entriesAdded int64 // -1: not given
	maxDel       streamID
	hasMaxDel    bool
}

// xsetidArgs parses XSETID's arguments (id [ENTRIESADDED n]
// [MAXDELETEDID id]) with Redis 7.0's checks and errors, in its order:
// all of them before the key's lookup.
func xsetidArgs(args [][]byte) (p xsetidSpec, r kv.Reply, ok bool) {
	p.entriesAdded = -1
	if len(args) == 0 {
		return p, kv.BadRequest("wrong number of arguments for 'xsetid' command"), false
	}
	if p.id, ok = parseStreamID(args[0], 0); !ok {
		return p, errStreamID, false
	}
	for i := 1; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return p, errSyntax, false
		}
		switch {
		case isWord(args[i], "ENTRIESADDED"):
			n, ok := argInt(args[i+1])
			if !ok {
				return p, errNotInteger, false
			}
			if n < 0 {
				return p, kv.BadRequest("entries_added must be positive"), false
			}
			p.entriesAdded = n
		case isWord(args[i], "MAXDELETEDID"):
			d, ok := parseStreamID(args[i+1], 0)
			if !ok {
				return p, errStreamID, false
			}
			if p.id.less(d) {
				return p, kv.BadRequest("The ID specified in XSETID is smaller than the provided max_deleted_entry_id"), false
			}
			p.maxDel, p.hasMaxDel = d, true
		default:
			return p, errSyntax, false
		}
	}
	return p, kv.Reply{}, true
}

func xsetidCheck(args [][]byte) kv.Reply {
	_, r, _ := xsetidArgs(args)
	return r
}

// xsetid: XSETID key id [ENTRIESADDED n] [MAXDELETEDID id]; the arguments
// are checked before the key (xsetidArgs), then the key must exist.
func xsetid(x *execCtx) kv.Reply {
	p, r, ok := xsetidArgs(x.cmd.Args)
	if !ok {
		return r
	}
	id, entriesAdded, maxDel, hasMaxDel := p.id, p.entriesAdded, p.maxDel, p.hasMaxDel
	s := streamOf(x)
	if s == nil || x.rec == nil {
		return errNoSuchKey
	}
	if s.entries.live > 0 {
		if top, _ := s.lastLive(); id.less(top) {
			return kv.BadRequest("The ID specified in XSETID is smaller than the target stream top item")
		}
		if entriesAdded != -1 && int64(s.entries.live) > entriesAdded {
			return kv.BadRequest("The entries_added specified in XSETID is smaller than the target stream length")
		}
	}
	s.last = id
	if entriesAdded != -1 {
		s.entriesAdded = uint64(entriesAdded)
	}
	if hasMaxDel && maxDel != (streamID{}) {
		s.maxDeleted = maxDel
	}
	effect := [][]byte{id.bytes(), []byte("ENTRIESADDED"), strconv.AppendUint(nil, s.entriesAdded, 10),
		[]byte("MAXDELETEDID"), s.maxDeleted.bytes()}
	x.changedArgs(kv.CmdXSetID, effect)
	return kv.OKReply()
}

func init() {
	register(kv.CmdXInfo, handler{kind: KindStream, run: xinfo})
	register(kv.CmdXSetID, handler{kind: KindStream, write: true, check: xsetidCheck, run: xsetid})
}

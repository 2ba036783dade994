package sdk

import (
	"context"
	"math"
	"strconv"

	"github.com/zaris-io/zaris/internal/kv"
)

// SortedSets is the sorted-set surface (R-DS-1): members ordered by a
// float64 score (ties by member, bytewise), with rank and score-range reads
// in O(log n). Ranks are zero-based; a negative rank counts from the end.
// A missing key reads as an empty sorted set, and removing the last member
// removes the key. A NaN score is a BadRequest; ±Inf are valid scores.
type SortedSets struct{ c *Client }

// SortedSets returns the sorted-set surface of c.
func (c *Client) SortedSets() *SortedSets { return &SortedSets{c: c} }

// Member is a sorted-set member and its score.
type Member struct {
	Member string
	Score  float64
}

// ZAddOptions qualify SortedSets.AddWithOptions, as the ZADD flags do. NX
// excludes XX, GT and LT; GT excludes LT (BadRequest otherwise).
type ZAddOptions struct {
	NX bool // only add new members, never update
	XX bool // only update existing members, never add
	GT bool // update only when the new score is greater (new members are still added)
	LT bool // update only when the new score is less
	CH bool // count changed members (added or re-scored), not only added ones
}

// ScoreBound is one end of a score range: Score, inclusive unless
// Exclusive. Use NegInfScore and PosInfScore for an open end.
type ScoreBound struct {
	Score     float64
	Exclusive bool
}

// InclusiveScore is the bound "score ≥ s" (as a min) or "score ≤ s" (as a max).
func InclusiveScore(s float64) ScoreBound { return ScoreBound{Score: s} }

// ExclusiveScore is the bound "score > s" (as a min) or "score < s" (as a
// max): Redis's "(s".
func ExclusiveScore(s float64) ScoreBound { return ScoreBound{Score: s, Exclusive: true} }

// The open ends of a score range.
var (
	NegInfScore = ScoreBound{Score: math.Inf(-1)}
	PosInfScore = ScoreBound{Score: math.Inf(1)}
)

func (b ScoreBound) arg() []byte {
	if !b.Exclusive {
		return kv.FormatFloat(b.Score)
	}
	return strconv.AppendFloat([]byte{'('}, b.Score, 'g', -1, 64)
}

// RangeLimit pages a score range: skip Offset matches, then return at most
// Count of them. The zero RangeLimit returns every match; Count ≤ 0 means
// no cap.
type RangeLimit struct {
	Offset int
	Count  int
}

// Add adds members or updates their scores (ZADD) and returns how many were
// new.
func (z *SortedSets) Add(ctx context.Context, key string, members ...Member) (added int, err error) {
	return z.AddWithOptions(ctx, key, ZAddOptions{}, members...)
}

// AddWithOptions is ZADD with its NX/XX/GT/LT/CH flags. It returns how many
// members were added, or with CH how many were added or re-scored.
func (z *SortedSets) AddWithOptions(ctx context.Context, key string, opts ZAddOptions, members ...Member) (int, error) {
	args := make([][]byte, 0, 5+2*len(members))
	for _, f := range [...]struct {
		on   bool
		name string
	}{{opts.NX, "NX"}, {opts.XX, "XX"}, {opts.GT, "GT"}, {opts.LT, "LT"}, {opts.CH, "CH"}} {
		if f.on {
			args = append(args, []byte(f.name))
		}
	}
	for _, m := range members {
		args = append(args, kv.FormatFloat(m.Score), []byte(m.Member))
	}
	return dsCount(z.c.runDS(ctx, kv.Cmd{Op: kv.CmdZAdd, Key: key, Args: args}))
}

// Rem removes members (ZREM) and returns how many were present.
func (z *SortedSets) Rem(ctx context.Context, key string, members ...string) (removed int, err error) {
	return dsCount(z.c.runDS(ctx, kv.Cmd{Op: kv.CmdZRem, Key: key, Args: dsStrArgs(members)}))
}

// Score returns member's score (ZSCORE); ok is false when it is absent.
func (z *SortedSets) Score(ctx context.Context, key, member string) (score float64, ok bool, err error) {
	return dsFloat(z.c.runDS(ctx, kv.Cmd{Op: kv.CmdZScore, Key: key, Args: [][]byte{[]byte(member)}}))
}

// IncrBy adds delta to member's score (ZINCRBY; an absent member starts at
// 0) and returns the new score.
func (z *SortedSets) IncrBy(ctx context.Context, key, member string, delta float64) (float64, error) {
	f, _, err := dsFloat(z.c.runDS(ctx, kv.Cmd{Op: kv.CmdZIncrBy, Key: key, Args: [][]byte{kv.FormatFloat(delta), []byte(member)}}))
	return f, err
}

// Card is the number of members (ZCARD); 0 for a missing key.
func (z *SortedSets) Card(ctx context.Context, key string) (int, error) {
	return dsCount(z.c.runDS(ctx, kv.Cmd{Op: kv.CmdZCard, Key: key}))
}

// Rank is member's rank by ascending score (ZRANK); ok is false when absent.
func (z *SortedSets) Rank(ctx context.Context, key, member string) (rank int, ok bool, err error) {
	return z.rank(ctx, kv.CmdZRank, key, member)
}

// RevRank is member's rank by descending score (ZREVRANK).
func (z *SortedSets) RevRank(ctx context.Context, key, member string) (rank int, ok bool, err error) {
	return z.rank(ctx, kv.CmdZRevRank, key, member)
}

func (z *SortedSets) rank(ctx context.Context, op kv.CmdOp, key, member string) (int, bool, error) {
	r, err := z.c.runDS(ctx, kv.Cmd{Op: op, Key: key, Args: [][]byte{[]byte(member)}})
	if err != nil || r.Type == kv.ReplyNil {
		return 0, false, err
	}
	n, err := dsCount(r, nil)
	return n, err == nil, err
}

// Range returns the members ranked start to stop inclusive by ascending
// score, with their scores (ZRANGE … WITHSCORES; 0, -1 is everything).
func (z *SortedSets) Range(ctx context.Context, key string, start, stop int) ([]Member, error) {
	return z.byRank(ctx, kv.CmdZRange, key, start, stop)
}

// RevRange is Range by descending score (ZREVRANGE … WITHSCORES).
func (z *SortedSets) RevRange(ctx context.Context, key string, start, stop int) ([]Member, error) {
	return z.byRank(ctx, kv.CmdZRevRange, key, start, stop)
}

func (z *SortedSets) byRank(ctx context.Context, op kv.CmdOp, key string, start, stop int) ([]Member, error) {
	return dsMembers(z.c.runDS(ctx, kv.Cmd{Op: op, Key: key, Args: [][]byte{dsIntArg(int64(start)), dsIntArg(int64(stop)), []byte("WITHSCORES")}}))
}

// RangeByScore returns the members with min ≤ score ≤ max (bounds may be
// exclusive), ascending, paged by limit (ZRANGEBYSCORE … WITHSCORES LIMIT).
func (z *SortedSets) RangeByScore(ctx context.Context, key string, min, max ScoreBound, limit RangeLimit) ([]Member, error) {
	return z.byScore(ctx, kv.CmdZRangeByScore, key, min.arg(), max.arg(), limit)
}

// RevRangeByScore is RangeByScore by descending score
// (ZREVRANGEBYSCORE key max min …). It takes min before max like
// RangeByScore; the Redis argument order is handled here.
func (z *SortedSets) RevRangeByScore(ctx context.Context, key string, min, max ScoreBound, limit RangeLimit) ([]Member, error) {
	return z.byScore(ctx, kv.CmdZRevRangeByScore, key, max.arg(), min.arg(), limit)
}

func (z *SortedSets) byScore(ctx context.Context, op kv.CmdOp, key string, first, second []byte, limit RangeLimit) ([]Member, error) {
	args := [][]byte{first, second, []byte("WITHSCORES")}
	if limit.Offset != 0 || limit.Count > 0 {
		count := int64(limit.Count)
		if count <= 0 {
			count = -1 // no cap
		}
		args = append(args, []byte("LIMIT"), dsIntArg(int64(limit.Offset)), dsIntArg(count))
	}
	return dsMembers(z.c.runDS(ctx, kv.Cmd{Op: op, Key: key, Args: args}))
}

// Count is the number of members with min ≤ score ≤ max (ZCOUNT).
func (z *SortedSets) Count(ctx context.Context, key string, min, max ScoreBound) (int, error) {
	return dsCount(z.c.runDS(ctx, kv.Cmd{Op: kv.CmdZCount, Key: key, Args: [][]byte{min.arg(), max.arg()}}))
}

// dsMembers decodes a WITHSCORES array: member, score, member, score, …
func dsMembers(r dsReply, err error) ([]Member, error) {
	if err != nil {
		return nil, err
	}
	if r.Type != kv.ReplyArray || len(r.Array)%2 != 0 {
		return nil, r.shapeErr()
	}
	out := make([]Member, len(r.Array)/2)
	for i := range out {
		s, perr := strconv.ParseFloat(string(r.Array[2*i+1].Bulk), 64)
		if perr != nil {
			return nil, r.shapeErr()
		}
		out[i] = Member{Member: string(r.Array[2*i].Bulk), Score: s}
	}
	return out, nil
}

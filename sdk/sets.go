package sdk

import (
	"context"
	"slices"

	"github.com/zaris-io/zaris/internal/kv"
)

// Sets is the set surface (R-DS-1): a server-side set of distinct members
// under one key. A missing key reads as an empty set, and removing the last
// member removes the key.
type Sets struct{ c *Client }

// Sets returns the set surface of c.
func (c *Client) Sets() *Sets { return &Sets{c: c} }

// Add adds members (SADD) and returns how many were new.
func (s *Sets) Add(ctx context.Context, key string, members ...string) (added int, err error) {
	return dsCount(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdSAdd, Key: key, Args: dsStrArgs(members)}))
}

// Rem removes members (SREM) and returns how many were present.
func (s *Sets) Rem(ctx context.Context, key string, members ...string) (removed int, err error) {
	return dsCount(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdSRem, Key: key, Args: dsStrArgs(members)}))
}

// Members lists the members (SMEMBERS), sorted.
func (s *Sets) Members(ctx context.Context, key string) ([]string, error) {
	ms, err := dsStrings(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdSMembers, Key: key}))
	slices.Sort(ms) // the server answers in the set's order; the client pays for the sort
	return ms, err
}

// IsMember reports whether member is in the set (SISMEMBER).
func (s *Sets) IsMember(ctx context.Context, key, member string) (bool, error) {
	return dsBool(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdSIsMember, Key: key, Args: [][]byte{[]byte(member)}}))
}

// Card is the number of members (SCARD); 0 for a missing key.
func (s *Sets) Card(ctx context.Context, key string) (int, error) {
	return dsCount(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdSCard, Key: key}))
}

// Inter returns the members present in every set named (SINTER), sorted. A
// missing key is an empty set, so it empties the result.
//
// The sets are combined where they live: all keys must share a segment —
// give them one hash tag ("{cart}:a", "{cart}:b") — or the command is a
// BadRequest (CROSSSLOT).
func (s *Sets) Inter(ctx context.Context, keys ...string) ([]string, error) {
	return s.combine(ctx, kv.CmdSInter, keys)
}

// Union returns the members present in any set named (SUNION), sorted. The
// keys must share a hash tag, as for Inter.
func (s *Sets) Union(ctx context.Context, keys ...string) ([]string, error) {
	return s.combine(ctx, kv.CmdSUnion, keys)
}

func (s *Sets) combine(ctx context.Context, op kv.CmdOp, keys []string) ([]string, error) {
	if len(keys) == 0 {
		return nil, &CommandError{Op: op, Status: StatusBadRequest, Message: "at least one key is required"}
	}
	ms, err := dsStrings(s.c.runDS(ctx, kv.Cmd{Op: op, Key: keys[0], Args: dsStrArgs(keys[1:])}))
	slices.Sort(ms) // the server answers in set order, as Redis does
	return ms, err
}

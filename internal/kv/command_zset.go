package kv

// Sorted-set and geo commands beyond the first family (issue #13 item 5),
// block 160–189. Arguments after the key are normalised by the front end
// (the RESP handler parses Redis's syntax and errors); the store takes the
// forms below.
const (
	// CmdZRangeSpec: by (RANK|SCORE|LEX), rev (0|1), start, stop, offset,
	// count (-1 = all), withscores (0|1) → Array. Start and stop are in
	// the command's order (for REV the larger bound first, as Redis).
	CmdZRangeSpec CmdOp = 160
	// CmdZLexCount: min, max → Int.
	CmdZLexCount CmdOp = 161
	// CmdZRemRange: by (RANK|SCORE|LEX), start, stop → Int removed.
	CmdZRemRange CmdOp = 162
	// CmdZPop: MIN|MAX, count → Array member, score, … (empty when none).
	CmdZPop CmdOp = 163
	// CmdZMScore: member, … → Array of scores or Nil.
	CmdZMScore CmdOp = 164
	// CmdZRandMember: count, withscores (0|1) → Array of distinct members
	// (count ≥ 0) or of -count draws, members repeating (count down to
	// -1024). Named ZRANDMEMBER.SPEC: its arguments are the front end's
	// form, not Redis's (a larger negative count is streamed by the RESP
	// front end from a snapshot of the set).
	CmdZRandMember CmdOp = 165
	// CmdZScan: cursor [MATCH pattern] [COUNT count] (Redis's ZSCAN
	// arguments, read as SSCAN/HSCAN's) → Array [cursor, Array].
	CmdZScan CmdOp = 166
	// CmdZStore: score, member, … → Int: the key replaced, whatever it
	// held, by a sorted set of exactly these pairs with no TTL (none: the
	// key deleted). The effect of every *STORE command.
	CmdZStore CmdOp = 167
	// CmdZScoreRanges: min, max, … (each min inclusive, max exclusive) →
	// Array member, score, … of the members in any of the ranges (a geo
	// search's geohash boxes), without duplicates.
	CmdZScoreRanges CmdOp = 168
)

func init() {
	nameOps(map[CmdOp]string{
		CmdZRangeSpec: "ZRANGE.SPEC", CmdZLexCount: "ZLEXCOUNT", CmdZRemRange: "ZREMRANGE", CmdZPop: "ZPOP",
		CmdZMScore: "ZMSCORE", CmdZRandMember: "ZRANDMEMBER.SPEC", CmdZScan: "ZSCAN", CmdZStore: "ZSTORE",
		CmdZScoreRanges: "ZSCORERANGES",
	})
}

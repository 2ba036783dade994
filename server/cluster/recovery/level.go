package recovery

// SegmentLevel decides whether a restarted owner's segment is level with
// the partition's other copies, the evidence certification counts (R-REP-6).
//
// pulled: the segment was filled by a recovery pull or proved by a
// migration cut-over — level by construction. Otherwise the owner's only
// evidence is its shipper sessions' catch-up plans: a session that ships
// (rather than holds) shows that replica keeps nothing the owner lacks. One
// replica's word is not another's: the owner is level only when every live
// established copy has shown it (levelWith), and at least one did. Copies
// that are not established — a migration target being built, empty by
// definition — are not in liveCopies: their plan always ships, and counting
// it certified an empty restarted owner while its replica still held the
// writes it had acknowledged (elastic chaos, RF 2, kill -9 mid-move).
func SegmentLevel(pulled bool, liveCopies []string, levelWith func(copy string) bool) bool {
	if pulled {
		return true
	}
	if len(liveCopies) == 0 {
		// Nobody to compare with: a vacuous "level" would certify a hole
		// that a replica coming back would then be overwritten with.
		return false
	}
	for _, c := range liveCopies {
		if !levelWith(c) {
			return false
		}
	}
	return true
}

package cluster

import "time"

// Formation gate (R-CLU-5, barrier one): the leader plans the first map only
// once membership has been stable — at least MinMembers present, unchanged
// for StableFor — or, failing that, once ForceAfter has passed since it
// started waiting: availability wins over waiting forever.
type FormationGate struct {
	MinMembers int           // the registry size, or 1 without a registry
	StableFor  time.Duration // default 3 s
	ForceAfter time.Duration // default 30 s
}

// FormationDecision says whether to plan the first map now.
type FormationDecision uint8

const (
	FormationWait FormationDecision = iota
	FormationStable
	FormationForced
)

// Decide: members is the current live count, lastChange when membership
// last changed, waitingSince when the gate started.
func (g FormationGate) Decide(members int, lastChange, waitingSince, now time.Time) FormationDecision {
	switch {
	case members >= max(g.MinMembers, 1) && now.Sub(lastChange) >= g.StableFor:
		return FormationStable
	case now.Sub(waitingSince) >= g.ForceAfter && members >= 1:
		return FormationForced
	}
	return FormationWait
}

// TrafficInputs is what a node knows when deciding to open its doors.
type TrafficInputs struct {
	Map             *PartitionMap // committed map (nil = none yet)
	RuntimeVersion  uint64        // the map version its runtime ownership is aligned to
	RuntimeComplete bool          // every partition has a runtime entry
	WaitingFor      time.Duration // since the node started waiting
	Guard           time.Duration // default 60 s
}

// TrafficDecision is the traffic gate's answer.
type TrafficDecision uint8

const (
	TrafficHold TrafficDecision = iota
	TrafficOpen
	// TrafficOpenUnconverged: the guard passed without convergence; the node
	// opens with a warning rather than staying shut forever.
	TrafficOpenUnconverged
)

// TrafficGate is barrier two (R-CLU-5): a node serves only when its
// committed map exists, its segment table is fully populated and its runtime
// ownership is aligned to exactly that map version — otherwise it could
// route a request to a partition it does not yet hold.
func TrafficGate(in TrafficInputs) TrafficDecision {
	ready := in.Map != nil &&
		len(in.Map.SegmentToPartition) == in.Map.TotalSegments && in.Map.TotalSegments > 0 &&
		in.RuntimeComplete && in.RuntimeVersion == in.Map.Version
	switch {
	case ready:
		return TrafficOpen
	case in.Map != nil && in.WaitingFor >= in.Guard && in.Guard > 0:
		return TrafficOpenUnconverged
	}
	return TrafficHold
}

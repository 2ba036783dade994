package cluster

import "time"

// MemberState is a member's state as the cluster sees it (R-CLU-2). The
// first three are runtime-only: they may move ownership (failover) but never
// the map. Only the last three make a node eligible for map regeneration.
type MemberState uint8

const (
	MemberAlive MemberState = iota + 1
	MemberSuspected
	MemberUnreachable
	MemberLost
	MemberEvicted
	MemberDecommissioned
)

var memberStateNames = [...]string{MemberAlive: "alive", MemberSuspected: "suspected", MemberUnreachable: "unreachable",
	MemberLost: "lost", MemberEvicted: "evicted", MemberDecommissioned: "decommissioned"}

func (s MemberState) String() string {
	if int(s) < len(memberStateNames) && memberStateNames[s] != "" {
		return memberStateNames[s]
	}
	return "unknown"
}

// MapAffecting reports whether the state may change the partition map.
func (s MemberState) MapAffecting() bool {
	return s == MemberLost || s == MemberEvicted || s == MemberDecommissioned
}

// DeclaredDown reports whether the failure detector or an operator declared
// the member gone: memberlist's dead verdict at the end of its suspicion
// round (Unreachable), the grace window run out, an eviction, a
// decommission. It is the "node left" signal failover acts on at once,
// after its direct liveness re-check (R-REP-3). Suspected — probes
// unanswered while memberlist still counts the member alive — is only a
// rumour: the suspect escalation window has to confirm it.
func (s MemberState) DeclaredDown() bool { return s == MemberUnreachable || s.MapAffecting() }

// MemberSignal is what the failure detector or an operator reports.
type MemberSignal uint8

const (
	SignalAlive   MemberSignal = iota + 1 // heard from it
	SignalSuspect                         // missed heartbeats (memberlist suspicion)
	SignalDead                            // failure detector declared it dead
	SignalLeft                            // it left gracefully (decommission)
	SignalEvict                           // an operator evicted it
	SignalTick                            // time passes: re-evaluate the grace window
)

// DefaultGraceWindow is how long an unreachable member keeps its place
// before it is Lost (R-CLU-2).
const DefaultGraceWindow = 30 * time.Second

// NextMemberState is the membership state machine, pure. since is when the
// member entered its current state. A flapping node, a GC pause or a network
// hiccup only ever produces runtime states; the map moves only after the
// grace window, an explicit leave or an eviction.
func NextMemberState(cur MemberState, sig MemberSignal, since, now time.Time, grace time.Duration) MemberState {
	if cur == MemberEvicted || cur == MemberDecommissioned {
		if sig == SignalAlive && cur == MemberDecommissioned {
			return MemberAlive // a decommissioned node that comes back rejoins as new
		}
		return cur // final until an operator re-adds it
	}
	switch sig {
	case SignalAlive:
		return MemberAlive
	case SignalSuspect:
		if cur == MemberAlive {
			return MemberSuspected
		}
	case SignalDead:
		if cur == MemberAlive || cur == MemberSuspected {
			return MemberUnreachable
		}
	case SignalLeft:
		return MemberDecommissioned
	case SignalEvict:
		return MemberEvicted
	case SignalTick:
		if cur == MemberUnreachable && now.Sub(since) >= grace {
			return MemberLost
		}
	}
	return cur
}

// ProbeSilenceLimit is how long a member may go without answering a direct
// probe of ours before it is Suspected (R-CLU-2). memberlist probes one
// member per probe interval, round-robin, so each member is probed about
// once every members × interval: the limit is four such rounds, never under
// two probe cycles. localHealth is memberlist's awareness score of this
// node (0 healthy, higher when our own probes see no nacks): memberlist
// stretches its probe interval by (localHealth+1) when we are the slow one,
// so the limit stretches with it. Without that, a starved node (a CPU hog,
// a long GC) probes each member rarely and blames them for its own
// slowness: healthy members turned Suspected and partitions Degraded.
func ProbeSilenceLimit(members int, interval, timeout time.Duration, localHealth int) time.Duration {
	base := max(4*time.Duration(max(1, members))*interval, 2*(interval+timeout))
	return base * time.Duration(1+max(0, localHealth))
}

package cluster

// MaxVoters is the number of raft voters (R-CLU-3): more would slow every
// commit for no extra safety a cache needs; other members are non-voters
// that still replicate the log.
const MaxVoters = 5

// RaftServer is one server of the raft configuration. Address is the
// server's peer target, "id@host:port" (PeerTarget): raft dials voters by
// address alone, and the id in it lets the node there refuse a connection
// meant for another (a new node on a dead voter's host:port must not vote
// or acknowledge as that voter). A plain host:port is an older run's.
type RaftServer struct {
	ID      NodeID
	Address string
	Voter   bool
}

// RaftChangeKind is what to do to the raft configuration.
type RaftChangeKind uint8

const (
	RaftAddVoter    RaftChangeKind = iota + 1 // also promotes a non-voter
	RaftAddNonvoter                           // a member beyond MaxVoters
	RaftRemove                                // a departed member
)

// RaftChange is one configuration change for the leader to make.
type RaftChange struct {
	Kind    RaftChangeKind
	ID      NodeID
	Address string
}

// PlanVoters is the leader's rule for the raft configuration, pure:
//   - a departed member (map-affecting state) is removed (never the leader);
//   - an alive member missing from the configuration is added, as a voter
//     while there are fewer than MaxVoters, else as a non-voter;
//   - an alive member whose peer target changed is re-added at it (a new
//     address, or a plain host:port recorded by an older run: re-added at
//     its id-carrying target, dials to it are checked from then on);
//   - a non-voter is promoted while voters are missing.
//
// Members only suspected or unreachable keep their seat: a GC pause must
// not cost a voter, not even when another node took over its address (the
// two targets differ by id). peerAddr gives a member's peer target.
func PlanVoters(self NodeID, servers []RaftServer, members []MemberView, peerAddr func(NodeInfo) string) []RaftChange {
	var out []RaftChange
	state := map[NodeID]MemberView{}
	for _, m := range members {
		state[m.Info.ID] = m
	}
	voters := 0
	seated := map[NodeID]RaftServer{}
	for _, s := range servers {
		m, known := state[s.ID]
		if s.ID != self && known && m.State.MapAffecting() {
			out = append(out, RaftChange{Kind: RaftRemove, ID: s.ID})
			continue
		}
		seated[s.ID] = s
		if s.Voter {
			voters++
		}
	}
	for _, m := range members {
		if m.State != MemberAlive {
			continue
		}
		addr := peerAddr(m.Info)
		s, in := seated[m.Info.ID]
		switch {
		case !in && voters < MaxVoters:
			out = append(out, RaftChange{Kind: RaftAddVoter, ID: m.Info.ID, Address: addr})
			voters++
		case !in:
			out = append(out, RaftChange{Kind: RaftAddNonvoter, ID: m.Info.ID, Address: addr})
		case s.Address != addr && m.Info.ID != self:
			kind := RaftAddNonvoter
			if s.Voter {
				kind = RaftAddVoter
			}
			out = append(out, RaftChange{Kind: kind, ID: m.Info.ID, Address: addr})
		}
	}
	for _, m := range members {
		if s, in := seated[m.Info.ID]; in && !s.Voter && m.State == MemberAlive && voters < MaxVoters {
			out = append(out, RaftChange{Kind: RaftAddVoter, ID: m.Info.ID, Address: peerAddr(m.Info)})
			voters++
		}
	}
	return out
}

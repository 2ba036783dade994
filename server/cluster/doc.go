// Package cluster owns what makes several nodes one store: membership and
// failure detection (hashicorp/memberlist), the control plane
// (hashicorp/raft: the partition map and runtime ownership are entries of
// one raft log, folded into the same state on every node), the pure
// planning and gating rules, and digest gossip with drift repair.
//
// The rules are pure functions, each in its own file with a table test
// naming the failure it prevents (STYLE 2): Plan (DesiredMapPlanner),
// the membership state machine, the formation gate, the traffic gate and
// the map acceptance rule. The I/O around them — memberlist delegates, the
// raft FSM, the peer listener — only gathers inputs and applies decisions.
//
// The package imports the store engine's types but never the SDK or a
// protocol front end.
package cluster

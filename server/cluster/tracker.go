package cluster

import (
	"slices"
	"time"
)

// MemberView is one member as the state tracker sees it.
type MemberView struct {
	Info  NodeInfo
	State MemberState
	Since time.Time // when it entered State
}

// Tracker turns failure-detector signals into member states with
// NextMemberState (R-CLU-2). It has no lock and no clock: its owner (the
// cluster's control loop) feeds it signals with the time they happened.
type Tracker struct {
	self    NodeID
	grace   time.Duration
	members map[NodeID]*MemberView
	// lastChange is when the set of present members (alive or suspected)
	// last changed: the formation gate's stability clock.
	lastChange time.Time
}

// NewTracker returns a tracker knowing only self, alive since now.
func NewTracker(self NodeInfo, grace time.Duration, now time.Time) *Tracker {
	t := &Tracker{self: self.ID, grace: grace, members: map[NodeID]*MemberView{}, lastChange: now}
	t.members[self.ID] = &MemberView{Info: self, State: MemberAlive, Since: now}
	return t
}

func present(s MemberState) bool { return s == MemberAlive || s == MemberSuspected }

// Signal applies sig to member info.ID (adding it when new) and reports
// whether its state changed. The local node is always alive.
func (t *Tracker) Signal(info NodeInfo, sig MemberSignal, now time.Time) bool {
	if info.ID == t.self {
		return false
	}
	m := t.members[info.ID]
	if m == nil {
		if sig != SignalAlive && sig != SignalSuspect {
			return false // never heard of it alive: nothing to track
		}
		m = &MemberView{Info: info, State: MemberAlive, Since: now}
		t.members[info.ID] = m
		t.lastChange = now
		if sig == SignalAlive {
			return true
		}
	}
	if info.Host != "" {
		m.Info = info
	}
	return t.move(m, NextMemberState(m.State, sig, m.Since, now, t.grace), now)
}

func (t *Tracker) move(m *MemberView, next MemberState, now time.Time) bool {
	if next == m.State {
		return false
	}
	if present(next) != present(m.State) {
		t.lastChange = now
	}
	m.State, m.Since = next, now
	return true
}

// Tick re-evaluates the grace windows; it reports the members that moved.
func (t *Tracker) Tick(now time.Time) []NodeID {
	var moved []NodeID
	for id, m := range t.members {
		if t.move(m, NextMemberState(m.State, SignalTick, m.Since, now, t.grace), now) {
			moved = append(moved, id)
		}
	}
	return moved
}

// Expect makes the tracker aware of members it has never heard from (a map
// names them): they start Unreachable at now and become Lost after the
// grace window unless they show up. A leader that starts after a member
// died must still be able to notice it is gone.
func (t *Tracker) Expect(infos []NodeInfo, now time.Time) {
	for _, info := range infos {
		if _, ok := t.members[info.ID]; !ok && info.ID != t.self {
			t.members[info.ID] = &MemberView{Info: info, State: MemberUnreachable, Since: now}
		}
	}
}

// Get returns one member's view.
func (t *Tracker) Get(id NodeID) (MemberView, bool) {
	m, ok := t.members[id]
	if !ok {
		return MemberView{}, false
	}
	return *m, true
}

// Members returns every tracked member, by id.
func (t *Tracker) Members() []MemberView {
	out := make([]MemberView, 0, len(t.members))
	for _, m := range t.members {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b MemberView) int {
		switch {
		case a.Info.ID < b.Info.ID:
			return -1
		case a.Info.ID > b.Info.ID:
			return 1
		}
		return 0
	})
	return out
}

// Present counts the members alive or suspected.
func (t *Tracker) Present() (n int) {
	for _, m := range t.members {
		if present(m.State) {
			n++
		}
	}
	return n
}

// LastChange is when the present set last changed.
func (t *Tracker) LastChange() time.Time { return t.lastChange }

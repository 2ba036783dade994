package cluster

import "testing"

func TestJoinDecision(t *testing.T) {
	cases := []struct {
		name                   string
		seeds, members         int
		pushed                 bool
		wantJoined, wantPushed bool
	}{
		{"nobody to contact: a lone node is its own cluster", 0, 1, false, true, false},
		{"no member heard yet: join the seeds", 2, 1, false, false, true},
		{"restarted and already gossiped to by peers that hold it dead: still push-pull once, or they ignore its new incarnation",
			2, 3, false, true, true},
		{"one state exchange done this incarnation: nothing more to do", 2, 3, true, true, false},
		{"pushed once, then alone again (a partition healed, peers forgot it): join the seeds again, or it stays alone", 2, 1, true, false, true},
	}
	for _, c := range cases {
		joined, pushed := JoinDecision(c.seeds, c.members, c.pushed)
		if joined != c.wantJoined || pushed != c.wantPushed {
			t.Errorf("%s: joined=%v pushPull=%v", c.name, joined, pushed)
		}
	}
}

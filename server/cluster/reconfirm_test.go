package cluster

import (
	"testing"
	"time"
)

func TestReconfirmStep(t *testing.T) {
	since := time.Unix(1000, 0)
	round := 200 * time.Millisecond
	at := func(d time.Duration) time.Time { return since.Add(d) }
	for _, tc := range []struct {
		name                string
		v                   reconfirmView
		wantTarget          uint64
		wantLearn, wantDone bool
	}{
		{"no leader contact since the freeze: prevents serving on the map held before it",
			reconfirmView{since: since, lastContact: at(-2 * time.Second), round: round, folded: 9, mapCurrent: true}, 0, false, false},
		{"contact just began: prevents trusting a commit index a heartbeat never carried",
			reconfirmView{since: since, firstAfter: at(10 * time.Millisecond), lastContact: at(50 * time.Millisecond), round: round, folded: 9, mapCurrent: true}, 0, false, false},
		{"contact lasted a commit round: the commit index is learned now",
			reconfirmView{since: since, firstAfter: at(10 * time.Millisecond), lastContact: at(250 * time.Millisecond), round: round}, 0, true, false},
		{"fold behind the learned commit index: prevents serving before the failover entry is applied",
			reconfirmView{since: since, firstAfter: at(10 * time.Millisecond), lastContact: at(300 * time.Millisecond), round: round, target: 12, folded: 11, mapCurrent: true}, 12, false, false},
		{"fold reached the target but OnMap has not run: prevents re-owning on the old aligned map",
			reconfirmView{since: since, firstAfter: at(10 * time.Millisecond), lastContact: at(300 * time.Millisecond), round: round, target: 12, folded: 12, mapCurrent: false}, 12, false, false},
		{"fold reached the target and the map is applied: serve again",
			reconfirmView{since: since, firstAfter: at(10 * time.Millisecond), lastContact: at(300 * time.Millisecond), round: round, target: 12, folded: 13, mapCurrent: true}, 12, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target, learn, done := reconfirmStep(tc.v)
			if target != tc.wantTarget || learn != tc.wantLearn || done != tc.wantDone {
				t.Fatalf("reconfirmStep = (%d, %v, %v), want (%d, %v, %v)", target, learn, done, tc.wantTarget, tc.wantLearn, tc.wantDone)
			}
		})
	}
}

package follow

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/cluster"
)

// One writer per follow (D135). An applier runs on the control-plane
// leader until its node notices it lost leadership (up to a followCheck
// tick, longer on a loaded machine); the new leader's applier starts from
// the committed cursor, which can be behind what the deposed one is still
// writing. Two appliers writing at once could leave a key that changed
// several times at an older value, and the deposed one's last cursor
// commit could move the cursor back. So an applier first claims the follow
// (cluster.FollowClaim: the claim is the entry's log index), names its
// claim in its connections' client name and in every cursor commit, and
// every node fences the writes by claim: a write of an older claim is
// refused once the node folded a newer one, and the first write of a newer
// claim on a node waits until the writes of older claims in flight there
// are applied. A key's writes are ordered on its owner, so no write of the
// deposed applier lands after one of the new applier.

// ClientName is the client name of the connections of the applier of the
// follow keyed key, under claim.
func ClientName(key string, claim uint64) string {
	return ClientNamePrefix + key + "/" + strconv.FormatUint(claim, 10)
}

// ParseClientName splits an applier's client name into the follow's key
// and the claim; ok is false for any other name. A name without a claim
// (an applier of a version before claims) has claim 0.
func ParseClientName(name string) (key string, claim uint64, ok bool) {
	rest, found := strings.CutPrefix(name, ClientNamePrefix)
	if !found {
		return "", 0, false
	}
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		return rest, 0, true
	}
	c, err := strconv.ParseUint(rest[i+1:], 10, 64)
	if err != nil {
		return rest, 0, true // a key with a slash and no claim
	}
	return rest[:i], c, true
}

// Verdict is what the fence does with one write.
type Verdict uint8

const (
	// Pass: not following, or the applier of the claim this node fences by.
	Pass Verdict = iota
	// Advance: the applier of a claim newer than the one this node fences
	// by, and the node folded it: wait for the older claims' writes in
	// flight, fence by the new claim, then pass.
	Advance
	// RefuseWrite: a client write while following, an applier of another
	// follow, or an applier whose claim was replaced.
	RefuseWrite
	// RefuseBehind: an applier of a claim this node has not folded yet;
	// the write is sent again (Unavailable) and passes once it has.
	RefuseBehind
)

// Admit is the fence's rule for a write of a connection named clientName
// on a node whose folded follow state is st and which fences by claim
// fenced (the newest claim whose writes it admitted). Pure; the table test
// names the failure each answer prevents.
func Admit(st *cluster.FollowState, clientName string, fenced uint64) Verdict {
	if !st.Following() {
		return Pass
	}
	key, claim, ok := ParseClientName(clientName)
	if !ok || key != st.Key {
		return RefuseWrite
	}
	switch {
	case claim < st.Claim || claim < fenced:
		return RefuseWrite
	case claim == fenced:
		return Pass
	case claim > st.Claim:
		return RefuseBehind
	}
	return Advance // fenced < claim == st.Claim
}

// Fence orders a node's follower writes by claim (the node's half of
// D135): Enter before each write, Exit after it when Enter held.
type Fence struct {
	mu     sync.RWMutex // held shared by a write in flight, exclusive to advance
	fenced uint64       // the newest claim admitted (guarded by mu)
}

// Enter admits or refuses a write of clientName under the folded state
// st. held reports that the write runs under the fence and Exit must
// follow it once applied; a refusal's status and message answer the write
// (a client write's message is "": the caller has it cached).
func (f *Fence) Enter(st *cluster.FollowState, clientName string) (held bool, status kv.Status, msg string) {
	if !st.Following() {
		return false, kv.StatusSuccess, ""
	}
	for {
		f.mu.RLock()
		switch v := Admit(st, clientName, f.fenced); v {
		case Pass:
			return true, kv.StatusSuccess, ""
		case Advance:
			f.mu.RUnlock()
			f.mu.Lock() // waits for the writes of older claims in flight
			f.fenced = max(f.fenced, st.Claim)
			f.mu.Unlock()
			continue
		case RefuseBehind:
			f.mu.RUnlock()
			_, claim, _ := ParseClientName(clientName)
			return false, kv.StatusUnavailable, fmt.Sprintf(
				"this node has not applied the follower applier's claim %d yet (it knows claim %d); retry", claim, st.Claim)
		default:
			fenced := f.fenced
			f.mu.RUnlock()
			return false, kv.StatusReadOnly, refuseMessage(st, clientName, fenced)
		}
	}
}

// Exit ends a write Enter held.
func (f *Fence) Exit() { f.mu.RUnlock() }

func refuseMessage(st *cluster.FollowState, clientName string, fenced uint64) string {
	key, claim, ok := ParseClientName(clientName)
	if ok && key == st.Key {
		return fmt.Sprintf("this follower applier's claim %d was replaced by claim %d (another applier runs the follow)",
			claim, max(st.Claim, fenced))
	}
	return ""
}

package resp

import "testing"

// Every Redis 7.0 command is served or has a reason for being left out, and
// no reason outlives the command's arrival: the coverage table in
// docs/RESP.md says what the code does (issue #13, "commands supported vs
// Redis 7.0, with the reason for each one left out").
func TestLeftOutIsExact(t *testing.T) {
	inSnapshot := map[string]bool{}
	for _, rc := range redisCommandSnapshot() {
		inSnapshot[rc.name] = true
		reason, hasReason := leftOut[rc.name]
		switch {
		case served(rc.name) && hasReason:
			t.Errorf("%s is served, yet leftOut gives a reason (%q): remove it", rc.name, reason)
		case !served(rc.name) && (!hasReason || reason == ""):
			t.Errorf("%s (Redis 7.0, group %s) is neither served nor given a reason in leftOut", rc.name, rc.group)
		}
	}
	if len(inSnapshot) < 300 {
		t.Fatalf("the Redis 7.0 snapshot holds %d commands; want the whole COMMAND DOCS (366)", len(inSnapshot))
	}
	for name := range leftOut {
		if !inSnapshot[name] {
			t.Errorf("leftOut names %s, which Redis 7.0 does not have", name)
		}
	}
}

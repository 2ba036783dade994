package clustertest

import (
	"fmt"
	"strings"
	"testing"
)

// TestLogTailKeepsTheLastLines: a failed cluster test prints the nodes'
// last lines, oldest first, and says how many it dropped.
func TestLogTailKeepsTheLastLines(t *testing.T) {
	var l logTail
	for i := range logTailLines + 5 {
		fmt.Fprintf(&l, "line %d\n", i)
	}
	lines := strings.Split(strings.TrimSuffix(l.text(), "\n"), "\n")
	if len(lines) != logTailLines+1 || lines[0] != "… 5 earlier lines dropped" {
		t.Fatalf("%d lines, first %q", len(lines), lines[0])
	}
	if lines[1] != "line 5" || lines[len(lines)-1] != fmt.Sprintf("line %d", logTailLines+4) {
		t.Fatalf("kept %q … %q", lines[1], lines[len(lines)-1])
	}
}

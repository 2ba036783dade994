package clustertest

import (
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// logTailLines is how many of the nodes' last log lines a failed test
// prints: enough for the failover or migration the test waited on, small
// enough to read in a CI log.
const logTailLines = 3000

// logTail keeps the nodes' last log lines so that a test failing in CI
// says what the cluster did (a flake seen once cannot be rerun with
// ZARIS_TEST_LOG set).
type logTail struct {
	mu    sync.Mutex
	lines []string // ring of at most logTailLines
	next  int      // where the next line goes once the ring is full
	lost  int      // lines overwritten
}

// Write takes one record: slog's text handler writes each record with one
// call.
func (l *logTail) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	l.mu.Lock()
	if len(l.lines) < logTailLines {
		l.lines = append(l.lines, line)
	} else {
		l.lines[l.next] = line
		l.next = (l.next + 1) % logTailLines
		l.lost++
	}
	l.mu.Unlock()
	return len(p), nil
}

// text is the kept lines, oldest first.
func (l *logTail) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	if l.lost > 0 {
		b.WriteString("… ")
		b.WriteString(strconv.Itoa(l.lost))
		b.WriteString(" earlier lines dropped\n")
	}
	for i := range l.lines {
		b.WriteString(l.lines[(l.next+i)%len(l.lines)])
		b.WriteByte('\n')
	}
	return b.String()
}

// newFailureLog is the logger of a cluster whose test named none: the
// lines are kept and printed only if the test fails.
func newFailureLog(t testing.TB) *slog.Logger {
	tail := &logTail{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("clustertest: the nodes' last log lines:\n%s", tail.text())
		}
	})
	return slog.New(slog.NewTextHandler(tail, nil))
}

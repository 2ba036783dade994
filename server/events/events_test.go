package events

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestRingKeepsTheLatestInOrder(t *testing.T) {
	r := NewRing("n1", 3)
	for i := 1; i <= 5; i++ {
		r.Add("map", "INFO", fmt.Sprint("e", i), nil)
	}
	got := r.Since(0)
	if len(got) != 3 {
		t.Fatalf("ring of 3 holds %d events", len(got))
	}
	for i, e := range got {
		if want := uint64(i + 3); e.Seq != want || e.Message != fmt.Sprint("e", want) || e.Node != "n1" {
			t.Fatalf("event %d = %+v, want seq %d", i, e, want)
		}
	}
	if after := r.Since(4); len(after) != 1 || after[0].Seq != 5 {
		t.Fatalf("Since(4) = %+v, want only seq 5", after)
	}
}

func TestTapRecordsClusterEventsAtAnyLogLevel(t *testing.T) {
	r := NewRing("n2", 0)
	var out bytes.Buffer
	// The node logs at WARN: the INFO event is not printed but is recorded.
	inner := slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn})
	log := slog.New(r.Tap(inner)).With("component", "cluster")
	log.Info("migration complete", "partition", 3, "from", "n1", "to", "n2")
	log.Info("some routine line", "x", 1)
	log.Warn("failover: promoting a replica", "partition", 1, "from", "n3", "to", "n1")

	evs := r.Since(0)
	if len(evs) != 2 {
		t.Fatalf("recorded %d events, want 2: %+v", len(evs), evs)
	}
	if evs[0].Kind != "migration" || evs[0].Attrs["partition"] != "3" || evs[0].Attrs["to"] != "n2" || evs[0].Level != "INFO" {
		t.Fatalf("first event %+v", evs[0])
	}
	if evs[1].Kind != "failover" || evs[1].Level != "WARN" || evs[1].At.IsZero() {
		t.Fatalf("second event %+v", evs[1])
	}
	printed := out.String()
	if strings.Contains(printed, "migration complete") || !strings.Contains(printed, "promoting a replica") || !strings.Contains(printed, "component=cluster") {
		t.Fatalf("the wrapped handler's output changed: %q", printed)
	}
}

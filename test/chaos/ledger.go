package chaos

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Ledger is the oracle of the chaos workload (STYLE 6): per key, the
// highest sequence number a write acknowledged (Success) and the highest one
// attempted. A write that failed — Timeout, a dead connection, a deadline —
// may or may not have landed: it is indeterminate, and raises only the
// attempted mark. The rules:
//
//   - a read issued when key's acknowledged mark was A is stale if it
//     returns a sequence below A, or NotFound while A > 0 (an indeterminate
//     write above A may or may not be seen: both are fine);
//   - a read returning a sequence above the attempted mark, or a value not
//     written for that key, is corrupt (a write nobody made);
//   - after healing, a key whose value reads below its acknowledged mark, or
//     NotFound while the mark is above 0, is lost.
//
// Sequences of a key start at 1 and increase by one per attempt: each key
// has one writer, which issues its next write after the previous one
// answered. The Ledger is safe for concurrent use; it does no I/O.
type Ledger struct {
	mu   sync.Mutex // guards every field below
	keys map[string]*keyState

	acked, failed      int64
	reads, stale, bad  int64
	staleEx, corruptEx []string          // first examples, for the report
	unavail            []span            // closed failing spans of every writer
	open               map[int]time.Time // writer → start of its open failing span
	maxExamples        int
}

// keyState is one key's marks.
type keyState struct {
	acked     uint64    // highest acknowledged sequence
	ackedAt   time.Time // when it was acknowledged
	attempted uint64    // highest attempted sequence
}

// span is a half-open interval of wall time during which a writer's writes
// were failing.
type span struct{ from, to time.Time }

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{keys: map[string]*keyState{}, open: map[int]time.Time{}, maxExamples: 10}
}

func (l *Ledger) stateLocked(key string) *keyState {
	ks := l.keys[key]
	if ks == nil {
		ks = &keyState{}
		l.keys[key] = ks
	}
	return ks
}

// Next returns the sequence of key's next write and records it as
// attempted.
func (l *Ledger) Next(key string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	ks := l.stateLocked(key)
	ks.attempted++
	return ks.attempted
}

// Attempt records that a write of seq to key was sent (Next does this for
// the workload; tests of the rules call it directly).
func (l *Ledger) Attempt(key string, seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ks := l.stateLocked(key)
	ks.attempted = max(ks.attempted, seq)
}

// Ack records that the write of seq to key was acknowledged at now by
// writer w (its failing span, if any, ends at now).
func (l *Ledger) Ack(w int, key string, seq uint64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ks := l.stateLocked(key)
	ks.attempted = max(ks.attempted, seq)
	if seq > ks.acked {
		ks.acked, ks.ackedAt = seq, now
	}
	l.acked++
	if from, ok := l.open[w]; ok {
		l.unavail = append(l.unavail, span{from, now})
		delete(l.open, w)
	}
}

// Fail records that writer w's write of seq to key, sent at sent, failed:
// indeterminate. The writer's failing span starts at sent unless it is
// already open.
func (l *Ledger) Fail(w int, key string, seq uint64, sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ks := l.stateLocked(key)
	ks.attempted = max(ks.attempted, seq)
	l.failed++
	if _, ok := l.open[w]; !ok {
		l.open[w] = sent
	}
}

// Floor returns key's acknowledged mark: what a read issued now must see
// at least.
func (l *Ledger) Floor(key string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ks := l.keys[key]; ks != nil {
		return ks.acked
	}
	return 0
}

// Read checks a read of key issued when its acknowledged mark was floor:
// found says whether the key existed, value is what it held. It returns the
// verdict ("" when the read is fine) and counts it.
func (l *Ledger) Read(key string, floor uint64, found bool, value []byte, at time.Time) string {
	var verdict string
	var seq uint64
	if found {
		var err error
		seq, err = DecodeValue(key, value)
		if err != nil {
			verdict = "corrupt"
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads++
	var attempted uint64
	var ackedAt time.Time
	if ks := l.keys[key]; ks != nil {
		attempted, ackedAt = ks.attempted, ks.ackedAt
	}
	switch {
	case verdict != "":
	case !found && floor > 0:
		verdict = "stale"
	case found && seq < floor:
		verdict = "stale"
	case found && seq > attempted:
		verdict = "corrupt"
	}
	detail := func() string {
		got := "NotFound"
		if found {
			got = strconv.Quote(string(value))
		}
		return fmt.Sprintf("%s %s read %s, acked floor %d, attempted %d (highest ack at %s)",
			at.UTC().Format("15:04:05.000"), key, got, floor, attempted, ackedAt.UTC().Format("15:04:05.000"))
	}
	switch verdict {
	case "stale":
		l.stale++
		if len(l.staleEx) < l.maxExamples {
			l.staleEx = append(l.staleEx, detail())
		}
	case "corrupt":
		l.bad++
		if len(l.corruptEx) < l.maxExamples {
			l.corruptEx = append(l.corruptEx, detail())
		}
	}
	return verdict
}

// Lost is one key whose acknowledged write did not survive.
type Lost struct {
	Key       string
	Acked     uint64    // highest acknowledged sequence
	AckedAt   time.Time // when it was acknowledged
	Attempted uint64
	Found     bool
	Got       uint64 // sequence read at verification (Found)
	Detail    string // decoding trouble, if any
}

func (x Lost) String() string {
	got := "NotFound"
	if x.Found {
		got = "seq " + strconv.FormatUint(x.Got, 10)
	}
	if x.Detail != "" {
		got += " (" + x.Detail + ")"
	}
	return fmt.Sprintf("lost %s: acked seq %d at %s (attempted %d), final read %s",
		x.Key, x.Acked, x.AckedAt.UTC().Format("15:04:05.000"), x.Attempted, got)
}

// Verify checks key's final read after healing: nil when it holds at least
// the acknowledged mark.
func (l *Ledger) Verify(key string, found bool, value []byte) *Lost {
	l.mu.Lock()
	ks := l.keys[key]
	var st keyState
	if ks != nil {
		st = *ks
	}
	l.mu.Unlock()
	x := &Lost{Key: key, Acked: st.acked, AckedAt: st.ackedAt, Attempted: st.attempted, Found: found}
	if found {
		seq, err := DecodeValue(key, value)
		if err != nil {
			x.Detail = err.Error()
			return x
		}
		x.Got = seq
		if seq < st.acked {
			return x
		}
		return nil
	}
	if st.acked > 0 {
		return x
	}
	return nil
}

// Keys returns every key the ledger knows, sorted.
func (l *Ledger) Keys() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]string, 0, len(l.keys))
	for k := range l.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Counts are the ledger's totals.
type Counts struct {
	Acked, Failed         int64 // acknowledged and indeterminate writes
	Reads, Stale, Corrupt int64
	StaleExamples         []string
	CorruptExamples       []string
}

// Counts returns the totals so far.
func (l *Ledger) Counts() Counts {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Counts{Acked: l.acked, Failed: l.failed, Reads: l.reads, Stale: l.stale, Corrupt: l.bad,
		StaleExamples: slices.Clone(l.staleEx), CorruptExamples: slices.Clone(l.corruptEx)}
}

// Unavailable returns how long writes were failing up to now: the length of
// the union of every writer's failing spans (a span still open ends at now).
// Writers cover disjoint keys, hence often different partitions: the union
// counts the time during which at least one of them could not write.
func (l *Ledger) Unavailable(now time.Time) time.Duration {
	l.mu.Lock()
	spans := slices.Clone(l.unavail)
	for _, from := range l.open {
		spans = append(spans, span{from, now})
	}
	l.mu.Unlock()
	return unionLength(spans)
}

// unionLength is the total length covered by spans (overlaps counted once).
// The times carry Go's monotonic reading, so Sub is immune to wall-clock
// steps.
func unionLength(spans []span) time.Duration {
	slices.SortFunc(spans, func(a, b span) int { return a.from.Compare(b.from) })
	var total time.Duration
	var cur span
	have := false
	for _, s := range spans {
		switch {
		case !s.to.After(s.from):
		case !have:
			cur, have = s, true
		case s.from.After(cur.to):
			total += cur.to.Sub(cur.from)
			cur = s
		case s.to.After(cur.to):
			cur.to = s.to
		}
	}
	if have {
		total += cur.to.Sub(cur.from)
	}
	return total
}

// EncodeValue is the value the workload writes as key's seq: the key and
// the sequence, so a read can tell a value of another key (misrouting) from
// an old value of this one, padded with '.' to size bytes when size is
// larger.
func EncodeValue(key string, seq uint64, size int) []byte {
	b := make([]byte, 0, max(size, len(key)+24))
	b = append(b, key...)
	b = append(b, '#')
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, '#')
	for len(b) < size {
		b = append(b, '.')
	}
	return b
}

// DecodeValue returns the sequence EncodeValue put in value for key.
func DecodeValue(key string, value []byte) (uint64, error) {
	rest, ok := strings.CutPrefix(string(value), key+"#")
	if !ok {
		return 0, fmt.Errorf("value %q is not one of key %s", truncate(value), key)
	}
	num, _, ok := strings.Cut(rest, "#")
	if !ok {
		return 0, fmt.Errorf("value %q has no sequence terminator", truncate(value))
	}
	seq, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("value %q: bad sequence: %v", truncate(value), err)
	}
	return seq, nil
}

func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}

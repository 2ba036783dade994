package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// xstep is one command and its expected reply: flat(reply), or "!Status"
// for a refusal (optionally "!Status: message fragment").
type xstep struct {
	op   kv.CmdOp
	key  string
	args []string
	want string
}

func runSteps(t *testing.T, s *Store, steps []xstep) {
	t.Helper()
	for i, st := range steps {
		r := run(t, s, st.op, st.key, st.args...)
		if want, ok := strings.CutPrefix(st.want, "!"); ok {
			status, msg, _ := strings.Cut(want, ": ")
			if r.Status.String() != status || !strings.Contains(r.Message, msg) {
				t.Fatalf("step %d %v %s %v: %v %q, want %s", i, st.op, st.key, st.args, r.Status, r.Message, st.want)
			}
			continue
		}
		if !r.OK() {
			t.Fatalf("step %d %v %s %v: %v %s", i, st.op, st.key, st.args, r.Status, r.Message)
		}
		if got := flat(r); got != st.want {
			t.Fatalf("step %d %v %s %v = %s, want %s", i, st.op, st.key, st.args, got, st.want)
		}
	}
}

func TestStreamLogCommands(t *testing.T) {
	s, clk := newTestStore(t)
	T := strconv.FormatInt(t0.UnixMilli(), 10)
	runSteps(t, s, []xstep{
		{kv.CmdXAdd, "s", []string{"1-1", "a", "1"}, "1-1"},
		{kv.CmdXAdd, "s", []string{"1-1", "b", "2"}, "!BadRequest: The ID specified in XADD is equal or smaller than the target stream top item"},
		{kv.CmdXAdd, "s", []string{"1-0", "b", "2"}, "!BadRequest: equal or smaller"},
		{kv.CmdXAdd, "s", []string{"0-*", "b", "2"}, "!BadRequest: equal or smaller"},
		{kv.CmdXAdd, "s", []string{"1-*", "b", "2"}, "1-2"},
		{kv.CmdXAdd, "s", []string{"2", "c", "3", "c2", "33"}, "2-0"},
		{kv.CmdXAdd, "s", []string{"*", "d", "4"}, T + "-0"},
		{kv.CmdXAdd, "s", []string{"*", "e", ""}, T + "-1"},
		{kv.CmdXAdd, "z", []string{"0-0", "a", "1"}, "!BadRequest: greater than 0-0"},
		{kv.CmdXAdd, "z", []string{"0-*", "a", "1"}, "0-1"},
		{kv.CmdXAdd, "z2", []string{"x-1", "a", "1"}, "!BadRequest: Invalid stream ID"},
		{kv.CmdXAdd, "z2", []string{"1-1", "a"}, "!BadRequest: wrong number of arguments"},
		{kv.CmdXAdd, "z2", []string{"1-1"}, "!BadRequest"},
		{kv.CmdType, "z2", nil, "none"},
		{kv.CmdXLen, "s", nil, "5"},
		{kv.CmdXRange, "s", []string{"-", "+"}, "[[1-1 [a 1]] [1-2 [b 2]] [2-0 [c 3 c2 33]] [" + T + "-0 [d 4]] [" + T + "-1 [e ]]]"},
		{kv.CmdXRange, "s", []string{"-", "+", "COUNT", "2"}, "[[1-1 [a 1]] [1-2 [b 2]]]"},
		{kv.CmdXRange, "s", []string{"-", "+", "count", "0"}, "nil"}, // Redis: a null array
		{kv.CmdXRange, "s", []string{"-", "+", "count", "-5"}, "nil"},
		{kv.CmdXRange, "nos", []string{"-", "+", "count", "0"}, "[]"},
		{kv.CmdXRange, "s", []string{"(1-1", "2"}, "[[1-2 [b 2]] [2-0 [c 3 c2 33]]]"},
		{kv.CmdXRange, "s", []string{"1", "1"}, "[[1-1 [a 1]] [1-2 [b 2]]]"},
		{kv.CmdXRange, "s", []string{"1-1", "(1-2"}, "[[1-1 [a 1]]]"},
		{kv.CmdXRange, "s", []string{"+", "-"}, "[]"},
		{kv.CmdXRange, "s", []string{"(-", "+"}, "!BadRequest: Invalid stream ID"},
		{kv.CmdXRange, "s", []string{"-", "+", "COUNT"}, "!BadRequest: syntax"},
		{kv.CmdXRange, "nope", []string{"-", "+"}, "[]"},
		{kv.CmdXRevRange, "s", []string{"+", "-", "COUNT", "2"}, "[[" + T + "-1 [e ]] [" + T + "-0 [d 4]]]"},
		{kv.CmdXRevRange, "s", []string{"2", "(1-1"}, "[[2-0 [c 3 c2 33]] [1-2 [b 2]]]"},
		{kv.CmdXRevRange, "s", []string{"(1-1", "-"}, "[]"},
		{kv.CmdXRead, "s", []string{"1-2", "COUNT", "1"}, "[[2-0 [c 3 c2 33]]]"},
		{kv.CmdXRead, "s", []string{"COUNT", "1", "0"}, "[[1-1 [a 1]]]"},
		{kv.CmdXRead, "s", []string{"$"}, "[]"},
		{kv.CmdXRead, "s", []string{T + "-1"}, "[]"},
		{kv.CmdXRead, "nope", []string{"0"}, "[]"},
		{kv.CmdXRead, "s", []string{"bad"}, "!BadRequest"},
		{kv.CmdXDel, "s", []string{"1-2", "9-9", "1-2"}, "1"},
		{kv.CmdXDel, "s", []string{"1-1", "oops"}, "!BadRequest"},
		{kv.CmdXLen, "s", nil, "4"},
		{kv.CmdXAdd, "nomk", []string{"NOMKSTREAM", "*", "a", "1"}, "nil"},
		{kv.CmdType, "nomk", nil, "none"},
		{kv.CmdXAdd, "s", []string{"NOMKSTREAM", "MAXLEN", "3", "*", "f", "v"}, T + "-2"},
		{kv.CmdXRange, "s", []string{"-", "+"}, "[[" + T + "-0 [d 4]] [" + T + "-1 [e ]] [" + T + "-2 [f v]]]"},
		{kv.CmdXTrim, "s", []string{"MAXLEN", "=", "2"}, "1"},
		{kv.CmdXTrim, "s", []string{"MAXLEN", "5"}, "0"},
		{kv.CmdXTrim, "s", []string{"MINID", "~", T + "-2"}, "0"}, // "~" removes whole nodes only: this one ends at T-2
		{kv.CmdXTrim, "s", []string{"MINID", T + "-2"}, "1"},
		{kv.CmdXTrim, "s", []string{"MAXLEN", "=", "0", "LIMIT", "1"}, "!BadRequest: LIMIT cannot be used without the special ~"},
		{kv.CmdXTrim, "s", []string{"MAXLEN", "-1"}, "!BadRequest: >= 0"},
		{kv.CmdXTrim, "s", []string{"SIZE", "1"}, "!BadRequest: syntax"},
		{kv.CmdXTrim, "nope", []string{"MAXLEN", "0"}, "0"},
		{kv.CmdXAdd, "s", []string{"MAXLEN", "1", "MINID", "0", "*", "f", "v"}, "!BadRequest: not compatible"},
		{kv.CmdXLen, "s", nil, "1"},
		// An emptied stream keeps existing, with its last id.
		{kv.CmdXDel, "s", []string{T + "-2"}, "1"},
		{kv.CmdXLen, "s", nil, "0"},
		{kv.CmdType, "s", nil, "stream"},
		{kv.CmdXAdd, "s", []string{T + "-2", "a", "1"}, "!BadRequest: equal or smaller"},
		{kv.CmdXAdd, "s", []string{"MAXLEN", "0", "*", "g", "1"}, T + "-3"},
		{kv.CmdXLen, "s", nil, "0"},
		// "~" removes whole nodes, within LIMIT (redis-server answers the same).
		{kv.CmdXAdd, "l", []string{"1", "a", "1"}, "1-0"},
		{kv.CmdXAdd, "l", []string{"2", "a", "1"}, "2-0"},
		{kv.CmdXAdd, "l", []string{"3", "a", "1"}, "3-0"},
		{kv.CmdXAdd, "l", []string{"MAXLEN", "~", "1", "LIMIT", "1", "4", "a", "1"}, "4-0"},
		{kv.CmdXLen, "l", nil, "4"},
		{kv.CmdXAdd, "l", []string{"MINID", "4", "5", "a", "1"}, "5-0"},
		{kv.CmdXRange, "l", []string{"-", "+"}, "[[4-0 [a 1]] [5-0 [a 1]]]"},
	})
	// "*" never goes backwards, even when the clock does.
	clk.Advance(-time.Hour)
	if r := run(t, s, kv.CmdXAdd, "s", "*", "h", "1"); string(r.Bulk) != T+"-4" {
		t.Fatalf("XADD * after the clock went back: %s", r.Bulk)
	}
	clk.Advance(2 * time.Hour)
	if r := run(t, s, kv.CmdXAdd, "s", "*", "h", "1"); string(r.Bulk) != fmt.Sprintf("%d-0", t0.Add(time.Hour).UnixMilli()) {
		t.Fatalf("XADD * after the clock moved on: %s", r.Bulk)
	}
	if r := run(t, s, kv.CmdXAdd, "max", "18446744073709551615-18446744073709551615", "a", "1"); !r.OK() {
		t.Fatal(r.Status, r.Message)
	}
	if r := run(t, s, kv.CmdXAdd, "max", "*", "a", "1"); r.Status != kv.StatusBadRequest || !strings.Contains(r.Message, "exhausted") {
		t.Fatalf("XADD * on an exhausted stream: %v %s", r.Status, r.Message)
	}
}

func TestStreamGroupCommands(t *testing.T) {
	s, clk := newTestStore(t)
	for i := 1; i <= 4; i++ {
		run(t, s, kv.CmdXAdd, "s", fmt.Sprint(i), "n", fmt.Sprint(i))
	}
	runSteps(t, s, []xstep{
		{kv.CmdXGroup, "s", []string{"CREATE", "g", "0"}, "OK"},
		{kv.CmdXGroup, "s", []string{"CREATE", "g", "$"}, "!Conflict: BUSYGROUP"},
		{kv.CmdXGroup, "s", []string{"CREATE", "late", "$"}, "OK"},
		{kv.CmdXGroup, "nope", []string{"CREATE", "g", "$"}, "!NotFound: requires the key to exist"},
		{kv.CmdXGroup, "nope", []string{"DESTROY", "g"}, "!NotFound"},
		{kv.CmdXGroup, "s", []string{"CREATE", "bad", "x"}, "!BadRequest: Invalid stream ID"},
		{kv.CmdXGroup, "s", []string{"CREATE", "er", "0", "ENTRIESREAD", "3"}, "OK"},
		{kv.CmdXGroup, "s", []string{"CREATE", "bad", "0", "ENTRIESREAD", "-2"}, "!BadRequest"},
		{kv.CmdXGroup, "s", []string{"FROB", "g"}, "!BadRequest: unknown XGROUP subcommand"},
		{kv.CmdXGroup, "empty", []string{"CREATE", "g", "$", "MKSTREAM"}, "OK"},
		{kv.CmdType, "empty", nil, "stream"},
		{kv.CmdXLen, "empty", nil, "0"},
		{kv.CmdXReadGroup, "s", []string{"g", "alice", "COUNT", "2", ">"}, "[[1-0 [n 1]] [2-0 [n 2]]]"},
		{kv.CmdXReadGroup, "s", []string{"g", "bob", "COUNT", "1", ">"}, "[[3-0 [n 3]]]"},
		{kv.CmdXReadGroup, "s", []string{"late", "bob", ">"}, "[]"},
		{kv.CmdXReadGroup, "s", []string{"nogroup", "bob", ">"}, "!NotFound: NOGROUP"},
		{kv.CmdXReadGroup, "nope", []string{"g", "bob", ">"}, "!NotFound: NOGROUP"},
		{kv.CmdXReadGroup, "s", []string{"g", "bob", "BLOCK", "0", ">"}, "!BadRequest: syntax"},
		{kv.CmdXReadGroup, "s", []string{"g", "bob", "x-y"}, "!BadRequest: Invalid stream ID"},
		{kv.CmdXPending, "s", []string{"g"}, "[3 1-0 3-0 [[alice 2] [bob 1]]]"},
		{kv.CmdXPending, "s", []string{"late"}, "[0 nil nil nil]"},
		{kv.CmdXPending, "s", []string{"nogroup"}, "!NotFound: NOGROUP"},
		{kv.CmdXPending, "s", []string{"g", "-", "+", "10"}, "[[1-0 alice 0 1] [2-0 alice 0 1] [3-0 bob 0 1]]"},
		{kv.CmdXPending, "s", []string{"g", "(1-0", "+", "1"}, "[[2-0 alice 0 1]]"},
		{kv.CmdXPending, "s", []string{"g", "-", "+", "10", "bob"}, "[[3-0 bob 0 1]]"},
		{kv.CmdXPending, "s", []string{"g", "IDLE", "1", "-", "+", "10"}, "[]"},
		{kv.CmdXPending, "s", []string{"g", "-", "+"}, "!BadRequest: syntax"},
		// The explicit id re-reads the consumer's own pending entries.
		{kv.CmdXReadGroup, "s", []string{"g", "alice", "0"}, "[[1-0 [n 1]] [2-0 [n 2]]]"},
		{kv.CmdXReadGroup, "s", []string{"g", "alice", "COUNT", "1", "1-0"}, "[[2-0 [n 2]]]"},
		{kv.CmdXReadGroup, "s", []string{"g", "carol", "0"}, "[]"}, // creates carol
		{kv.CmdXAck, "s", []string{"g", "1-0", "1-0", "9-0"}, "1"},
		{kv.CmdXAck, "s", []string{"g", "bad"}, "!BadRequest"},
		{kv.CmdXAck, "s", []string{"nogroup", "2-0"}, "0"},
		{kv.CmdXAck, "nope", []string{"g", "2-0"}, "0"},
		{kv.CmdXReadGroup, "s", []string{"g", "alice", "0"}, "[[2-0 [n 2]]]"},
		// A pending entry deleted from the stream reads as [id nil].
		{kv.CmdXDel, "s", []string{"2-0"}, "1"},
		{kv.CmdXReadGroup, "s", []string{"g", "alice", "0"}, "[[2-0 nil]]"},
		// NOACK delivers without a PEL entry.
		{kv.CmdXReadGroup, "s", []string{"g", "carol", "NOACK", ">"}, "[[4-0 [n 4]]]"},
		{kv.CmdXPending, "s", []string{"g"}, "[2 2-0 3-0 [[alice 1] [bob 1]]]"},
		{kv.CmdXReadGroup, "s", []string{"g", "carol", ">"}, "[]"},
		{kv.CmdXGroup, "s", []string{"CREATECONSUMER", "g", "dave"}, "1"},
		{kv.CmdXGroup, "s", []string{"CREATECONSUMER", "g", "dave"}, "0"},
		{kv.CmdXGroup, "s", []string{"CREATECONSUMER", "nogroup", "dave"}, "!NotFound: NOGROUP"},
		{kv.CmdXGroup, "s", []string{"DELCONSUMER", "g", "alice"}, "1"},
		{kv.CmdXGroup, "s", []string{"DELCONSUMER", "g", "alice"}, "0"},
		{kv.CmdXPending, "s", []string{"g"}, "[1 3-0 3-0 [[bob 1]]]"},
		// SETID rewinds the group: entries are delivered again.
		{kv.CmdXGroup, "s", []string{"SETID", "g", "0"}, "OK"},
		{kv.CmdXGroup, "s", []string{"SETID", "nogroup", "0"}, "!NotFound: NOGROUP"},
		{kv.CmdXReadGroup, "s", []string{"g", "dave", ">"}, "[[1-0 [n 1]] [3-0 [n 3]] [4-0 [n 4]]]"},
		{kv.CmdXPending, "s", []string{"g", "-", "+", "10"}, "[[1-0 dave 0 1] [3-0 dave 0 1] [4-0 dave 0 1]]"},
		{kv.CmdXGroup, "s", []string{"SETID", "g", "$"}, "OK"},
		{kv.CmdXReadGroup, "s", []string{"g", "dave", ">"}, "[]"},
		{kv.CmdXGroup, "s", []string{"DESTROY", "late"}, "1"},
		{kv.CmdXGroup, "s", []string{"DESTROY", "late"}, "0"},
		{kv.CmdXReadGroup, "s", []string{"late", "bob", ">"}, "!NotFound: NOGROUP"},
	})

	// XCLAIM: min-idle, JUSTID, RETRYCOUNT, FORCE, LASTID, TIME.
	clk.Advance(100 * time.Millisecond)
	runSteps(t, s, []xstep{
		{kv.CmdXClaim, "s", []string{"g", "erin", "200", "1-0"}, "[]"},
		{kv.CmdXClaim, "s", []string{"g", "erin", "100", "1-0", "3-0", "1-0", "7-0"}, "[[1-0 [n 1]] [3-0 [n 3]]]"},
		{kv.CmdXPending, "s", []string{"g", "-", "+", "10"}, "[[1-0 erin 0 2] [3-0 erin 0 2] [4-0 dave 100 1]]"},
		{kv.CmdXClaim, "s", []string{"g", "frank", "0", "1-0", "JUSTID"}, "[1-0]"},
		{kv.CmdXClaim, "s", []string{"g", "frank", "0", "3-0", "RETRYCOUNT", "7", "IDLE", "40"}, "[[3-0 [n 3]]]"},
		{kv.CmdXPending, "s", []string{"g", "-", "+", "10"}, "[[1-0 frank 0 2] [3-0 frank 40 7] [4-0 dave 100 1]]"},
		{kv.CmdXClaim, "s", []string{"g", "frank", "0", "4-0", "TIME", strconv.FormatInt(t0.UnixMilli(), 10)}, "[[4-0 [n 4]]]"},
		{kv.CmdXPending, "s", []string{"g", "-", "+", "10", "frank"}, "[[1-0 frank 0 2] [3-0 frank 40 7] [4-0 frank 100 2]]"},
		{kv.CmdXAck, "s", []string{"g", "4-0"}, "1"},
		{kv.CmdXClaim, "s", []string{"g", "frank", "0", "4-0"}, "[]"},
		{kv.CmdXClaim, "s", []string{"g", "frank", "0", "4-0", "FORCE", "JUSTID", "LASTID", "9-0"}, "[4-0]"},
		{kv.CmdXPending, "s", []string{"g", "4-0", "4-0", "1"}, "[[4-0 frank 0 1]]"},
		{kv.CmdXReadGroup, "s", []string{"g", "frank", ">"}, "[]"},             // LASTID moved the group past 4-0
		{kv.CmdXClaim, "s", []string{"g", "frank", "0", "8-0", "FORCE"}, "[]"}, // FORCE needs the entry
		{kv.CmdXClaim, "s", []string{"g", "frank", "x", "1-0"}, "!BadRequest: min-idle-time"},
		{kv.CmdXClaim, "s", []string{"g", "frank", "0", "1-0", "RETRYCOUNT"}, "!BadRequest: Unrecognized XCLAIM option 'RETRYCOUNT'"},
		{kv.CmdXClaim, "s", []string{"g", "frank", "0", "1-0", "RETRYCOUNT", "-1"}, "[[1-0 [n 1]]]"}, // Redis stores the unsigned wrap
		{kv.CmdXPending, "s", []string{"g", "1-0", "1-0", "1"}, "[[1-0 frank 0 -1]]"},
		{kv.CmdXClaim, "s", []string{"g", "frank", "0", "1-0", "RETRYCOUNT", "2", "JUSTID"}, "[1-0]"},
		{kv.CmdXClaim, "s", []string{"g", "frank", "0", "1-0", "BOGUS"}, "!BadRequest: Unrecognized XCLAIM option 'BOGUS'"},
		{kv.CmdXClaim, "s", []string{"nogroup", "frank", "0", "1-0"}, "!NotFound: NOGROUP"},
		// A claimed entry that no longer exists leaves the PEL.
		{kv.CmdXDel, "s", []string{"3-0"}, "1"},
		{kv.CmdXClaim, "s", []string{"g", "erin", "0", "3-0"}, "[]"},
		{kv.CmdXPending, "s", []string{"g"}, "[2 1-0 4-0 [[frank 2]]]"},
	})

	// XAUTOCLAIM: cursor, COUNT, JUSTID, deleted ids.
	for i := 5; i <= 9; i++ {
		run(t, s, kv.CmdXAdd, "s", fmt.Sprint(i), "n", fmt.Sprint(i))
	}
	run(t, s, kv.CmdXGroup, "s", "SETID", "g", "4-0") // LASTID 9-0 moved it past them
	run(t, s, kv.CmdXReadGroup, "s", "g", "gina", ">")
	run(t, s, kv.CmdXDel, "s", "6-0")
	clk.Advance(time.Second)
	runSteps(t, s, []xstep{
		{kv.CmdXPending, "s", []string{"g"}, "[7 1-0 9-0 [[frank 2] [gina 5]]]"},
		// Entries gone from the stream leave the PEL whatever their idle time.
		{kv.CmdXAutoClaim, "s", []string{"g", "hank", "5000", "0"}, "[0-0 [] [6-0]]"},
		{kv.CmdXAutoClaim, "s", []string{"g", "hank", "500", "0", "COUNT", "2"}, "[5-0 [[1-0 [n 1]] [4-0 [n 4]]] []]"},
		{kv.CmdXAutoClaim, "s", []string{"g", "hank", "500", "5-0", "COUNT", "2", "JUSTID"}, "[8-0 [5-0 7-0] []]"},
		{kv.CmdXAutoClaim, "s", []string{"g", "hank", "500", "(7-0", "COUNT", "10"}, "[0-0 [[8-0 [n 8]] [9-0 [n 9]]] []]"},
		{kv.CmdXPending, "s", []string{"g"}, "[6 1-0 9-0 [[hank 6]]]"},
		{kv.CmdXPending, "s", []string{"g", "-", "+", "2"}, "[[1-0 hank 0 3] [4-0 hank 0 2]]"},
		{kv.CmdXPending, "s", []string{"g", "5-0", "5-0", "1"}, "[[5-0 hank 0 1]]"}, // JUSTID kept the count
		// A deleted entry counts against COUNT.
		{kv.CmdXDel, "s", []string{"1-0"}, "1"},
		{kv.CmdXAutoClaim, "s", []string{"g", "ivan", "0", "-", "COUNT", "1"}, "[4-0 [] [1-0]]"},
		{kv.CmdXPending, "s", []string{"g"}, "[5 4-0 9-0 [[hank 5]]]"},
		{kv.CmdXAutoClaim, "s", []string{"g", "hank", "0", "0", "COUNT", "0"}, "!BadRequest: COUNT"},
		{kv.CmdXAutoClaim, "s", []string{"g", "hank", "0", "zz"}, "!BadRequest"},
		{kv.CmdXAutoClaim, "s", []string{"nogroup", "hank", "0", "0"}, "!NotFound: NOGROUP"},
	})
}

// At-least-once delivery: a consumer that crashes before acknowledging
// leaves its entries pending; another consumer claims them once they have
// been idle long enough, and every entry is processed.
func TestStreamAtLeastOnceDelivery(t *testing.T) {
	s, clk := newTestStore(t)
	const n = 10
	for i := range n {
		run(t, s, kv.CmdXAdd, "jobs", "*", "job", fmt.Sprint(i))
	}
	run(t, s, kv.CmdXGroup, "jobs", "CREATE", "workers", "0")
	processed := map[string]int{}
	ids := func(r kv.Reply) []string {
		var out []string
		for _, e := range r.Array {
			out = append(out, string(e.Array[0].Bulk))
		}
		return out
	}
	// A reads four and processes (acks) only the first before crashing.
	got := ids(run(t, s, kv.CmdXReadGroup, "jobs", "workers", "A", "COUNT", "4", ">"))
	if len(got) != 4 {
		t.Fatalf("A read %v", got)
	}
	processed[got[0]]++
	run(t, s, kv.CmdXAck, "jobs", "workers", got[0])
	// B consumes the rest as they come.
	for _, id := range ids(run(t, s, kv.CmdXReadGroup, "jobs", "workers", "B", ">")) {
		processed[id]++
		run(t, s, kv.CmdXAck, "jobs", "workers", id)
	}
	const minIdle = "30000"
	clk.Advance(10 * time.Second)
	if r := run(t, s, kv.CmdXAutoClaim, "jobs", "workers", "B", minIdle, "0"); len(r.Array[1].Array) != 0 {
		t.Fatalf("claimed before min-idle: %s", flat(r))
	}
	clk.Advance(25 * time.Second)
	r := run(t, s, kv.CmdXAutoClaim, "jobs", "workers", "B", minIdle, "0")
	claimed := ids(r.Array[1])
	if !slices.Equal(claimed, got[1:]) || string(r.Array[0].Bulk) != "0-0" {
		t.Fatalf("B claimed %s, want %v", flat(r), got[1:])
	}
	for _, p := range run(t, s, kv.CmdXPending, "jobs", "workers", "-", "+", "10").Array {
		if string(p.Array[1].Bulk) != "B" || p.Array[3].Int != 2 || p.Array[2].Int != 0 {
			t.Fatalf("after the claim: %s", flat(p))
		}
	}
	// A second claimant right after gets nothing: claiming reset the idle time.
	if r := run(t, s, kv.CmdXAutoClaim, "jobs", "workers", "C", minIdle, "0"); len(r.Array[1].Array) != 0 {
		t.Fatalf("double claim: %s", flat(r))
	}
	for _, id := range claimed {
		processed[id]++
		run(t, s, kv.CmdXAck, "jobs", "workers", id)
	}
	if len(processed) != n {
		t.Fatalf("processed %d of %d entries: %v", len(processed), n, processed)
	}
	for id, k := range processed {
		if k != 1 {
			t.Fatalf("%s processed %d times", id, k)
		}
	}
	if r := run(t, s, kv.CmdXPending, "jobs", "workers"); r.Array[0].Int != 0 {
		t.Fatalf("still pending: %s", flat(r))
	}
}

func TestStreamCapsAndWrongType(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.MaxCollectionElements = 3; c.MaxCollectionBytes = 4096 })
	for i := 1; i <= 3; i++ {
		run(t, s, kv.CmdXAdd, "s", fmt.Sprint(i), "f", "v")
	}
	run(t, s, kv.CmdHSet, "h", "a", "1")
	before := s.Stats().OwnedBytes
	big := strings.Repeat("x", 5000)
	runSteps(t, s, []xstep{
		{kv.CmdXAdd, "s", []string{"4", "f", "v"}, "!ItemTooLarge"},
		{kv.CmdXAdd, "s", []string{"MAXLEN", "3", "4", "f", "v"}, "4-0"}, // trimming makes room
		{kv.CmdXAdd, "s", []string{"5", "f", big}, "!ItemTooLarge"},
		{kv.CmdXAdd, "fresh", []string{"1", "f", big}, "!ItemTooLarge"},
		{kv.CmdType, "fresh", nil, "none"},
		{kv.CmdXGroup, "s", []string{"CREATE", strings.Repeat("g", 5000), "0"}, "!ItemTooLarge"},
		{kv.CmdXGroup, "s", []string{"CREATE", "g", "0"}, "OK"},
		{kv.CmdXReadGroup, "s", []string{"g", strings.Repeat("c", 5000), ">"}, "!ItemTooLarge"},
		{kv.CmdXPending, "s", []string{"g"}, "[0 nil nil nil]"},
		// Nothing to claim: as Redis 7.0, no consumer is made, so nothing grows.
		{kv.CmdXAutoClaim, "s", []string{"g", strings.Repeat("c", 5000), "0", "0"}, "[0-0 [] []]"},
		{kv.CmdXClaim, "s", []string{"g", strings.Repeat("c", 5000), "0", "2-0", "FORCE"}, "!ItemTooLarge"},
		{kv.CmdXGroup, "s", []string{"CREATECONSUMER", "g", strings.Repeat("c", 5000)}, "!ItemTooLarge"},
		{kv.CmdXLen, "s", nil, "3"},
		{kv.CmdXRange, "s", []string{"-", "+"}, "[[2-0 [f v]] [3-0 [f v]] [4-0 [f v]]]"},
		{kv.CmdXAdd, "h", []string{"*", "f", "v"}, "!WrongType"},
		{kv.CmdXLen, "h", nil, "!WrongType"},
		{kv.CmdXGroup, "h", []string{"CREATE", "g", "$", "MKSTREAM"}, "!WrongType"},
		{kv.CmdHGet, "s", []string{"f"}, "!WrongType"},
		{kv.CmdXLen, "s", []string{"extra"}, "!BadRequest"},
	})
	if g := s.Get("s"); g.Status != kv.StatusWrongType {
		t.Fatalf("Get on a stream: %v", g.Status)
	}
	// The refused commands left nothing behind; the accepted ones are
	// accounted: one entry in, one out, and a group.
	if grown := s.Stats().OwnedBytes - before; grown != streamGroupOverhead+1 {
		t.Fatalf("accounting moved by %d", grown)
	}
	if r := s.Delete("s"); !r.OK() {
		t.Fatal(r.Status)
	}
	s.Delete("h")
	s.SweepOnce()
	if st := s.Stats(); st.OwnedBytes != 0 || st.Items != 0 {
		t.Fatalf("after deleting everything: %+v", st)
	}
}

// The entry log against a sorted-slice model under random XADD, XDEL,
// XTRIM and range reads (STYLE 6), exercising the dead-slot compaction.
func TestStreamLogAgainstModel(t *testing.T) {
	s, clk := newTestStore(t)
	rng := rand.New(rand.NewPCG(3, 3))
	type ent struct {
		id  streamID
		val string
	}
	var model []ent
	var last streamID
	idArg := func() string {
		if len(model) == 0 {
			return "-"
		}
		e := model[rng.IntN(len(model))].id
		switch rng.IntN(4) {
		case 0:
			return "(" + e.String()
		case 1:
			return strconv.FormatUint(e.ms, 10)
		}
		return e.String()
	}
	for i := range 20000 {
		switch k := rng.IntN(10); {
		case k < 5:
			if rng.IntN(3) == 0 {
				clk.Advance(time.Millisecond)
			}
			v := fmt.Sprint(i)
			r := run(t, s, kv.CmdXAdd, "m", "*", "v", v)
			id, _ := parseStreamID(r.Bulk, 0)
			if !last.less(id) {
				t.Fatalf("id %v not above %v", id, last)
			}
			last = id
			model = append(model, ent{id, v})
		case k < 7 && len(model) > 0:
			e := model[rng.IntN(len(model))]
			if r := run(t, s, kv.CmdXDel, "m", e.id.String()); r.Int != 1 {
				t.Fatalf("XDEL %v: %s", e.id, flat(r))
			}
			model = slices.DeleteFunc(model, func(m ent) bool { return m.id == e.id })
		case k == 7:
			keep := rng.IntN(60)
			r := run(t, s, kv.CmdXTrim, "m", "MAXLEN", strconv.Itoa(keep))
			cut := max(0, len(model)-keep)
			if r.Int != int64(cut) {
				t.Fatalf("XTRIM MAXLEN %d removed %d, want %d", keep, r.Int, cut)
			}
			model = model[cut:]
		default:
			a, b := idArg(), idArg()
			lo, hi, _, ok := rangeBounds([]byte(a), []byte(b))
			if !ok {
				continue
			}
			var want []string
			for _, e := range model {
				if !e.id.less(lo) && !hi.less(e.id) {
					want = append(want, "["+e.id.String()+" [v "+e.val+"]]")
				}
			}
			if got := flat(run(t, s, kv.CmdXRange, "m", a, b)); got != "["+strings.Join(want, " ")+"]" {
				t.Fatalf("XRANGE %s %s = %s, want %v", a, b, got, want)
			}
			slices.Reverse(want)
			if got := flat(run(t, s, kv.CmdXRevRange, "m", b, a, "COUNT", "5")); got != "["+strings.Join(want[:min(5, len(want))], " ")+"]" {
				t.Fatalf("XREVRANGE %s %s COUNT 5 = %s, want %v", b, a, got, want)
			}
		}
		if i%1000 == 0 {
			if r := run(t, s, kv.CmdXLen, "m"); r.Int != int64(len(model)) {
				t.Fatalf("XLEN %d, model %d", r.Int, len(model))
			}
		}
	}
}

// Stream mutations replicate as effects: a replica whose clock disagrees
// with the source's replays the op-log (or installs a snapshot) and reaches
// the same streams, groups, PELs and delivery times (R-DS-2, R-REP-1).
func TestStreamEffectsReplicate(t *testing.T) {
	src, clk := newTestStore(t, func(c *Config) { c.Segments = 2 })
	dst, dstClk := newTestStore(t, func(c *Config) { c.Segments = 2 })
	dstClk.Advance(-time.Hour) // the replica's clock is an hour behind
	rng := rand.New(rand.NewPCG(17, 17))
	applied := []uint64{0, 0}
	groups := []string{"g1", "g2"}
	consumers := []string{"c1", "c2", "c3"}
	someID := func() string {
		return fmt.Sprintf("%d-%d", t0.UnixMilli()+int64(rng.IntN(200)), rng.IntN(3))
	}
	ops := []func(k string, i int) kv.Cmd{
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdXAdd, "x"+k, "*", "f", fmt.Sprint(i)) },
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdXAdd, "x"+k, "*", "f", fmt.Sprint(i), "g", "h") },
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdXAdd, "x"+k, "MAXLEN", "~", "20", "*", "f", "v") },
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdXAdd, "x"+k, someID(), "f", "v") },
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXAdd, "x"+k, fmt.Sprintf("%d-*", t0.UnixMilli()+int64(rng.IntN(300))), "f", "v")
		},
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdXDel, "x"+k, someID(), someID()) },
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXTrim, "x"+k, "MAXLEN", fmt.Sprint(10+rng.IntN(20)))
		},
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdXTrim, "x"+k, "MINID", someID()) },
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXTrim, "x"+k, "MAXLEN", "~", fmt.Sprint(rng.IntN(20)))
		},
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXTrim, "x"+k, "MINID", "~", someID(), "LIMIT", "0")
		},
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXGroup, "x"+k, "CREATE", groups[rng.IntN(2)], []string{"0", "$"}[rng.IntN(2)], "MKSTREAM")
		},
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdXGroup, "x"+k, "SETID", groups[rng.IntN(2)], "$") },
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXGroup, "x"+k, "SETID", groups[rng.IntN(2)], someID())
		},
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXGroup, "x"+k, "CREATECONSUMER", groups[rng.IntN(2)], consumers[rng.IntN(3)])
		},
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXGroup, "x"+k, "DELCONSUMER", groups[rng.IntN(2)], consumers[rng.IntN(3)])
		},
		func(k string, i int) kv.Cmd { return kv.NewCmd(kv.CmdXGroup, "x"+k, "DESTROY", groups[rng.IntN(2)]) },
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXReadGroup, "x"+k, groups[rng.IntN(2)], consumers[rng.IntN(3)], "COUNT", fmt.Sprint(1+rng.IntN(4)), ">")
		},
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXReadGroup, "x"+k, groups[rng.IntN(2)], consumers[rng.IntN(3)], ">")
		},
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXReadGroup, "x"+k, groups[rng.IntN(2)], consumers[rng.IntN(3)], "NOACK", "COUNT", "2", ">")
		},
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXReadGroup, "x"+k, groups[rng.IntN(2)], fmt.Sprint("new", i), "0")
		},
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXAck, "x"+k, groups[rng.IntN(2)], someID(), someID())
		},
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXClaim, "x"+k, groups[rng.IntN(2)], consumers[rng.IntN(3)], fmt.Sprint(rng.IntN(50)), someID(), someID())
		},
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXClaim, "x"+k, groups[rng.IntN(2)], consumers[rng.IntN(3)], "0", someID(), "FORCE", "JUSTID", "LASTID", someID())
		},
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXClaim, "x"+k, groups[rng.IntN(2)], consumers[rng.IntN(3)], "0", someID(), "RETRYCOUNT", "5", "IDLE", "7")
		},
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXClaim, "x"+k, groups[rng.IntN(2)], consumers[rng.IntN(3)], "0", someID(),
				"TIME", fmt.Sprint(t0.UnixMilli()+int64(rng.IntN(1e6))))
		},
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXAutoClaim, "x"+k, groups[rng.IntN(2)], consumers[rng.IntN(3)], fmt.Sprint(rng.IntN(30)), "0", "COUNT", "3")
		},
		func(k string, i int) kv.Cmd {
			return kv.NewCmd(kv.CmdXAutoClaim, "x"+k, groups[rng.IntN(2)], consumers[rng.IntN(3)], "0", someID(), "JUSTID")
		},
	}
	// late starts from a snapshot halfway: its model of Redis's stream
	// nodes is rebuilt from the entries and differs from the source's after
	// XDELs, so it converges only because "~" trims are logged as the
	// length they left (D119).
	late, _ := newTestStore(t, func(c *Config) { c.Segments = 2 })
	lateApplied := []uint64{0, 0}
	lateStarted := false
	catchUpOne := func(to *Store, applied []uint64) {
		for seg := range 2 {
			log, err := src.Segment(uint16(seg)).OperationsAfter(applied[seg])
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range log {
				if _, err := to.Segment(uint16(seg)).ApplyOp(op); err != nil {
					t.Fatalf("apply %v %v: %v", op.Kind, op.Cmd, err)
				}
				applied[seg] = op.Revision()
			}
		}
	}
	catchUp := func() {
		catchUpOne(dst, applied)
		if lateStarted {
			catchUpOne(late, lateApplied)
		}
	}
	oks := 0
	for i := range 6000 {
		k := fmt.Sprint(rng.IntN(4))
		if rng.IntN(4) == 0 {
			clk.Advance(time.Duration(rng.IntN(5)) * time.Millisecond)
		}
		if r := src.Exec(ops[rng.IntN(len(ops))](k, i)); r.OK() {
			oks++
		}
		if i%211 == 0 {
			src.Delete("x" + k)
		}
		if i%97 == 0 { // XSETID (outside the random mix): the counters XINFO reports replicate too
			src.Exec(kv.NewCmd(kv.CmdXSetID, "x"+k, fmt.Sprint(t0.UnixMilli()+int64(i%3), "-9"), "ENTRIESADDED", fmt.Sprint(5000+i),
				"MAXDELETEDID", fmt.Sprint(t0.UnixMilli()-1, "-0")))
		}
		if i%50 == 0 {
			catchUp()
		}
		if i == 3000 {
			for seg := range 2 {
				g := src.Segment(uint16(seg))
				late.Segment(uint16(seg)).InstallSnapshot(g.Snapshot())
				lateApplied[seg] = g.Revision()
			}
			lateStarted = true
		}
	}
	if oks < 3000 {
		t.Fatalf("only %d commands succeeded: the mix does not exercise much", oks)
	}
	catchUp()
	for seg := range 2 {
		a, b := src.Segment(uint16(seg)), dst.Segment(uint16(seg))
		if a.Digest() != b.Digest() {
			t.Fatalf("segment %d diverged: %+v vs %+v", seg, a.Digest(), b.Digest())
		}
		if l := late.Segment(uint16(seg)); a.Digest() != l.Digest() {
			t.Fatalf("segment %d of the replica started from a snapshot diverged: %+v vs %+v", seg, a.Digest(), l.Digest())
		}
		fresh, _ := newTestStore(t, func(c *Config) { c.Segments = 2 })
		fresh.Segment(uint16(seg)).InstallSnapshot(a.Snapshot())
		if fresh.Segment(uint16(seg)).Digest() != a.Digest() {
			t.Fatalf("snapshot of segment %d diverged", seg)
		}
	}
	if src.Stats().Items == 0 {
		t.Fatal("nothing to compare")
	}
	// The groups really hold pending entries with delivery times.
	pending := 0
	for k := range 4 {
		for _, g := range groups {
			if r := run(t, src, kv.CmdXPending, "x"+fmt.Sprint(k), g); r.OK() {
				pending += int(r.Array[0].Int)
			}
		}
	}
	if pending == 0 {
		t.Fatal("no pending entries at the end: the mix does not exercise the PEL")
	}
	if src.Stats().OwnedBytes != dst.Stats().OwnedBytes {
		t.Fatalf("accounting diverged: %d vs %d", src.Stats().OwnedBytes, dst.Stats().OwnedBytes)
	}
}

// The effects of the clock-reading commands carry the delivery time: the
// replica shows the source's idle times, not its own clock's.
func TestStreamClaimEffectCarriesTime(t *testing.T) {
	src, clk := newTestStore(t)
	dst, _ := newTestStore(t)
	run(t, src, kv.CmdXAdd, "s", "1", "f", "v")
	run(t, src, kv.CmdXGroup, "s", "CREATE", "g", "0")
	clk.Advance(time.Minute) // the replica's clock stays a minute behind
	run(t, src, kv.CmdXReadGroup, "s", "g", "c", ">")
	seg := src.Segment(0)
	for i := range src.cfg.Segments {
		if src.Segment(uint16(i)).Len() > 0 {
			seg = src.Segment(uint16(i))
		}
	}
	log, err := seg.OperationsAfter(0)
	if err != nil {
		t.Fatal(err)
	}
	last := log[len(log)-1]
	if last.Cmd == nil || last.Cmd.Op != kv.CmdXClaim {
		t.Fatalf("XREADGROUP logged as %+v", last.Cmd)
	}
	want := fmt.Sprintf("g c 0 1-0 TIME %d RETRYCOUNT 1 FORCE JUSTID LASTID 1-0", t0.Add(time.Minute).UnixMilli())
	var args []string
	for _, a := range last.Cmd.Args {
		args = append(args, string(a))
	}
	if got := strings.Join(args, " "); got != want {
		t.Fatalf("effect %q, want %q", got, want)
	}
	for _, op := range log {
		if _, err := dst.Segment(seg.id).ApplyOp(op); err != nil {
			t.Fatal(err)
		}
	}
	// On the replica the entry was delivered a minute in its future: idle 0.
	if r := run(t, dst, kv.CmdXPending, "s", "g", "-", "+", "1"); flat(r) != "[[1-0 c 0 1]]" {
		t.Fatalf("replica PEL %s", flat(r))
	}
	if dst.Segment(seg.id).Digest() != seg.Digest() {
		t.Fatal("diverged")
	}
}

func TestStreamDecodeRejectsGarbage(t *testing.T) {
	s := newStream()
	s.add(streamID{1, 0}, [][]byte{[]byte("f"), []byte("v")})
	g := s.addGroup("g", streamID{1, 0})
	c := s.addConsumer(g, "c")
	s.setPending(g, streamID{1, 0}, c, 5, 2)
	enc := s.encode()
	back, err := decodeCollection(KindStream, enc)
	if err != nil {
		t.Fatal(err)
	}
	if string(back.encode()) != string(enc) || back.size() != s.size() {
		t.Fatal("round trip changed the stream")
	}
	bad := []streamWire{
		{Entries: []streamEntryWire{{ID: [2]uint64{1, 0}, Fields: [][]byte{[]byte("odd")}}}},
		{Entries: []streamEntryWire{{ID: [2]uint64{2, 0}, Fields: [][]byte{{}, {}}}, {ID: [2]uint64{1, 0}, Fields: [][]byte{{}, {}}}}},
		{Last: [2]uint64{1, 0}, Entries: []streamEntryWire{{ID: [2]uint64{2, 0}, Fields: [][]byte{{}, {}}}}},
		{Groups: []streamGroupWire{{Name: "g", Pending: []streamPendingWire{{Consumer: "ghost"}}}}},
		{Groups: []streamGroupWire{{Name: "g"}, {Name: "g"}}},
	}
	for i, w := range bad {
		if _, err := decodeCollection(KindStream, mustMarshal(&w)); err == nil {
			t.Errorf("garbage %d decoded", i)
		}
	}
	if _, err := decodeCollection(KindStream, []byte{0xc1}); err == nil {
		t.Error("non-msgpack decoded")
	}
}

// --- benchmarks ---

func benchStreamStore(b *testing.B) *Store {
	cfg := DefaultConfig()
	cfg.MaxCollectionElements = 1 << 30
	cfg.MaxCollectionBytes = cfg.MaxMemoryBytes
	cfg.MaxItemBytes = int(cfg.MaxMemoryBytes) // a stream of 100k entries is one key past the default 4 MiB
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

var benchFields = [][]byte{[]byte("event"), []byte("order-created"), []byte("payload"), make([]byte, 64)}

func xaddCmd(key string) kv.Cmd {
	return kv.Cmd{Op: kv.CmdXAdd, Key: key, Args: append([][]byte{[]byte("MAXLEN"), []byte("~"), []byte("100000"), []byte("*")}, benchFields...)}
}

func BenchmarkXAdd(b *testing.B) {
	s := benchStreamStore(b)
	cmd := xaddCmd("bench")
	b.ReportAllocs()
	for b.Loop() {
		if r := s.Exec(cmd); !r.OK() {
			b.Fatal(r.Status, r.Message)
		}
	}
}

func BenchmarkXAddParallel(b *testing.B) {
	for _, keys := range []int{1, 64} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			s := benchStreamStore(b)
			cmds := make([]kv.Cmd, keys)
			for i := range cmds {
				cmds[i] = xaddCmd(fmt.Sprint("bench:", i))
			}
			var next atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				cmd := cmds[int(next.Add(1))%keys]
				for pb.Next() {
					s.Exec(cmd)
				}
			})
		})
	}
}

func fillStream(b *testing.B, s *Store, key string, n int) {
	cmd := xaddCmd(key)
	for range n {
		s.Exec(cmd)
	}
}

func BenchmarkXRange(b *testing.B) {
	s := benchStreamStore(b)
	fillStream(b, s, "bench", 100000)
	cmd := kv.NewCmd(kv.CmdXRange, "bench", "-", "+", "COUNT", "10")
	b.ReportAllocs()
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			s.Exec(cmd)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				s.Exec(cmd)
			}
		})
	})
}

// BenchmarkXReadGroupAck measures one consumer step: XREADGROUP COUNT 10
// then XACK of the ten ids. The stream holds 10 000 entries; a consumer that
// reaches its end rewinds the group (XGROUP SETID 0), so acknowledged entries
// are delivered again at the cost of new ones and memory stays bounded.
func BenchmarkXReadGroupAck(b *testing.B) {
	step := func(b *testing.B, s *Store, key, consumer string) {
		read := kv.NewCmd(kv.CmdXReadGroup, key, "g", consumer, "COUNT", "10", ">")
		r := s.Exec(read)
		if r.OK() && len(r.Array) == 0 {
			s.Exec(kv.NewCmd(kv.CmdXGroup, key, "SETID", "g", "0"))
			r = s.Exec(read)
		}
		if !r.OK() || len(r.Array) == 0 {
			b.Errorf("XREADGROUP: %v %s (%d entries)", r.Status, r.Message, len(r.Array)) // Errorf: RunParallel goroutines cannot FailNow
			return
		}
		ack := kv.Cmd{Op: kv.CmdXAck, Key: key, Args: make([][]byte, 1, 11)}
		ack.Args[0] = []byte("g")
		for _, e := range r.Array {
			ack.Args = append(ack.Args, e.Array[0].Bulk)
		}
		s.Exec(ack)
	}
	setup := func(b *testing.B, keys int) *Store {
		s := benchStreamStore(b)
		for i := range keys {
			key := fmt.Sprint("bench:", i)
			fillStream(b, s, key, 10000)
			s.Exec(kv.NewCmd(kv.CmdXGroup, key, "CREATE", "g", "0"))
		}
		return s
	}
	b.Run("serial", func(b *testing.B) {
		s := setup(b, 1)
		b.ReportAllocs()
		for b.Loop() {
			step(b, s, "bench:0", "c")
		}
	})
	b.Run("parallel-64-keys", func(b *testing.B) {
		const keys = 64
		s := setup(b, keys)
		var next atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			w := next.Add(1)
			key, consumer := fmt.Sprint("bench:", w%keys), fmt.Sprint("c", w)
			for pb.Next() {
				step(b, s, key, consumer)
			}
		})
	})
}

// Each stream command checks its arguments, the key's type and the group in
// Redis 7.0's order, so a command with two faults answers Redis's error —
// through the native protocol as through RESP (server/resp's
// diff_regress_test.go compares the RESP replies with a real redis-server).
func TestStreamChecksInRedisOrder(t *testing.T) {
	s, _ := newTestStore(t)
	run(t, s, kv.CmdXAdd, "s", "1", "n", "1")
	run(t, s, kv.CmdXAdd, "s", "2", "n", "2")
	run(t, s, kv.CmdXGroup, "s", "CREATE", "g", "0")
	run(t, s, kv.CmdXReadGroup, "s", "g", "alice", ">")
	run(t, s, kv.CmdHSet, "h", "a", "1")
	runSteps(t, s, []xstep{
		// XPENDING parses before the key's type: count, IDLE, bounds.
		{kv.CmdXPending, "h", []string{"g", "x", "y"}, "!BadRequest: syntax error"},
		{kv.CmdXPending, "h", []string{"g", "-", "+", "x"}, "!BadRequest: not an integer"},
		{kv.CmdXPending, "h", []string{"g", "x", "+", "1"}, "!BadRequest: Invalid stream ID"},
		{kv.CmdXPending, "nope", []string{"g", "IDLE", "x", "-", "+"}, "!BadRequest: not an integer"},
		{kv.CmdXPending, "nope", []string{"g", "IDLE", "1", "-", "+"}, "!BadRequest: syntax error"},
		{kv.CmdXPending, "h", []string{"g", "-", "+", "1"}, "!WrongType"},
		// Past the count, the next argument is the consumer and the rest is ignored.
		{kv.CmdXPending, "s", []string{"g", "-", "+", "9", "alice", "x", "y"}, "[[1-0 alice 0 1] [2-0 alice 0 1]]"},
		{kv.CmdXPending, "s", []string{"g", "-", "+", "9", "bob", "x", "y"}, "[]"},
		// XAUTOCLAIM: min-idle, start and options before the type and the group.
		{kv.CmdXAutoClaim, "h", []string{"g", "c", "x", "0"}, "!BadRequest: Invalid min-idle-time argument for XAUTOCLAIM"},
		{kv.CmdXAutoClaim, "h", []string{"g", "c", "0", "0", "FOO"}, "!BadRequest: syntax error"},
		{kv.CmdXAutoClaim, "nope", []string{"g", "c", "0", "0", "COUNT", "576460752303423488"}, "!BadRequest: COUNT must be > 0"},
		{kv.CmdXAutoClaim, "nope", []string{"g", "c", "0", "0", "COUNT", "576460752303423487"}, "!NotFound: NOGROUP"},
		{kv.CmdXAutoClaim, "h", []string{"g", "c", "0", "0"}, "!WrongType"},
		// XSETID: the id and options, then the key.
		{kv.CmdXSetID, "h", []string{"x"}, "!BadRequest: Invalid stream ID"},
		{kv.CmdXSetID, "nope", []string{"5-0", "FOO", "1"}, "!BadRequest: syntax error"},
		{kv.CmdXSetID, "h", []string{"5-0"}, "!WrongType"},
		{kv.CmdXSetID, "nope", []string{"5-0"}, "!NotFound: no such key"},
		// XGROUP: options, type, missing key, missing group, argument count, id.
		{kv.CmdXGroup, "h", []string{"CREATE", "g", "$", "MKSTREAM", "ENTRIESREAD", "-5"}, "!BadRequest: value for ENTRIESREAD must be positive or -1"},
		{kv.CmdXGroup, "h", []string{"SETID", "g", "+", "x"}, "!BadRequest: unknown subcommand or wrong number of arguments for 'SETID'"},
		{kv.CmdXGroup, "h", []string{"DESTROY", "g"}, "!WrongType"},
		{kv.CmdXGroup, "nope", []string{"CREATE", "g", "bad"}, "!NotFound: requires the key to exist"},
		{kv.CmdXGroup, "nope", []string{"CREATE", "g", "$", "ENTRIESREAD", "1", "ENTRIESREAD", "1"}, "!NotFound: requires the key to exist"},
		{kv.CmdXGroup, "nope", []string{"CREATE", "g", "bad", "MKSTREAM", "ENTRIESREAD", "1", "ENTRIESREAD", "1"}, "!BadRequest: unknown subcommand"},
		{kv.CmdXGroup, "s", []string{"CREATE", "g", "$", "MKSTREAM", "MKSTREAM", "MKSTREAM", "MKSTREAM"}, "!BadRequest: unknown subcommand"},
		{kv.CmdXGroup, "s", []string{"SETID", "nogroup", "bad"}, "!NotFound: NOGROUP"},
		{kv.CmdXGroup, "s", []string{"SETID", "g", "bad", "MKSTREAM"}, "!BadRequest: unknown subcommand"},
		{kv.CmdXGroup, "s", []string{"CREATE", "g2", "+"}, "!BadRequest: Invalid stream ID"},
		{kv.CmdXGroup, "s", []string{"CREATE", "g", "bad"}, "!BadRequest: Invalid stream ID"},
		{kv.CmdXGroup, "s", []string{"SETID", "g", "-"}, "OK"}, // SETID reads "-" and "+" as Redis does
		{kv.CmdXGroup, "s", []string{"SETID", "g", "+", "ENTRIESREAD", "3"}, "OK"},
		// XCLAIM: the type and the group first; ids up to the first non-id, then options.
		{kv.CmdXClaim, "h", []string{"g", "c", "x", "bad"}, "!WrongType"},
		{kv.CmdXClaim, "s", []string{"nogroup", "c", "x", "bad"}, "!NotFound: NOGROUP"},
		{kv.CmdXClaim, "s", []string{"g", "c", "0", "1-0", "bad"}, "!BadRequest: Unrecognized XCLAIM option 'bad'"},
		{kv.CmdXClaim, "s", []string{"g", "c", "0", "1-0", "FORCE", "2-0"}, "!BadRequest: Unrecognized XCLAIM option '2-0'"},
		{kv.CmdXClaim, "s", []string{"g", "c", "0", "-"}, "!BadRequest: Unrecognized XCLAIM option '-'"},
		{kv.CmdXClaim, "s", []string{"g", "c", "0", "1-0", "IDLE"}, "!BadRequest: Unrecognized XCLAIM option 'IDLE'"},
		{kv.CmdXClaim, "s", []string{"g", "c", "0", "1-0", "idle", "x"}, "!BadRequest: Invalid IDLE option argument for XCLAIM"},
		{kv.CmdXClaim, "s", []string{"g", "c", "0", "1-0", "LASTID", "x"}, "!BadRequest: Invalid stream ID"},
		// An id named twice is claimed twice (and counted twice).
		{kv.CmdXClaim, "s", []string{"g", "c", "0", "1-0", "1-0"}, "[[1-0 [n 1]] [1-0 [n 1]]]"},
		{kv.CmdXPending, "s", []string{"g", "1-0", "1-0", "1"}, "[[1-0 c 0 3]]"},
		{kv.CmdXClaim, "s", []string{"g", "d", "0", "1-0", "2-0", "1-0", "JUSTID"}, "[1-0 2-0 1-0]"},
		{kv.CmdXPending, "s", []string{"g", "-", "+", "9"}, "[[1-0 d 0 3] [2-0 d 0 1]]"},
		// XREADGROUP: the type, the group, then '$' and the id's syntax.
		{kv.CmdXReadGroup, "h", []string{"g", "c", "$"}, "!WrongType"},
		{kv.CmdXReadGroup, "s", []string{"nogroup", "c", "bad"}, "!NotFound: NOGROUP"},
		{kv.CmdXReadGroup, "s", []string{"g", "c", "$"}, "!BadRequest: The $ ID is meaningless in the context of XREADGROUP"},
		{kv.CmdXReadGroup, "s", []string{"g", "c", "bad"}, "!BadRequest: Invalid stream ID"},
		// XREAD: the type, then '>', then the id's syntax.
		{kv.CmdXRead, "h", []string{">"}, "!WrongType"},
		{kv.CmdXRead, "nope", []string{">"}, "!BadRequest: The > ID can be specified only when calling XREADGROUP"},
		{kv.CmdXRead, "s", []string{"bad"}, "!BadRequest: Invalid stream ID"},
		// Range bounds: "-" and "+" read as C strings; "(-" is no bound.
		{kv.CmdXRange, "s", []string{"-\x00x", "+"}, "[[1-0 [n 1]] [2-0 [n 2]]]"},
		{kv.CmdXRange, "s", []string{"(-", "+"}, "!BadRequest: Invalid stream ID"},
		// XREADGROUP takes the last possible id for '>', as Redis does.
		{kv.CmdXAdd, "s", []string{"3", "n", "3"}, "3-0"},
		{kv.CmdXGroup, "s", []string{"SETID", "g", "2-0"}, "OK"}, // back from "+"
		{kv.CmdXReadGroup, "s", []string{"g", "bob", "18446744073709551615-18446744073709551615"}, "[[3-0 [n 3]]]"},
		{kv.CmdXReadGroup, "s", []string{"g", "bob", "18446744073709551615"}, "[]"}, // ms-0: bob's history after it
	})
	if !GroupReadsHistory([]byte("0")) || GroupReadsHistory([]byte(">")) || GroupReadsHistory([]byte("18446744073709551615-18446744073709551615")) {
		t.Fatal("GroupReadsHistory: only an id below the last possible one reads the history")
	}
}

// A replica whose model of Redis's stream nodes differs from the owner's —
// it was built from a snapshot after XDELs, which the owner's nodes still
// count — reaches the owner's entries all the same: a "~" trim is logged as
// the length it left (D119). With the trim logged as given, the replica's
// model would keep the node the owner dropped.
func TestStreamApproxTrimReplicatesAsLength(t *testing.T) {
	src, _ := newTestStore(t, func(c *Config) { c.Segments = 1 })
	for i := 1; i <= 250; i++ {
		run(t, src, kv.CmdXAdd, "s", fmt.Sprintf("%d-0", i), "f", "v")
	}
	for i := 1; i <= 30; i++ {
		run(t, src, kv.CmdXDel, "s", fmt.Sprintf("%d-0", 2*i))
	}
	g := src.Segment(0)
	late, _ := newTestStore(t, func(c *Config) { c.Segments = 1 })
	late.Segment(0).InstallSnapshot(g.Snapshot())
	from := g.Revision()

	// The owner's first node holds 70 live entries of its 100: dropping it
	// leaves 150. The replica's first node (rebuilt) holds 100 live.
	if r := run(t, src, kv.CmdXTrim, "s", "MAXLEN", "~", "150"); r.Int != 70 {
		t.Fatalf("XTRIM MAXLEN ~ 150 removed %d, want the first node's 70", r.Int)
	}
	run(t, src, kv.CmdXAdd, "s", "MAXLEN", "~", "100", "251-0", "f", "v")
	log, err := g.OperationsAfter(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range log {
		if _, err := late.Segment(0).ApplyOp(op); err != nil {
			t.Fatal(err)
		}
	}
	if g.Digest() != late.Segment(0).Digest() {
		t.Fatalf("the replica diverged: XLEN %d vs %d", run(t, src, kv.CmdXLen, "s").Int, run(t, late, kv.CmdXLen, "s").Int)
	}
}

package store

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
)

// A caller that gives Cmd.Out (the RESP and native connections) gets the
// same replies as one that does not, built in its room (issue #17: the
// []Reply of a range read was a third of LRANGE's CPU).
func TestReplyRoomGivesTheSameReplies(t *testing.T) {
	s, _ := newTestStore(t)
	for i := range 300 {
		m := fmt.Sprint("m", i)
		run(t, s, kv.CmdRPush, "l", m)
		run(t, s, kv.CmdSAdd, "s", m)
		run(t, s, kv.CmdSAdd, "bigs", m)
		run(t, s, kv.CmdHSet, "h", m, fmt.Sprint("v", i))
		run(t, s, kv.CmdZAdd, "z", fmt.Sprint(i), m)
	}
	for i := range 10 {
		run(t, s, kv.CmdSAdd, "small", fmt.Sprint("x", i))
		run(t, s, kv.CmdHSet, "smallh", fmt.Sprint("f", i), "v")
	}
	cases := []struct {
		op        kv.CmdOp
		key       string
		args      []string
		unordered bool // a hash's or set's own order: compared sorted
	}{
		{kv.CmdLRange, "l", []string{"0", "9"}, false},
		{kv.CmdLRange, "l", []string{"0", "-1"}, false}, // 300: larger than the room
		{kv.CmdLRange, "l", []string{"5", "2"}, false},
		{kv.CmdLRange, "nokey", []string{"0", "-1"}, false},
		{kv.CmdHMGet, "h", []string{"m1", "nofield", "m2"}, false},
		{kv.CmdHGetAll, "smallh", nil, true},
		{kv.CmdHGetAll, "h", nil, true},
		{kv.CmdHKeys, "h", nil, true},
		{kv.CmdHVals, "smallh", nil, true},
		{kv.CmdHKeys, "nokey", nil, false},
		{kv.CmdSMembers, "small", nil, true},
		{kv.CmdSMIsMember, "s", []string{"m3", "zz", "m4"}, false},
		{kv.CmdSScan, "small", []string{"0"}, true},
		{kv.CmdHScan, "smallh", []string{"0", "COUNT", "100"}, true},
		{kv.CmdZRange, "z", []string{"0", "9"}, false},
		{kv.CmdZRange, "z", []string{"0", "-1", "WITHSCORES"}, false},
		{kv.CmdZRangeByScore, "z", []string{"5", "60", "LIMIT", "0", "5"}, false},
		{kv.CmdZRevRange, "z", []string{"0", "9", "WITHSCORES"}, false},
		{kv.CmdZMScore, "z", []string{"m1", "nomember"}, false},
		{kv.CmdZScan, "z", []string{"0"}, true},
	}
	var room []kv.Reply
	built := false
	for _, c := range cases {
		name := fmt.Sprint(c.op, " ", c.key, " ", c.args)
		plain := s.Exec(kv.NewCmd(c.op, c.key, c.args...))
		cmd := kv.NewCmd(c.op, c.key, c.args...)
		cmd.Out = &room
		got := s.Exec(cmd)
		want, have := flat(plain), flat(got)
		if c.unordered {
			want, have = sortedFlat(plain), sortedFlat(got)
		}
		if have != want {
			t.Errorf("%s: with a room %s, without %s", name, have, want)
		}
		built = built || len(room) > 0
		kv.ResetOut(&room) // what the connection does once the reply is written
		if cap(room) > kv.RetainedOut {
			t.Fatalf("%s: the connection keeps a room of %d entries", name, cap(room))
		}
	}
	if !built {
		t.Fatal("no reply was built in the room")
	}
}

// sortedFlat flattens r with each array's elements sorted (a scan's cursor
// and page sort together: both are compared).
func sortedFlat(r kv.Reply) string {
	if r.Type != kv.ReplyArray {
		return flat(r)
	}
	parts := make([]string, len(r.Array))
	for i, e := range r.Array {
		parts[i] = sortedFlat(e)
	}
	slices.Sort(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

// Member and field names in a reply built for a room alias the store's
// strings: what the collection does next must not change a reply already
// returned (it is written after the segment's lock is released).
func TestReplyRoomBytesOutliveTheirMembers(t *testing.T) {
	s, _ := newTestStore(t)
	run(t, s, kv.CmdHSet, "h", "field-one", "1")
	run(t, s, kv.CmdZAdd, "z", "1", "member-one")
	var room []kv.Reply
	keys := kv.NewCmd(kv.CmdHKeys, "h")
	keys.Out = &room
	hk := s.Exec(keys)
	rng := kv.NewCmd(kv.CmdZRange, "z", "0", "-1")
	rng.Out = &room
	zr := s.Exec(rng)
	run(t, s, kv.CmdHDel, "h", "field-one")
	run(t, s, kv.CmdHSet, "h", "field-two", "2")
	run(t, s, kv.CmdZRem, "z", "member-one")
	run(t, s, kv.CmdZAdd, "z", "2", "member-two")
	if got := flat(hk); got != "[field-one]" {
		t.Errorf("HKEYS reply after the field changed: %s", got)
	}
	if got := flat(zr); got != "[member-one]" {
		t.Errorf("ZRANGE reply after the member changed: %s", got)
	}
}

package respdiff

import (
	"bufio"
	"strings"
	"testing"
)

func read(t *testing.T, s string) Value {
	t.Helper()
	v, err := Read(bufio.NewReader(strings.NewReader(s)))
	if err != nil {
		t.Fatalf("Read(%q): %v", s, err)
	}
	return v
}

func TestCompareClasses(t *testing.T) {
	for _, c := range []struct {
		cmd          []string
		redis, zaris string
		ok           bool
	}{
		{[]string{"GET", "k"}, "$1\r\na\r\n", "$1\r\na\r\n", true},
		{[]string{"GET", "k"}, "$1\r\na\r\n", "$1\r\nb\r\n", false},
		{[]string{"SMEMBERS", "k"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nb\r\n$1\r\na\r\n", true},
		{[]string{"LRANGE", "k", "0", "-1"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nb\r\n$1\r\na\r\n", false},
		{[]string{"HGETALL", "k"}, "*4\r\n$1\r\nf\r\n$1\r\n1\r\n$1\r\ng\r\n$1\r\n2\r\n", "*4\r\n$1\r\ng\r\n$1\r\n2\r\n$1\r\nf\r\n$1\r\n1\r\n", true},
		{[]string{"HGETALL", "k"}, "*4\r\n$1\r\nf\r\n$1\r\n1\r\n$1\r\ng\r\n$1\r\n2\r\n", "*4\r\n$1\r\nf\r\n$1\r\n2\r\n$1\r\ng\r\n$1\r\n1\r\n", false},
		{[]string{"SRANDMEMBER", "k", "2"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nc\r\n$1\r\nd\r\n", true},
		{[]string{"SRANDMEMBER", "k", "2"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*1\r\n$1\r\nc\r\n", false},
		{[]string{"PTTL", "k"}, ":99998\r\n", ":99990\r\n", true},
		{[]string{"TTL", "k"}, ":100\r\n", ":97\r\n", false},
		{[]string{"ZSCORE", "z", "m"}, "$19\r\n0.10000000000000001\r\n", "$3\r\n0.1\r\n", true},      // accepted: shortest digits
		{[]string{"ZSCORE", "z", "m"}, "$10\r\n4294967296\r\n", "$14\r\n4.294967296e+09\r\n", false}, // notation changed
		{[]string{"INCRBYFLOAT", "k", "1"}, "$3\r\n0.3\r\n", "$19\r\n0.30000000000000004\r\n", false},
		{[]string{"GET", "k"}, "-ERR a\r\n", "-ERR b\r\n", false},
		{[]string{"DEL", ""}, ":0\r\n", "-ERR invalid key: empty or longer than the maximum key size\r\n", true}, // D2
		{[]string{"DEL", "k"}, ":0\r\n", "-ERR invalid key: empty or longer than the maximum key size\r\n", false},
		{[]string{"XTRIM", "s", "MAXLEN", "~", "1"}, ":0\r\n", ":2\r\n", false}, // '~' removes Redis's nodes (D119)
		{[]string{"XTRIM", "s", "MAXLEN", "~", "1"}, ":2\r\n", ":0\r\n", false},
		{[]string{"XTRIM", "s", "MAXLEN", "=", "1"}, ":0\r\n", ":2\r\n", false},
	} {
		ok, why, _ := Compare(c.cmd, read(t, c.redis), read(t, c.zaris))
		if ok != c.ok {
			t.Errorf("%q: %q vs %q: ok=%v (%s), want %v", c.cmd, c.redis, c.zaris, ok, why, c.ok)
		}
	}
}

func TestEncodeReadRoundTrip(t *testing.T) {
	args := []string{"SET", "", "a\r\nb", "\x00\xff"}
	v := read(t, string(Encode(nil, args)))
	if v.Kind != '*' || len(v.Elems) != len(args) {
		t.Fatalf("%v", v)
	}
	for i, a := range args {
		if v.Elems[i].Str != a {
			t.Errorf("arg %d: %q, want %q", i, v.Elems[i].Str, a)
		}
	}
}

func TestGeneratorIsSeededAndBounded(t *testing.T) {
	cmds := []Command{{Name: "set", Arity: -3}, {Name: "xgroup|create", Arity: -5}, {Name: "zadd", Arity: -4}}
	g := Grammar{
		"set": {{Name: "key", Type: "key"}, {Name: "value", Type: "string"},
			{Name: "expiration", Type: "oneof", Optional: true, Args: []*Arg{{Name: "seconds", Type: "integer", Token: "EX"}, {Name: "milliseconds", Type: "integer", Token: "PX"}}}},
		"zadd": {{Name: "key", Type: "key"}, {Name: "data", Type: "block", Multiple: true, Args: []*Arg{{Name: "score", Type: "double"}, {Name: "member", Type: "string"}}}},
	}
	a, b := NewGenerator(7, cmds, g), NewGenerator(7, cmds, g)
	for i := 0; i < 2000; i++ {
		x, y := a.Next(), b.Next()
		if strings.Join(x, "\x00") != strings.Join(y, "\x00") {
			t.Fatalf("step %d: the same seed drew %q and %q", i, x, y)
		}
		for j, arg := range x {
			if len(arg) > 64<<10 {
				t.Fatalf("%q: argument of %d bytes", x[0], len(arg))
			}
			if j > 0 && strings.EqualFold(x[j-1], "PX") && arg != "" && strings.Trim(arg, "0123456789") == "" && arg[0] != '0' && len(arg) < 4 {
				t.Fatalf("%q: a PX of %s ms could expire between the two servers' replies", x, arg)
			}
		}
	}
}

// A 0 against a 1 from a relative EXPIRE GT/LT is the clock's doing only
// when both servers' expiry lies where the new instant fell.
func TestExpiryRaceExplainsOnlyTheClock(t *testing.T) {
	one, zero := Value{Kind: ':', Str: "1"}, Value{Kind: ':', Str: "0"}
	const sent, done, ms = 1_000_000, 1_000_003, 100_000
	for _, c := range []struct {
		name             string
		redisAt, zarisAt int64
		rv, zv           Value
		want             bool
	}{
		{"both on the window", sent + ms, done + ms, one, zero, true},
		{"the other way round", done + ms + 1, sent + ms - 1, zero, one, true},
		{"zaris's expiry elsewhere: a real difference", sent + ms, sent + ms + 5000, one, zero, false},
		{"redis's expiry elsewhere", sent + ms - 100, sent + ms, one, zero, false},
		{"the same reply", sent + ms, sent + ms, one, one, false},
		{"not 0 and 1", sent + ms, sent + ms, one, Value{Kind: ':', Str: "2"}, false},
		{"an error", sent + ms, sent + ms, one, Value{Kind: '-', Str: "ERR x"}, false},
	} {
		r := &expiryRace{redisAt: c.redisAt, zarisAt: c.zarisAt, ms: ms, sent: sent}
		if got := r.explains(c.rv, c.zv, done); got != c.want {
			t.Errorf("%s: explains = %v, want %v", c.name, got, c.want)
		}
	}
	if (*expiryRace)(nil).explains(one, zero, done) {
		t.Error("no probe explains nothing")
	}
}

func TestOnlyKeepsTheNamedCommandsAndTheirSubcommands(t *testing.T) {
	cmds := []Command{{Name: "expire"}, {Name: "get"}, {Name: "xgroup|create"}, {Name: "xgroup|destroy"}, {Name: "pexpire"}}
	kept := only(cmds, []string{"EXPIRE", " xgroup", "pexpire"})
	var names []string
	for _, c := range kept {
		names = append(names, c.Name)
	}
	if want := "expire xgroup|create xgroup|destroy pexpire"; strings.Join(names, " ") != want {
		t.Fatalf("kept %q, want %q", names, want)
	}
}

// EXECABORT ends the transaction, as in Redis: the session must not think
// it is still queuing (it skipped the EXPIRE probe ever after).
func TestSessionLeavesMultiOnEXECABORT(t *testing.T) {
	s := &Session{}
	ok := Value{Kind: '+', Str: "OK"}
	queued := Value{Kind: '+', Str: "QUEUED"}
	s.compare([]string{"MULTI"}, ok, ok)
	s.compare([]string{"SET", "k", "v"}, queued, queued)
	if !s.inMulti || len(s.queued) != 1 {
		t.Fatalf("after MULTI and a queued SET: inMulti %v queued %d", s.inMulti, len(s.queued))
	}
	abort := Value{Kind: '-', Str: "EXECABORT Transaction discarded because of previous errors."}
	s.compare([]string{"EXEC"}, abort, abort)
	if s.inMulti || s.queued != nil {
		t.Fatalf("after EXECABORT: inMulti %v queued %d", s.inMulti, len(s.queued))
	}
	s.compare([]string{"MULTI"}, ok, ok)
	wrongArity := Value{Kind: '-', Str: "ERR wrong number of arguments for 'discard' command"}
	s.compare([]string{"DISCARD", "x"}, wrongArity, wrongArity)
	if !s.inMulti {
		t.Fatal("a refused DISCARD leaves the transaction open")
	}
}

// The open item for lex ranges over mixed scores counts only a lex range of
// a key the sequence gave different scores: the fuzzer's reproducer, not a
// set of one score (whose lex order is specified) nor another command.
func TestLexRangeOverMixedScoresIsOnlyThat(t *testing.T) {
	rangeCmd := []string{"ZRANGE", "{k}5", "(2.5", "(", "BYLEX", "REV", "LIMIT", "3", "5"}
	cases := []struct {
		name string
		seq  [][]string
		want bool
	}{
		{"the fuzzer's reproducer", [][]string{{"ZADD", "{k}5", "CH", "0", "a", "1e17", ".5"}, {"ZINCRBY", "{k}5", "+2", "b"}, rangeCmd}, true},
		{"two scores across ZADDs", [][]string{{"ZADD", "{k}5", "0", "a"}, {"ZADD", "{k}5", "1", "b"}, rangeCmd}, true},
		{"a store into the key", [][]string{{"ZUNIONSTORE", "{k}5", "1", "{k}x"}, rangeCmd}, true},
		{"one score", [][]string{{"ZADD", "{k}5", "NX", "0", "a", "0.0", "b"}, {"ZADD", "{k}5", "-0", "c"}, rangeCmd}, false},
		{"another key's scores", [][]string{{"ZADD", "{k}6", "0", "a", "1", "b"}, {"ZADD", "{k}5", "0", "a"}, rangeCmd}, false},
		{"ZRANGESTORE ranges its source", [][]string{{"ZADD", "{k}src", "0", "a", "1", "b"}, {"ZRANGESTORE", "{k}dst", "{k}src", "[a", "[z", "BYLEX"}}, true},
		{"ZRANGESTORE's destination is not its source", [][]string{{"ZADD", "{k}dst", "0", "a", "1", "b"}, {"ZRANGESTORE", "{k}dst", "{k}src", "[a", "[z", "BYLEX"}}, false},
		{"not a lex range", [][]string{{"ZADD", "{k}5", "0", "a", "1", "b"}, {"ZRANGE", "{k}5", "0", "-1"}}, false},
	}
	var open *OpenItem
	for _, o := range OpenMismatches {
		if o.Name == "lex range over mixed scores" {
			open = o
		}
	}
	if open == nil {
		t.Fatal("no open item for lex ranges over mixed scores")
	}
	for _, c := range cases {
		m := &Mismatch{Seq: c.seq, Redis: Value{Kind: '*'}, Zaris: Value{Kind: '*'}}
		if got := open.Match(m); got != c.want {
			t.Errorf("%s: matched %v, want %v", c.name, got, c.want)
		}
	}
}

// SORT ALPHA's C-string ties are accepted only as such: the same elements,
// each reply ordered up to the first NUL byte, without BY, GET or STORE.
func TestSortAlphaTiesAreOnlyThat(t *testing.T) {
	arr := func(elems ...string) Value {
		v := Value{Kind: '*'}
		for _, e := range elems {
			v.Elems = append(v.Elems, Value{Kind: '$', Str: e})
		}
		return v
	}
	cases := []struct {
		name string
		cmd  []string
		r, z Value
		want bool
	}{
		{"the fuzzer's reproducer", []string{"SORT", "k4", "ALPHA"}, arr("\x00\xff", "", "1", "2", "k0"), arr("", "\x00\xff", "1", "2", "k0"), true},
		{"DESC", []string{"sort_ro", "k", "desc", "alpha"}, arr("b", "a\x00x", "a", ""), arr("b", "a", "a\x00x", ""), true},
		{"not tied: a real order difference", []string{"SORT", "k", "ALPHA"}, arr("a", "b"), arr("b", "a"), false},
		{"other elements", []string{"SORT", "k", "ALPHA"}, arr("", "\x00"), arr("", "\x01"), false},
		{"numeric sort", []string{"SORT", "k"}, arr("\x00a", ""), arr("", "\x00a"), false},
		{"with GET", []string{"SORT", "k", "ALPHA", "GET", "#"}, arr("\x00a", ""), arr("", "\x00a"), false},
		{"with STORE", []string{"SORT", "k", "ALPHA", "STORE", "d"}, arr("\x00a", ""), arr("", "\x00a"), false},
		{"a page through a group of ties (2026-12-07)", []string{"SORT", "k3", "LIMIT", "-2", "3", "DESC", "ALPHA"},
			arr("k3", "k1", "\x00\xff"), arr("k3", "k1", ""), true},
		{"a page holding another C string", []string{"SORT", "k", "LIMIT", "0", "2", "ALPHA"}, arr("", "a"), arr("", "b"), false},
		{"a page out of order", []string{"SORT", "k", "LIMIT", "0", "2", "ALPHA"}, arr("", "a"), arr("a", ""), false},
	}
	for _, c := range cases {
		if got := sortAlphaTies(c.cmd, c.r, c.z); got != c.want {
			t.Errorf("%s: accepted %v, want %v", c.name, got, c.want)
		}
	}
}

// sortOptions reads SORT's flags past the arguments of BY, GET, LIMIT and
// STORE (a pattern spelled "ALPHA" is a pattern, not the flag).
func TestSortOptions(t *testing.T) {
	ok, alpha, by, limit, get, desc, store := sortOptions([]string{"SORT", "k", "BY", "ALPHA", "LIMIT", "0", "1", "GET", "DESC", "STORE", "d"})
	if !ok || alpha || !by || !limit || !get || desc || store != "d" {
		t.Fatalf("got ok=%v alpha=%v by=%v limit=%v get=%v desc=%v store=%q", ok, alpha, by, limit, get, desc, store)
	}
	if ok, _, _, _, _, _, _ := sortOptions([]string{"LRANGE", "k", "0", "-1"}); ok {
		t.Fatal("LRANGE read as a SORT")
	}
}

package store

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// The root causes of issue #13: integer arguments at their limits must
// never overflow into a wrong size, a wrong index or a panic.

const (
	maxI64 = "9223372036854775807"
	minI64 = "-9223372036854775808"
)

// SETRANGE's offset+len overflowed past the item-size check and panicked
// the server on a slice bound.
func TestSetRangeOffsetsNeverOverflow(t *testing.T) {
	s, _ := newTestStore(t)
	g := s.SegmentFor("k")
	g.Put("k", []byte("hello"), nil)
	for _, c := range []struct {
		off, patch, want string
	}{
		{maxI64, "x", "!string exceeds maximum allowed size (proto-max-bulk-len)"},
		{"9223372036854775806", "xy", "!string exceeds maximum allowed size (proto-max-bulk-len)"},
		{strconv.Itoa(MaxStringBytes), "x", "!string exceeds maximum allowed size (proto-max-bulk-len)"},
		{strconv.Itoa(MaxStringBytes - 1), "x", "!ItemTooLarge"}, // within Redis's limit, past the item cap
		{minI64, "x", "!offset is out of range"},
		{"9223372036854775808", "x", "!value is not an integer or out of range"},
		{maxI64, "", "5"}, // nothing to write: the length, whatever the offset
		{"6", "!", "7"},
	} {
		r := run(t, s, kv.CmdSetRange, "k", c.off, c.patch)
		got := flat(r)
		if r.Status != kv.StatusSuccess {
			got = "!" + r.Message
			if r.Message == "" {
				got = "!" + r.Status.String()
			}
		}
		if got != c.want {
			t.Errorf("SETRANGE k %s %q = %s, want %s", c.off, c.patch, got, c.want)
		}
	}
	if v := string(g.Get("k").Value); v != "hello\x00!" {
		t.Fatalf("value after the refusals = %q", v)
	}
}

// GETRANGE clamps like Redis's getrangeCommand (an end before the start of
// the string clamps to 0) and never computes out of range.
func TestStringRangeClampsLikeRedis(t *testing.T) {
	for _, c := range []struct {
		start, end int64
		n          int
		want       string
	}{
		{0, math.MaxInt64, 5, "0:5"}, {math.MinInt64, math.MaxInt64, 5, "0:5"}, {math.MaxInt64, 0, 5, "0:0"},
		{math.MinInt64, math.MinInt64, 5, "0:1"}, {-1, math.MinInt64, 5, "0:0"}, {math.MaxInt64, math.MaxInt64, 5, "0:0"},
		{-3, -1, 5, "2:5"}, {0, 0, 0, "0:0"}, {-1, -2, 5, "0:0"},
	} {
		lo, hi := stringRange(c.start, c.end, c.n)
		if got := strconv.Itoa(lo) + ":" + strconv.Itoa(hi); got != c.want {
			t.Errorf("stringRange(%d, %d, %d) = %s, want %s", c.start, c.end, c.n, got, c.want)
		}
	}
}

// LREM with count MinInt64 negated it into MinInt64 and removed nothing.
func TestLRemMostNegativeCount(t *testing.T) {
	s, _ := newTestStore(t)
	run(t, s, kv.CmdRPush, "l", "a", "b", "a", "a")
	if r := run(t, s, kv.CmdLRem, "l", minI64, "a"); r.Int != 3 {
		t.Fatalf("LREM l %s a = %v, want 3", minI64, flat(r))
	}
}

// A TTL past year 2262 (Redis accepts millions of years) wrapped into the
// past and expired the key at once; it now ends at the last instant the
// store can represent.
func TestHugeTTLSaturatesInsteadOfExpiring(t *testing.T) {
	if got := expiryAt(time.Now().UnixNano(), time.Duration(math.MaxInt64)); got != math.MaxInt64 {
		t.Fatalf("expiryAt saturates: %d", got)
	}
	if got := expiryAt(1000, time.Second); got != 1000+int64(time.Second) {
		t.Fatalf("expiryAt(1000, 1s) = %d", got)
	}
	s, _ := newTestStore(t)
	g := s.SegmentFor("k")
	g.Put("k", []byte("v"), &kv.PutOptions{TTL: time.Duration(math.MaxInt64)})
	if r := g.TimeToLive("k"); r.Status != kv.StatusSuccess || r.TTL < 200*365*24*time.Hour {
		t.Fatalf("TTL after a 292-year Put = %v %v", r.Status, r.TTL)
	}
	if r := g.Expire("k", time.Duration(math.MaxInt64)); r.Status != kv.StatusSuccess {
		t.Fatalf("Expire: %v", r.Status)
	}
	if r := g.Get("k"); r.Status != kv.StatusSuccess {
		t.Fatalf("the key expired at once: %v", r.Status)
	}
}

// INCRBYFLOAT and HINCRBYFLOAT compute in Redis's long double and print
// like its "%.17Lf".
func TestIncrByFloatIsRedisLongDouble(t *testing.T) {
	for _, c := range []struct {
		cur   string // "" = absent
		delta string
		want  string
	}{
		{"10", "0.1", "10.1"}, // float64 would print 10.09999999999999964
		{"", "17179869185.5", "17179869185.5"},
		{"10.1", "-10.1", "0"},
		{"", "1e308", redis1e308}, // Redis 7's reply, digit for digit
		{"", "5.0e3", "5000"},
		{"", "3.0e-300", "0"},
		{"", "-0", "0"},
		{"", "0x10", "16"},
		{"", "inf", "!increment would produce NaN or Infinity"},
		{"inf", "1", "!increment would produce NaN or Infinity"},
		{"", "nan", "!value is not a valid float"},
		{"", "1e5000", "!value is not a valid float"},
		{"", " 1", "!value is not a valid float"},
		{"", "1_0", "!value is not a valid float"},
		{"x", "1", "!cur"},
	} {
		v, bad, ok := incrLongDouble([]byte(c.cur), c.cur != "", []byte(c.delta), kv.BadRequest("cur"))
		got := string(v)
		if !ok {
			got = "!" + bad.Message
		}
		if got != c.want {
			t.Errorf("%q + %q = %q, want %q", c.cur, c.delta, got, c.want)
		}
	}
}

const redis1e308 = "99999999999999999996685879655845645660560099847415567207797047994921734868838061872100126921888539320446747225054013223152134749593960583597420814430196418767959100019603190778663109604507106667939153395788938914560543563061268364901618630217086589253444881623791300855757318142424510452728255046343928578048"

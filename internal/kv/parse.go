package kv

import (
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// ParseInt parses a decimal integer exactly like Redis's string2ll: an
// optional '-', no '+', no leading zeros ("02", "-0" refused), no spaces,
// within int64. Every integer argument and stored counter is read with it,
// so "+2" or "007" get Redis's "value is not an integer" everywhere.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg, i := false, 0
	if b[0] == '-' {
		neg, i = true, 1
		if len(b) == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' || v > (math.MaxUint64)/10 {
			return 0, false
		}
		v *= 10
		if v > math.MaxUint64-uint64(c-'0') {
			return 0, false
		}
		v += uint64(c - '0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true // -(1<<63) wraps to itself: MinInt64
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// Strtod reads b whole the way C's strtod reads a string that must be
// consumed to its end (Redis's eptr[0] == '\0' check): leading spaces
// skipped, an optional sign, decimal or hexadecimal digits (0x10, 0x1p3),
// "inf"/"infinity"/"nan" in any case. ok is false when characters remain;
// overflow is true when the magnitude does not fit (the value is then
// ±Inf, as strtod's HUGE_VAL); underflow is true where glibc's strtod sets
// ERANGE for a small number: a nonzero value below the normal range that
// no double equals (the value is then 0 or subnormal — "5e-324", "1e-400";
// not "0x1p-1074", exact). A decimal equal to a subnormal exactly (it
// takes hundreds of digits) is reported too: not worth exact arithmetic. Like strtod over a C string it stops at
// the first NUL byte. The empty string reads as 0 (strtod consumes
// nothing and stops at the end).
func Strtod(b []byte) (f float64, ok, overflow, underflow bool) {
	if f, ok := plainDecimal(b); ok {
		return f, true, false, false // 64 bytes at most: never below 1e-64
	}
	return strtodGeneral(b)
}

// plainDecimal reads the common shape of a number argument — an optional
// sign, digits, at most one '.', nothing else, at most 64 bytes — as
// strtod reads it, without the general path's checks for spaces, NUL
// bytes, infinities, hexadecimal and underscores (6 % of a pipelined ZADD,
// which parses each score twice). An integer of up to 15 digits is exact
// in a float64; anything else of this shape is what strconv.ParseFloat
// reads the same way strtod does (both round correctly). ok is false when
// b is not of that shape or overflows: the general path decides then.
func plainDecimal(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 64 {
		return 0, false
	}
	neg, digits, dot := false, 0, false
	i := 0
	if b[0] == '-' || b[0] == '+' {
		neg, i = b[0] == '-', 1
	}
	var n int64
	for _, c := range b[i:] {
		switch {
		case c >= '0' && c <= '9':
			digits++
			if digits <= 15 {
				n = n*10 + int64(c-'0')
			}
		case c == '.' && !dot:
			dot = true
		default:
			return 0, false
		}
	}
	switch {
	case digits == 0:
		return 0, false
	case !dot && digits <= 15:
		f := float64(n)
		if neg {
			f = -f // -0 stays negative zero, as strtod reads "-0"
		}
		return f, true
	}
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil
}

// strtodGeneral is Strtod for every shape plainDecimal does not read.
func strtodGeneral(b []byte) (f float64, ok, overflow, underflow bool) {
	s := string(b)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i] // strtod reads a C string: it ends at the first NUL
	}
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	if s == "" {
		return 0, true, false, false
	}
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return 0, false, false, false
	}
	neg := s[0] == '-'
	switch strings.ToLower(body) {
	case "inf", "infinity":
		if neg {
			return math.Inf(-1), true, false, false
		}
		return math.Inf(1), true, false, false
	case "nan":
		return math.NaN(), true, false, false
	}
	if len(body) == 0 || strings.ContainsAny(body, "_") || strings.ContainsAny(body[:1], "+-") {
		return 0, false, false, false
	}
	hex := len(body) > 1 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')
	if hex {
		if len(body) == 2 {
			return 0, false, false, false // "0x": strtod reads the "0" and stops at the x
		}
		if !strings.ContainsAny(body, "pP") {
			s += "p0" // Go wants the binary exponent strtod makes optional
		}
	} else if strings.ContainsAny(body, "pPxX") {
		return 0, false, false, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
			return f, true, math.IsInf(f, 0), false
		}
		return 0, false, false, false
	}
	return f, true, false, math.Abs(f) < 0x1p-1022 && inexactTiny(body, hex)
}

// inexactTiny reports whether the number (body, without its sign; hex for
// 0x…) that reads as f, 0 or subnormal, is a nonzero value f does not
// equal exactly. A decimal with a nonzero digit is never exact here (see
// Strtod); a hex one is exact when its lowest set bit is at 2^-1074 or
// above — no allocation, whatever the argument's length.
func inexactTiny(body string, hex bool) bool {
	if !hex {
		mant, _, _ := strings.Cut(strings.ToLower(body), "e")
		return strings.ContainsAny(mant, "123456789")
	}
	mant, exp, _ := strings.Cut(strings.ToLower(body[2:]), "p")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	last := strings.LastIndexFunc(digits, func(r rune) bool { return r != '0' })
	if last < 0 {
		return false // zero
	}
	d, _ := strconv.ParseUint(digits[last:last+1], 16, 8)
	// The lowest set bit's exponent: the digit's place, its trailing
	// zero bits, the binary exponent (clamped: beyond ±2^31 it only says
	// "far out of range").
	e, err := strconv.ParseInt(exp, 10, 32)
	if err != nil && exp != "" {
		return !strings.HasPrefix(exp, "+") && !(len(exp) > 0 && exp[0] >= '0' && exp[0] <= '9')
	}
	low := int64(4*(len(intPart)-1-last)) + int64(bits.TrailingZeros64(d)) + e
	return low < -1074
}

// ParseDouble parses a float argument like Redis's getDoubleFromObject:
// not empty, no leading space, the whole text a number for strtod, no
// overflow, not NaN ("inf" and "-inf" are accepted; so is 0x10).
func ParseDouble(b []byte) (float64, bool) {
	if f, ok := plainDecimal(b); ok {
		return f, true // no space, NUL, NaN or overflow in that shape
	}
	if len(b) == 0 || strings.ContainsAny(string(b[:1]), " \t\n\v\f\r") || strings.IndexByte(string(b), 0) >= 0 {
		return 0, false // the whole argument must be the number
	}
	f, ok, overflow, underflow := Strtod(b)
	if !ok || overflow || underflow && f == 0 || math.IsNaN(f) {
		return 0, false // an underflow to zero is refused, a subnormal kept (Redis's getDoubleFromObject)
	}
	return f, true
}

// ParseScoreBound reads a sorted-set score range bound as Redis's
// zslParseRange does: an optional '(' (exclusive), then strtod over the
// rest ("" is 0, 1e309 is +inf, 0x10 is 16, text after a NUL ignored);
// NaN refused. Every BYSCORE path (ZRANGEBYSCORE, ZCOUNT, ZRANGE BYSCORE,
// ZRANGESTORE, ZREMRANGEBYSCORE) reads its bounds with it.
func ParseScoreBound(b []byte) (v float64, exclusive, ok bool) {
	if len(b) > 0 && b[0] == '(' {
		b, exclusive = b[1:], true
	}
	v, ok, _, _ = Strtod(b)
	return v, exclusive, ok && !math.IsNaN(v)
}

// ParseCursor reads a SCAN cursor (SCAN, SSCAN, HSCAN, ZSCAN) as Redis's
// strtoul does: up to a NUL byte, an optional sign ("-1" wraps to
// 2^64-1), decimal digits, no leading space, within 64 bits; the empty
// cursor is 0.
func ParseCursor(b []byte) (uint64, bool) {
	s := string(b)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i] // strtoul reads a C string
	}
	if s == "" {
		return 0, true
	}
	neg := s[0] == '-'
	if neg || s[0] == '+' {
		s = s[1:]
	}
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// IsOption reports whether argument b is the option name opt ignoring
// ASCII case: Redis's strcasecmp, byte by byte. Not strings.EqualFold,
// which folds Unicode (a Kelvin sign would stand for K, a long s for S,
// where Redis answers a syntax error), and without converting b, which
// copied an argument of any size once for every option it was compared
// with.
func IsOption(b []byte, opt string) bool {
	if len(b) != len(opt) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], opt[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

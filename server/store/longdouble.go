package store

import (
	"math/big"
	"strings"

	"github.com/zaris-io/zaris/internal/kv"
)

// INCRBYFLOAT and HINCRBYFLOAT compute in Redis's long double (x86's
// 80-bit extended: a 64-bit mantissa, exponents up to ±16383) and print the
// sum with "%.17Lf" less its trailing zeros. A float64 would answer
// differently: 10 + 0.1 prints 10.1 in extended precision but
// 10.09999999999999964 in double, 1e308 prints as its 309 digits, and
// 1e308 + 1e308 still fits. big.Float at 64 bits rounding to nearest even
// is that arithmetic.

const ldPrec = 64

// ldMax is LDBL_MAX: (2^64 − 1) · 2^(16384−64).
var ldMax = func() *big.Float {
	m := new(big.Float).SetPrec(ldPrec).SetUint64(^uint64(0))
	return m.SetMantExp(m, 16384-64)
}()

// maxLongDoubleChars is Redis's MAX_LONG_DOUBLE_CHARS: a longer argument is
// not a number.
const maxLongDoubleChars = 5 << 10

// parseLongDouble parses b as Redis's string2ld does (strtold, then: no
// leading space, no trailing bytes, not NaN, not out of range).
func parseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) > maxLongDoubleChars {
		return nil, false
	}
	s := string(b)
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return nil, false
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		return new(big.Float).SetInf(s[0] == '-'), true
	}
	base := 10
	if len(body) > 1 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		base = 0 // hexadecimal mantissa, binary 'p' exponent
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		ok := c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' ||
			base == 0 && (c == 'x' || c == 'X' || c == 'p' || c == 'P' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')
		if !ok {
			return nil, false
		}
	}
	f, _, err := big.ParseFloat(s, base, ldPrec, big.ToNearestEven)
	if err != nil || f.IsInf() {
		return nil, false
	}
	if new(big.Float).Abs(f).Cmp(ldMax) > 0 {
		return nil, false // strtold: ERANGE with HUGE_VALL
	}
	if f.Sign() != 0 && f.MantExp(nil) < -16444 {
		return nil, false // below the smallest subnormal: strtold underflows to 0 with ERANGE
	}
	return f, true
}

// incrLongDouble adds delta to cur (0 when !has) and returns the sum as Redis
// prints it, or the error Redis answers.
func incrLongDouble(cur []byte, has bool, delta []byte, curErr kv.Reply) ([]byte, kv.Reply, bool) {
	d, ok := parseLongDouble(delta)
	if !ok {
		return nil, errNotFloat, false
	}
	sum := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven)
	if has {
		c, ok := parseLongDouble(cur)
		if !ok {
			return nil, curErr, false
		}
		if c.IsInf() || d.IsInf() {
			return nil, errIncrNaNInf, false
		}
		sum.Add(c, d)
	} else {
		if d.IsInf() {
			return nil, errIncrNaNInf, false
		}
		sum.Set(d)
	}
	if new(big.Float).Abs(sum).Cmp(ldMax) > 0 {
		return nil, errIncrNaNInf, false
	}
	return formatLongDouble(sum), kv.Reply{}, true
}

var errIncrNaNInf = kv.BadRequest("increment would produce NaN or Infinity")

// formatLongDouble is Redis's ld2string in human mode: "%.17Lf", trailing
// zeros and a trailing point removed, "-0" printed "0".
func formatLongDouble(f *big.Float) []byte {
	s := f.Text('f', 17)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return []byte(s)
}

package kv

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseIntIsString2ll(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"7", 7, true}, {"-7", -7, true}, {"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true}, {"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
		{"18446744073709551615", 0, false}, {"+2", 0, false}, {"02", 0, false}, {"-0", 0, false}, {" 1", 0, false},
		{"1 ", 0, false}, {"", 0, false}, {"-", 0, false}, {"1.5", 0, false}, {"0x10", 0, false},
	} {
		got, ok := ParseInt([]byte(c.in))
		if ok != c.ok || got != c.want {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestStrtodAndParseDouble(t *testing.T) {
	for _, c := range []struct {
		in               string
		want             float64
		strtodOK, double bool
	}{
		{"1.5", 1.5, true, true}, {"-2", -2, true, true}, {"0x10", 16, true, true}, {"0x1p3", 8, true, true},
		{"inf", math.Inf(1), true, true}, {"-Infinity", math.Inf(-1), true, true}, {"+inf", math.Inf(1), true, true},
		{"1e309", math.Inf(1), true, false}, {"", 0, true, false}, {" 1", 1, true, false}, {"1 ", 0, false, false},
		{"1.5e", 0, false, false}, {"x", 0, false, false}, {".5", 0.5, true, true}, {"5.", 5, true, true},
		{"\x00\xff", 0, true, false}, {"2\x00x", 2, true, false}, {"1_0", 0, false, false}, {"0x", 0, false, false},
	} {
		f, ok, _, _ := Strtod([]byte(c.in))
		if ok != c.strtodOK || ok && f != c.want {
			t.Errorf("Strtod(%q) = %v, %v; want %v, %v", c.in, f, ok, c.want, c.strtodOK)
		}
		d, ok := ParseDouble([]byte(c.in))
		if ok != c.double || ok && d != c.want {
			t.Errorf("ParseDouble(%q) = %v, %v; want %v, %v", c.in, d, ok, c.want, c.double)
		}
	}
	if f, ok, _, _ := Strtod([]byte("nan")); !ok || !math.IsNaN(f) {
		t.Errorf("Strtod(nan) = %v %v", f, ok)
	}
	if _, ok := ParseDouble([]byte("nan")); ok {
		t.Error("ParseDouble accepts nan")
	}
}

func TestFormatFloatUsesPercentGNotation(t *testing.T) {
	for in, want := range map[float64]string{
		0.1: "0.1", 4294967296: "4294967296", 1e16: "10000000000000000", 1e17: "1e+17", 1.5e-5: "1.5e-05",
		0.0001: "0.0001", -3.25: "-3.25", 0: "0", math.Inf(1): "inf", math.Inf(-1): "-inf", 17179869185.5: "17179869185.5",
	} {
		if got := string(FormatFloat(in)); got != want {
			t.Errorf("FormatFloat(%v) = %s, want %s", in, got, want)
		}
	}
}

func TestParseScoreBoundIsZslParseRange(t *testing.T) {
	for _, c := range []struct {
		in        string
		want      float64
		exclusive bool
		ok        bool
	}{
		{"1.5", 1.5, false, true}, {"(1.5", 1.5, true, true}, {"", 0, false, true}, {"(", 0, true, true},
		{"1e309", math.Inf(1), false, true}, {"-1e309", math.Inf(-1), false, true}, {"(-inf", math.Inf(-1), true, true},
		{"0x10", 16, false, true}, {"\x00\xff", 0, false, true}, {" 1", 1, false, true}, {"nan", 0, false, false},
		{"(nan", 0, true, false}, {"x", 0, false, false}, {"((1", 0, true, false}, {"1 ", 0, false, false},
	} {
		got, ex, ok := ParseScoreBound([]byte(c.in))
		if ok != c.ok || ex != c.exclusive || ok && got != c.want {
			t.Errorf("ParseScoreBound(%q) = %v, %v, %v; want %v, %v, %v", c.in, got, ex, ok, c.want, c.exclusive, c.ok)
		}
	}
}

func TestParseCursorIsStrtoul(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"", 0, true}, {"\x00\xff", 0, true}, {"12\x00x", 12, true}, {"-1", math.MaxUint64, true},
		{"+2", 2, true}, {"18446744073709551615", math.MaxUint64, true}, {"18446744073709551616", 0, false},
		{" 1", 0, false}, {"1.5", 0, false}, {"x", 0, false}, {"-", 0, false},
	} {
		got, ok := ParseCursor([]byte(c.in))
		if ok != c.ok || got != c.want {
			t.Errorf("ParseCursor(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// FuzzStrtodPlainDecimal: the plain-decimal fast path reads every input it
// accepts exactly as the general path does (the same bits: negative zero,
// rounding), and an input it refuses still gets the general path's answer.
func FuzzStrtodPlainDecimal(f *testing.F) {
	for _, s := range []string{"0", "-0", "+0", "7", "-7", "123456789012345", "1234567890123456", "99999999999999999999",
		"1.5", "-.5", "5.", ".", "-", "+", "1e5", "0x10", " 1", "1 ", "inf", "1..2", "00012", "-000", "1" + string(make([]byte, 70))} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wantOK, wantOver, wantUnder := strtodGeneral(b)
		got, ok := plainDecimal(b)
		if ok && (!wantOK || wantOver || wantUnder || math.Float64bits(got) != math.Float64bits(want)) {
			t.Fatalf("plainDecimal(%q) = %v (bits %x); the general path: %v (bits %x), ok %v, overflow %v",
				b, got, math.Float64bits(got), want, math.Float64bits(want), wantOK, wantOver)
		}
		f, fok, fover, funder := Strtod(b)
		if fok != wantOK || fover != wantOver || funder != wantUnder || fok && math.Float64bits(f) != math.Float64bits(want) && !(math.IsNaN(f) && math.IsNaN(want)) {
			t.Fatalf("Strtod(%q) = %v %v %v, the general path %v %v %v", b, f, fok, fover, want, wantOK, wantOver)
		}
	})
}

// BenchmarkParseDouble: a ZADD score as redis-benchmark sends it (an
// integer), a decimal, and a shape only the general path reads.
func BenchmarkParseDouble(b *testing.B) {
	for _, in := range []string{"52378", "3.14159", "1e10"} {
		b.Run(in, func(b *testing.B) {
			arg := []byte(in)
			for b.Loop() {
				if _, ok := ParseDouble(arg); !ok {
					b.Fatal(in)
				}
			}
		})
	}
}

// TestStrtodUnderflowAsGlibc: the ERANGE of a small number, as redis-server
// (glibc's strtod) showed it on 2026-12-07 — SORT refuses any ERANGE, a
// score (getDoubleFromObject) only an underflow to zero.
func TestStrtodUnderflowAsGlibc(t *testing.T) {
	for _, c := range []struct {
		in          string
		underflow   bool
		parseDouble bool // ParseDouble accepts it
	}{
		{"5e-324", true, true}, // the smallest subnormal, inexact: SORT refuses, ZADD keeps it
		{"-5e-324", true, true},
		{"4.9406564584124654e-324", true, true},
		{"1e-310", true, true},
		{"2.2250738585072011e-308", true, true},  // just below the normal range
		{"2.2250738585072014e-308", false, true}, // the smallest normal
		{"1e-400", true, false},                  // to zero: both refuse
		{"-1e-400", true, false},
		{"0x1p-1080", true, false},
		{"0x1p-1074", false, true}, // exact subnormals
		{"0x1.8p-1070", false, true},
		{"0x1p-1022", false, true},
		{"0x1.00000000000001p-1070", true, true}, // more bits than a subnormal holds
		{"0e-400", false, true},                  // exact zeros
		{"0.0", false, true},
		{"-0", false, true},
		{"0x0p-2000", false, true},
		{"1e308", false, true},
		{"1e309", false, false}, // overflow, not underflow
		{"inf", false, true},
	} {
		_, ok, _, under := Strtod([]byte(c.in))
		if !ok || under != c.underflow {
			t.Errorf("Strtod(%q): ok %v, underflow %v; want underflow %v", c.in, ok, under, c.underflow)
		}
		if _, pd := ParseDouble([]byte(c.in)); pd != c.parseDouble {
			t.Errorf("ParseDouble(%q) accepted %v, want %v", c.in, pd, c.parseDouble)
		}
	}
}

// TestHexUnderflowExactness checks inexactTiny's bit arithmetic against
// exact big.Float arithmetic on random hex numbers around the subnormal
// range.
func TestHexUnderflowExactness(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const hexDigits = "0123456789abcdef"
	for range 20000 {
		var b strings.Builder
		b.WriteString("0x")
		for range 1 + r.IntN(3) {
			b.WriteByte(hexDigits[r.IntN(16)])
		}
		if r.IntN(2) == 0 {
			b.WriteByte('.')
			for range r.IntN(18) {
				b.WriteByte(hexDigits[r.IntN(16)])
			}
		}
		fmt.Fprintf(&b, "p%d", -1000-r.IntN(150))
		s := b.String()
		f, ok, _, under := Strtod([]byte(s))
		if !ok {
			t.Fatalf("Strtod(%q) not ok", s)
		}
		exact, _, err := big.ParseFloat(s, 0, 2048, big.ToNearestEven)
		if err != nil {
			t.Fatal(err)
		}
		want := math.Abs(f) < 0x1p-1022 && exact.Cmp(new(big.Float).SetFloat64(f)) != 0
		if under != want {
			t.Fatalf("Strtod(%q) = %v: underflow %v, want %v", s, f, under, want)
		}
	}
}

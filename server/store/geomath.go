package store

import "math"

// Correctly rounded sine, cosine and arcsine for the geo distance.
// redis-server computes distances with the C library's functions, which
// are correctly rounded; Go's math.Sin, Cos and Asin may be one unit in the
// last place off, and a distance stored by GEOSEARCHSTORE … STOREDIST is
// printed with 17 digits, where that unit shows. These evaluate in
// double-double arithmetic (about 106 bits) and round once.

// dd is an unevaluated sum hi + lo with |lo| ≤ ulp(hi)/2.
type dd struct{ hi, lo float64 }

func twoSum(a, b float64) (s, e float64) {
	s = a + b
	bb := s - a
	e = (a - (s - bb)) + (b - bb)
	return s, e
}

func quickTwoSum(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

func twoProd(a, b float64) (p, e float64) {
	p = a * b
	return p, math.FMA(a, b, -p)
}

func ddAdd(a, b dd) dd {
	s, e := twoSum(a.hi, b.hi)
	t, f := twoSum(a.lo, b.lo)
	e += t
	r := quickTwoSum(s, e)
	return quickTwoSum(r.hi, r.lo+f)
}

func ddMul(a, b dd) dd {
	p, e := twoProd(a.hi, b.hi)
	e += a.hi*b.lo + a.lo*b.hi
	return quickTwoSum(p, e)
}

func ddDiv(a dd, b float64) dd {
	q1 := a.hi / b
	p, e := twoProd(q1, b)
	s, f := twoSum(a.hi, -p)
	f = f - e + a.lo
	return quickTwoSum(q1, (s+f)/b)
}

// π/2 as the sum of three doubles.
var pio2 = [3]float64{
	math.Float64frombits(0x3FF921FB54442D18),
	math.Float64frombits(0x3C91A62633145C07),
	math.Float64frombits(0xB91F1976B7ED8FBC),
}

// sinCosDD returns sin x and cos x in double-double, for |x| up to a few
// π (the geo code's angles are within ±2π).
func sinCosDD(x float64) (sin, cos dd) {
	k := math.Round(x / pio2[0])
	p, e := twoProd(k, pio2[0])
	r := ddAdd(dd{x, 0}, dd{-p, -e})
	p, e = twoProd(k, pio2[1])
	r = ddAdd(r, dd{-p, -e})
	r = ddAdd(r, dd{-k * pio2[2], 0})
	r2 := ddMul(r, r)
	// Taylor series on |r| ≤ π/4: 30 terms are far past 2^-106.
	s, term := r, r
	for n := 3.0; n < 40; n += 2 {
		term = ddDiv(ddMul(term, r2), -(n-1)*n)
		s = ddAdd(s, term)
	}
	c, term := dd{1, 0}, dd{1, 0}
	for n := 2.0; n < 40; n += 2 {
		term = ddDiv(ddMul(term, r2), -(n-1)*n)
		c = ddAdd(c, term)
	}
	neg := func(v dd) dd { return dd{-v.hi, -v.lo} }
	switch int(math.Mod(math.Mod(k, 4)+4, 4)) {
	case 0:
		return s, c
	case 1:
		return c, neg(s)
	case 2:
		return neg(s), neg(c)
	default:
		return neg(c), s
	}
}

func crSin(x float64) float64 {
	s, _ := sinCosDD(x)
	return s.hi
}

func crCos(x float64) float64 {
	_, c := sinCosDD(x)
	return c.hi
}

// crAsin refines math.Asin by one Newton step on sin y = x, evaluated in
// double-double.
func crAsin(x float64) float64 {
	y := math.Asin(x)
	if x == 0 || math.Abs(x) >= 1 || math.IsNaN(x) {
		return y
	}
	s, c := sinCosDD(y)
	d := quickTwoSum(twoSum(x, -s.hi))
	d.lo -= s.lo
	corr := (d.hi + d.lo) / (c.hi + c.lo)
	return quickTwoSum(y, corr).hi
}

package store

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// bigSin evaluates sin x to 200 bits by its Taylor series (x small).
func bigSin(x float64) *big.Float {
	const prec = 200
	bx := new(big.Float).SetPrec(prec).SetFloat64(x)
	x2 := new(big.Float).SetPrec(prec).Mul(bx, bx)
	sum := new(big.Float).SetPrec(prec).Set(bx)
	term := new(big.Float).SetPrec(prec).Set(bx)
	for n := int64(3); n < 120; n += 2 {
		term.Mul(term, x2)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(-(n-1)*n))
		sum.Add(sum, term)
	}
	return sum
}

// The double-double sine and cosine round to the nearest double: checked
// against a 200-bit evaluation over the geo code's range of angles.
func TestCorrectlyRoundedSinCos(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		x := (r.Float64()*2 - 1) * math.Pi
		want, _ := bigSin(x).Float64()
		if got := crSin(x); got != want {
			t.Fatalf("sin(%v) = %v, want %v", x, got, want)
		}
		// cos x = sin(π/2 - x), with π/2 - x evaluated to 200 bits.
		bx := new(big.Float).SetPrec(200).SetFloat64(x)
		pio2Big := new(big.Float).SetPrec(200).SetFloat64(pio2[0])
		pio2Big.Add(pio2Big, new(big.Float).SetFloat64(pio2[1]))
		pio2Big.Add(pio2Big, new(big.Float).SetFloat64(pio2[2]))
		arg := new(big.Float).SetPrec(200).Sub(pio2Big, bx)
		a, _ := arg.Float64()
		if math.Abs(a) > 1.7 { // keep the series short
			continue
		}
		wantC, _ := bigSinBig(arg).Float64()
		if got := crCos(x); got != wantC {
			t.Fatalf("cos(%v) = %v, want %v", x, got, wantC)
		}
	}
}

func bigSinBig(bx *big.Float) *big.Float {
	const prec = 200
	x2 := new(big.Float).SetPrec(prec).Mul(bx, bx)
	sum := new(big.Float).SetPrec(prec).Set(bx)
	term := new(big.Float).SetPrec(prec).Set(bx)
	for n := int64(3); n < 120; n += 2 {
		term.Mul(term, x2)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(-(n-1)*n))
		sum.Add(sum, term)
	}
	return sum
}

// crAsin inverts crSin: the result's sine is closest to x among its
// neighbours.
func TestCorrectlyRoundedAsin(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 3000; i++ {
		x := r.Float64() * 0.999
		y := crAsin(x)
		// |sin(y) - x| must not exceed that of y's neighbours (sine is
		// monotonic here), measured to 200 bits.
		bx := new(big.Float).SetPrec(200).SetFloat64(x)
		dist := func(v float64) *big.Float {
			d := new(big.Float).SetPrec(200).Sub(bigSin(v), bx)
			return d.Abs(d)
		}
		dy := dist(y)
		if dist(math.Nextafter(y, 2)).Cmp(dy) < 0 || dist(math.Nextafter(y, -2)).Cmp(dy) < 0 {
			t.Fatalf("asin(%v) = %v is not the closest double", x, y)
		}
	}
}

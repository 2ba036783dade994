package rdb

// LZF, as Redis compresses RDB strings longer than 20 bytes with it. The
// stream is a sequence of runs, each starting with a control byte c:
//   - c < 32: a literal of c+1 bytes follows;
//   - otherwise a back-reference: length c>>5 (7 means "add the next byte"),
//     plus 2; offset ((c&31)<<8 | next byte) + 1 back from the output's end.
//
// A back-reference may overlap the bytes it produces (a run of one byte
// repeated is a reference to 1 byte back), so it is copied byte by byte when
// it does.

// lzfMaxRatio bounds what n compressed bytes can produce: the longest run,
// 7+255+2 = 264 bytes, costs 3 bytes of input.
const lzfMaxRatio = 88

// lzfMaxLen caps one decompressed string, whatever the payload claims.
const lzfMaxLen = 512 << 20

// lzfDecompress fills out from in and reports whether in was a well-formed
// stream producing exactly len(out) bytes.
func lzfDecompress(in, out []byte) bool {
	ip, op := 0, 0
	for ip < len(in) {
		c := int(in[ip])
		ip++
		if c < 32 {
			n := c + 1
			if n > len(in)-ip || n > len(out)-op {
				return false
			}
			copy(out[op:], in[ip:ip+n])
			ip += n
			op += n
			continue
		}
		n := c >> 5
		if n == 7 {
			if ip >= len(in) {
				return false
			}
			n += int(in[ip])
			ip++
		}
		if ip >= len(in) {
			return false
		}
		ref := op - (c&31)<<8 - 1 - int(in[ip])
		ip++
		n += 2
		if ref < 0 || n > len(out)-op {
			return false
		}
		if ref+n <= op {
			copy(out[op:op+n], out[ref:ref+n])
		} else {
			for i := range n {
				out[op+i] = out[ref+i]
			}
		}
		op += n
	}
	return op == len(out)
}

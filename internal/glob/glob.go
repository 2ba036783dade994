// Package glob matches Redis-style glob patterns (KEYS, SCAN MATCH,
// PSUBSCRIBE): '*' any run of bytes, '?' one byte, '[abc]' a class with
// ranges ('[a-z]') and negation ('[^a]'), '\' escapes the next byte.
// Matching is on bytes, like Redis. It is a leaf package.
package glob

// Match reports whether s matches pattern.
func Match(pattern, s string) bool {
	// Iterative with one backtrack point for the last '*': linear in
	// practice, and never recursive, so hostile patterns cannot blow the stack.
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		if p < len(pattern) {
			switch c := pattern[p]; c {
			case '*':
				for p < len(pattern) && pattern[p] == '*' {
					p++
				}
				if p == len(pattern) {
					return true
				}
				starP, starI = p, i
				continue
			case '?':
				p++
				i++
				continue
			case '[':
				if end, ok := matchClass(pattern, p, s[i]); ok {
					p = end
					i++
					continue
				}
			case '\\':
				if p+1 < len(pattern) {
					if pattern[p+1] == s[i] {
						p += 2
						i++
						continue
					}
				} else if s[i] == '\\' {
					p++
					i++
					continue
				}
			default:
				if c == s[i] {
					p++
					i++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starI++
		p, i = starP, starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchClass matches byte c against the class starting at pattern[p]=='['.
// It returns the index just past the class and whether c is in it. Like
// Redis, a class without its ']' runs to the end of the pattern.
func matchClass(pattern string, p int, c byte) (end int, ok bool) {
	p++
	negate := false
	if p < len(pattern) && pattern[p] == '^' {
		negate = true
		p++
	}
	matched := false
	for first := true; p < len(pattern); first = false {
		if pattern[p] == ']' && !first {
			return p + 1, matched != negate
		}
		lo := pattern[p]
		if lo == '\\' && p+1 < len(pattern) {
			p++
			lo = pattern[p]
		}
		if p+2 < len(pattern) && pattern[p+1] == '-' && pattern[p+2] != ']' {
			hi := pattern[p+2]
			if hi == '\\' && p+3 < len(pattern) {
				p++
				hi = pattern[p+2]
			}
			if lo > hi {
				lo, hi = hi, lo
			}
			if c >= lo && c <= hi {
				matched = true
			}
			p += 3
			continue
		}
		if c == lo {
			matched = true
		}
		p++
	}
	return len(pattern), matched != negate
}

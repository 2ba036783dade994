package resp

// isLiteralPattern reports whether pattern matches only itself (no glob
// metacharacter), so KEYS can answer with one lookup.
func isLiteralPattern(pattern []byte) bool {
	for _, c := range pattern {
		switch c {
		case '*', '?', '[', '\\':
			return false
		}
	}
	return true
}

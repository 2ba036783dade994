package kv

import (
	"fmt"
	"strings"
)

// FormatBytes renders a byte count for people: "1000 B", "4 MiB",
// "1.5 GiB", "1.95 KiB" (powers of 1024, at most two decimals). Messages that
// name a limit use it so the user can compare it with the flag they set.
func FormatBytes(n int64) string {
	units := [...]string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	if n < 1024 && n > -1024 {
		return fmt.Sprintf("%d B", n)
	}
	abs := n
	if abs < 0 {
		abs = -abs
	}
	i, size := 0, int64(1024)
	for i+1 < len(units) && abs/size >= 1024 {
		i++
		size *= 1024
	}
	if n%size == 0 {
		return fmt.Sprintf("%d %s", n/size, units[i])
	}
	s := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", float64(n)/float64(size)), "0"), ".")
	return s + " " + units[i]
}

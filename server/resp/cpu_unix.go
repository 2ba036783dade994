//go:build unix

package resp

import (
	"syscall"
	"time"
)

// processCPU is the process's system and user CPU time (INFO cpu).
func processCPU() (sys, user time.Duration) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Stime.Nano()), time.Duration(ru.Utime.Nano())
}

//go:build !unix

package resp

import "time"

// processCPU is not measured on this platform: INFO cpu reports zero.
func processCPU() (sys, user time.Duration) { return 0, 0 }

// Package testscale is the one knob that stretches every test deadline and
// every test-cluster timing: ZARIS_TEST_TIME_SCALE, a float (default 1). A
// machine that is slower or busier than a developer's idle laptop — a CI
// runner shared with other jobs, `make test-stress` with a CPU hog — sets it
// above 1; nothing else in the tests knows about load.
//
// It is a leaf package so that every test helper can use it whatever it
// imports (internal/testenv imports the SDK, server/clustertest must not).
// Only tests and test support import it.
package testscale

import (
	"os"
	"strconv"
	"sync"
	"time"
)

// EnvVar names the environment variable read once per process.
const EnvVar = "ZARIS_TEST_TIME_SCALE"

var factor = sync.OnceValue(func() float64 {
	f, err := strconv.ParseFloat(os.Getenv(EnvVar), 64)
	if err != nil || f <= 0 {
		return 1 // unset or unusable: a knob must not make deadlines vanish
	}
	return f
})

// Factor is the scale in force: ZARIS_TEST_TIME_SCALE when it is a positive
// number, else 1.
func Factor() float64 { return factor() }

// D scales a test duration (a deadline, a test-cluster timing).
func D(d time.Duration) time.Duration { return time.Duration(float64(d) * factor()) }

// TB is the part of testing.TB Eventually needs.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Eventually polls cond every interval until it holds, failing t with what
// once within, scaled, has passed: the one shape of a wait in the tests (a
// poll with a deadline, never a sleep as synchronisation).
func Eventually(t TB, within, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	within = D(within)
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(interval) // poll interval
	}
}

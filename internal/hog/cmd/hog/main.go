// Command hog keeps the CPUs busy until it is stopped: 2 × the CPU count of
// spinning goroutines by default (-workers), for `make test-stress`. It also
// stops when its parent exits (the shell that started it died without
// stopping it) or after -max (a bound, so a forgotten hog cannot burn a
// shared machine for ever).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/zaris-io/zaris/internal/hog"
)

func main() {
	workers := flag.Int("workers", 2*runtime.NumCPU(), "spinning goroutines")
	maxRun := flag.Duration("max", 2*time.Hour, "stop after this long whatever happens")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *maxRun)
	defer cancel()
	parent := os.Getppid()
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for range t.C {
			if os.Getppid() != parent { // orphaned: nobody will stop us
				cancel()
				return
			}
		}
	}()
	fmt.Fprintf(os.Stderr, "hog: %d spinning goroutines on %d CPUs (pid %d)\n", *workers, runtime.NumCPU(), os.Getpid())
	hog.Spin(ctx, *workers)
}

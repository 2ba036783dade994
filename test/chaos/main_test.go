package chaos

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"
)

// The process tests wait on production timings (grace windows, stalls,
// heals) far more than they compute: all but TestSlowNodeIsNotFailedOver
// (its CPU hog would starve the others) run in parallel, two at a time
// (-parallel = GOMAXPROCS), which halves the package's wall time.
//
// The process tests share one build of each binary: seven tests building
// the same server each cost a link, and the parallel ones would link at
// once.
var (
	buildsDir  string
	buildsOnce = map[string]*sync.Once{"zaris-server": {}, "zarisctl": {}}
	builtBin   = map[string]string{}
	buildErr   = map[string]error{}
	buildsMu   sync.Mutex
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "zaris-chaos-bin-")
	if err != nil {
		panic(err)
	}
	buildsDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// built returns the path of ./cmd/name built once for the whole package.
func built(t *testing.T, name string) string {
	t.Helper()
	buildsOnce[name].Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		bin, err := buildCommand(ctx, buildsDir, name)
		buildsMu.Lock()
		builtBin[name], buildErr[name] = bin, err
		buildsMu.Unlock()
	})
	buildsMu.Lock()
	defer buildsMu.Unlock()
	if err := buildErr[name]; err != nil {
		t.Fatal(err)
	}
	return builtBin[name]
}

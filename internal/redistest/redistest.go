// Package redistest runs a real redis-server for the tests that compare
// Zaris with Redis or hand Redis what Zaris wrote (the RESP oracle, the
// DUMP payload codec, zaris-bench's RESP mode). It owns only starting and
// stopping the process.
package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Start runs redis-server on a free loopback port for the test's lifetime,
// with extra arguments after the defaults (no snapshots, no AOF, a
// temporary --dir that is also its working directory: Redis writes where
// it runs), and returns its address. It skips the test only when
// redis-server is not installed; a port another process takes between its
// choice and Redis's bind is retried with another.
func Start(t testing.TB, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (apt-get install -y redis-server):", err)
	}
	dir := t.TempDir()
	var lastErr error
	for attempt := range 4 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		_ = ln.Close()
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("redis-%d.log", attempt)))
		if err != nil {
			t.Fatal(err)
		}
		args := append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--daemonize", "no"}, extra...)
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{}) // closed when the process is gone
		go func() { _ = cmd.Wait(); _ = logf.Close(); close(exited) }()
		addr := net.JoinHostPort("127.0.0.1", port)
		if lastErr = waitListening(addr, exited); lastErr == nil {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
			})
			return addr
		}
		_ = cmd.Process.Kill()
		<-exited
		log, _ := os.ReadFile(logf.Name())
		lastErr = fmt.Errorf("%w; log:\n%s", lastErr, log)
	}
	t.Fatalf("redis-server did not start: %v", lastErr)
	return ""
}

// waitListening polls addr until it accepts a connection, the process
// exits (its port was taken: the caller tries another), or 10 s pass.
func waitListening(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("redis-server exited")
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			_ = c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	return errors.New("redis-server not accepting connections after 10 s")
}

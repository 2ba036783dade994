package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/testenv"
)

func noEnv(string) (string, bool) { return "", false }

func TestRunVersionHelpAndBadConfig(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, run([]string{"--version"}, noEnv, &out, &errOut))
	require.True(t, strings.HasPrefix(out.String(), "zaris-server "), out.String())

	out.Reset()
	require.Equal(t, exitOK, run([]string{"--help"}, noEnv, &out, &errOut))
	require.Contains(t, out.String(), "--client-port N")
	require.Contains(t, out.String(), "ZARIS_CLIENT_PORT")

	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--client-port", "abc"}, nil, `--client-port="abc": not a port`},
		{nil, map[string]string{"ZARIS_CLIENT_PORT": "abc"}, `ZARIS_CLIENT_PORT="abc": not a port`},
		{[]string{"--tls-cert", "c.pem"}, nil, "tls-cert and tls-key go together"},
		{[]string{"--tls-cert", "/nonexistent/c.pem", "--tls-key", "/nonexistent/k.pem", "--http-port", "-1"}, nil, "tls-cert/tls-key"},
		{[]string{"--no-such-flag"}, nil, "flag provided but not defined"},
	} {
		errOut.Reset()
		env := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		require.Equal(t, exitConfig, run(tc.args, env, io.Discard, &errOut), "%v %v", tc.args, tc.env)
		require.Contains(t, errOut.String(), tc.want)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func buildBinary(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "zaris-server")
	cmd := exec.Command(goBin, "build", "-o", bin, ".")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// TestBinary builds the real zaris-server, runs it on free ports, waits for
// /readyz, stops it with SIGTERM and expects a clean exit.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary: skipped with -short")
	}
	if runtime.GOOS == "windows" {
		t.Skip("SIGTERM cannot be delivered when GOOS is windows")
	}
	bin := buildBinary(t)

	t.Run("serves and stops on SIGTERM", func(t *testing.T) {
		p := startBinary(t, bin)
		base, client, cmd, exited, stderr := p.base, p.client, p.cmd, p.exited, p.stderr

		req, err := http.NewRequest(http.MethodPut, base+"/v1/keys/hello", strings.NewReader("world"))
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode)
		resp, err = client.Get(base + "/v1/keys/hello")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, "world", string(body))

		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		select {
		case <-exited:
			require.NoError(t, *p.waitErr, "exit status after SIGTERM:\n%s", stderr.String())
		case <-time.After(20 * time.Second):
			t.Fatalf("no exit within the deadline after SIGTERM:\n%s", stderr.String())
		}
		logs := stderr.String()
		require.Contains(t, logs, `"msg":"node ready"`)
		require.Contains(t, logs, `"node_id":"bin-test"`)
		require.Contains(t, logs, `"msg":"node stopped"`)
	})

	t.Run("exits 0 after POST /v1/node/decommission", func(t *testing.T) {
		p := startBinary(t, bin)
		resp, err := p.client.Post(p.base+"/v1/node/decommission", "", nil)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
		select {
		case <-p.exited:
			// Exit status 0: a restart-on-failure policy leaves a
			// decommissioned node down.
			require.NoError(t, *p.waitErr, "exit status after a decommission:\n%s", p.stderr.String())
		case <-time.After(30 * time.Second):
			t.Fatalf("no exit within the deadline after the decommission:\n%s", p.stderr.String())
		}
		require.Contains(t, p.stderr.String(), `"msg":"node decommissioned, stopping"`)
	})

	t.Run("bad config exits 2 naming the variable", func(t *testing.T) {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "ZARIS_CLIENT_PORT=abc")
		out, err := cmd.CombinedOutput()
		var exitErr *exec.ExitError
		require.True(t, errors.As(err, &exitErr), "err %v", err)
		require.Equal(t, exitConfig, exitErr.ExitCode())
		require.Contains(t, string(out), `ZARIS_CLIENT_PORT="abc": not a port`)
	})

	t.Run("a taken port exits 1", func(t *testing.T) {
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer taken.Close()
		cmd := exec.Command(bin, "--http-port", fmt.Sprint(taken.Addr().(*net.TCPAddr).Port),
			"--client-port", fmt.Sprint(freePort(t)))
		out, err := cmd.CombinedOutput()
		var exitErr *exec.ExitError
		require.True(t, errors.As(err, &exitErr), "err %v", err)
		require.Equal(t, exitFailed, exitErr.ExitCode())
		require.Contains(t, string(out), "cannot start the node")
	})
}

// binaryProcess is a running zaris-server started by startBinary.
type binaryProcess struct {
	base    string // http://127.0.0.1:PORT
	client  *http.Client
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr *error // set before exited is closed
	stderr  *testenv.SyncBuffer
}

// startBinary runs bin as a single node with JSON logs and waits until it
// is ready; the process is killed at the end of the test if still running.
func startBinary(t *testing.T, bin string) binaryProcess {
	t.Helper()
	httpPort := freePort(t)
	cmd := exec.Command(bin,
		"--client-port", fmt.Sprint(freePort(t)), "--http-port", fmt.Sprint(httpPort),
		"--resp-port", "0", "--peer-port", "-1", "--gossip-port", "-1",
		"--log-format", "json")
	cmd.Env = append(os.Environ(), "ZARIS_NODE_ID=bin-test", "ZARIS_SHUTDOWN_TIMEOUT=10s")
	stderr := &testenv.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	require.NoError(t, cmd.Start())
	waitErr := new(error)
	exited := make(chan struct{})
	go func() { *waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // no-op once it has exited
		<-exited
	})

	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := client.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-exited:
			t.Fatalf("the server exited before it was ready (%v):\n%s", *waitErr, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready within the deadline:\n%s", stderr.String())
		}
	}
	return binaryProcess{base: base, client: client, cmd: cmd, exited: exited, waitErr: waitErr, stderr: stderr}
}

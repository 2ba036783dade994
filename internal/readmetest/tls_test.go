package readmetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testenv"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
)

// The README's TLS section works as written (issue #18: it once assumed a
// server.pem nobody had made): zarisctl cert makes the files, the server
// starts with the README's flags, and redis-cli, curl and the SDK's
// connection string get through with them.
func TestTLSExampleAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real zaris-server (skipped with -short)")
	}
	for _, tool := range []string{"bash", "curl", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the TLS section uses %s, which is not installed (apt-get install -y curl redis-tools)", tool)
		}
	}
	var server []string
	var clients []string
	for _, b := range readBlocks(t, "README.md") {
		if b.marker != "<!-- checked by TestTLSExampleAsWritten -->" {
			continue
		}
		for _, l := range strings.Split(strings.ReplaceAll(b.body, "\\\n", " "), "\n") {
			switch {
			case strings.HasPrefix(l, "bin/zaris-server "):
				server = strings.Fields(l)
			case strings.HasPrefix(l, "#"), strings.TrimSpace(l) == "":
			default:
				clients = append(clients, l)
			}
		}
	}
	if server == nil || len(clients) < 2 {
		t.Fatalf("README.md: no block <!-- checked by TestTLSExampleAsWritten --> with a bin/zaris-server command and client commands (server %q, clients %q)", server, clients)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	must(t, err)
	connString := regexp.MustCompile("`(zariss://127\\.0\\.0\\.1:7861/default\\?[^`]*token=s3cret)`").FindStringSubmatch(string(readme))
	if connString == nil {
		t.Fatal("README.md: no zariss:// connection string with token=s3cret")
	}

	bins := binaries(t)
	dir := t.TempDir()
	cert := exec.Command(filepath.Join(bins, "zarisctl"), "cert", "--dir", "certs")
	cert.Dir = dir
	if out, err := cert.CombinedOutput(); err != nil {
		t.Fatalf("zarisctl cert: %v\n%s", err, out)
	}

	ports := kernelPorts(t, 5)
	toReal := map[string]string{}
	for j, doc := range documentedPorts(0) {
		toReal[strconv.Itoa(doc)] = strconv.Itoa(ports[j])
	}
	args := append(server[1:], "--client-port", strconv.Itoa(ports[0]), "--resp-port", strconv.Itoa(ports[1]),
		"--http-port", strconv.Itoa(ports[2]), "--peer-port", strconv.Itoa(ports[3]), "--gossip-port", strconv.Itoa(ports[4]))
	n := &node{id: "tls server", ports: ports, log: &testenv.SyncBuffer{}, done: make(chan struct{})}
	n.cmd = exec.Command(filepath.Join(bins, "zaris-server"), args...)
	n.cmd.Dir = dir
	start(t, n)

	// Ready when redis-cli, as the README runs it, gets through.
	for i, line := range clients {
		cmdline := rewrite(line, toReal)
		var out []byte
		var err error
		testscale.Eventually(t, time.Minute, 200*time.Millisecond, "README.md: "+line, func() bool {
			select {
			case <-n.done:
				t.Fatalf("the server exited:\n%s", n.log.String())
			default:
			}
			c := exec.Command("bash", "-c", cmdline)
			c.Dir = dir
			out, err = c.CombinedOutput()
			// The first command is also the readiness probe; the others
			// must work at once.
			return err == nil || i > 0
		})
		if err != nil {
			t.Fatalf("README.md: %s: %v\n%s\nserver log:\n%s", line, err, out, n.log.String())
		}
		if want := []string{"PONG", `{"version":1`}[min(i, 1)]; !strings.Contains(string(out), want) {
			t.Errorf("README.md: %s: output %q lacks %q", line, out, want)
		}
	}

	// The SDK with the README's connection string (the certificate paths
	// are relative to the directory where zarisctl cert ran).
	cs := strings.ReplaceAll(rewrite(connString[1], toReal), "certs/", dir+"/certs/")
	ctx := context.Background()
	c, err := sdk.Connect(ctx, cs)
	if err != nil {
		t.Fatalf("sdk.Connect(%s): %v", connString[1], err)
	}
	defer c.Close()
	r, err := c.Get(ctx, "greeting")
	if err != nil || string(r.Value) != "hi" {
		t.Fatalf("Get over TLS: %+v, %v", r, err)
	}

	// What the README says of --tls-ca: a certificate of another CA, or
	// none, is refused in the handshake (--tls-client-auth require, the
	// default with a CA); with one of the CA, the token decides.
	other := exec.Command(filepath.Join(bins, "zarisctl"), "cert", "--dir", "other")
	other.Dir = dir
	if out, err := other.CombinedOutput(); err != nil {
		t.Fatalf("zarisctl cert --dir other: %v\n%s", err, out)
	}
	curl := func(args string) (string, error) {
		c := exec.Command("bash", "-c", rewrite("curl -sS --cacert certs/ca.pem "+args+" https://127.0.0.1:7801/v1/keys/greeting", toReal))
		c.Dir = dir
		out, err := c.CombinedOutput()
		return string(out), err
	}
	if out, err := curl("--cert other/client.pem --key other/client-key.pem -H 'Authorization: Bearer s3cret'"); err == nil {
		t.Errorf("a client certificate of another CA got through: %s", out)
	}
	if out, err := curl("-H 'Authorization: Bearer s3cret'"); err == nil {
		t.Errorf("no client certificate got through although --tls-ca requires one: %q", out)
	}
	if out, err := curl("--cert certs/client.pem --key certs/client-key.pem -o /dev/null -w '%{http_code}'"); err != nil || out != "401" {
		t.Errorf("the CA's client certificate, no token: %q, %v (want 401)", out, err)
	}
}

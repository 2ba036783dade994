package server

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testConfig is a node on 127.0.0.1 with ephemeral ports, RESP off, and a
// small memory cap.
func testConfig() Config {
	c := DefaultConfig()
	c.NodeID = "test-node"
	c.ClientPort, c.PeerPort, c.GossipPort, c.HTTPPort = EphemeralPort, EphemeralPort, EphemeralPort, EphemeralPort
	c.RESPPort = 0
	c.MemoryMaxBytes = 64 << 20
	c.ShutdownTimeout = 5 * time.Second
	return c
}

func startNode(t *testing.T, cfg Config, attach ...func(*Node)) *Node {
	t.Helper()
	n, err := NewNode(cfg, nil)
	require.NoError(t, err)
	for _, a := range attach {
		a(n)
	}
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	return n
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testscale.Eventually(t, timeout, 5*time.Millisecond, what, cond)
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := httpClient.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

func TestNodeServesHTTPAndStops(t *testing.T) {
	n := startNode(t, testConfig())
	require.True(t, n.Ready())
	base := "http://" + n.HTTPAddr().String()
	require.NotNil(t, n.ClientAddr(), "the native protocol is served by default")

	code, _ := get(t, base+"/readyz")
	require.Equal(t, http.StatusOK, code)

	// The REST API reaches the node's store.
	req, err := http.NewRequest("PUT", base+"/v1/keys/greeting?ttl=1h", strings.NewReader("hello"))
	require.NoError(t, err)
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	res := n.Store().Get("greeting")
	require.True(t, res.OK())
	require.Equal(t, "hello", string(res.Value))

	// The same key over the native protocol, through the SDK.
	c, err := sdk.Connect(context.Background(), "zaris://"+n.ClientAddr().String()+"/"+n.Config().Store)
	require.NoError(t, err)
	defer c.Close()
	got, err := c.Get(context.Background(), "greeting")
	require.NoError(t, err)
	require.Equal(t, "hello", string(got.Value))

	code, body := get(t, base+"/v1/info")
	require.Equal(t, http.StatusOK, code)
	var info Info
	require.NoError(t, json.Unmarshal(body, &info))
	require.Equal(t, "test-node", info.NodeID)
	require.Equal(t, "default", info.Store)
	require.Equal(t, "running", info.State)
	require.True(t, info.Ready)
	require.Equal(t, int64(1), info.Items)
	require.Positive(t, info.Memory.UsedBytes)
	require.Equal(t, int64(64<<20), info.Memory.MaxBytes)
	// What the process costs (issue 16): the op-log holds the put, the Go
	// heap and RSS are the process's, read from the kernel on Linux.
	require.Positive(t, info.Memory.OpLogBytes)
	require.Equal(t, int64(1), info.Memory.OpLogEntries)
	require.Equal(t, int64(64<<20), info.Memory.EvictionCeilingBytes)
	require.Positive(t, info.Memory.GoHeapBytes)
	require.Positive(t, info.Memory.GoRuntimeBytes)
	require.Greater(t, info.Memory.RSSBytes, info.Memory.UsedBytes)
	if runtime.GOOS == "linux" {
		require.Equal(t, "proc", info.Memory.RSSSource)
	}
	require.Equal(t, n.Config().MemoryMaxRSS, info.Memory.MaxRSSBytes)
	require.Equal(t, "lru", info.Eviction)
	require.Equal(t, n.HTTPAddr().(*net.TCPAddr).Port, info.Ports.HTTP)
	require.Equal(t, n.HTTPAddr().String(), info.Addresses["http"])
	require.Equal(t, 0, info.Ports.RESP)

	code, body = get(t, base+"/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), `zaris_ops_total{op="put",status="Success"} 1`)
	require.Contains(t, string(body), `zaris_node_info{node_id="test-node",store="default"`)

	require.NoError(t, n.Stop(context.Background()))
	require.False(t, n.Ready())
	require.NoError(t, n.Stop(context.Background()), "Stop is safe twice")
	require.ErrorIs(t, n.Start(context.Background()), ErrStopped)
	_, err = httpClient.Get(base + "/healthz")
	require.Error(t, err, "the listener is closed")
	require.Equal(t, "stopped", n.Info().State)
}

func TestInfoHasNoSecrets(t *testing.T) {
	cfg := testConfig()
	cfg.Token = "very-secret-token"
	n := startNode(t, cfg)
	req, err := http.NewRequest("GET", "http://"+n.HTTPAddr().String()+"/v1/info", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer very-secret-token")
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, string(body), "very-secret-token")
	require.Contains(t, string(body), `"auth_enabled":true`)
}

func TestTwoNodesInOneProcess(t *testing.T) {
	a := startNode(t, testConfig())
	cfgB := testConfig()
	cfgB.NodeID = "other-node"
	b := startNode(t, cfgB)
	require.NotEqual(t, a.HTTPAddr().String(), b.HTTPAddr().String())
	a.Store().Put("k", []byte("v"), nil)
	require.False(t, b.Store().Get("k").OK(), "separate stores")
	_, body := get(t, "http://"+b.HTTPAddr().String()+"/metrics")
	require.Contains(t, string(body), `node_id="other-node"`)
	require.NotContains(t, string(body), `node_id="test-node"`, "separate registries")
}

func TestNodeWithHTTPOff(t *testing.T) {
	cfg := testConfig()
	cfg.HTTPPort = 0
	n := startNode(t, cfg)
	require.True(t, n.Ready())
	require.Nil(t, n.HTTPAddr())
	require.NoError(t, n.Stop(context.Background()))
}

func TestStopBeforeStart(t *testing.T) {
	n, err := NewNode(testConfig(), nil)
	require.NoError(t, err)
	require.NoError(t, n.Stop(context.Background()))
	require.ErrorIs(t, n.Start(context.Background()), ErrStopped)
}

func TestNewNodeRefusesInvalidConfig(t *testing.T) {
	cfg := testConfig()
	cfg.Store = "no spaces allowed"
	_, err := NewNode(cfg, nil)
	require.ErrorIs(t, err, ErrInvalidConfig)

	cfg = testConfig()
	cfg.NodeID = ""
	n, err := NewNode(cfg, nil)
	require.NoError(t, err)
	require.True(t, ValidNodeID(n.Config().NodeID), "derived from the host name")
	require.NoError(t, n.Stop(context.Background()))
}

// lineEcho is a minimal Service: it echoes lines back. Shutdown waits for
// gate (when set) before draining, to hold the node in its stopping phase.
type lineEcho struct {
	gate chan struct{}

	mu      sync.Mutex // guards ln, closing, conns
	ln      net.Listener
	closing bool
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

func (s *lineEcho) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closing { // Shutdown came first
		s.mu.Unlock()
		return l.Close()
	}
	s.ln, s.conns = l, map[net.Conn]struct{}{}
	s.mu.Unlock()
	for {
		c, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return nil
			}
			return err
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if _, err := io.WriteString(c, line); err != nil {
					return
				}
			}
		}()
	}
}

func (s *lineEcho) Shutdown(ctx context.Context) error {
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	s.closing = true
	if s.ln != nil {
		_ = s.ln.Close()
	}
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func echoLine(t *testing.T, conn net.Conn, line string) string {
	t.Helper()
	_, err := io.WriteString(conn, line+"\n")
	require.NoError(t, err)
	got, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	return strings.TrimSuffix(got, "\n")
}

func TestAttachedServiceOnClientPort(t *testing.T) {
	svc := &lineEcho{}
	n := startNode(t, testConfig(), func(n *Node) { require.NoError(t, n.Attach(EndpointClient, svc)) })
	require.NotNil(t, n.ClientAddr())
	conn, err := net.Dial("tcp", n.ClientAddr().String())
	require.NoError(t, err)
	defer conn.Close()
	require.Equal(t, "ping", echoLine(t, conn, "ping"))
	require.Equal(t, n.ClientAddr().String(), n.Info().Addresses["client"])

	require.ErrorIs(t, n.Attach(EndpointRESP, &lineEcho{}), ErrStarted, "attach after start")
	require.NoError(t, n.Stop(context.Background()))
	_, err = net.Dial("tcp", n.ClientAddr().String())
	require.Error(t, err, "the client listener is closed")
}

func TestAttachRules(t *testing.T) {
	n, err := NewNode(testConfig(), nil)
	require.NoError(t, err)
	defer n.Stop(context.Background())
	require.ErrorContains(t, n.Attach(EndpointRESP, &lineEcho{}), "off", "RESP port is 0")
	require.ErrorContains(t, n.Attach(EndpointHTTP, &lineEcho{}), "not an attachable endpoint")
	require.Error(t, n.Attach(EndpointClient, nil))
	require.NoError(t, n.Attach(EndpointClient, &lineEcho{}))
	require.ErrorContains(t, n.Attach(EndpointClient, &lineEcho{}), "already")
}

// While the front ends drain, the node is not ready and /readyz says so;
// HTTP is shut down last.
func TestReadyzIs503WhileStopping(t *testing.T) {
	svc := &lineEcho{gate: make(chan struct{})}
	n := startNode(t, testConfig(), func(n *Node) { require.NoError(t, n.Attach(EndpointClient, svc)) })
	readyz := "http://" + n.HTTPAddr().String() + "/readyz"
	code, _ := get(t, readyz)
	require.Equal(t, http.StatusOK, code)

	stopped := make(chan error, 1)
	go func() { stopped <- n.Stop(context.Background()) }()
	waitFor(t, 5*time.Second, "/readyz to answer 503", func() bool {
		code, _ := get(t, readyz)
		return code == http.StatusServiceUnavailable
	})
	close(svc.gate)
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return")
	}
}

// A service that does not drain within the shutdown timeout is closed and
// Stop says so, within the bound.
func TestStopIsBounded(t *testing.T) {
	cfg := testConfig()
	cfg.ShutdownTimeout = 100 * time.Millisecond
	svc := &lineEcho{gate: make(chan struct{})} // never opened
	n := startNode(t, cfg, func(n *Node) { require.NoError(t, n.Attach(EndpointClient, svc)) })
	start := time.Now()
	err := n.Stop(context.Background())
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "client shutdown")
	require.Less(t, time.Since(start), 5*time.Second)
}

// failingService returns from Serve on its own, as a listener that broke.
type failingService struct{ fail chan struct{} }

func (s *failingService) Serve(l net.Listener) error {
	<-s.fail
	_ = l.Close()
	return errors.New("accept: broken")
}
func (s *failingService) Shutdown(context.Context) error { return nil }

func TestServiceFailureIsReported(t *testing.T) {
	svc := &failingService{fail: make(chan struct{})}
	n := startNode(t, testConfig(), func(n *Node) { require.NoError(t, n.Attach(EndpointClient, svc)) })
	require.True(t, n.Ready())
	close(svc.fail)
	select {
	case err := <-n.Failed():
		require.ErrorContains(t, err, "client service: accept: broken")
	case <-time.After(5 * time.Second):
		t.Fatal("no failure reported")
	}
	require.False(t, n.Ready())
	require.NoError(t, n.Stop(context.Background()))
}

func TestStartFailsWhenAPortIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	cfg := testConfig()
	cfg.HTTPPort = taken.Addr().(*net.TCPAddr).Port
	n, err := NewNode(cfg, nil)
	require.NoError(t, err)
	require.NoError(t, n.Attach(EndpointClient, &lineEcho{}))
	err = n.Start(context.Background())
	require.ErrorContains(t, err, "http listener")
	require.False(t, n.Ready())
	require.Nil(t, n.ClientAddr(), "nothing stays bound")
	require.NoError(t, n.Stop(context.Background()))
}

func TestNodeServesTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	cfg := testConfig()
	cfg.TLSCert, cfg.TLSKey = certFile, keyFile
	n := startNode(t, cfg)
	require.NotNil(t, n.TLSConfig())

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"},
	}}
	resp, err := client.Get("https://" + n.HTTPAddr().String() + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// Plain HTTP against the TLS listener does not get a 200.
	resp, err = httpClient.Get("http://" + n.HTTPAddr().String() + "/readyz")
	if err == nil {
		resp.Body.Close()
		require.NotEqual(t, http.StatusOK, resp.StatusCode)
	}

	// Bad TLS material is refused by NewNode.
	bad := testConfig()
	bad.TLSCert, bad.TLSKey = certFile, filepath.Join(dir, "missing.pem")
	_, err = NewNode(bad, nil)
	require.ErrorContains(t, err, "tls-cert/tls-key")
	bad = cfg
	bad.TLSCA = keyFile // a key is not a CA certificate
	_, err = NewNode(bad, nil)
	require.ErrorContains(t, err, "tls-ca")
}

// selfSigned writes a self-signed certificate for 127.0.0.1.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "zaris-test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

package sdk_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/native"
	"github.com/zaris-io/zaris/server/store"
)

type testServer struct {
	addr  string
	store *store.Store
	srv   *native.Server
	done  chan error
}

// startServer runs a real native-protocol server on a loopback port.
func startServer(t testing.TB, mutate ...func(*native.Config)) *testServer {
	t.Helper()
	st, err := store.New(store.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := native.Config{Store: st, StoreName: "default", NodeID: "n1", Version: "test"}
	for _, m := range mutate {
		m(&cfg)
	}
	srv, err := native.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{addr: l.Addr().String(), store: st, srv: srv, done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(l) }()
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

func (ts *testServer) stop(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = ts.srv.Shutdown(ctx)
	_ = ts.store.Close()
}

func TestRemoteSuite(t *testing.T) {
	ts := startServer(t)
	runClientSuite(t, func(t *testing.T) *sdk.Client {
		c, err := sdk.Connect(context.Background(), "zaris://"+ts.addr+"/default")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	})
}

func TestRemoteWrongStoreName(t *testing.T) {
	ts := startServer(t)
	_, err := sdk.Connect(context.Background(), "zaris://"+ts.addr+"/orders")
	var he *sdk.HandshakeError
	if !errors.As(err, &he) || !errors.Is(err, sdk.ErrBadRequest) || !strings.Contains(err.Error(), `"orders" is not served here`) {
		t.Fatalf("err = %v", err)
	}
}

func TestRemoteRefusedConnection(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	_, err := sdk.Connect(context.Background(), "zaris://"+addr+"/default")
	if !errors.Is(err, sdk.ErrUnreachable) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("err = %v", err)
	}
}

func TestRemoteTokenAuthentication(t *testing.T) {
	ts := startServer(t, func(c *native.Config) { c.Token = "s3cret" })
	for _, tok := range []string{"", "?token=wrong"} {
		_, err := sdk.Connect(context.Background(), "zaris://"+ts.addr+"/default"+tok)
		if !errors.Is(err, sdk.ErrUnauthorized) {
			t.Fatalf("token %q: err = %v", tok, err)
		}
	}
	// A wrong token learns nothing, not even whether the store name is right.
	_, err := sdk.Connect(context.Background(), "zaris://"+ts.addr+"/other?token=wrong")
	if !errors.Is(err, sdk.ErrUnauthorized) || strings.Contains(err.Error(), "default") {
		t.Fatalf("err = %v", err)
	}
	c, err := sdk.Connect(context.Background(), "zaris://"+ts.addr+"/default?token=s3cret")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r, err := c.Put(context.Background(), "k", []byte("v"), nil); err != nil || !r.OK() {
		t.Fatalf("authenticated put: %+v %v", r, err)
	}
}

// A raw client that skips the handshake gets Unauthorized and nothing else.
func TestRemoteNoHandshakeGetsUnauthorized(t *testing.T) {
	ts := startServer(t, func(c *native.Config) { c.Token = "s3cret" })
	ts.store.Put("secret-key", []byte("secret-value"), nil)
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write(getFrame(1, "secret-key")); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	all, _ := readAll(nc)
	if !strings.Contains(string(all), "") || strings.Contains(string(all), "secret-value") {
		t.Fatalf("leaked data: %q", all)
	}
	f := decodeOne(t, all)
	if f.st != sdk.StatusUnauthorized || !f.isErr {
		t.Fatalf("response %+v", f)
	}
}

func TestRemoteDeadlineFromContext(t *testing.T) {
	ts := startServer(t)
	c, err := sdk.Connect(context.Background(), "zaris://"+ts.addr+"/default")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	if _, err := c.Get(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	// The connection is still good for the next call.
	if r, err := c.Get(context.Background(), "k"); err != nil || r.Status != sdk.StatusNotFound {
		t.Fatalf("after a timed-out call: %+v %v", r, err)
	}
}

func TestRemoteReconnectsAfterServerRestart(t *testing.T) {
	st, _ := store.New(store.DefaultConfig())
	defer st.Close()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	serve := func(l net.Listener) *native.Server {
		srv, err := native.New(native.Config{Store: st, StoreName: "default"})
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(l)
		return srv
	}
	srv := serve(l)
	c, err := sdk.Connect(context.Background(), "zaris://"+addr+"/default")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Put(context.Background(), "k", []byte("v"), nil)
	srv.Shutdown(context.Background())
	// While down: a clear, typed transport error.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := c.Get(context.Background(), "k")
		if errors.Is(err, sdk.ErrUnreachable) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no unreachable error while the server is down: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	l2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv2 := serve(l2)
	defer srv2.Shutdown(context.Background())
	for {
		r, err := c.Get(context.Background(), "k")
		if err == nil {
			if string(r.Value) != "v" {
				t.Fatalf("after reconnect: %+v", r)
			}
			break
		}
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatalf("client never reconnected: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// certs generates a CA, a server certificate for 127.0.0.1 and a client
// certificate, written as PEM files in dir.
func certs(t *testing.T, dir string) (caFile, srvCert, srvKey, cliCert, cliKey string, pool *x509.CertPool) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "zaris test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	pool = x509.NewCertPool()
	pool.AddCert(ca)
	issue := func(name string, serial int64, usage x509.ExtKeyUsage) (string, string) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, _ := x509.MarshalECPrivateKey(key)
		cf, kf := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		os.WriteFile(cf, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
		os.WriteFile(kf, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
		return cf, kf
	}
	caFile = filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600)
	srvCert, srvKey = issue("server", 2, x509.ExtKeyUsageServerAuth)
	cliCert, cliKey = issue("client", 3, x509.ExtKeyUsageClientAuth)
	return
}

func TestRemoteTLSAndMutualTLS(t *testing.T) {
	dir := t.TempDir()
	caFile, srvCert, srvKey, cliCert, cliKey, pool := certs(t, dir)
	pair, err := tls.LoadX509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	plain := startServer(t, func(c *native.Config) {
		c.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
		c.Token = "tok"
	})
	ctx := context.Background()
	c, err := sdk.Connect(ctx, fmt.Sprintf("zariss://%s/default?ca=%s&token=tok", plain.addr, caFile))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Put(ctx, "k", []byte("over tls"), nil); err != nil || !r.OK() {
		t.Fatalf("put over TLS: %+v %v", r, err)
	}
	c.Close()
	// Without the CA the server certificate is not trusted.
	if _, err := sdk.Connect(ctx, fmt.Sprintf("zariss://%s/default?token=tok", plain.addr)); err == nil {
		t.Fatal("connected without trusting the server certificate")
	}
	// A plaintext client against a TLS port gets an error, not a hang.
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := sdk.Connect(cctx, fmt.Sprintf("zaris://%s/default?token=tok", plain.addr)); err == nil {
		t.Fatal("plaintext client connected to a TLS server")
	}

	mutual := startServer(t, func(c *native.Config) {
		c.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	})
	if _, err := sdk.Connect(ctx, fmt.Sprintf("zariss://%s/default?ca=%s", mutual.addr, caFile)); err == nil {
		t.Fatal("connected to a mutual-TLS server without a client certificate")
	}
	c, err = sdk.Connect(ctx, fmt.Sprintf("zariss://%s/default?ca=%s&cert=%s&key=%s", mutual.addr, caFile, cliCert, cliKey))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r, err := c.Get(ctx, "nothing"); err != nil || r.Status != sdk.StatusNotFound {
		t.Fatalf("get over mutual TLS: %+v %v", r, err)
	}
}

func TestRemoteBatchLargerThanOneFrame(t *testing.T) {
	ts := startServer(t, func(c *native.Config) { c.MaxFrameSize = 256 << 10 })
	c, err := sdk.Connect(context.Background(), "zaris://"+ts.addr+"/default")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	items := make([]sdk.KV, 300)
	for i := range items {
		items[i] = sdk.KV{Key: fmt.Sprint("big:", i), Value: make([]byte, 4096)}
	}
	res, err := c.PutMany(context.Background(), items) // ~1.2 MiB: several frames
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.OK() || r.Index != i {
			t.Fatalf("item %d: %+v", i, r)
		}
	}
	if n := ts.store.Stats().Items; n != 300 {
		t.Fatalf("items %d", n)
	}
}

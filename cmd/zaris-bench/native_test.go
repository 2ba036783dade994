package main

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
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/server/native"
	"github.com/zaris-io/zaris/server/store"
)

// startNative serves a fresh store over the real native listener on
// 127.0.0.1:0 in-process and returns its address and store.
func startNative(t *testing.T, mutate func(*native.Config)) (string, *store.Store) {
	t.Helper()
	st, err := store.New(store.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := native.Config{
		Store: st, StoreName: "default", NodeID: "bench-test", Version: "test",
		Logger: slog.New(slog.DiscardHandler),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := native.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		if err := <-served; !errors.Is(err, native.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
		_ = st.Close()
	})
	return l.Addr().String(), st
}

func nativeConfig(addr string) Config {
	cfg := respConfig(addr)
	cfg.Protocol = ProtocolNative
	return cfg
}

// TestNativeEndToEnd: a warmed 1:1 mix over the native protocol, bounded by
// count, answers exactly -n requests with no errors and every GET a hit;
// the keys are in the store with the configured value size.
func TestNativeEndToEnd(t *testing.T) {
	addr, st := startNative(t, nil)
	cfg := nativeConfig(addr)
	rep, err := run(context.Background(), cfg, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, rep)
	if rep.TotalOps != uint64(cfg.Requests) || rep.Gets == 0 || rep.Sets == 0 || rep.Hits != rep.Gets {
		t.Errorf("total %d (want %d), gets %d sets %d hits %d", rep.TotalOps, cfg.Requests, rep.Gets, rep.Sets, rep.Hits)
	}
	if rep.Store != "default" || rep.WarmupKeys != cfg.Keyspace {
		t.Errorf("store %q warmup %d", rep.Store, rep.WarmupKeys)
	}
	stats := st.Stats()
	if stats.Items != int64(cfg.Keyspace) || stats.Puts != uint64(cfg.Keyspace)+rep.Sets {
		t.Errorf("store holds %d items after %d puts; want %d items, %d puts", stats.Items, stats.Puts, cfg.Keyspace, uint64(cfg.Keyspace)+rep.Sets)
	}
	if res := st.Get("key:0042"); !res.OK() || len(res.Value) != cfg.DataSize {
		t.Errorf("Get key:0042 = %v, %d bytes; want a %d-byte value", res.Status, len(res.Value), cfg.DataSize)
	}
}

// TestNativeDuration: a short time-bounded run with deeper pipelining and a
// GET-heavy mix; hits because the keyspace was warmed.
func TestNativeDuration(t *testing.T) {
	addr, _ := startNative(t, nil)
	cfg := nativeConfig(addr)
	cfg.Requests = 0
	cfg.Duration = 500 * time.Millisecond
	cfg.Pipeline = 64
	cfg.GetRatio, cfg.SetRatio = 9, 1
	cfg.DataSize = 1000
	rep, err := run(context.Background(), cfg, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, rep)
	if rep.Hits == 0 || rep.Misses != 0 || rep.ElapsedSeconds < 0.5 {
		t.Errorf("hits %d misses %d elapsed %.3f", rep.Hits, rep.Misses, rep.ElapsedSeconds)
	}
}

// TestNativeHandshakeRejected: a wrong store name or token fails the run
// before any load, with ErrHandshakeRejected and a message naming the cause.
func TestNativeHandshakeRejected(t *testing.T) {
	addr, _ := startNative(t, func(c *native.Config) { c.Token = "t0ken" })
	cases := []struct {
		name, store, token, want string
	}{
		{"wrong store", "orders", "t0ken", `--store "orders"`},
		{"bad token", "default", "nope", "--token"},
		{"no token", "default", "", "--token"},
	}
	for _, tc := range cases {
		cfg := nativeConfig(addr)
		cfg.Store, cfg.Token = tc.store, tc.token
		_, err := run(context.Background(), cfg, io.Discard, io.Discard)
		if !errors.Is(err, ErrHandshakeRejected) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrHandshakeRejected mentioning %s", tc.name, err, tc.want)
		}
	}
	cfg := nativeConfig(addr)
	cfg.Token = "t0ken"
	rep, err := run(context.Background(), cfg, io.Discard, io.Discard)
	if err != nil {
		t.Fatalf("right token: %v", err)
	}
	checkReport(t, rep)
}

// TestNativeTLS: --tls with --ca against a server with a certificate for
// 127.0.0.1 signed by that CA; without --ca the system roots refuse it.
func TestNativeTLS(t *testing.T) {
	cert, caFile := selfSignedCert(t)
	addr, _ := startNative(t, func(c *native.Config) {
		c.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	})
	cfg := nativeConfig(addr)
	cfg.TLS, cfg.CAFile = true, caFile
	rep, err := run(context.Background(), cfg, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, rep)
	if !rep.TLS {
		t.Error("report does not say TLS")
	}

	cfg.CAFile = ""
	if _, err := run(context.Background(), cfg, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "TLS handshake") {
		t.Errorf("untrusted certificate: err = %v, want a TLS handshake failure", err)
	}
}

// TestNativeServerGone: a server that shuts down mid-run makes the run
// return an error (and count the lost requests) instead of hanging.
func TestNativeServerGone(t *testing.T) {
	st, err := store.New(store.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := native.New(native.Config{Store: st, StoreName: "default", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()

	cfg := nativeConfig(l.Addr().String())
	cfg.Requests, cfg.Duration, cfg.Timeout = 0, time.Minute, 2*time.Second
	time.AfterFunc(300*time.Millisecond, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	start := time.Now()
	rep, err := run(context.Background(), cfg, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("run succeeded against a server that went away")
	}
	if rep.TotalOps == 0 || rep.Errors == 0 || rep.FirstError == "" {
		t.Errorf("report: ops %d errors %d first %q", rep.TotalOps, rep.Errors, rep.FirstError)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v to notice", d)
	}
}

// selfSignedCert returns a certificate for 127.0.0.1 and the path of a PEM
// file holding it as a CA.
func selfSignedCert(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "zaris-bench test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, caFile
}

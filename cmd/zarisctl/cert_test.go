package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// zarisctl cert writes a CA, a node and a client certificate with which a
// real mutual-TLS handshake over loopback succeeds for localhost,
// 127.0.0.1 and an extra --hosts name; it keeps existing files without
// --force.
func TestCertMakesAWorkingDevelopmentPKI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	var out, errOut bytes.Buffer
	if code := run([]string{"cert", "--dir", dir, "--hosts", "node1.test,10.1.2.3"}, &out, &errOut); code != exitOK {
		t.Fatalf("cert exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "--tls-cert "+dir+"/server.pem") {
		t.Fatalf("output does not say how to use the files:\n%s", out.String())
	}
	load := func(c, k string) tls.Certificate {
		cert, err := tls.LoadX509KeyPair(filepath.Join(dir, c), filepath.Join(dir, k))
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.pem holds no certificate")
	}
	if st, err := os.Stat(filepath.Join(dir, "server-key.pem")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("server key mode: %v %v", st.Mode(), err)
	}

	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{load("server.pem", "server-key.pem")},
		ClientCAs:    pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	for _, name := range []string{"localhost", "127.0.0.1", "node1.test", "10.1.2.3"} {
		for _, client := range [][2]string{{"client.pem", "client-key.pem"}, {"server.pem", "server-key.pem"}} {
			c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{
				RootCAs: pool, ServerName: name, Certificates: []tls.Certificate{load(client[0], client[1])}, MinVersion: tls.VersionTLS12,
			})
			if err != nil {
				t.Fatalf("handshake as %s for %s: %v", client[0], name, err)
			}
			if _, err := c.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 1)
			if _, err := io.ReadFull(c, b); err != nil || b[0] != 'x' {
				t.Fatalf("echo over mutual TLS: %q %v", b, err)
			}
			c.Close()
		}
	}
	// A name the certificate does not carry is refused.
	if c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "other.test", MinVersion: tls.VersionTLS12}); err == nil {
		c.Close()
		t.Fatal("handshake for a name not in the certificate succeeded")
	}

	errOut.Reset()
	if code := run([]string{"cert", "--dir", dir}, &out, &errOut); code != exitError || !strings.Contains(errOut.String(), "--force") {
		t.Fatalf("second run without --force: exit %d, %s", code, errOut.String())
	}
	if code := run([]string{"cert", "--dir", dir, "--force"}, &out, &errOut); code != exitOK {
		t.Fatalf("--force: exit %d", code)
	}
}

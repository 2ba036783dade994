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
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/server/cluster"
)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// leaf issues a certificate for 127.0.0.1 usable by servers and clients.
func (ca *testCA) leaf(t *testing.T, serial int64) (certPEM, keyPEM []byte, pair tls.Certificate) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	kd, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
	pair, err = tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	return certPEM, keyPEM, pair
}

// respPing sends PING over TLS with cfg and reports the reply or the error.
func respPing(addr string, cfg *tls.Config) (string, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// TestTLSClientAuthAndReload is issue #15 item 2 on a real node: with
// --tls-ca a client without a certificate is refused (require is the
// default), one with a certificate of the CA is served; the peer port
// refuses a TLS client without a certificate (counted, reason tls); TLS
// below 1.2 is refused; a new certificate is served after Reload without a
// restart; and the HTTP port sends no permissive CORS header.
func TestTLSClientAuthAndReload(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	certPEM, keyPEM, pair := ca.leaf(t, 10)
	certFile, keyFile, caFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem"), filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(certFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
	require.NoError(t, os.WriteFile(caFile, ca.pem, 0o600))
	cfg := testConfig()
	cfg.TLSCert, cfg.TLSKey, cfg.TLSCA = certFile, keyFile, caFile
	cfg.RESPPort = EphemeralPort
	require.Equal(t, TLSClientAuthRequire, cfg.ClientAuthMode())
	n := startNode(t, cfg)
	resp := n.RESPAddr().String()

	_, err := respPing(resp, &tls.Config{RootCAs: ca.pool, ServerName: "127.0.0.1"})
	require.Error(t, err, "a client without a certificate is served")
	got, err := respPing(resp, &tls.Config{RootCAs: ca.pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{pair}})
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", got)
	_, err = respPing(resp, &tls.Config{RootCAs: ca.pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{pair},
		MaxVersion: tls.VersionTLS11})
	require.Error(t, err, "TLS 1.1 accepted")

	// The peer port: no certificate, refused and counted.
	self := n.Cluster().Status().Nodes[0]
	pc, err := tls.Dial("tcp", self.PeerAddr, &tls.Config{RootCAs: ca.pool, ServerName: "127.0.0.1"})
	if err == nil {
		_ = pc.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = pc.Write([]byte{cluster.PeerMapFetch})
		_, err = pc.Read(make([]byte, 1))
		pc.Close()
	}
	require.Error(t, err, "the peer port served a TLS client without a certificate")
	require.Eventually(t, func() bool { return n.Cluster().PeerAuthRefusals()[cluster.RefuseTLS] > 0 },
		5*time.Second, 10*time.Millisecond)

	// Reload: a new certificate (serial 11) is served without a restart.
	certPEM2, keyPEM2, _ := ca.leaf(t, 11)
	require.NoError(t, os.WriteFile(certFile, certPEM2, 0o600))
	require.NoError(t, os.WriteFile(keyFile, keyPEM2, 0o600))
	require.NoError(t, n.Reload())
	c, err := tls.Dial("tcp", resp, &tls.Config{RootCAs: ca.pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{pair}})
	require.NoError(t, err)
	require.Equal(t, int64(11), c.ConnectionState().PeerCertificates[0].SerialNumber.Int64())
	c.Close()
	// A broken file leaves the material in use.
	require.NoError(t, os.WriteFile(keyFile, []byte("junk"), 0o600))
	require.Error(t, n.Reload())
	got, err = respPing(resp, &tls.Config{RootCAs: ca.pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{pair}})
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", got)

	// No permissive CORS on the HTTP port, for a simple request or a
	// preflight.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: ca.pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{pair}}}}
	for _, method := range []string{http.MethodGet, http.MethodOptions} {
		req, err := http.NewRequestWithContext(context.Background(), method, "https://"+n.HTTPAddr().String()+"/v1/info", nil)
		require.NoError(t, err)
		req.Header.Set("Origin", "https://evil.example")
		req.Header.Set("Access-Control-Request-Method", "POST")
		r, err := hc.Do(req)
		require.NoError(t, err)
		r.Body.Close()
		for h := range r.Header {
			require.False(t, strings.HasPrefix(strings.ToLower(h), "access-control-"), "%s answered %s: %v", method, h, r.Header[h])
		}
	}
}

// --tls-client-auth is validated.
func TestTLSClientAuthValidation(t *testing.T) {
	cfg := testConfig()
	cfg.TLSClientAuth = "maybe"
	require.ErrorContains(t, cfg.Validate(), "tls-client-auth")
	cfg.TLSClientAuth = TLSClientAuthRequire
	require.ErrorContains(t, cfg.Validate(), "needs tls-ca")
	cfg.TLSClientAuth = TLSClientAuthNone
	require.NoError(t, cfg.Validate())
}

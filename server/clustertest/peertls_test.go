package clustertest_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/clustertest"
)

// writeCA writes a CA and one node certificate for 127.0.0.1 (server and
// client use) into dir and returns the files and the CA pool.
func writeCA(t *testing.T, dir string) (certFile, keyFile, caFile string, pool *x509.CertPool) {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cluster CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	must(err)
	caCert, err := x509.ParseCertificate(caDER)
	must(err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	must(err)
	kd, err := x509.MarshalECPrivateKey(key)
	must(err)
	certFile, keyFile, caFile = filepath.Join(dir, "node.pem"), filepath.Join(dir, "node-key.pem"), filepath.Join(dir, "ca.pem")
	must(os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	must(os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600))
	must(os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600))
	pool = x509.NewCertPool()
	pool.AddCert(caCert)
	return certFile, keyFile, caFile, pool
}

// TestTLSClusterMutualAuth: a 3-node cluster with TLS, a cluster CA and a
// secret forms (raft, map fetches and replication between nodes that each
// present and verify certificates of the CA, the secret handshake inside
// TLS); a TLS client without a certificate is refused on the peer port and
// counted (reason tls).
func TestTLSClusterMutualAuth(t *testing.T) {
	certFile, keyFile, caFile, pool := writeCA(t, t.TempDir())
	c := clustertest.Start(t, 3, clustertest.Options{Secret: true, NoRESP: true, Mutate: func(cfg *server.Config) {
		cfg.TLSCert, cfg.TLSKey, cfg.TLSCA = certFile, keyFile, caFile
		cfg.ReplicationFactor = 2
	}})
	m := c.Map()
	addr := cluster.PeerAddr(m.Nodes[0])
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err == nil {
		_ = conn.SetDeadline(time.Now().Add(testscale.D(5 * time.Second)))
		_, _ = conn.Write([]byte{cluster.PeerMapFetch})
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
	}
	if err == nil {
		t.Fatal("the peer port served a TLS client without a certificate")
	}
	c.Eventually(testscale.D(5*time.Second), "the TLS refusal is counted", func() bool {
		return refusals(c, cluster.RefuseTLS) > 0
	})
}

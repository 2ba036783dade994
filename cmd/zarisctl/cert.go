package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// cmdCert makes a development CA and a node and a client certificate signed
// by it (ECDSA P-256), so that TLS and mutual TLS can be tried in minutes:
//
//	zarisctl cert --dir certs --hosts node1.example,10.0.0.5
//
// writes ca.pem, ca-key.pem, server.pem, server-key.pem, client.pem and
// client-key.pem. The node certificate names localhost and 127.0.0.1 plus
// every --hosts entry. Existing files are kept unless --force.
func cmdCert(_ context.Context, _ *globals, args []string, stdout io.Writer) (int, error) {
	fset := flag.NewFlagSet("cert", flag.ContinueOnError)
	dir := fset.String("dir", "certs", "directory to write the files to")
	hosts := fset.String("hosts", "", "extra DNS names or IPs of the node certificate, comma-separated")
	days := fset.Int("days", 365, "validity in days")
	force := fset.Bool("force", false, "overwrite existing files")
	fset.SetOutput(io.Discard)
	if err := fset.Parse(args); err != nil {
		return exitError, fmt.Errorf("%w: cert: %v", errUsage, err)
	}
	if fset.NArg() > 0 {
		return exitError, fmt.Errorf("%w: cert takes no arguments, got %q", errUsage, fset.Args())
	}
	if *days < 1 {
		return exitError, fmt.Errorf("%w: --days must be at least 1", errUsage)
	}
	names := []string{"ca.pem", "ca-key.pem", "server.pem", "server-key.pem", "client.pem", "client-key.pem"}
	if !*force {
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(*dir, n)); err == nil {
				return exitError, fmt.Errorf("%s exists; pass --force to overwrite", filepath.Join(*dir, n))
			} else if !errors.Is(err, fs.ErrNotExist) {
				return exitError, err
			}
		}
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return exitError, err
	}
	files, err := makeDevCerts(splitList(*hosts), time.Duration(*days)*24*time.Hour)
	if err != nil {
		return exitError, err
	}
	for i, n := range names {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(n, "-key.pem") {
			mode = 0o600
		}
		if err := os.WriteFile(filepath.Join(*dir, n), files[i], mode); err != nil {
			return exitError, err
		}
	}
	fmt.Fprintf(stdout, `wrote a development CA and certificates to %s/ (ECDSA P-256, valid %d days):
  zaris-server --tls-cert %[1]s/server.pem --tls-key %[1]s/server-key.pem --tls-ca %[1]s/ca.pem
  SDK: zariss://127.0.0.1:7861/default?ca=%[1]s/ca.pem&cert=%[1]s/client.pem&key=%[1]s/client-key.pem
  redis-cli --tls --cacert %[1]s/ca.pem --cert %[1]s/client.pem --key %[1]s/client-key.pem -p 6380
for development only: keep ca-key.pem private, or delete it
`, *dir, *days)
	return exitOK, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// makeDevCerts returns, in order, the PEM of the CA certificate, its key,
// the node certificate, its key, the client certificate and its key.
func makeDevCerts(hosts []string, validity time.Duration) ([][]byte, error) {
	now := time.Now().Add(-time.Minute) // tolerate a little clock skew
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "zaris development CA", Organization: []string{"zaris"}},
		NotBefore:             now,
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	leaf := func(cn string, usage []x509.ExtKeyUsage, dns []string, ips []net.IP) ([]byte, []byte, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(),
			Subject:      pkix.Name{CommonName: cn, Organization: []string{"zaris"}},
			NotBefore:    now,
			NotAfter:     now.Add(validity),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  usage,
			DNSNames:     dns,
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pemOf("CERTIFICATE", der), pemOf("EC PRIVATE KEY", kder), nil
	}
	dns, ips := []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, h)
		}
	}
	// Nodes also dial each other (peer port) with their certificate, so a
	// node certificate serves as a client one too.
	srv, srvKey, err := leaf("zaris node", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, dns, ips)
	if err != nil {
		return nil, err
	}
	cli, cliKey, err := leaf("zaris client", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil, nil)
	if err != nil {
		return nil, err
	}
	caKeyDER, err := x509.MarshalECPrivateKey(caKey)
	if err != nil {
		return nil, err
	}
	return [][]byte{pemOf("CERTIFICATE", caDER), pemOf("EC PRIVATE KEY", caKeyDER), srv, srvKey, cli, cliKey}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

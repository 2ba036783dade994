package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zaris-io/zaris/server/cluster"
)

// Transport security of a node (issue #15): the TLS material, re-read on
// SIGHUP without a restart, and the cluster secret.
//
// Every listener speaks TLS 1.2 or later with the suites below (TLS 1.3's
// are all modern and not configurable). The client-facing listeners ask for
// a client certificate as --tls-client-auth says; the peer port always
// requires one chaining to --tls-ca, and a node dialing a peer verifies the
// peer's certificate against the same CA: both ends are checked.

// modernSuites are the TLS 1.2 suites offered: forward-secret ECDHE with
// an AEAD cipher only.
var modernSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// tlsMaterial is one loading of the certificate, its key and the CA, with
// the configurations built from them.
type tlsMaterial struct {
	cert   tls.Certificate
	pool   *x509.CertPool // nil = no --tls-ca
	client *tls.Config    // the client-facing listeners'
	peer   *tls.Config    // the peer listener's
}

// tlsState holds the node's current TLS material; listeners and dialers
// read it at every handshake, so Reload takes effect on the next
// connection without a restart.
type tlsState struct {
	cfg Config
	cur atomic.Pointer[tlsMaterial]
}

func clientAuthType(mode string) tls.ClientAuthType {
	switch mode {
	case TLSClientAuthRequire:
		return tls.RequireAndVerifyClientCert
	case TLSClientAuthRequest:
		return tls.VerifyClientCertIfGiven
	}
	return tls.NoClientCert
}

// loadTLS reads the TLS material of cfg (nil when TLS is off).
func loadTLSState(cfg Config) (*tlsState, error) {
	if !cfg.TLSEnabled() {
		return nil, nil
	}
	t := &tlsState{cfg: cfg}
	if err := t.reload(); err != nil {
		return nil, err
	}
	return t, nil
}

// reload re-reads the certificate, key and CA; on error the material in
// use stays.
func (t *tlsState) reload() error {
	cert, err := tls.LoadX509KeyPair(t.cfg.TLSCert, t.cfg.TLSKey)
	if err != nil {
		return fmt.Errorf("server: tls-cert/tls-key: %w", err)
	}
	m := &tlsMaterial{cert: cert}
	if t.cfg.TLSCA != "" {
		pem, err := os.ReadFile(t.cfg.TLSCA)
		if err != nil {
			return fmt.Errorf("server: tls-ca: %w", err)
		}
		m.pool = x509.NewCertPool()
		if !m.pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("server: tls-ca: no PEM certificate in %s", t.cfg.TLSCA)
		}
	}
	base := func(auth tls.ClientAuthType) *tls.Config {
		return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: m.pool, ClientAuth: auth,
			MinVersion: tls.VersionTLS12, CipherSuites: modernSuites}
	}
	m.client = base(clientAuthType(t.cfg.ClientAuthMode()))
	// A peer is a node: it presents its certificate, of the CA when one
	// is given (else of a CA the system trusts).
	m.peer = base(tls.RequireAndVerifyClientCert)
	t.cur.Store(m)
	return nil
}

// listenerConfig is a listener's configuration: each handshake takes the
// current material (client-facing or peer).
func (t *tlsState) listenerConfig(peer bool) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: modernSuites,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := t.cur.Load()
			if peer {
				return m.peer, nil
			}
			return m.client, nil
		}}
}

// dialPeer opens a TLS connection to a peer: the peer's certificate must
// chain to the CA and name the host dialed; this node presents its own.
func (t *tlsState) dialPeer(ctx context.Context, addr string) (net.Conn, error) {
	m := t.cur.Load()
	host, _, _ := net.SplitHostPort(addr)
	d := tls.Dialer{Config: &tls.Config{
		RootCAs: m.pool, ServerName: host, Certificates: []tls.Certificate{m.cert},
		MinVersion: tls.VersionTLS12, CipherSuites: modernSuites,
	}}
	return d.DialContext(ctx, "tcp", addr)
}

// loadSecret reads the cluster secret of cfg (nil when none is set).
func loadSecret(cfg Config) (*cluster.Secret, error) {
	if cfg.ClusterSecretFile == "" {
		return nil, nil
	}
	keys, err := cluster.LoadSecretFile(cfg.ClusterSecretFile)
	if err != nil {
		return nil, fmt.Errorf("server: cluster-secret-file: %w", err)
	}
	return cluster.NewSecret(keys)
}

// Reload re-reads the TLS certificate, key and CA and the cluster secret
// (zaris-server calls it on SIGHUP): new connections use the new material,
// established ones keep theirs. A file that fails to load leaves that
// material as it was and is reported; the rest is still reloaded.
func (n *Node) Reload() error {
	var errs []error
	if n.tlsState != nil {
		if err := n.tlsState.reload(); err != nil {
			errs = append(errs, err)
		} else {
			n.log.Info("TLS material reloaded", "cert", n.cfg.TLSCert, "ca", n.cfg.TLSCA)
		}
	}
	if n.cfg.ClusterSecretFile != "" {
		keys, err := cluster.LoadSecretFile(n.cfg.ClusterSecretFile)
		if err == nil {
			if c := n.Cluster(); c != nil {
				err = c.ReloadSecret(keys)
			} else {
				err = n.secret.Set(keys)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("server: cluster-secret-file: %w", err))
		} else {
			n.log.Info("cluster secret reloaded", "keys", len(keys))
		}
	}
	return errors.Join(errs...)
}

// peerAuthCollector exposes the refusals of the cluster plane's
// authentication.
type peerAuthCollector struct{ n *Node }

var descPeerAuthRefused = prometheus.NewDesc("zaris_peer_auth_refused_total",
	"Peer connections and gossip messages refused by the cluster plane's authentication, by reason: "+
		"no_handshake (no cluster secret), bad_secret (another secret), malformed, tls (no or a bad certificate), "+
		"gossip (a gossip message no key opens).", []string{"reason"}, nil)

func (p peerAuthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descPeerAuthRefused }

func (p peerAuthCollector) Collect(ch chan<- prometheus.Metric) {
	var counts map[string]uint64
	if c := p.n.Cluster(); c != nil {
		counts = c.PeerAuthRefusals()
	}
	for _, r := range cluster.RefuseReasons {
		ch <- prometheus.MustNewConstMetric(descPeerAuthRefused, prometheus.CounterValue, float64(counts[r]), r)
	}
}

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// ErrHandshakeRejected is returned when the server refuses the connection's
// credentials or store name (a native handshake failure or a RESP AUTH
// error). It is never retried: every connection would be refused alike.
var ErrHandshakeRejected = errors.New("handshake rejected")

// opKind is a benchmark operation.
type opKind uint8

const (
	opGet opKind = iota
	opSet
)

func (k opKind) String() string {
	if k == opGet {
		return "GET"
	}
	return "SET"
}

// outcome classifies one response.
type outcome uint8

const (
	outOK    outcome = iota // SET stored
	outHit                  // GET found the key
	outMiss                 // GET did not find the key
	outError                // an error reply, or a reply of the wrong kind
)

// request is one operation of a batch. key aliases the worker's key buffer;
// SET values are the connection's shared value.
type request struct {
	kind opKind
	key  []byte
}

// response is what a client reports for one request of a batch.
type response struct {
	latency time.Duration // this request's write → its response read
	outcome outcome
	errMsg  string // why, when outcome is outError
}

// client is one benchmark connection. It is used by one goroutine.
type client interface {
	// roundTrip writes every request of reqs in one write, then reads one
	// response per request into res (same index), recording each request's
	// own latency. An error means the connection is unusable: the requests
	// without a response are lost.
	roundTrip(reqs []request, res []response) error
	// Close closes the connection; it is safe to call more than once and
	// from another goroutine (to interrupt a blocked roundTrip).
	Close() error
}

// dialer opens benchmark connections to one target.
type dialer struct {
	cfg *Config
	tgt target
	// addr is the address that accepted the first connection; every later
	// connection dials it. Set by dialFirst before any concurrent dial.
	addr   string
	tlsCfg *tls.Config // nil without --tls
	value  []byte      // the SET value, shared read-only by every connection
}

func newDialer(cfg *Config, tgt target, value []byte) (*dialer, error) {
	d := &dialer{cfg: cfg, tgt: tgt, value: value}
	if cfg.TLS {
		tc := &tls.Config{ServerName: tgt.host, MinVersion: tls.VersionTLS12}
		if cfg.CAFile != "" {
			pem, err := os.ReadFile(cfg.CAFile)
			if err != nil {
				return nil, fmt.Errorf("--ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--ca %s: no PEM certificates found", cfg.CAFile)
			}
			tc.RootCAs = pool
		}
		d.tlsCfg = tc
	}
	return d, nil
}

// dialFirst opens the first connection, trying each resolved address in
// turn (a name such as localhost may have a v4 and a v6 address, only one
// of which the server listens on), and fixes d.addr to the one that
// answered.
func (d *dialer) dialFirst(ctx context.Context) (client, error) {
	var errs []error
	for _, addr := range d.tgt.addrs {
		c, err := d.dialAddr(ctx, addr)
		if err == nil {
			d.addr = addr
			return c, nil
		}
		// A refused handshake is final: another address of the same
		// host would refuse it alike.
		if errors.Is(err, ErrHandshakeRejected) || ctx.Err() != nil {
			return nil, err
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// dial opens one more connection to the address dialFirst chose.
func (d *dialer) dial(ctx context.Context) (client, error) { return d.dialAddr(ctx, d.addr) }

// dialAddr opens one connection and completes the protocol's handshake.
func (d *dialer) dialAddr(ctx context.Context, addr string) (client, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	nd := net.Dialer{}
	conn, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", addr, err)
	}
	if d.tlsCfg != nil {
		tc := tls.Client(conn, d.tlsCfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		conn = tc
	}
	deadline, _ := ctx.Deadline()
	var c client
	switch d.cfg.Protocol {
	case ProtocolRESP:
		c, err = newRESPConn(conn, d.cfg, d.value, deadline)
	default:
		c, err = newNativeConn(conn, d.cfg, d.value, deadline)
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

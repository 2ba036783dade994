package cluster

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
)

// The cluster secret (issue #15 item 1) closes the cluster plane to a
// process that merely reaches its ports:
//
//   - gossip: memberlist encrypts and authenticates every packet and stream
//     with AES-GCM under the secret's keys (its Keyring); a packet no key
//     opens is dropped;
//   - the peer port: before any protocol byte, the two ends of a connection
//     prove to each other that they hold a key of the secret
//     (challenge-response, below). Raft, map fetches, replication,
//     migration and possession queries all ride behind it.
//
// A secret is a keyring: one or more keys, the first the primary. A node
// authenticates and encrypts with the primary and accepts every key, so a
// key is rotated without downtime: add the new key on every node (second
// line, SIGHUP), make it the primary on every node (first line, SIGHUP),
// remove the old one (SIGHUP).

// SecretKeySizes are the accepted raw key lengths: AES-128, AES-192, AES-256.
var SecretKeySizes = []int{16, 24, 32}

// Secret is a node's cluster secret: a reloadable keyring. The zero value
// (and nil) holds no key: the cluster plane is open.
type Secret struct {
	keys atomic.Pointer[[][]byte]
}

// NewSecret returns a secret holding keys (first = primary); see Set.
func NewSecret(keys [][]byte) (*Secret, error) {
	s := &Secret{}
	if err := s.Set(keys); err != nil {
		return nil, err
	}
	return s, nil
}

// Set replaces the keyring (first key = primary). Every key is 16, 24 or 32
// bytes; at least one; no duplicates.
func (s *Secret) Set(keys [][]byte) error {
	if err := validateKeys(keys); err != nil {
		return err
	}
	cp := make([][]byte, len(keys))
	for i, k := range keys {
		cp[i] = bytes.Clone(k)
	}
	s.keys.Store(&cp)
	return nil
}

// Keys returns the keyring (first = primary); nil when s holds no key.
func (s *Secret) Keys() [][]byte {
	if s == nil {
		return nil
	}
	if p := s.keys.Load(); p != nil {
		return *p
	}
	return nil
}

// Enabled reports whether s holds a key.
func (s *Secret) Enabled() bool { return len(s.Keys()) > 0 }

func validateKeys(keys [][]byte) error {
	if len(keys) == 0 {
		return errors.New("cluster secret: no key")
	}
	seen := map[string]bool{}
	for i, k := range keys {
		ok := false
		for _, n := range SecretKeySizes {
			ok = ok || len(k) == n
		}
		if !ok {
			return fmt.Errorf("cluster secret: key %d is %d bytes; want 16, 24 or 32", i+1, len(k))
		}
		if seen[string(k)] {
			return fmt.Errorf("cluster secret: key %d is listed twice", i+1)
		}
		seen[string(k)] = true
	}
	return nil
}

// ParseSecret reads a secret file: one key a line, base64 (standard
// encoding) of 16, 24 or 32 random bytes; the first key is the primary.
// Blank lines and lines starting with '#' are ignored.
// `head -c 32 /dev/urandom | base64` makes a key.
func ParseSecret(data []byte) ([][]byte, error) {
	var keys [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("cluster secret: line %d: not base64: %w", line, err)
		}
		keys = append(keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cluster secret: %w", err)
	}
	if err := validateKeys(keys); err != nil {
		return nil, err
	}
	return keys, nil
}

// LoadSecretFile reads and parses a secret file (ParseSecret).
func LoadSecretFile(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster secret: %w", err)
	}
	keys, err := ParseSecret(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return keys, nil
}

// The peer authentication handshake (version 1). The dialer opens it
// before anything else; both ends prove they hold a key of the secret over
// fresh nonces from both sides, bound to both node ids, so a recorded
// exchange proves nothing on another connection:
//
//	dialer:   authHello, authVersion, nonceD[32], len(idD), idD
//	acceptor: authChallenge, nonceA[32], len(idA), idA
//	          (authNoSecret when the acceptor has no secret: closed)
//	dialer:   macD[32]   HMAC-SHA256(k, "zaris peer-auth/1 dialer"   | transcript)
//	acceptor: authOK, macA[32]  HMAC-SHA256(k, "zaris peer-auth/1 acceptor" | transcript)
//	          (authBadSecret when no key of its secret gives macD: closed)
//
// transcript = nonceD | nonceA | len(idD) idD | len(idA) idA, and k is a
// key derived from a key of the keyring: the dialer's primary; the acceptor
// tries each of its keys and answers with the one that matched, so a
// rotation in progress (the keyrings overlap) authenticates. The dialer
// checks macA: an acceptor without the key cannot fake it. A dialer
// without a secret that speaks a protocol at once is answered
// peerAuthRequired and closed.
//
// The handshake authenticates the connection's opening; the stream after
// it is neither encrypted nor integrity-protected (TLS does that).
const (
	authHello   byte = 0x5A // not a protocol byte: 1..5, | peerNamed
	authVersion byte = 1

	authChallenge byte = 0
	authOK        byte = 0
	authBadSecret byte = 1
	// peerAuthRequired answers a connection that opened with a protocol
	// byte on a node that requires the handshake. It is also a value of
	// the named-connection admission byte (peerAccept, peerRefuse), so an
	// old-style dialer reads it where it expects its admission.
	peerAuthRequired byte = 2
	authNoSecret     byte = 3

	authNonceLen = 32
	authMACLen   = sha256.Size
)

// Refusal reasons of the peer port (the reason label of
// zaris_peer_auth_refused_total).
const (
	RefuseNoHandshake = "no_handshake" // spoke a protocol without authenticating
	RefuseBadSecret   = "bad_secret"   // proved no key of this node's secret
	RefuseMalformed   = "malformed"    // an unreadable or truncated handshake
	RefuseTLS         = "tls"          // the TLS handshake failed (no or a bad certificate)
	RefuseGossip      = "gossip"       // a gossip message no key of the secret opens
)

// RefuseReasons lists every refusal reason.
var RefuseReasons = []string{RefuseNoHandshake, RefuseBadSecret, RefuseMalformed, RefuseTLS, RefuseGossip}

// Errors of the dialer's side of the handshake.
var (
	// ErrPeerAuthRequired: the acceptor requires the cluster secret and
	// this node has none.
	ErrPeerAuthRequired = errors.New("cluster: the peer requires the cluster secret (--cluster-secret-file) and this node has none")
	// ErrPeerNoSecret: this node authenticates and the acceptor has no
	// secret (it is not a member of this secured cluster).
	ErrPeerNoSecret = errors.New("cluster: the peer has no cluster secret; it is not part of this secured cluster")
	// ErrPeerBadSecret: the two ends hold no common key.
	ErrPeerBadSecret = errors.New("cluster: the peer holds another cluster secret")
)

// authKey derives the HMAC key from a keyring key: the raw key also keys
// gossip's AES-GCM, and the two uses must not share a key.
func authKey(k []byte) []byte {
	h := hmac.New(sha256.New, k)
	h.Write([]byte("zaris peer-auth key"))
	return h.Sum(nil)
}

func authMAC(k []byte, role string, nonceD, nonceA []byte, idD, idA NodeID) []byte {
	h := hmac.New(sha256.New, authKey(k))
	h.Write([]byte("zaris peer-auth/1 " + role))
	h.Write(nonceD)
	h.Write(nonceA)
	h.Write(appendPeerID(nil, idD))
	h.Write(appendPeerID(nil, idA))
	return h.Sum(nil)
}

// appendHello appends the dialer's opening.
func appendHello(b, nonce []byte, id NodeID) []byte {
	b = append(b, authHello, authVersion)
	b = append(b, nonce...)
	return appendPeerID(b, id)
}

// readHelloBody reads the opening after its authHello byte: the version,
// the nonce and the dialer's id.
func readHelloBody(r io.Reader) (nonce []byte, id NodeID, err error) {
	var v [1]byte
	if _, err := io.ReadFull(r, v[:]); err != nil {
		return nil, "", err
	}
	if v[0] != authVersion {
		return nil, "", fmt.Errorf("peer auth version %d", v[0])
	}
	nonce = make([]byte, authNonceLen)
	if _, err := io.ReadFull(r, nonce); err != nil {
		return nil, "", err
	}
	id, err = readPeerID(r)
	return nonce, id, err
}

func newNonce() []byte {
	b := make([]byte, authNonceLen)
	if _, err := rand.Read(b); err != nil {
		panic("cluster: no randomness: " + err.Error())
	}
	return b
}

// dialAuth runs the dialer's side over rw with keyring keys (first =
// primary); self is this node's id. It returns the acceptor's id.
func dialAuth(rw io.ReadWriter, keys [][]byte, self NodeID) (NodeID, error) {
	nonceD := newNonce()
	if _, err := rw.Write(appendHello(nil, nonceD, self)); err != nil {
		return "", err
	}
	var b [1]byte
	if _, err := io.ReadFull(rw, b[:]); err != nil {
		return "", fmt.Errorf("cluster: peer closed the authentication: %w", err)
	}
	switch b[0] {
	case authChallenge:
	case authNoSecret:
		return "", ErrPeerNoSecret
	default:
		return "", fmt.Errorf("cluster: peer answered %#x to the authentication", b[0])
	}
	nonceA := make([]byte, authNonceLen)
	if _, err := io.ReadFull(rw, nonceA); err != nil {
		return "", err
	}
	idA, err := readPeerID(rw)
	if err != nil {
		return "", err
	}
	k := keys[0]
	if _, err := rw.Write(authMAC(k, "dialer", nonceD, nonceA, self, idA)); err != nil {
		return "", err
	}
	if _, err := io.ReadFull(rw, b[:]); err != nil {
		return "", fmt.Errorf("cluster: peer closed the authentication: %w", err)
	}
	switch b[0] {
	case authOK:
	case authBadSecret:
		return "", ErrPeerBadSecret
	default:
		return "", fmt.Errorf("cluster: peer answered %#x to the authentication", b[0])
	}
	macA := make([]byte, authMACLen)
	if _, err := io.ReadFull(rw, macA); err != nil {
		return "", err
	}
	if !hmac.Equal(macA, authMAC(k, "acceptor", nonceD, nonceA, self, idA)) {
		return "", fmt.Errorf("%w (its proof does not match)", ErrPeerBadSecret)
	}
	return idA, nil
}

// acceptAuth runs the acceptor's side after the authHello byte was read:
// it returns the dialer's id, or a refusal reason and an error.
func acceptAuth(rw io.ReadWriter, keys [][]byte, self NodeID) (NodeID, string, error) {
	nonceD, idD, err := readHelloBody(rw)
	if err != nil {
		return "", RefuseMalformed, err
	}
	nonceA := newNonce()
	if _, err := rw.Write(appendPeerID(append([]byte{authChallenge}, nonceA...), self)); err != nil {
		return idD, RefuseMalformed, err
	}
	macD := make([]byte, authMACLen)
	if _, err := io.ReadFull(rw, macD); err != nil {
		return idD, RefuseMalformed, err
	}
	for _, k := range keys {
		if hmac.Equal(macD, authMAC(k, "dialer", nonceD, nonceA, idD, self)) {
			_, err := rw.Write(append([]byte{authOK}, authMAC(k, "acceptor", nonceD, nonceA, idD, self)...))
			if err != nil {
				return idD, RefuseMalformed, err
			}
			return idD, "", nil
		}
	}
	_, _ = rw.Write([]byte{authBadSecret})
	return idD, RefuseBadSecret, errors.New("no key of this node's cluster secret matches the peer's proof")
}

// gossipRefusal sees memberlist's log lines: a message refused for its
// encryption (no key of the secret opens it, or it came in clear, or this
// open node got an encrypted one) is counted as a refusal and logged once
// per remote, with what it means; other lines pass.
func (c *Cluster) gossipRefusal(line string) bool {
	if !gossipCryptoRefusal(line) {
		return true
	}
	if c.mux != nil {
		c.mux.CountRefusal(RefuseGossip)
	}
	remote := "?"
	if i := strings.Index(line, "from="); i >= 0 {
		remote = strings.Fields(line[i+len("from="):] + " ")[0]
	}
	if c.mux != nil && !c.mux.firstRefusal(remote, RefuseGossip) {
		return false
	}
	what := "refused a gossip message: it is not encrypted with this cluster's secret (a node without --cluster-secret-file, or with another secret)"
	if !c.cfg.Secret.Enabled() {
		what = "refused a gossip message: it is encrypted, and this node has no --cluster-secret-file (the cluster is secured)"
	}
	c.log.Warn(what+"; further refusals of this remote are only counted (zaris_peer_auth_refused_total)",
		"remote", remote, "detail", line)
	return false
}

// gossipCryptoRefusal reports whether a memberlist log line is a message
// refused for its encryption (and not, say, its warning about binding a
// public address without encryption).
func gossipCryptoRefusal(line string) bool {
	l := strings.ToLower(line)
	for _, s := range []string{"decrypt", "remote state is encrypted", "remote state is not encrypted", "no installed keys"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// ReloadSecret installs a new keyring (first = primary) on a running
// node: the peer port authenticates with it from the next connection, and
// gossip's keyring takes the new keys, makes the first primary and drops
// the keys no longer listed — in that order, so a rotation step never
// leaves gossip without a key its peers use. A node started without a
// secret cannot be secured by a reload (restart it with the secret).
func (c *Cluster) ReloadSecret(keys [][]byte) error {
	if !c.cfg.Secret.Enabled() {
		return errors.New("cluster: this node started without a cluster secret; restart it with --cluster-secret-file to secure it")
	}
	if err := validateKeys(keys); err != nil {
		return err
	}
	if ring := c.gossipRing; ring != nil {
		for _, k := range keys {
			if err := ring.AddKey(k); err != nil {
				return fmt.Errorf("cluster: gossip keyring: %w", err)
			}
		}
		if err := ring.UseKey(keys[0]); err != nil {
			return fmt.Errorf("cluster: gossip keyring: %w", err)
		}
		keep := map[string]bool{}
		for _, k := range keys {
			keep[string(k)] = true
		}
		// RemoveKey rewrites the ring's slice in place: list first, then drop.
		var drop [][]byte
		for _, k := range ring.GetKeys() {
			if !keep[string(k)] {
				drop = append(drop, bytes.Clone(k))
			}
		}
		for _, k := range drop {
			if err := ring.RemoveKey(k); err != nil {
				return fmt.Errorf("cluster: gossip keyring: %w", err)
			}
		}
	}
	return c.cfg.Secret.Set(keys)
}

// PeerAuthRefusals counts the connections and gossip messages refused for
// the cluster's authentication, by reason (RefuseReasons).
func (c *Cluster) PeerAuthRefusals() map[string]uint64 {
	if c.mux == nil {
		return map[string]uint64{}
	}
	return c.mux.Refusals()
}

package cluster

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
)

// rw joins a reader (what the remote sent) and a writer (what we answer).
type rw struct {
	io.Reader
	io.Writer
}

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// authPair runs both sides of the handshake over a real loopback TCP
// connection.
func authPair(t testing.TB, dialKeys, acceptKeys [][]byte) (dialErr, acceptErr error, reason string, peer NodeID) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			acceptErr = err
			return
		}
		defer c.Close()
		var b [1]byte
		if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != authHello {
			acceptErr = errors.New("no hello")
			return
		}
		peer, reason, acceptErr = acceptAuth(c, acceptKeys, "acceptor")
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	var got NodeID
	got, dialErr = dialAuth(c, dialKeys, "dialer")
	c.Close()
	<-done
	if dialErr == nil && got != "acceptor" {
		t.Fatalf("dialer authenticated %q", got)
	}
	return dialErr, acceptErr, reason, peer
}

func TestPeerAuthHandshake(t *testing.T) {
	// Same key; rotation overlaps (the dialer's primary is a secondary of
	// the acceptor, and the other way round).
	for name, keys := range map[string][2][][]byte{
		"same":               {{key(1)}, {key(1)}},
		"dialer rotated":     {{key(2), key(1)}, {key(1), key(2)}},
		"acceptor rotated":   {{key(1)}, {key(2), key(1)}},
		"acceptor added new": {{key(1), key(2)}, {key(1), key(2)}},
	} {
		dErr, aErr, _, peer := authPair(t, keys[0], keys[1])
		if dErr != nil || aErr != nil || peer != "dialer" {
			t.Fatalf("%s: dial %v, accept %v, peer %q", name, dErr, aErr, peer)
		}
	}
	dErr, aErr, reason, _ := authPair(t, [][]byte{key(1)}, [][]byte{key(2)})
	if !errors.Is(dErr, ErrPeerBadSecret) || aErr == nil || reason != RefuseBadSecret {
		t.Fatalf("different keys: dial %v, accept %v %q", dErr, aErr, reason)
	}
}

// A recorded exchange replayed to a fresh acceptor proves nothing: the
// acceptor's nonce differs, so the recorded MAC does not match.
func TestPeerAuthNoReplay(t *testing.T) {
	k := [][]byte{key(7)}
	nonceD := bytes.Repeat([]byte{9}, authNonceLen)
	hello := appendHello(nil, nonceD, "dialer")
	// Replay: the hello and a MAC recorded over another acceptor nonce.
	old := authMAC(k[0], "dialer", nonceD, bytes.Repeat([]byte{1}, authNonceLen), "dialer", "acceptor")
	stream := append(append([]byte{}, hello[1:]...), old...)
	_, reason, err := acceptAuth(rw{bytes.NewReader(stream), io.Discard}, k, "acceptor")
	if err == nil || reason != RefuseBadSecret {
		t.Fatalf("a replayed proof was accepted: %v %q", err, reason)
	}
}

func TestParseSecret(t *testing.T) {
	good := "# rotation\n" + "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\n\n" + "AgICAgICAgICAgICAgICAg==\n"
	keys, err := ParseSecret([]byte(good))
	if err != nil || len(keys) != 2 || len(keys[0]) != 32 || len(keys[1]) != 16 {
		t.Fatalf("%v %d", err, len(keys))
	}
	for _, bad := range []string{"", "# only a comment\n", "not base64!\n", "AQID\n",
		"AgICAgICAgICAgICAgICAg==\nAgICAgICAgICAgICAgICAg==\n"} {
		if _, err := ParseSecret([]byte(bad)); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

// FuzzPeerAuthAccept feeds arbitrary bytes as a dialer's side of the
// handshake: the acceptor never panics, never allocates by a length it
// read beyond 255 bytes, and never authenticates a stream made without
// the key (the fuzzer cannot know the acceptor's fresh nonce).
func FuzzPeerAuthAccept(f *testing.F) {
	f.Add(appendHello(nil, make([]byte, authNonceLen), "n1")[1:])
	f.Add(append(appendHello(nil, make([]byte, authNonceLen), "n1")[1:], make([]byte, authMACLen)...))
	f.Add([]byte{authVersion})
	f.Add([]byte{9, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		_, reason, err := acceptAuth(rw{bytes.NewReader(data), &out}, [][]byte{key(3)}, "acceptor")
		if err == nil {
			t.Fatalf("fuzz input authenticated: %x", data)
		}
		if reason == "" {
			t.Fatal("a refusal without a reason")
		}
	})
}

// FuzzPeerAuthDial feeds arbitrary bytes as an acceptor's answers: the
// dialer never panics and never authenticates an acceptor without the key.
func FuzzPeerAuthDial(f *testing.F) {
	f.Add(append([]byte{authChallenge}, appendPeerID(make([]byte, authNonceLen), "n2")...))
	f.Add([]byte{authNoSecret})
	f.Add([]byte{authChallenge})
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := dialAuth(rw{bytes.NewReader(data), io.Discard}, [][]byte{key(4)}, "dialer"); err == nil {
			t.Fatalf("fuzz input authenticated as an acceptor: %x", data)
		}
	})
}

// BenchmarkPeerAuthHandshake measures one peer authentication, both sides,
// over an in-memory pipe: the CPU and round trips the handshake adds to a
// peer connection (BENCHMARKS.md).
func BenchmarkPeerAuthHandshake(b *testing.B) {
	keys := [][]byte{key(5)}
	b.ReportAllocs()
	for b.Loop() {
		d, a := net.Pipe()
		done := make(chan error, 1)
		go func() {
			var h [1]byte
			_, _ = io.ReadFull(a, h[:])
			_, _, err := acceptAuth(a, keys, "acceptor")
			done <- err
		}()
		if _, err := dialAuth(d, keys, "dialer"); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		d.Close()
		a.Close()
	}
}

// Over real peer muxes: a handler sees the node id the dialer proved the
// secret for (replication checks its sender against it); an open port
// hands over no identity.
func TestAuthenticatedPeerReachesHandlers(t *testing.T) {
	for _, secured := range []bool{true, false} {
		var keys [][]byte
		if secured {
			keys = [][]byte{key(8)}
		}
		mux := func(id NodeID) *PeerMux {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			m := NewPeerMux(ln, id, nil, slog.New(slog.DiscardHandler))
			if keys != nil {
				s, err := NewSecret(keys)
				if err != nil {
					t.Fatal(err)
				}
				m.UseSecret(s)
			}
			return m
		}
		acceptor, dialer := mux("a1"), mux("d7")
		got := make(chan NodeID, 1)
		acceptor.Handle(PeerReplication, func(c net.Conn) {
			id, ok := AuthenticatedPeer(c)
			if !ok {
				id = "(none)"
			}
			got <- id
		})
		acceptor.Serve()
		dialer.Serve()
		c, err := dialer.DialNode(context.Background(), acceptor.Addr().String(), "a1", PeerReplication)
		if err != nil {
			t.Fatal(err)
		}
		want := NodeID("(none)")
		if secured {
			want = "d7"
		}
		if id := <-got; id != want {
			t.Fatalf("secured %v: handler saw %q, want %q", secured, id, want)
		}
		c.Close()
		acceptor.Close()
		dialer.Close()
	}
}

func TestGossipCryptoRefusal(t *testing.T) {
	for line, want := range map[string]bool{
		"memberlist: Decrypt packet failed: No installed keys could decrypt the message from=127.0.0.1:1":  true,
		"memberlist: failed to receive: encryption is configured but remote state is not encrypted from=x": true,
		"memberlist: failed to receive: remote state is encrypted and encryption is not configured from=x": true,
		"memberlist: Binding to public address without encryption!":                                        false,
		"memberlist: Suspect n2 has failed, no acks received":                                              false,
	} {
		if gossipCryptoRefusal(line) != want {
			t.Fatalf("%q: want %v", line, want)
		}
	}
}

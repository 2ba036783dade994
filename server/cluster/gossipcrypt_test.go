package cluster

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"testing"
)

// BenchmarkGossipEncryption measures the primitive memberlist applies to
// every gossip packet under a cluster secret: AES-256-GCM seal on the
// sender and open on the receiver of one UDP-sized packet (1400 bytes,
// memberlist's UDPBufferSize) (BENCHMARKS.md).
func BenchmarkGossipEncryption(b *testing.B) {
	blk, err := aes.NewCipher(key(6))
	if err != nil {
		b.Fatal(err)
	}
	gcm, err := cipher.NewGCM(blk)
	if err != nil {
		b.Fatal(err)
	}
	msg := make([]byte, 1400)
	nonce := make([]byte, gcm.NonceSize())
	_, _ = rand.Read(msg)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = rand.Read(nonce)
		ct := gcm.Seal(nil, nonce, msg, nil)
		if _, err := gcm.Open(nil, nonce, ct, nil); err != nil {
			b.Fatal(err)
		}
	}
}

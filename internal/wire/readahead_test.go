package wire

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
)

// FuzzBufferedKeys: the read-ahead never panics, and the frames it reports
// buffered are the frames Next returns next, in order, each key being the
// leading key of its own frame — so a server can never warm one request's
// key as another's or count a frame Next would refuse.
func FuzzBufferedKeys(f *testing.F) {
	f.Add(encodeFrames(sampleFrames()), uint16(64))
	f.Add(AppendFrame(AppendFrame(AppendFrame(nil, 1, OpGet, 0, AppendKeyRequest(nil, "a")), 2, OpPut, 0,
		AppendPutRequest(nil, "b", []byte("v"), nil)), 3, OpGet, 0, AppendKeyRequest(nil, strings.Repeat("c", 300))), uint16(512))
	f.Add([]byte{0, 0, 0, 8, 0, 0, 0, 1, 1, 0, 0x91, 0xa1, 'k', 0, 0, 0, 5, 1}, uint16(64))
	f.Fuzz(func(t *testing.T, data []byte, size uint16) {
		fr := NewFrameReader(bufio.NewReaderSize(bytes.NewReader(data), int(size%1024)+16), 0)
		for {
			if _, err := fr.Next(); err != nil {
				return
			}
			keys, frames := fr.BufferedKeys(nil, 8)
			for i := range keys {
				keys[i] = bytes.Clone(keys[i]) // they alias the buffer Next reuses
			}
			if frames > 8 {
				t.Fatalf("%d frames read ahead, at most 8 asked", frames)
			}
			var want [][]byte
			for range frames {
				f, err := fr.Next()
				if err != nil {
					t.Fatalf("a frame read ahead fails in Next: %v", err)
				}
				if k := LeadingKey(f.Body); k != nil {
					want = append(want, bytes.Clone(k))
				}
			}
			if len(keys) != len(want) {
				t.Fatalf("read ahead %d keys, the frames hold %d", len(keys), len(want))
			}
			for i := range keys {
				if !bytes.Equal(keys[i], want[i]) {
					t.Fatalf("key %d read ahead %q, its frame's %q", i, keys[i], want[i])
				}
			}
		}
	})
}

// TestBufferedKeysReadsAPipeline: the keys of the requests buffered behind
// the one being served, in order, and none beyond max.
func TestBufferedKeysReadsAPipeline(t *testing.T) {
	var in []byte
	in = AppendFrame(in, 1, OpGet, 0, AppendKeyRequest(nil, "first"))
	in = AppendFrame(in, 2, OpPut, 0, AppendPutRequest(nil, "second", []byte("v"), &kv.PutOptions{IfAbsent: true}))
	in = AppendFrame(in, 3, OpPing, 0, nil)
	in = AppendFrame(in, 4, OpGet, 0, AppendKeyRequest(nil, strings.Repeat("k", 40)))
	in = AppendFrame(in, 5, OpDelete, 0, AppendKeyRequest(nil, "fifth"))
	in = AppendFrame(in, 6, OpGet, 0, AppendKeyRequest(nil, "sixth"))
	in = in[:len(in)-2] // the last frame is not wholly buffered
	fr := NewFrameReader(bytes.NewReader(in), 0)
	if _, err := fr.Next(); err != nil {
		t.Fatal(err)
	}
	keys, frames := fr.BufferedKeys(nil, 16)
	got := make([]string, len(keys))
	for i, k := range keys {
		got[i] = string(k)
	}
	if want := []string{"second", strings.Repeat("k", 40), "fifth"}; frames != 4 || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("read ahead %d frames, keys %q; want 4 frames, keys %q", frames, got, want)
	}
	if keys, frames := fr.BufferedKeys(nil, 2); frames != 2 || len(keys) != 1 {
		t.Fatalf("with max 2: %d frames, %d keys; want 2 frames, 1 key", frames, len(keys))
	}
}

// TestLeadingKeyIsTheRequestsKey: for keyed request bodies of every string
// header size, the leading key is the key the request's decoder reads.
func TestLeadingKeyIsTheRequestsKey(t *testing.T) {
	for _, n := range []int{0, 1, 31, 32, 255, 256, 65535} {
		key := strings.Repeat("k", n)
		for name, body := range map[string][]byte{
			"key": AppendKeyRequest(nil, key),
			"put": AppendPutRequest(nil, key, []byte("v"), &kv.PutOptions{TTL: 5}),
		} {
			var decoded []byte
			if name == "key" {
				k, err := DecodeKeyRequest(body)
				if err != nil {
					t.Fatal(err)
				}
				decoded = k
			} else {
				var req PutRequest
				if err := DecodePutRequest(body, &req); err != nil {
					t.Fatal(err)
				}
				decoded = req.Key
			}
			if got := LeadingKey(body); got == nil || !bytes.Equal(got, decoded) {
				t.Fatalf("%s request with a %d-byte key: leading key %q, decoded %q", name, n, got, decoded)
			}
		}
	}
	if LeadingKey([]byte{0x91, 0x01}) != nil || LeadingKey(nil) != nil || LeadingKey([]byte{0x91, 0xa5, 'a'}) != nil {
		t.Fatal("a body without a whole leading string has no leading key")
	}
}

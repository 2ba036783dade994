package wire

import (
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zaris-io/zaris/internal/kv"
)

const benchKey = "user:{12345}:profile"

var (
	benchValue = make([]byte, 100)
	benchOpts  = &kv.PutOptions{IfMatchVersion: 7, TTL: 5 * time.Minute}
)

func BenchmarkEncodeGetRequest(b *testing.B) {
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for i := range b.N {
		dst, start := BeginFrame(buf[:0], uint32(i), OpGet, 0)
		dst = AppendKeyRequest(dst, benchKey)
		buf = EndFrame(dst, start)
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkDecodeGetRequest reads a Get frame from a stream and decodes its
// key: the whole per-request decoding cost of a server.
func BenchmarkDecodeGetRequest(b *testing.B) {
	frame := AppendFrame(nil, 1, OpGet, 0, AppendKeyRequest(nil, benchKey))
	fr := NewFrameReader(&loopReader{data: frame}, 0)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for range b.N {
		f, err := fr.Next()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := DecodeKeyRequest(f.Body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodePutRequest(b *testing.B) {
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for i := range b.N {
		dst, start := BeginFrame(buf[:0], uint32(i), OpPut, 0)
		dst = AppendPutRequest(dst, benchKey, benchValue, benchOpts)
		buf = EndFrame(dst, start)
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkDecodePutRequest(b *testing.B) {
	frame := AppendFrame(nil, 1, OpPut, 0, AppendPutRequest(nil, benchKey, benchValue, benchOpts))
	fr := NewFrameReader(&loopReader{data: frame}, 0)
	var req PutRequest
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for range b.N {
		f, err := fr.Next()
		if err != nil {
			b.Fatal(err)
		}
		if err := DecodePutRequest(f.Body, &req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeResult(b *testing.B) {
	buf := make([]byte, 0, 512)
	r := kv.Result{Value: benchValue, Version: 3, Revision: 1 << 20, TTL: time.Minute}
	b.ReportAllocs()
	for i := range b.N {
		dst, start := BeginFrame(buf[:0], uint32(i), OpGet, FlagResponse)
		dst = AppendResult(dst, r)
		buf = EndFrame(dst, start)
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkDecodeResult(b *testing.B) {
	frame := AppendFrame(nil, 1, OpGet, FlagResponse,
		AppendResult(nil, kv.Result{Value: benchValue, Version: 3, Revision: 1 << 20, TTL: time.Minute}))
	fr := NewFrameReader(&loopReader{data: frame}, 0)
	var r kv.Result
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for range b.N {
		f, err := fr.Next()
		if err != nil {
			b.Fatal(err)
		}
		if err := DecodeResult(f.Body, &r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFrameReaderLargeBody exercises the copying path: bodies larger
// than the read buffer.
func BenchmarkFrameReaderLargeBody(b *testing.B) {
	frame := AppendFrame(nil, 1, OpPut, 0, make([]byte, 256<<10))
	fr := NewFrameReader(&loopReader{data: frame}, 0)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for range b.N {
		if _, err := fr.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBatch100(b *testing.B) {
	build := func(dst []byte) []byte {
		dst = AppendBatchRequestHeader(dst, 100)
		for range 100 {
			dst = AppendBatchItem(dst, BatchPut, benchKey, benchValue, benchOpts)
		}
		return dst
	}
	b.Run("encode", func(b *testing.B) {
		buf := build(nil)
		b.SetBytes(int64(len(buf)))
		b.ReportAllocs()
		for range b.N {
			buf = build(buf[:0])
		}
	})
	b.Run("decode", func(b *testing.B) {
		body := build(nil)
		var items []BatchItem
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for range b.N {
			var err error
			if items, err = DecodeBatchRequest(body, items); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLibraryPut is the reference point: the same Put body through the
// msgpack library's reflection-based codec.
func BenchmarkLibraryPut(b *testing.B) {
	v := libPut{Key: benchKey, Value: benchValue, IfMatchVersion: benchOpts.IfMatchVersion, TTL: benchOpts.TTL}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := msgpack.Marshal(&v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		body, _ := msgpack.Marshal(&v)
		var out libPut
		b.ReportAllocs()
		for range b.N {
			if err := msgpack.Unmarshal(body, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

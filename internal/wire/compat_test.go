package wire

import (
	"bytes"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zaris-io/zaris/internal/kv"
)

// These tests hold the hand-written codec to the reference implementation
// DESIGN.md chose, github.com/vmihailenco/msgpack/v5, in both directions: a
// peer using the library (another language's client, a debugging tool) must
// read our bodies and be read by us.

// libDecode decodes body generically with the library and normalizes the
// integer types, so that expectations need not guess the width it picked.
func libDecode(t *testing.T, body []byte) any {
	t.Helper()
	r := bytes.NewReader(body) // an io.ByteScanner: the library reads it without buffering
	v, err := msgpack.NewDecoder(r).DecodeInterface()
	if err != nil {
		t.Fatalf("msgpack library rejects %x: %v", body, err)
	}
	if r.Len() != 0 {
		t.Fatalf("msgpack library left %d bytes after the value in %x", r.Len(), body)
	}
	return normalize(v)
}

// normalize turns every integer into int64 (or uint64 above MaxInt64) and
// every map into map[string]any.
func normalize(v any) any {
	switch x := v.(type) {
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		if x > math.MaxInt64 {
			return x
		}
		return int64(x)
	case []any:
		for i := range x {
			x[i] = normalize(x[i])
		}
		return x
	case map[string]any:
		for k := range x {
			x[k] = normalize(x[k])
		}
		return x
	}
	return v
}

func TestLibraryDecodesOurBodies(t *testing.T) {
	opts := &kv.PutOptions{IfMatchVersion: math.MaxUint64, IfAbsent: true, TTL: -90 * time.Second,
		ContentType: "application/msgpack", Labels: map[string]string{"tenant": "acme"}}
	long := string(bytes.Repeat([]byte("x"), 70000))
	tests := []struct {
		name string
		body []byte
		want any
	}{
		{"key request", AppendKeyRequest(nil, "user:1"), []any{"user:1"}},
		{"long key request", AppendKeyRequest(nil, long), []any{long}},
		{"put, no options", AppendPutRequest(nil, "k", []byte("v"), nil), []any{"k", []byte("v")}},
		{"put, nil value", AppendPutRequest(nil, "k", nil, &kv.PutOptions{IfAbsent: true}), []any{"k", nil, int64(0), true}},
		{"put, every option", AppendPutRequest(nil, "k", []byte{0, 1}, opts), []any{"k", []byte{0, 1},
			uint64(math.MaxUint64), true, int64(-90 * time.Second), "application/msgpack", map[string]any{"tenant": "acme"}}},
		{"put, no labels", AppendPutRequest(nil, "k", []byte{}, &kv.PutOptions{ContentType: "t"}), []any{"k", []byte{}, int64(0), false, int64(0), "t"}},
		{"expire", AppendExpireRequest(nil, "k", math.MinInt64), []any{"k", int64(math.MinInt64)}},
		{"batch", AppendBatchItem(AppendBatchItem(AppendBatchRequestHeader(nil, 2), BatchGet, "a", nil, nil), BatchPut, "b", []byte("v"), &kv.PutOptions{TTL: 1}),
			[]any{[]any{[]any{int64(0), "a"}, []any{int64(1), "b", []byte("v"), int64(0), false, int64(1)}}}},
		{"result, miss", AppendResult(nil, kv.Result{Status: kv.StatusNotFound}), []any{int64(1)}},
		{"result, hit", AppendResult(nil, kv.Result{Value: []byte("v"), Version: 1, Revision: 1 << 33, TTL: time.Hour}),
			[]any{int64(0), []byte("v"), int64(1), int64(1 << 33), int64(time.Hour)}},
		{"result, version without value", AppendResult(nil, kv.Result{Status: kv.StatusConflict, Version: 4}), []any{int64(2), nil, int64(4)}},
		{"batch result", AppendResult(AppendBatchResultHeader(nil, 1), kv.Result{Status: kv.StatusMoved}), []any{[]any{[]any{int64(5)}}}},
		{"handshake request", AppendHandshakeRequest(nil, HandshakeRequest{ProtocolVersion: 1, Store: "default", Token: "t", ClientName: "c"}),
			[]any{int64(1), "default", "t", "c"}},
		{"handshake response", AppendHandshakeResponse(nil, HandshakeResponse{ProtocolVersion: 1, NodeID: "n1", ServerVersion: "v1", MaxFrameSize: DefaultMaxFrameSize}),
			[]any{int64(0), int64(1), "n1", "v1", "", int64(DefaultMaxFrameSize)}},
		{"error response", AppendErrorResponse(nil, kv.StatusBadRequest, "bad"), []any{int64(12), "bad"}},
		{"info response", AppendInfoResponse(nil, InfoResponse{Fields: map[string]string{"a": "b"}}), []any{int64(0), map[string]any{"a": "b"}}},
		{"info response, no fields", AppendInfoResponse(nil, InfoResponse{}), []any{int64(0), nil}},
	}
	for _, tt := range tests {
		if got := libDecode(t, tt.body); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: library decodes %#v, want %#v", tt.name, got, tt.want)
		}
	}
}

// Library-side mirrors of the bodies, encoded positionally (as_array) the
// way a Go peer using the library would write them.
type (
	libPut struct {
		_msgpack       struct{} `msgpack:",as_array"`
		Key            string
		Value          []byte
		IfMatchVersion uint64
		IfAbsent       bool
		TTL            time.Duration
		ContentType    string
		Labels         map[string]string
	}
	libItem struct {
		_msgpack       struct{} `msgpack:",as_array"`
		Op             uint8
		Key            string
		Value          []byte
		IfMatchVersion uint64
		IfAbsent       bool
		TTL            time.Duration
		ContentType    string
		Labels         map[string]string
	}
	libBatch struct {
		_msgpack struct{} `msgpack:",as_array"`
		Items    []libItem
	}
	libResult struct {
		_msgpack struct{} `msgpack:",as_array"`
		Status   uint8
		Value    []byte
		Version  uint64
		Revision uint64
		TTL      int64
	}
	libBatchResult struct {
		_msgpack struct{} `msgpack:",as_array"`
		Results  []libResult
	}
	libHandshake struct {
		_msgpack        struct{} `msgpack:",as_array"`
		ProtocolVersion uint16
		Store           string
		Token           string
		ClientName      string
	}
	libHandshakeResponse struct {
		_msgpack        struct{} `msgpack:",as_array"`
		Status          uint8
		ProtocolVersion uint16
		NodeID          string
		ServerVersion   string
		Message         string
		MaxFrameSize    uint32
	}
)

// libEncode encodes v with the library, with compact integers or with the
// library's default fixed-width ones: we must read both.
func libEncode(t *testing.T, v any, compact bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(compact)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestOurDecodersReadLibraryBodies(t *testing.T) {
	for _, compact := range []bool{false, true} {
		put := libPut{Key: "k", Value: []byte("v"), IfMatchVersion: 1 << 40, IfAbsent: true, TTL: -time.Minute,
			ContentType: "text/plain", Labels: map[string]string{"a": "b", "c": "d"}}
		var req PutRequest
		if err := DecodePutRequest(libEncode(t, put, compact), &req); err != nil {
			t.Fatalf("compact=%v put: %v", compact, err)
		}
		wantOpts := kv.PutOptions{IfMatchVersion: 1 << 40, IfAbsent: true, TTL: -time.Minute,
			ContentType: "text/plain", Labels: map[string]string{"a": "b", "c": "d"}}
		if string(req.Key) != "k" || string(req.Value) != "v" || !reflect.DeepEqual(req.Options, wantOpts) {
			t.Fatalf("compact=%v put = %+v", compact, req)
		}

		// Zero-valued fields, a nil value and an empty (not nil) labels map.
		if err := DecodePutRequest(libEncode(t, libPut{Key: "k", Labels: map[string]string{}}, compact), &req); err != nil {
			t.Fatalf("compact=%v zero put: %v", compact, err)
		}
		if req.Value != nil || !reflect.DeepEqual(req.Options, kv.PutOptions{}) {
			t.Fatalf("compact=%v zero put = %+v", compact, req)
		}

		batch := libBatch{Items: []libItem{{Op: 0, Key: "a"}, {Op: 1, Key: "b", Value: []byte("x"), TTL: time.Second}, {Op: 2, Key: "c"}}}
		items, err := DecodeBatchRequest(libEncode(t, batch, compact), nil)
		if err != nil || len(items) != 3 || items[1].Op != BatchPut || string(items[1].Value) != "x" ||
			items[1].Options.TTL != time.Second || items[2].Op != BatchDelete || string(items[2].Key) != "c" {
			t.Fatalf("compact=%v batch = %+v, %v", compact, items, err)
		}

		res := libResult{Status: uint8(kv.StatusSuccess), Value: []byte("v"), Version: 2, Revision: math.MaxUint64, TTL: int64(time.Hour)}
		var r kv.Result
		if err := DecodeResult(libEncode(t, res, compact), &r); err != nil {
			t.Fatalf("compact=%v result: %v", compact, err)
		}
		if want := (kv.Result{Value: []byte("v"), Version: 2, Revision: math.MaxUint64, TTL: time.Hour}); !reflect.DeepEqual(r, want) {
			t.Fatalf("compact=%v result = %+v", compact, r)
		}
		results, err := DecodeBatchResult(libEncode(t, libBatchResult{Results: []libResult{res, {Status: 1}}}, compact), nil)
		if err != nil || len(results) != 2 || results[1].Status != kv.StatusNotFound || results[1].Value != nil {
			t.Fatalf("compact=%v batch result = %+v, %v", compact, results, err)
		}

		var hreq HandshakeRequest
		if err := DecodeHandshakeRequest(libEncode(t, libHandshake{ProtocolVersion: 1, Store: "s", Token: "t", ClientName: "c"}, compact), &hreq); err != nil ||
			hreq != (HandshakeRequest{ProtocolVersion: 1, Store: "s", Token: "t", ClientName: "c"}) {
			t.Fatalf("compact=%v handshake = %+v, %v", compact, hreq, err)
		}
		var hresp HandshakeResponse
		if err := DecodeHandshakeResponse(libEncode(t, libHandshakeResponse{Status: 11, ProtocolVersion: 1, NodeID: "n", Message: "m", MaxFrameSize: 1 << 24}, compact), &hresp); err != nil ||
			hresp != (HandshakeResponse{Status: kv.StatusUnauthorized, ProtocolVersion: 1, NodeID: "n", Message: "m", MaxFrameSize: 1 << 24}) {
			t.Fatalf("compact=%v handshake response = %+v, %v", compact, hresp, err)
		}
	}
}

func TestOurDecodersReadLibraryArraysOfOtherLengths(t *testing.T) {
	// A newer peer: more fields than we know, of assorted types.
	newer := []any{"k", []byte("v"), uint64(3), true, int64(10), "ct", map[string]string{"a": "b"}, true, int64(7),
		"future field", 3.5, []any{1, "x", map[string]any{"deep": []any{nil}}}, time.Unix(1, 0)}
	var req PutRequest
	if err := DecodePutRequest(libEncode(t, newer, false), &req); err != nil {
		t.Fatalf("newer put: %v", err)
	}
	if req.Options.IfMatchVersion != 3 || !req.Options.IfAbsent || req.Options.TTL != 10 || req.Options.Labels["a"] != "b" || !req.Options.KeepTTL || req.Options.ExpireAt != 7 {
		t.Fatalf("newer put = %+v", req)
	}
	// An older or terser peer: only the required fields.
	if err := DecodePutRequest(libEncode(t, []any{"k", []byte("v")}, false), &req); err != nil || !reflect.DeepEqual(req.Options, kv.PutOptions{}) {
		t.Fatalf("minimal put = %+v, %v", req, err)
	}
	if key, err := DecodeKeyRequest(libEncode(t, []any{[]byte("binary key"), "extra"}, false)); err != nil || string(key) != "binary key" {
		t.Fatalf("bin key: %q, %v", key, err)
	}
	var r kv.Result
	if err := DecodeResult(libEncode(t, []any{uint8(1)}, false), &r); err != nil || r.Status != kv.StatusNotFound {
		t.Fatalf("status-only result = %+v, %v", r, err)
	}
	if err := DecodeResult(libEncode(t, []any{0, []byte("v"), 1, 2, 3, "why", "later", []int{1}}, true), &r); err != nil || r.TTL != 3 || r.Detail != "why" {
		t.Fatalf("newer result = %+v, %v", r, err)
	}
}

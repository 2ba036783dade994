package wire

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// Sizes that cross every MessagePack length boundary: fix, 8, 16, 32 bits.
var lengths = []int{0, 1, 15, 16, 31, 32, 255, 256, 65535, 65536}

func TestKeyRequestRoundTrip(t *testing.T) {
	for _, n := range lengths {
		key := strings.Repeat("k", n)
		got, err := DecodeKeyRequest(AppendKeyRequest(nil, key))
		if err != nil || string(got) != key {
			t.Fatalf("key of %d bytes: %q, %v", n, got, err)
		}
	}
}

func putOptionCases() []*kv.PutOptions {
	return []*kv.PutOptions{
		nil,
		{},
		{IfMatchVersion: 1},
		{IfMatchVersion: math.MaxUint64},
		{IfAbsent: true},
		{TTL: time.Second},
		{TTL: -1},
		{TTL: math.MinInt64},
		{TTL: math.MaxInt64},
		{ContentType: "application/json"},
		{Labels: map[string]string{"tenant": "acme", "": "", "long": strings.Repeat("v", 300)}},
		{IfMatchVersion: 42, IfAbsent: true, TTL: 90 * time.Minute, ContentType: "text/plain", Labels: map[string]string{"a": "b"}},
		{IfMatchVersion: 3, Labels: map[string]string{"only": "labels"}},
		{ExpireAt: 1_796_000_000_123_000_000},
		{ExpireAt: math.MaxInt64, IfAbsent: true},
		{ExpireAt: -1},
	}
}

// wantOptions is what a decoder yields for opts: zero for nil.
func wantOptions(o *kv.PutOptions) kv.PutOptions {
	if o == nil {
		return kv.PutOptions{}
	}
	return *o
}

func TestPutRequestRoundTrip(t *testing.T) {
	values := [][]byte{nil, {}, []byte("v"), bytes.Repeat([]byte{0xff}, 256), bytes.Repeat([]byte{1}, 70000)}
	for _, opts := range putOptionCases() {
		for _, value := range values {
			body := AppendPutRequest(nil, "the-key", value, opts)
			var req PutRequest
			if err := DecodePutRequest(body, &req); err != nil {
				t.Fatalf("opts %+v value %d: %v", opts, len(value), err)
			}
			if string(req.Key) != "the-key" || !bytes.Equal(req.Value, value) || (req.Value == nil) != (value == nil) {
				t.Fatalf("key/value: %q %v (nil=%v)", req.Key, len(req.Value), req.Value == nil)
			}
			if !reflect.DeepEqual(req.Options, wantOptions(opts)) {
				t.Fatalf("options = %+v, want %+v", req.Options, wantOptions(opts))
			}
		}
	}
}

func TestPutRequestLeavesOutDefaults(t *testing.T) {
	body := AppendPutRequest(nil, "k", []byte("v"), nil)
	if want := []byte{0x92, 0xa1, 'k', 0xc4, 1, 'v'}; !bytes.Equal(body, want) {
		t.Fatalf("put without options = %x, want %x", body, want)
	}
	body = AppendPutRequest(nil, "k", nil, &kv.PutOptions{TTL: 1})
	if want := []byte{0x95, 0xa1, 'k', 0xc0, 0x00, 0xc2, 0x01}; !bytes.Equal(body, want) {
		t.Fatalf("put with a TTL = %x, want %x", body, want)
	}
}

func TestDecodePutRequestOverwrites(t *testing.T) {
	req := PutRequest{Options: kv.PutOptions{IfAbsent: true, Labels: map[string]string{"x": "y"}}}
	if err := DecodePutRequest(AppendPutRequest(nil, "k", nil, nil), &req); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(req.Options, kv.PutOptions{}) {
		t.Fatalf("stale options survived: %+v", req.Options)
	}
}

func TestExpireRequestRoundTrip(t *testing.T) {
	for _, ttl := range []time.Duration{0, 1, -1, time.Hour, math.MaxInt64, math.MinInt64, -33, -129, -32769, -1 << 31, -1<<31 - 1} {
		key, got, err := DecodeExpireRequest(AppendExpireRequest(nil, "k", ttl))
		if err != nil || string(key) != "k" || got != ttl {
			t.Fatalf("ttl %d: %q %d %v", ttl, key, got, err)
		}
	}
}

func TestBatchRequestRoundTrip(t *testing.T) {
	type in struct {
		op    BatchOp
		key   string
		value []byte
		opts  *kv.PutOptions
	}
	var items []in
	for i, opts := range putOptionCases() {
		items = append(items,
			in{BatchPut, "put" + strings.Repeat("x", i), []byte{byte(i)}, opts},
			in{BatchGet, "get", nil, nil},
			in{BatchDelete, "", nil, nil},
			in{BatchPut, "empty", []byte{}, nil},
			in{BatchOp(200), "future op", nil, nil},
		)
	}
	body := AppendBatchRequestHeader(nil, len(items))
	for _, it := range items {
		body = AppendBatchItem(body, it.op, it.key, it.value, it.opts)
	}
	got, err := DecodeBatchRequest(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(items) {
		t.Fatalf("%d items, want %d", len(got), len(items))
	}
	for i, it := range items {
		g := got[i]
		if g.Op != it.op || string(g.Key) != it.key || !bytes.Equal(g.Value, it.value) || (g.Value == nil) != (it.value == nil) {
			t.Fatalf("item %d = %+v, want %+v", i, g, it)
		}
		if !reflect.DeepEqual(g.Options, wantOptions(it.opts)) {
			t.Fatalf("item %d options = %+v, want %+v", i, g.Options, wantOptions(it.opts))
		}
	}

	// Reuse: the second decode writes into the first's memory.
	again, err := DecodeBatchRequest(body, got)
	if err != nil || &again[0] != &got[0] {
		t.Fatalf("slice not reused (%v)", err)
	}

	// Empty batch.
	got, err = DecodeBatchRequest(AppendBatchRequestHeader(nil, 0), got)
	if err != nil || len(got) != 0 {
		t.Fatalf("empty batch: %v %v", got, err)
	}
}

func TestBatchOpStrings(t *testing.T) {
	if BatchGet.String() != "Get" || BatchDelete.String() != "Delete" || BatchOp(9).String() != "BatchOp(9)" || BatchOp(9).Valid() {
		t.Error("BatchOp names")
	}
}

func resultCases() []kv.Result {
	return []kv.Result{
		{},
		{Status: kv.StatusNotFound},
		{Status: kv.StatusSuccess, Value: []byte{}},
		{Status: kv.StatusSuccess, Value: []byte("hello"), Version: 1, Revision: 99},
		{Status: kv.StatusSuccess, Value: bytes.Repeat([]byte{7}, 70000), Version: math.MaxUint64, Revision: math.MaxUint64, TTL: math.MaxInt64},
		{Status: kv.StatusConflict, Version: 5},
		{Status: kv.StatusSuccess, TTL: 3 * time.Second},
		{Status: kv.StatusSuccess, TTL: -2},
		{Status: kv.Status(250)}, // a status from a newer server
	}
}

func TestResultRoundTrip(t *testing.T) {
	for _, want := range resultCases() {
		var got kv.Result
		if err := DecodeResult(AppendResult(nil, want), &got); err != nil {
			t.Fatalf("%+v: %v", want, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	}
	if body := AppendResult(nil, kv.Result{Status: kv.StatusNotFound}); !bytes.Equal(body, []byte{0x91, 0x01}) {
		t.Fatalf("a miss encodes as %x", body)
	}
}

func TestBatchResultRoundTrip(t *testing.T) {
	want := resultCases()
	body := AppendBatchResultHeader(nil, len(want))
	for _, r := range want {
		body = AppendResult(body, r)
	}
	got, err := DecodeBatchResult(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// More than 65535 results: an array32 header.
	many := AppendBatchResultHeader(nil, 70000)
	for range 70000 {
		many = AppendResult(many, kv.Result{Status: kv.StatusNotFound})
	}
	if got, err = DecodeBatchResult(many, got); err != nil || len(got) != 70000 {
		t.Fatalf("70000 results: %d, %v", len(got), err)
	}
}

func TestHandshakeRoundTrip(t *testing.T) {
	reqs := []HandshakeRequest{
		{},
		{ProtocolVersion: ProtocolVersion, Store: "default", Token: "s3cret", ClientName: "zaris-go/1.0"},
		{ProtocolVersion: math.MaxUint16, Store: strings.Repeat("s", 40)},
	}
	for _, want := range reqs {
		var got HandshakeRequest
		if err := DecodeHandshakeRequest(AppendHandshakeRequest(nil, want), &got); err != nil || got != want {
			t.Fatalf("got %+v, %v; want %+v", got, err, want)
		}
	}
	resps := []HandshakeResponse{
		{},
		{Status: kv.StatusSuccess, ProtocolVersion: 1, NodeID: "node-1", ServerVersion: "v0.1.0", MaxFrameSize: DefaultMaxFrameSize},
		{Status: kv.StatusBadRequest, Message: "store \"x\" is not served here: this cluster serves \"default\""},
		{Status: kv.StatusUnauthorized, MaxFrameSize: math.MaxUint32},
	}
	for _, want := range resps {
		var got HandshakeResponse
		if err := DecodeHandshakeResponse(AppendHandshakeResponse(nil, want), &got); err != nil || got != want {
			t.Fatalf("got %+v, %v; want %+v", got, err, want)
		}
	}
}

func TestHandshakeRequestStringRedactsToken(t *testing.T) {
	s := HandshakeRequest{ProtocolVersion: 1, Store: "default", Token: "s3cret"}.String()
	if strings.Contains(s, "s3cret") || !strings.Contains(s, "redacted") {
		t.Fatalf("String() = %s", s)
	}
}

func TestNegotiateVersion(t *testing.T) {
	tests := []struct {
		name   string
		client uint16
		want   uint16
		ok     bool
	}{
		{"same version", ProtocolVersion, ProtocolVersion, true},
		{"newer client falls back to ours", ProtocolVersion + 5, ProtocolVersion, true},
		{"client older than anything we speak is refused", MinProtocolVersion - 1, MinProtocolVersion - 1, false},
	}
	for _, tt := range tests {
		v, ok := NegotiateVersion(tt.client)
		if v != tt.want || ok != tt.ok {
			t.Errorf("%s: NegotiateVersion(%d) = %d, %v; want %d, %v", tt.name, tt.client, v, ok, tt.want, tt.ok)
		}
		if ok && !SupportedVersion(v) {
			t.Errorf("%s: negotiated %d is not supported", tt.name, v)
		}
	}
	if SupportedVersion(ProtocolVersion+1) || SupportedVersion(0) {
		t.Error("SupportedVersion accepts versions outside the range")
	}
}

func TestErrorResponse(t *testing.T) {
	for _, want := range []ErrorResponse{{}, {Status: kv.StatusBadRequest, Message: "unknown opcode 77"}} {
		var got ErrorResponse
		if err := DecodeErrorResponse(AppendErrorResponse(nil, want.Status, want.Message), &got); err != nil || got != want {
			t.Fatalf("got %+v, %v; want %+v", got, err, want)
		}
	}
	var err error = &ErrorResponse{Status: kv.StatusUnauthorized, Message: "handshake first"}
	if !errors.Is(err, kv.ErrUnauthorized) || !strings.Contains(err.Error(), "handshake first") {
		t.Fatalf("ErrorResponse error = %v", err)
	}
}

func TestInfoResponseRoundTrip(t *testing.T) {
	for _, want := range []InfoResponse{{}, {Status: kv.StatusSuccess, Fields: map[string]string{"node_id": "n1", "map_version": "12"}}} {
		var got InfoResponse
		if err := DecodeInfoResponse(AppendInfoResponse(nil, want), &got); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, %v; want %+v", got, err, want)
		}
	}
	var got InfoResponse
	if err := DecodeInfoResponse(AppendInfoResponse(nil, InfoResponse{Fields: map[string]string{}}), &got); err != nil || got.Fields != nil {
		t.Fatalf("empty fields decode as %#v, %v; want nil", got.Fields, err)
	}
}

// extraFields holds one value of every MessagePack type, appended by a
// hypothetical newer peer: decoders must skip them all.
var extraFields = [][]byte{
	{0x05}, {0xe0}, {mpNil}, {mpTrue},
	{mpFloat32, 0, 0, 0, 0}, {mpFloat64, 0, 0, 0, 0, 0, 0, 0, 0},
	{mpUint64, 0, 0, 0, 0, 0, 0, 0, 1}, {mpInt16, 0xff, 0xff},
	{0xa2, 'h', 'i'}, {mpStr16, 0, 1, 'x'}, {mpBin32, 0, 0, 0, 1, 'y'},
	{0x92, 0x91, 0x90, 0x81, 0xa1, 'k', 0x93, 1, 2, 3}, // nested arrays and maps
	{mpArray16, 0, 1, mpMap32, 0, 0, 0, 1, 1, 2},
	{mpFixExt1, 1, 0}, {mpFixExt16, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	{mpExt8, 2, 5, 0, 0}, {mpExt16, 0, 1, 5, 0}, {mpExt32, 0, 0, 0, 0, 5},
}

// withExtraFields rewrites a body whose top-level array has fewer than 16
// fields into one that carries every extra field after them.
func withExtraFields(t *testing.T, body []byte) []byte {
	t.Helper()
	if body[0]&0xf0 != mpFixArray {
		t.Fatalf("not a fixarray: %x", body[0])
	}
	n := int(body[0]&0x0f) + len(extraFields)
	out := appendArrayHeader(nil, n)
	out = append(out, body[1:]...)
	for _, f := range extraFields {
		out = append(out, f...)
	}
	return out
}

func TestDecodersSkipExtraFields(t *testing.T) {
	opts := &kv.PutOptions{IfMatchVersion: 2, IfAbsent: true, TTL: 3, ContentType: "c", Labels: map[string]string{"l": "v"}, KeepTTL: true, ExpireAt: 4}
	res := kv.Result{Status: kv.StatusSuccess, Value: []byte("v"), Version: 1, Revision: 2, TTL: 3, Detail: "d"}

	if key, err := DecodeKeyRequest(withExtraFields(t, AppendKeyRequest(nil, "k"))); err != nil || string(key) != "k" {
		t.Errorf("key request: %q %v", key, err)
	}
	var put PutRequest
	if err := DecodePutRequest(withExtraFields(t, AppendPutRequest(nil, "k", []byte("v"), opts)), &put); err != nil || !reflect.DeepEqual(put.Options, *opts) {
		t.Errorf("put request: %+v %v", put, err)
	}
	if key, ttl, err := DecodeExpireRequest(withExtraFields(t, AppendExpireRequest(nil, "k", 9))); err != nil || string(key) != "k" || ttl != 9 {
		t.Errorf("expire request: %v", err)
	}
	var r kv.Result
	if err := DecodeResult(withExtraFields(t, AppendResult(nil, res)), &r); err != nil || !reflect.DeepEqual(r, res) {
		t.Errorf("result: %+v %v", r, err)
	}
	var hreq HandshakeRequest
	if err := DecodeHandshakeRequest(withExtraFields(t, AppendHandshakeRequest(nil, HandshakeRequest{ProtocolVersion: 1, ClientName: "c", User: "u"})), &hreq); err != nil || hreq.ClientName != "c" || hreq.User != "u" {
		t.Errorf("handshake request: %v", err)
	}
	var hresp HandshakeResponse
	if err := DecodeHandshakeResponse(withExtraFields(t, AppendHandshakeResponse(nil, HandshakeResponse{MaxFrameSize: 5})), &hresp); err != nil || hresp.MaxFrameSize != 5 {
		t.Errorf("handshake response: %v", err)
	}
	var e ErrorResponse
	if err := DecodeErrorResponse(withExtraFields(t, AppendErrorResponse(nil, kv.StatusTimeout, "m")), &e); err != nil || e.Message != "m" {
		t.Errorf("error response: %v", err)
	}
	var info InfoResponse
	if err := DecodeInfoResponse(withExtraFields(t, AppendInfoResponse(nil, InfoResponse{Status: 1})), &info); err != nil || info.Status != 1 {
		t.Errorf("info response: %v", err)
	}

	// Inside containers: batch items and batch results with extra fields.
	item := withExtraFields(t, AppendBatchItem(nil, BatchPut, "k", []byte("v"), opts))
	batch := appendArrayHeader(nil, 1+len(extraFields)) // [items, extras...]
	batch = appendArrayHeader(batch, 2)
	batch = append(append(batch, item...), item...)
	for _, f := range extraFields {
		batch = append(batch, f...)
	}
	items, err := DecodeBatchRequest(batch, nil)
	if err != nil || len(items) != 2 || !reflect.DeepEqual(items[1].Options, *opts) || string(items[1].Value) != "v" {
		t.Errorf("batch request: %+v %v", items, err)
	}
	one := withExtraFields(t, AppendResult(nil, res))
	results, err := DecodeBatchResult(append(append(AppendBatchResultHeader(nil, 2), one...), one...), nil)
	if err != nil || len(results) != 2 || !reflect.DeepEqual(results[1], res) {
		t.Errorf("batch result: %+v %v", results, err)
	}
}

func TestDecodersDefaultMissingFields(t *testing.T) {
	var put PutRequest
	if err := DecodePutRequest([]byte{0x92, 0xa1, 'k', 0xc0}, &put); err != nil || string(put.Key) != "k" || put.Value != nil {
		t.Errorf("minimal put: %+v %v", put, err)
	}
	// nil in every optional field means its zero value.
	if err := DecodePutRequest([]byte{0x98, 0xa1, 'k', 0xc0, 0xc0, 0xc0, 0xc0, 0xc0, 0xc0, 0xc0}, &put); err != nil || !reflect.DeepEqual(put.Options, kv.PutOptions{}) {
		t.Errorf("put of nils: %+v %v", put, err)
	}
	var r kv.Result
	if err := DecodeResult([]byte{0x91, 0x02}, &r); err != nil || r.Status != kv.StatusConflict {
		t.Errorf("status-only result: %+v %v", r, err)
	}
	var hreq HandshakeRequest
	if err := DecodeHandshakeRequest([]byte{0x91, 0x01}, &hreq); err != nil || hreq != (HandshakeRequest{ProtocolVersion: 1}) {
		t.Errorf("version-only handshake: %+v %v", hreq, err)
	}
	var hresp HandshakeResponse
	if err := DecodeHandshakeResponse([]byte{0x93, 0x00, 0x01, 0xa1, 'n'}, &hresp); err != nil || hresp != (HandshakeResponse{ProtocolVersion: 1, NodeID: "n"}) {
		t.Errorf("short handshake response: %+v %v", hresp, err)
	}
	var e ErrorResponse
	if err := DecodeErrorResponse([]byte{0x91, 0x0c}, &e); err != nil || e != (ErrorResponse{Status: kv.StatusBadRequest}) {
		t.Errorf("status-only error: %+v %v", e, err)
	}
	items, err := DecodeBatchRequest([]byte{0x91, 0x91, 0x92, 0x00, 0xa1, 'k'}, nil)
	if err != nil || len(items) != 1 || items[0].Op != BatchGet || string(items[0].Key) != "k" {
		t.Errorf("minimal batch: %+v %v", items, err)
	}
}

func TestDecodersRejectMalformedBodies(t *testing.T) {
	key := func(b []byte) error { _, err := DecodeKeyRequest(b); return err }
	put := func(b []byte) error { var r PutRequest; return DecodePutRequest(b, &r) }
	expire := func(b []byte) error { _, _, err := DecodeExpireRequest(b); return err }
	batch := func(b []byte) error { _, err := DecodeBatchRequest(b, nil); return err }
	result := func(b []byte) error { var r kv.Result; return DecodeResult(b, &r) }
	batchResult := func(b []byte) error { _, err := DecodeBatchResult(b, nil); return err }
	hsReq := func(b []byte) error { var h HandshakeRequest; return DecodeHandshakeRequest(b, &h) }
	hsResp := func(b []byte) error { var h HandshakeResponse; return DecodeHandshakeResponse(b, &h) }
	errResp := func(b []byte) error { var e ErrorResponse; return DecodeErrorResponse(b, &e) }
	info := func(b []byte) error { var i InfoResponse; return DecodeInfoResponse(b, &i) }

	tests := []struct {
		name   string
		decode func([]byte) error
		body   []byte
	}{
		{"key: empty body", key, nil},
		{"key: not an array", key, []byte{0xa1, 'k'}},
		{"key: no fields", key, []byte{0x90}},
		{"key: integer key", key, []byte{0x91, 0x01}},
		{"key: truncated key", key, []byte{0x91, 0xa5, 'a', 'b'}},
		{"key: trailing bytes", key, []byte{0x91, 0xa1, 'k', 0x00}},
		{"key: array32 claims 4G fields", key, []byte{mpArray32, 0xff, 0xff, 0xff, 0xff, 0xa1, 'k'}},
		{"key: str32 claims 4 GB", key, []byte{0x91, mpStr32, 0xff, 0xff, 0xff, 0xff}},
		{"key: never-used byte in extra field", key, []byte{0x92, 0xa1, 'k', 0xc1}},
		{"key: extra field truncated", key, []byte{0x92, 0xa1, 'k', mpUint32, 0}},
		{"key: extra array lies", key, []byte{0x92, 0xa1, 'k', mpArray32, 0, 1, 0, 0}},
		{"key: extra map lies", key, []byte{0x92, 0xa1, 'k', mpMap16, 0, 3, 1, 1}},
		{"key: extra ext truncated", key, []byte{0x92, 0xa1, 'k', mpExt32, 0, 0, 0, 9, 1}},
		{"put: one field", put, []byte{0x91, 0xa1, 'k'}},
		{"put: value is an int", put, []byte{0x92, 0xa1, 'k', 0x05}},
		{"put: negative if-match", put, []byte{0x93, 0xa1, 'k', 0xc0, 0xff}},
		{"put: float if-match", put, []byte{0x93, 0xa1, 'k', 0xc0, mpFloat64, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"put: if-absent is an int", put, []byte{0x94, 0xa1, 'k', 0xc0, 0x00, 0x01}},
		{"put: ttl overflows int64", put, []byte{0x95, 0xa1, 'k', 0xc0, 0x00, 0xc2, mpUint64, 0x80, 0, 0, 0, 0, 0, 0, 0}},
		{"put: content type is a bool", put, []byte{0x96, 0xa1, 'k', 0xc0, 0x00, 0xc2, 0x00, 0xc3}},
		{"put: labels is an array", put, []byte{0x97, 0xa1, 'k', 0xc0, 0x00, 0xc2, 0x00, 0xa0, 0x90}},
		{"put: label value is an int", put, []byte{0x97, 0xa1, 'k', 0xc0, 0x00, 0xc2, 0x00, 0xa0, 0x81, 0xa1, 'a', 0x01}},
		{"put: map32 claims 4G labels", put, []byte{0x97, 0xa1, 'k', 0xc0, 0x00, 0xc2, 0x00, 0xa0, mpMap32, 0xff, 0xff, 0xff, 0xff}},
		{"expire: no ttl", expire, []byte{0x91, 0xa1, 'k'}},
		{"expire: ttl is a string", expire, []byte{0x92, 0xa1, 'k', 0xa1, '1'}},
		{"batch: items not an array", batch, []byte{0x91, 0xc0}},
		{"batch: items claims more than the bytes", batch, []byte{0x91, mpArray32, 0, 1, 0, 0, 0x92, 0, 0xa0}},
		{"batch: item too short", batch, []byte{0x91, 0x91, 0x91, 0x00}},
		{"batch: op above 255", batch, []byte{0x91, 0x91, 0x92, mpUint16, 1, 0, 0xa0}},
		{"batch: second item malformed", batch, []byte{0x91, 0x92, 0x92, 0x00, 0xa0, 0x92, 0x00, 0x00}},
		{"result: no status", result, []byte{0x90}},
		{"result: status above 255", result, []byte{0x91, mpUint16, 1, 0}},
		{"result: value is a bool", result, []byte{0x92, 0x00, 0xc3}},
		{"result: negative version", result, []byte{0x93, 0x00, 0xc0, mpInt8, 0x80}},
		{"result: truncated revision", result, []byte{0x94, 0x00, 0xc0, 0x01, mpUint64, 0, 0}},
		{"batch result: results is a map", batchResult, []byte{0x91, 0x80}},
		{"batch result: element truncated", batchResult, []byte{0x91, 0x91, 0x92, 0x00}},
		{"handshake: version above 65535", hsReq, []byte{0x91, mpUint32, 0, 1, 0, 0}},
		{"handshake: store is an int", hsReq, []byte{0x92, 0x01, 0x01}},
		{"handshake response: max frame above 4G", hsResp, []byte{0x96, 0x00, 0x01, 0xa0, 0xa0, 0xa0, mpUint64, 0, 0, 0, 1, 0, 0, 0, 0}},
		{"error: message is bin of wrong length", errResp, []byte{0x92, 0x0c, mpBin8, 5, 'a'}},
		{"info: fields is a string", info, []byte{0x92, 0x00, 0xa1, 'x'}},
	}
	for _, tt := range tests {
		err := tt.decode(tt.body)
		if !errors.Is(err, ErrMalformedBody) {
			t.Errorf("%s: err = %v, want ErrMalformedBody", tt.name, err)
		}
	}
}

// TestDecodersRejectEveryTruncation cuts every valid body at every length:
// each prefix must be rejected, never accepted or panicking.
func TestDecodersRejectEveryTruncation(t *testing.T) {
	opts := &kv.PutOptions{IfMatchVersion: 300, IfAbsent: true, TTL: -70000, ContentType: "text/plain", Labels: map[string]string{"a": "b"}}
	res := kv.Result{Status: kv.StatusSuccess, Value: []byte("value"), Version: 1 << 40, Revision: 70000, TTL: time.Hour}
	batchReq := AppendBatchRequestHeader(nil, 2)
	batchReq = AppendBatchItem(batchReq, BatchPut, "k", []byte("v"), opts)
	batchReq = AppendBatchItem(batchReq, BatchGet, "k", nil, nil)
	batchRes := AppendResult(AppendResult(AppendBatchResultHeader(nil, 2), res), res)

	cases := []struct {
		name   string
		body   []byte
		decode func([]byte) error
	}{
		{"key", AppendKeyRequest(nil, "some-key"), func(b []byte) error { _, err := DecodeKeyRequest(b); return err }},
		{"put", AppendPutRequest(nil, "k", []byte("v"), opts), func(b []byte) error { var r PutRequest; return DecodePutRequest(b, &r) }},
		{"expire", AppendExpireRequest(nil, "k", -time.Hour), func(b []byte) error { _, _, err := DecodeExpireRequest(b); return err }},
		{"batch", batchReq, func(b []byte) error { _, err := DecodeBatchRequest(b, nil); return err }},
		{"result", AppendResult(nil, res), func(b []byte) error { var r kv.Result; return DecodeResult(b, &r) }},
		{"batch result", batchRes, func(b []byte) error { _, err := DecodeBatchResult(b, nil); return err }},
		{"handshake request", AppendHandshakeRequest(nil, HandshakeRequest{ProtocolVersion: 1, Store: "s", Token: "t", ClientName: "c"}), func(b []byte) error { var h HandshakeRequest; return DecodeHandshakeRequest(b, &h) }},
		{"handshake response", AppendHandshakeResponse(nil, HandshakeResponse{ProtocolVersion: 1, NodeID: "n", MaxFrameSize: 1 << 20}), func(b []byte) error { var h HandshakeResponse; return DecodeHandshakeResponse(b, &h) }},
		{"error response", AppendErrorResponse(nil, kv.StatusBadRequest, "m"), func(b []byte) error { var e ErrorResponse; return DecodeErrorResponse(b, &e) }},
		{"info response", AppendInfoResponse(nil, InfoResponse{Fields: map[string]string{"k": "v"}}), func(b []byte) error { var i InfoResponse; return DecodeInfoResponse(b, &i) }},
	}
	for _, c := range cases {
		if err := c.decode(c.body); err != nil {
			t.Fatalf("%s: the full body fails: %v", c.name, err)
		}
		for n := range len(c.body) {
			if err := c.decode(c.body[:n]); !errors.Is(err, ErrMalformedBody) {
				t.Fatalf("%s cut at %d of %d: err = %v", c.name, n, len(c.body), err)
			}
		}
	}
}

func TestMalformedBodyErrorNamesTheField(t *testing.T) {
	var r PutRequest
	err := DecodePutRequest([]byte{0x93, 0xa1, 'k', 0xc0, 0xa1, 'x'}, &r)
	if err == nil || !strings.Contains(err.Error(), "if-match version") || !strings.Contains(err.Error(), "str") {
		t.Fatalf("error = %v", err)
	}
}

func TestSkipDeepNestingIsIterative(t *testing.T) {
	// One million nested one-element arrays as an extra field: recursion
	// would need a very deep stack; the iterative skip walks it flat.
	const depth = 1_000_000
	body := []byte{0x92, 0xa1, 'k'}
	body = append(body, bytes.Repeat([]byte{0x91}, depth)...)
	body = append(body, 0x00)
	if key, err := DecodeKeyRequest(body); err != nil || string(key) != "k" {
		t.Fatalf("%q %v", key, err)
	}
}

func TestDecodeGetDoesNotAllocate(t *testing.T) {
	body := AppendKeyRequest(nil, "user:12345")
	put := AppendPutRequest(nil, "user:12345", make([]byte, 100), &kv.PutOptions{IfMatchVersion: 3, TTL: time.Minute})
	res := AppendResult(nil, kv.Result{Value: make([]byte, 100), Version: 3, Revision: 77, TTL: time.Minute})
	var req PutRequest
	var r kv.Result
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := DecodeKeyRequest(body); err != nil {
			t.Fatal(err)
		}
		if err := DecodePutRequest(put, &req); err != nil {
			t.Fatal(err)
		}
		if err := DecodeResult(res, &r); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocs per decode", allocs)
	}
}

func TestEncodeDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 4096)
	value := make([]byte, 100)
	opts := &kv.PutOptions{IfMatchVersion: 3, TTL: time.Minute, ContentType: "x", Labels: map[string]string{"a": "b"}}
	res := kv.Result{Value: value, Version: 3, Revision: 77, TTL: time.Minute}
	allocs := testing.AllocsPerRun(1000, func() {
		b, start := BeginFrame(buf[:0], 1, OpPut, 0)
		b = AppendPutRequest(b, "user:12345", value, opts)
		b = EndFrame(b, start)
		b, start = BeginFrame(b, 1, OpGet, FlagResponse)
		b = AppendResult(b, res)
		b = EndFrame(b, start)
		b = AppendBatchRequestHeader(b, 1)
		b = AppendBatchItem(b, BatchPut, "k", value, opts)
		_ = b
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocs per encode", allocs)
	}
}

// TestHandshakeUserCompatible: a request without a user is the four fields
// older servers know; one with a user decodes it, and a four-field request
// decodes with no user.
func TestHandshakeUserCompatible(t *testing.T) {
	old := AppendHandshakeRequest(nil, HandshakeRequest{ProtocolVersion: 1, Store: "s", Token: "t", ClientName: "c"})
	if old[0] != mpFixArray|4 {
		t.Fatalf("a request without a user has %#x as its header, want a 4-array", old[0])
	}
	var h HandshakeRequest
	if err := DecodeHandshakeRequest(old, &h); err != nil || h.User != "" || h.Token != "t" {
		t.Fatalf("%+v %v", h, err)
	}
	withUser := AppendHandshakeRequest(nil, HandshakeRequest{ProtocolVersion: 1, Store: "s", Token: "t", ClientName: "c", User: "app"})
	if err := DecodeHandshakeRequest(withUser, &h); err != nil || h.User != "app" || h.Token != "t" {
		t.Fatalf("%+v %v", h, err)
	}
}

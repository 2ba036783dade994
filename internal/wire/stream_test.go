package wire

import (
	"reflect"
	"testing"
)

func TestStreamBodiesRoundTrip(t *testing.T) {
	wr := WatchRequest{Key: "k", Prefix: "", Snapshot: true, IncludeValues: true, Buffer: 10}
	var gotWR WatchRequest
	if err := DecodeWatchRequest(AppendWatchRequest(nil, wr), &gotWR); err != nil || !reflect.DeepEqual(gotWR, wr) {
		t.Fatalf("%+v %v", gotWR, err)
	}
	for _, wr := range []WatchRequest{
		{Prefix: "p", Marks: true},
		{Key: "k", From: []WatchPosition{{Segment: 7, Revision: 1 << 63, Key: "k", Version: 3, Epoch: 9}, {Segment: 65535}}, Marks: true},
		{Prefix: "p", From: []WatchPosition{}},
	} {
		var got WatchRequest
		if err := DecodeWatchRequest(AppendWatchRequest(nil, wr), &got); err != nil || !reflect.DeepEqual(got, wr) {
			t.Fatalf("%+v → %+v %v", wr, got, err)
		}
	}
	it := WatchItem{Kind: 3, Key: "k", Value: []byte("v"), Version: 2, Revision: 9, ExpiresAt: -1, Command: 12, KeyKind: 1, Segment: 200, Epoch: 4}
	var gotIt WatchItem
	if err := DecodeWatchItem(AppendWatchItem(nil, &it), &gotIt); err != nil || !reflect.DeepEqual(gotIt, it) {
		t.Fatalf("%+v %v", gotIt, err)
	}
	sr := SubscribeRequest{Channels: []string{"a", "b"}, Patterns: []string{"n*"}, Buffer: 5}
	var gotSR SubscribeRequest
	if err := DecodeSubscribeRequest(AppendSubscribeRequest(nil, sr), &gotSR); err != nil || !reflect.DeepEqual(gotSR, sr) {
		t.Fatalf("%+v %v", gotSR, err)
	}
	m := MessageItem{Channel: "news", Pattern: "n*", Payload: []byte("hi")}
	var gotM MessageItem
	if err := DecodeMessageItem(AppendMessageItem(nil, &m), &gotM); err != nil || !reflect.DeepEqual(gotM, m) {
		t.Fatalf("%+v %v", gotM, err)
	}
	ch, p, err := DecodePublishRequest(AppendPublishRequest(nil, "c", []byte("x")))
	if err != nil || ch != "c" || string(p) != "x" {
		t.Fatal(ch, p, err)
	}
	id, err := DecodeEndStreamRequest(AppendEndStreamRequest(nil, 77))
	if err != nil || id != 77 {
		t.Fatal(id, err)
	}
}

func FuzzDecodeStreamBodies(f *testing.F) {
	f.Add(AppendWatchRequest(nil, WatchRequest{Prefix: "p"}))
	f.Add(AppendWatchRequest(nil, WatchRequest{Prefix: "p", From: []WatchPosition{{Segment: 1, Revision: 2, Key: "k", Version: 3}}}))
	f.Add(AppendWatchItem(nil, &WatchItem{Key: "k"}))
	f.Add(AppendSubscribeRequest(nil, SubscribeRequest{Channels: []string{"c"}}))
	f.Add(AppendMessageItem(nil, &MessageItem{Channel: "c"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var wr WatchRequest
		_ = DecodeWatchRequest(b, &wr)
		var it WatchItem
		_ = DecodeWatchItem(b, &it)
		var sr SubscribeRequest
		_ = DecodeSubscribeRequest(b, &sr)
		var m MessageItem
		_ = DecodeMessageItem(b, &m)
		_, _, _ = DecodePublishRequest(b)
		_, _ = DecodeEndStreamRequest(b)
		var rm RoutingMap
		_ = DecodeRoutingMap(b, &rm)
	})
}

func TestRoutingMapRoundTrip(t *testing.T) {
	m := RoutingMap{Version: 9, TotalSegments: 4, Nodes: []RoutingNode{{ID: "a", Host: "127.0.0.1", ClientPort: 7861, RESPPort: 6380}, {ID: "b", Host: "::1", ClientPort: 7862}},
		SegmentOwner: []int32{0, 0, 1, -1}}
	var got RoutingMap
	if err := DecodeRoutingMap(AppendRoutingMap(nil, &m), &got); err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("%+v %v", got, err)
	}
	bad := m
	bad.SegmentOwner = []int32{0, 5, 1, 1}
	if err := DecodeRoutingMap(AppendRoutingMap(nil, &bad), &got); err == nil {
		t.Fatal("an owner index past the node list was accepted")
	}
	short := m
	short.SegmentOwner = []int32{0}
	if err := DecodeRoutingMap(AppendRoutingMap(nil, &short), &got); err == nil {
		t.Fatal("an incomplete segment table was accepted")
	}
}

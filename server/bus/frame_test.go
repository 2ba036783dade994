package bus

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

var sampleFrames = []Frame{
	{Kind: KindPublish, Channel: "news", Payload: []byte("hello\r\nworld")},
	{Kind: KindPublish, Channel: "", Payload: []byte{}},
	{Kind: KindSetting, Name: "notify-keyspace-events", Value: "AKE", Stamp: 1<<63 + 5, Origin: "n1"},
	{Kind: KindQuery, Name: "numsub", Args: []string{"a", "", "c"}},
	{Kind: KindQuery, Name: "numpat"},
	{Kind: KindReply, Args: []string{"x"}, Ints: []int64{0, -1, 1 << 62, -1 << 63}},
	{Kind: KindReply},
	{Kind: KindInvalidate, Args: []string{"user:1", "", "k\r\n"}},
	{Kind: KindInvalidate, Name: "flush"},
}

func TestFrameRoundTrip(t *testing.T) {
	var stream []byte
	for i := range sampleFrames {
		stream = AppendFrame(stream, &sampleFrames[i])
	}
	r := bufio.NewReader(bytes.NewReader(stream))
	for i, want := range sampleFrames {
		var got Frame
		if err := ReadFrame(r, &got); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if len(want.Payload) == 0 && len(got.Payload) == 0 {
			got.Payload, want.Payload = nil, nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("frame %d: got %+v, want %+v", i, got, want)
		}
	}
}

// A length prefix beyond MaxFrame is refused before anything is
// allocated; a count larger than the bytes left is malformed.
func TestHostileFrames(t *testing.T) {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], MaxFrame+1)
	var f Frame
	if err := ReadFrame(bufio.NewReader(bytes.NewReader(hdr[:])), &f); !errors.Is(err, ErrFrame) {
		t.Fatalf("oversized frame: %v", err)
	}
	for _, body := range [][]byte{
		{},
		{99},
		{byte(KindPublish), 0xff, 0xff, 0xff, 0xff, 0x0f},                                 // a channel of 4 Gi bytes in 6
		{byte(KindQuery), 0, 0xff, 0xff, 0xff, 0xff, 0x0f},                                // 4 Gi arguments
		{byte(KindReply), 0, 0xff, 0xff, 0xff, 0xff, 0x0f},                                // 4 Gi integers
		append(AppendFrame(nil, &sampleFrames[0])[4:], 0),                                 // trailing byte
		AppendFrame(nil, &sampleFrames[2])[4 : len(AppendFrame(nil, &sampleFrames[2]))-1], // cut short
	} {
		if err := DecodeFrame(body, &f); !errors.Is(err, ErrFrame) {
			t.Fatalf("body %x decoded: %+v %v", body, f, err)
		}
	}
}

// FuzzDecodeFrame: any body decodes or is refused, never panics, and what
// decodes encodes back to the same body.
func FuzzDecodeFrame(f *testing.F) {
	for i := range sampleFrames {
		f.Add(AppendFrame(nil, &sampleFrames[i])[4:])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fr Frame
		if err := DecodeFrame(body, &fr); err != nil {
			return
		}
		again := AppendFrame(nil, &fr)[4:]
		var fr2 Frame
		if err := DecodeFrame(again, &fr2); err != nil {
			t.Fatalf("re-encoded frame does not decode: %v", err)
		}
		if !bytes.Equal(AppendFrame(nil, &fr2)[4:], again) {
			t.Fatal("encoding is not stable")
		}
	})
}

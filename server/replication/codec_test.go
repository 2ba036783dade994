package replication

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"reflect"
	"runtime"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/store"
)

// recordView is what a Record carries, in fields reflect.DeepEqual
// compares by content (a Record holds its key and value behind pointers,
// which DeepEqual would compare by their first byte only).
type recordView struct {
	Key               string
	Value             []byte
	NoValue           bool // Value is nil, not empty
	Version, Revision uint64
	ExpiresAt         int64
	Deleted           bool
	Kind              store.ValueKind
	Meta              *store.Metadata
}

func recordsView(recs []store.Record) []recordView {
	out := make([]recordView, len(recs))
	for i := range recs {
		r := &recs[i]
		out[i] = recordView{Key: r.Key(), Value: r.Value(), NoValue: r.Value() == nil, Version: r.Version(),
			Revision: r.Revision, ExpiresAt: r.ExpiresAt(), Deleted: r.Deleted(), Kind: r.Kind, Meta: r.Meta()}
	}
	return out
}

type opView struct {
	Kind   store.OpKind
	Record recordView
	Cmd    *kv.Cmd
}

func opsView(ops []store.Op) []opView {
	out := make([]opView, len(ops))
	for i := range ops {
		out[i] = opView{Kind: ops[i].Kind, Record: recordsView([]store.Record{ops[i].Record})[0], Cmd: ops[i].Cmd}
	}
	return out
}

func sampleOps() []store.Op {
	withMeta := func(r store.Record, m *store.Metadata) store.Record {
		r.SetMeta(m)
		return r
	}
	return []store.Op{
		{Kind: store.OpPut, Record: store.Record{Revision: 7}.WithVersion(1).WithExpiry(99).With("a", []byte("1"))},
		{Kind: store.OpPut, Record: withMeta(store.Record{Revision: 8}.WithVersion(2).With("empty", []byte{}),
			&store.Metadata{ContentType: "text/plain", Labels: map[string]string{"team": "x"}})},
		{Kind: store.OpPut, Record: withMeta(store.Record{Revision: 9}.WithVersion(1).With("meta-no-labels", []byte("v")),
			&store.Metadata{ContentType: "application/json"})},
		{Kind: store.OpDelete, Record: store.Record{Revision: 10}.WithVersion(1).AsTombstone().With("a", nil)},
		{Kind: store.OpExpired, Record: store.Record{Revision: 11}.WithVersion(3).AsTombstone().With("b", nil)},
		// The 32-byte record's overflow paths (D89): a version past 2^32,
		// the extreme expiries, an expiring tombstone, an empty key.
		{Kind: store.OpPut, Record: store.Record{Revision: 16}.WithVersion(1<<40+5).WithExpiry(math.MaxInt64).With("wide", []byte("w"))},
		{Kind: store.OpPut, Record: store.Record{Revision: 17}.WithVersion(math.MaxUint64).WithExpiry(-1).With("", []byte{})},
		{Kind: store.OpExpired, Record: store.Record{Revision: 18}.WithVersion(2).WithExpiry(math.MinInt64).AsTombstone().With("gone", nil)},
		{Kind: store.OpCommand, Record: store.Record{Revision: 12, Kind: store.KindHash}.WithVersion(4).With("h", nil),
			Cmd: &kv.Cmd{Op: kv.CmdHSet, Key: "h", Args: [][]byte{[]byte("f"), {}}}},
		// Transaction markers: no key, the marker in Cmd.
		{Kind: store.OpTxPrepare, Record: store.Record{Revision: 13}, Cmd: &kv.Cmd{Op: kv.CmdTxPrepare, Args: [][]byte{[]byte("id"), []byte("body")}}},
		{Kind: store.OpTxCommit, Record: store.Record{Revision: 14}, Cmd: &kv.Cmd{Op: kv.CmdTxCommit, Args: [][]byte{[]byte("id"), []byte("res")}}},
		{Kind: store.OpTxAbort, Record: store.Record{Revision: 15}, Cmd: &kv.Cmd{Op: kv.CmdTxAbort, Args: [][]byte{[]byte("id2")}}},
	}
}

func TestCodecRoundTrip(t *testing.T) {
	e := newEncoder()
	ops := sampleOps()
	seg, got, err := decodeOps(append([]byte(nil), e.ops(42, ops)...))
	if err != nil || seg != 42 {
		t.Fatal(seg, err)
	}
	if !reflect.DeepEqual(opsView(got), opsView(ops)) {
		t.Fatalf("ops:\n got %+v\nwant %+v", opsView(got), opsView(ops))
	}
	// The tombstone flag survives the trip: a lost one resurrects a
	// deleted key on the replica.
	if !got[3].Record.Deleted() {
		t.Fatal("tombstone flag lost")
	}

	recs := []store.Record{ops[0].Record, ops[1].Record, store.Record{Revision: 3, Kind: store.KindList}.WithVersion(1).With("l", []byte{1, 2})}
	seg, gotRecs, err := decodeSnapChunk(append([]byte(nil), e.snapChunk(3, recs)...))
	if err != nil || seg != 3 || !reflect.DeepEqual(recordsView(gotRecs), recordsView(recs)) {
		t.Fatalf("snapshot chunk: %v %+v", err, recordsView(gotRecs))
	}
	s, r, n, err := decodeSnapBegin(append([]byte(nil), e.snapBegin(5, 77, 3)...))
	if err != nil || s != 5 || r != 77 || n != 3 {
		t.Fatal(s, r, n, err)
	}
	s, r, prep, err := decodeSnapEnd(append([]byte(nil), e.snapEnd(5, 77, nil)...))
	if err != nil || s != 5 || r != 77 || len(prep) != 0 {
		t.Fatal(s, r, err)
	}
	prepared := ops[len(ops)-3 : len(ops)-2]
	s, r, prep, err = decodeSnapEnd(append([]byte(nil), e.snapEnd(5, 77, prepared)...))
	if err != nil || s != 5 || r != 77 || !reflect.DeepEqual(opsView(prep), opsView(prepared)) {
		t.Fatalf("snapshot end with prepared transactions: %v %+v", err, opsView(prep))
	}
	if _, _, _, err = decodeSnapEnd(append([]byte(nil), e.snapEnd(5, 77, ops[:1])...)); err == nil {
		t.Fatal("a snapshot end carrying a put was accepted")
	}

	h := hello{Version: protoVersion, Store: "st", Cluster: "c", From: "n1", Partition: 2, Identity: "id", Generation: 3,
		Epoch: 4, MapVersion: 5, First: 6, Last: 9, Incarnation: 1 << 60}
	gotH, err := decodeHello(append([]byte(nil), e.hello(h)...))
	if err != nil || gotH != h {
		t.Fatalf("hello: %v %+v", err, gotH)
	}
	rep := helloReply{Status: replyRetry, Message: "later", Generation: 9, States: []segState{
		{Segment: 6, Revision: 10, Lineage: lineage{Identity: "id", Owner: "n1", Generation: 3, Incarnation: 9}}, {Segment: 7}}}
	gotR, err := decodeHelloReply(append([]byte(nil), e.helloReply(rep)...))
	if err != nil || !reflect.DeepEqual(gotR, rep) {
		t.Fatalf("hello reply: %v %+v", err, gotR)
	}
	acks := []ack{{1, 2}, {3, 4}}
	gotA, err := decodeAcks(append([]byte(nil), e.acks(acks)...), nil)
	if err != nil || !reflect.DeepEqual(gotA, acks) {
		t.Fatalf("acks: %v %+v", err, gotA)
	}
}

func TestFraming(t *testing.T) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	if err := writeFrame(w, fPing, nil); err != nil {
		t.Fatal(err)
	}
	if err := writeFrame(w, fAck, []byte{0x90}); err != nil {
		t.Fatal(err)
	}
	_ = w.Flush()
	r := bufio.NewReader(&buf)
	if ft, body, err := readFrame(r); err != nil || ft != fPing || len(body) != 0 {
		t.Fatal(ft, body, err)
	}
	if ft, body, err := readFrame(r); err != nil || ft != fAck || !bytes.Equal(body, []byte{0x90}) {
		t.Fatal(ft, body, err)
	}
	// A length beyond the bound is refused before anything is allocated.
	bad := bufio.NewReader(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff, 2}))
	if _, _, err := readFrame(bad); !errors.Is(err, ErrProtocol) {
		t.Fatalf("oversized frame: %v", err)
	}
}

// A malformed body from a peer is an error, never a panic or a huge
// allocation (the replica applies what it decodes).
func FuzzDecode(f *testing.F) {
	e := newEncoder()
	f.Add(append([]byte(nil), e.ops(1, sampleOps())...))
	f.Add(append([]byte(nil), e.snapChunk(1, []store.Record{sampleOps()[1].Record})...))
	f.Add(append([]byte(nil), e.helloReply(helloReply{States: []segState{{Segment: 1}}})...))
	f.Add(append([]byte(nil), e.hello(hello{Store: "s"})...))
	f.Add([]byte{0x92, 0x01, 0xdd, 0xff, 0xff, 0xff, 0xff})
	dirty := sampleOps() // a reused buffer still holding earlier ops
	f.Fuzz(func(t *testing.T, b []byte) {
		seg, ops, err := decodeOps(b)
		seg2, ops2, err2 := decodeOpsInto(b, dirty)
		if (err == nil) != (err2 == nil) || (err == nil && (seg != seg2 || !reflect.DeepEqual(opsView(ops), opsView(ops2)))) {
			t.Fatalf("decodeOpsInto over a used buffer: %d %+v %v, decodeOps: %d %+v %v", seg2, opsView(ops2), err2, seg, opsView(ops), err)
		}
		_, _, _ = decodeSnapChunk(b)
		_, _, _, _ = decodeSnapBegin(b)
		_, _, _, _ = decodeSnapEnd(b)
		_, _ = decodeHello(b)
		_, _ = decodeHelloReply(b)
		_, _ = decodeAcks(b, nil)
	})
}

// The frames of a session are read into one reused body: what a decode
// returns must not point into it, or the next frame would rewrite records
// the store already holds.
func TestFrameReaderBodyReuseLeavesDecodedOpsIntact(t *testing.T) {
	e := newEncoder()
	first := []store.Op{{Kind: store.OpPut, Record: store.Record{Revision: 1}.WithVersion(1).With("key-one", []byte("value-one"))}}
	second := []store.Op{{Kind: store.OpPut, Record: store.Record{Revision: 2}.WithVersion(1).With("KEY-TWO", []byte("VALUE-TWO"))}}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	for _, ops := range [][]store.Op{first, second} {
		if err := writeFrame(w, fOps, e.ops(0, ops)); err != nil {
			t.Fatal(err)
		}
	}
	_ = w.Flush()
	fr := frameReader{r: bufio.NewReader(&buf)}
	var reused []store.Op
	_, body1, err := fr.next()
	if err != nil {
		t.Fatal(err)
	}
	_, got1, err := decodeOpsInto(body1, reused)
	if err != nil {
		t.Fatal(err)
	}
	kept := got1[0].Record // what the store would keep
	_, body2, err := fr.next()
	if err != nil {
		t.Fatal(err)
	}
	if &body1[0] != &body2[0] {
		t.Fatal("the second frame did not reuse the first's body: this test checks nothing")
	}
	if _, _, err := decodeOpsInto(body2, got1[:0]); err != nil {
		t.Fatal(err)
	}
	if kept.Key() != "key-one" || string(kept.Value()) != "value-one" {
		t.Fatalf("a decoded record changed when the next frame was read: %q = %q", kept.Key(), kept.Value())
	}
	// A value appended to does not run over anything (its capacity ends
	// with it).
	v := append(kept.Value(), "-more"...)
	if kept.Key() != "key-one" || string(v) != "value-one-more" {
		t.Fatalf("appending to a decoded value: key %q, value %q", kept.Key(), v)
	}
}

// A stream that ends inside a frame header is a truncated frame, not a
// clean end.
func TestReadFrameTruncatedHeader(t *testing.T) {
	if _, _, err := readFrame(bufio.NewReader(bytes.NewReader(nil))); !errors.Is(err, io.EOF) {
		t.Fatalf("empty stream: %v, want io.EOF", err)
	}
	if _, _, err := readFrame(bufio.NewReader(bytes.NewReader([]byte{0, 0, 1}))); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("3 bytes of a header: %v, want io.ErrUnexpectedEOF", err)
	}
}

// TestSkippedFieldsAreBoundedByTheFrame: a frame's fields past the ones a
// node knows are skipped, and an announced length past the frame's end is
// refused before anything is allocated for it — msgpack's own Skip grew a
// buffer towards a 1 GiB string a 13-byte frame announced (FuzzDecode:
// megabytes and seconds per frame, then a dead fuzz worker). Nested arrays
// deeper than the skip's bound are refused too.
func TestSkippedFieldsAreBoundedByTheFrame(t *testing.T) {
	hostile := map[string][]byte{
		"str32 of 1 GiB":         {0x97, 0x30, 0xc0, 0x30, 0x11, 0xf3, 0xdb, 0x40, 0x30, 0x30, 0xc1, 0xd4},
		"bin32 of 4 GiB":         {0x94, 0x01, 0x02, 0x03, 0xc6, 0xff, 0xff, 0xff, 0xff},
		"ext32 of 2 GiB":         {0x94, 0x01, 0x02, 0x03, 0xc9, 0x7f, 0xff, 0xff, 0xff, 0x01},
		"map32 of 4 G pairs":     {0x94, 0x01, 0x02, 0x03, 0xdf, 0xff, 0xff, 0xff, 0xff},
		"arrays nested 100 deep": append([]byte{0x94, 0x01, 0x02, 0x03}, bytes.Repeat([]byte{0x91}, 100)...),
	}
	for name, b := range hostile {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 10 {
			_, _, _ = decodeOps(b)
			_, _, _, _ = decodeSnapBegin(b)
			_, _, _, _ = decodeSnapEnd(b)
			_, _ = decodeHello(b)
			_, _ = decodeAcks(b, nil)
		}
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("%s: 10 rounds of decoding a %d-byte frame allocated %d bytes", name, len(b), grew)
		}
	}
	// A known field followed by extra ones a newer peer added still decodes.
	d := newDecoder([]byte{0x93, 0xa1, 'x', 0x92, 0xc4, 0x01, 0x00, 0x80, 0xd4, 0x01, 0x02})
	defer d.release()
	if extra, err := d.array(1); err != nil || extra != 2 {
		t.Fatalf("array: %d %v", extra, err)
	}
	if s, err := d.str(); err != nil || s != "x" {
		t.Fatalf("str: %q %v", s, err)
	}
	if err := d.skip(1); err != nil || d.r.Len() != 3 {
		t.Fatalf("skipping [bin, {}]: %v, %d bytes left", err, d.r.Len())
	}
}

// TestNextFrameBuffered: the replica reads ahead only frames whose every
// byte is buffered already. The failures it prevents: a read-ahead that
// blocks on a frame still in flight (the frames before it, already
// decoded, would wait for the owner's next pass to be applied and acked)
// or that trusts a length the reader refuses.
func TestNextFrameBuffered(t *testing.T) {
	var frames bytes.Buffer
	w := bufio.NewWriter(&frames)
	if err := writeFrame(w, fOps, []byte("ops body")); err != nil {
		t.Fatal(err)
	}
	if err := writeFrame(w, fPing, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	whole := frames.Bytes()
	huge := []byte{0xff, 0xff, 0xff, 0xff, byte(fOps), 0, 0, 0}
	for _, c := range []struct {
		name string
		in   []byte
		want frameType
	}{
		{"nothing buffered", nil, 0},
		{"part of a header", whole[:3], 0},
		{"a header without its body", whole[:5], 0},
		{"all of a body but its last byte", whole[:5+len("ops body")-1], 0},
		{"a whole Ops frame", whole[:5+len("ops body")], fOps},
		{"two whole frames", whole, fOps},
		{"a length past maxFrame", huge, 0},
	} {
		r := bufio.NewReaderSize(bytes.NewReader(c.in), 64)
		if len(c.in) > 0 {
			_, _ = r.Peek(1) // buffers what the reader holds
		}
		if got := nextFrameBuffered(r); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	// After the first frame is read, the ping behind it is next.
	r := bufio.NewReaderSize(bytes.NewReader(whole), 64)
	fr := frameReader{r: r}
	if ft, _, err := fr.next(); err != nil || ft != fOps {
		t.Fatalf("first frame %d, %v", ft, err)
	}
	if got := nextFrameBuffered(r); got != fPing {
		t.Fatalf("after the Ops frame: %d, want the ping", got)
	}
}

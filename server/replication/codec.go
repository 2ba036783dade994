package replication

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/store"
)

// protoVersion is the session protocol's version, sent in Hello.
const protoVersion = 1

// frameType is the byte after a frame's length.
type frameType uint8

const (
	fHello     frameType = 1
	fOps       frameType = 2
	fSnapBegin frameType = 3
	fSnapChunk frameType = 4
	fSnapEnd   frameType = 5
	fPing      frameType = 6

	fHelloReply frameType = 129
	fAck        frameType = 130
)

// maxFrame bounds one frame: an item is at most a few MiB (MaxItemBytes),
// and the shipper cuts batches at chunkBytes.
const maxFrame = 64 << 20

// Batching: an Ops or SnapChunk frame is cut after chunkOps entries or
// chunkBytes of values.
const (
	chunkOps   = 4096
	chunkBytes = 1 << 20
)

// ErrProtocol wraps every malformed frame.
var ErrProtocol = errors.New("replication: protocol error")

func protoErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, args...))
}

// hello opens a session (owner → replica).
type hello struct {
	Version     int
	Store       string
	Cluster     string
	From        cluster.NodeID
	Partition   int
	Identity    string
	Generation  uint64
	Epoch       uint64
	MapVersion  uint64
	First, Last int
	Incarnation uint64
}

// Hello reply statuses.
const (
	replyOK      = 0
	replyRetry   = 1 // the replica's map is behind: try again shortly
	replyRefused = 2 // the replica's map does not make the sender its source
)

// segState is what a replica holds of one segment: its applied revision
// and the history it came from.
type segState struct {
	Segment  uint16
	Revision uint64
	Lineage  lineage
}

type helloReply struct {
	Status  int
	Message string
	States  []segState
	// Generation is the partition's ownership generation in the replica's
	// map (a refusal with a newer one tells a deposed owner it is fenced).
	Generation uint64
}

// ack is one (segment, applied revision) pair.
type ack struct {
	Segment  uint16
	Revision uint64
}

// --- framing ---

// writeFrame appends one frame to w.
func writeFrame(w *bufio.Writer, t frameType, body []byte) error {
	var hdr [5]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(body)+1))
	hdr[4] = byte(t)
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

// readFrame reads one frame into a freshly allocated body.
func readFrame(r *bufio.Reader) (frameType, []byte, error) {
	return readFrameInto(r, nil)
}

// readFrameInto reads one frame into buf when it is large enough.
func readFrameInto(r *bufio.Reader, buf []byte) (frameType, []byte, error) {
	hdr, err := r.Peek(5) // not io.ReadFull: a header array would escape, an allocation per frame
	if err != nil {
		if err == io.EOF && len(hdr) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	n, t := binary.BigEndian.Uint32(hdr[:4]), frameType(hdr[4])
	_, _ = r.Discard(5)
	if n < 1 || n > maxFrame {
		return 0, nil, protoErr("frame of %d bytes", n)
	}
	var body []byte
	if int(n-1) <= cap(buf) {
		body = buf[:n-1]
	} else {
		body = make([]byte, n-1)
	}
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return t, body, nil
}

// frameReader reads a session's frames into one reused body: every decode
// copies what it keeps, so a body is dead once the next frame is read.
// (A fresh body per frame cost a replica an allocation per batch of writes,
// zeroed, issue 17.)
type frameReader struct {
	r    *bufio.Reader
	body []byte
}

// keptBody bounds the body a frameReader keeps between frames: a snapshot
// chunk's megabyte is not held for the session's life.
const keptBody = 256 << 10

func (fr *frameReader) next() (frameType, []byte, error) {
	if fr.body == nil {
		fr.body = make([]byte, 0, 16<<10)
	}
	t, body, err := readFrameInto(fr.r, fr.body)
	if err == nil && cap(body) <= keptBody && cap(body) > cap(fr.body) {
		fr.body = body[:0:cap(body)]
	}
	return t, body, err
}

// --- encoder ---

// encoder builds frame bodies; one per session goroutine.
type encoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

func newEncoder() *encoder {
	e := &encoder{}
	e.enc = msgpack.NewEncoder(&e.buf)
	return e
}

// reset starts a new body.
func (e *encoder) reset() *msgpack.Encoder {
	e.buf.Reset()
	return e.enc
}

func (e *encoder) bytes() []byte { return e.buf.Bytes() }

// The msgpack encoder writes into a bytes.Buffer, which never fails: the
// encode functions below ignore the encoder's errors for that reason.

func (e *encoder) hello(h hello) []byte {
	enc := e.reset()
	_ = enc.EncodeArrayLen(12)
	_ = enc.EncodeInt(int64(h.Version))
	_ = enc.EncodeString(h.Store)
	_ = enc.EncodeString(h.Cluster)
	_ = enc.EncodeString(string(h.From))
	_ = enc.EncodeInt(int64(h.Partition))
	_ = enc.EncodeString(h.Identity)
	_ = enc.EncodeUint(h.Generation)
	_ = enc.EncodeUint(h.Epoch)
	_ = enc.EncodeUint(h.MapVersion)
	_ = enc.EncodeInt(int64(h.First))
	_ = enc.EncodeInt(int64(h.Last))
	_ = enc.EncodeUint(h.Incarnation)
	return e.bytes()
}

func (e *encoder) helloReply(r helloReply) []byte {
	enc := e.reset()
	_ = enc.EncodeArrayLen(4)
	_ = enc.EncodeInt(int64(r.Status))
	_ = enc.EncodeString(r.Message)
	_ = enc.EncodeArrayLen(len(r.States))
	for _, s := range r.States {
		_ = enc.EncodeArrayLen(6)
		_ = enc.EncodeUint(uint64(s.Segment))
		_ = enc.EncodeUint(s.Revision)
		_ = enc.EncodeString(s.Lineage.Identity)
		_ = enc.EncodeString(string(s.Lineage.Owner))
		_ = enc.EncodeUint(s.Lineage.Generation)
		_ = enc.EncodeUint(s.Lineage.Incarnation)
	}
	_ = enc.EncodeUint(r.Generation)
	return e.bytes()
}

func (e *encoder) acks(as []ack) []byte {
	enc := e.reset()
	_ = enc.EncodeArrayLen(2 * len(as))
	for _, a := range as {
		_ = enc.EncodeUint(uint64(a.Segment))
		_ = enc.EncodeUint(a.Revision)
	}
	return e.bytes()
}

func (e *encoder) ops(seg uint16, ops []store.Op) []byte {
	enc := e.reset()
	_ = enc.EncodeArrayLen(2)
	_ = enc.EncodeUint(uint64(seg))
	encodeOps(enc, ops)
	return e.bytes()
}

func encodeOps(enc *msgpack.Encoder, ops []store.Op) {
	_ = enc.EncodeArrayLen(len(ops))
	for i := range ops {
		op := &ops[i]
		_ = enc.EncodeArrayLen(3)
		_ = enc.EncodeUint(uint64(op.Kind))
		encodeRecord(enc, &op.Record)
		if op.Cmd == nil {
			_ = enc.EncodeNil()
			continue
		}
		_ = enc.EncodeArrayLen(3)
		_ = enc.EncodeUint(uint64(op.Cmd.Op))
		_ = enc.EncodeString(op.Cmd.Key)
		_ = enc.EncodeArrayLen(len(op.Cmd.Args))
		for _, a := range op.Cmd.Args {
			_ = enc.EncodeBytes(a)
		}
	}
}

func (e *encoder) snapBegin(seg uint16, rev uint64, count int) []byte {
	enc := e.reset()
	_ = enc.EncodeArrayLen(3)
	_ = enc.EncodeUint(uint64(seg))
	_ = enc.EncodeUint(rev)
	_ = enc.EncodeInt(int64(count))
	return e.bytes()
}

func (e *encoder) snapChunk(seg uint16, recs []store.Record) []byte {
	enc := e.reset()
	_ = enc.EncodeArrayLen(2)
	_ = enc.EncodeUint(uint64(seg))
	_ = enc.EncodeArrayLen(len(recs))
	for i := range recs {
		encodeRecord(enc, &recs[i])
	}
	return e.bytes()
}

// snapEnd closes a snapshot; prepared are the segment's prepare markers
// (store.Snapshot.Prepared), a trailing field an older reader skips.
func (e *encoder) snapEnd(seg uint16, rev uint64, prepared []store.Op) []byte {
	enc := e.reset()
	_ = enc.EncodeArrayLen(3)
	_ = enc.EncodeUint(uint64(seg))
	_ = enc.EncodeUint(rev)
	encodeOps(enc, prepared)
	return e.bytes()
}

func encodeRecord(enc *msgpack.Encoder, r *store.Record) {
	_ = enc.EncodeArrayLen(9)
	_ = enc.EncodeString(r.Key())
	if v := r.Value(); v == nil { // once: a paged string's Value is a copy
		_ = enc.EncodeNil()
	} else {
		_ = enc.EncodeBytes(v)
	}
	_ = enc.EncodeUint(r.Version())
	_ = enc.EncodeUint(r.Revision)
	_ = enc.EncodeInt(0) // was the creation time, which nothing read (D73); kept so nodes of both versions agree
	_ = enc.EncodeInt(r.ExpiresAt())
	_ = enc.EncodeBool(r.Deleted())
	_ = enc.EncodeUint(uint64(r.Kind))
	meta := r.Meta()
	if meta == nil {
		_ = enc.EncodeNil()
		return
	}
	_ = enc.EncodeArrayLen(2)
	_ = enc.EncodeString(meta.ContentType)
	if len(meta.Labels) == 0 {
		_ = enc.EncodeNil()
		return
	}
	_ = enc.EncodeMapLen(len(meta.Labels))
	for k, v := range meta.Labels {
		_ = enc.EncodeString(k)
		_ = enc.EncodeString(v)
	}
}

// --- decoder ---

// decoder reads one frame body. Decoders are pooled: a replica decodes a
// frame per batch of writes, and a fresh msgpack decoder per frame was a
// measurable share of its CPU (issue 17). Everything decoded is copied out
// of the body, so the body may be reused once decoding returns.
type decoder struct {
	body []byte
	r    bytes.Reader
	dec  *msgpack.Decoder
}

var decoders = sync.Pool{New: func() any {
	d := &decoder{}
	d.dec = msgpack.NewDecoder(&d.r)
	return d
}}

// newDecoder takes a decoder from the pool, reading body; release returns it.
func newDecoder(body []byte) *decoder {
	d := decoders.Get().(*decoder)
	d.body = body
	d.r.Reset(body)
	d.dec.Reset(&d.r)
	return d
}

func (d *decoder) release() {
	d.body = nil
	d.r.Reset(nil)
	decoders.Put(d)
}

// array reads an array header of at least min fields, bounded by what is
// left of the body (every element takes a byte at least), and returns the
// number of fields beyond min for skipExtra.
func (d *decoder) array(min int) (int, error) {
	n, err := d.dec.DecodeArrayLen()
	if err != nil {
		return 0, protoErr("%v", err)
	}
	if n < min || n > d.r.Len() {
		return 0, protoErr("array of %d, want at least %d", n, min)
	}
	return n - min, nil
}

// list reads the header of a list of elements (nil = empty).
func (d *decoder) list() (int, error) {
	n, err := d.dec.DecodeArrayLen()
	if err != nil {
		return 0, protoErr("%v", err)
	}
	if n < 0 {
		return 0, nil
	}
	if n > d.r.Len() {
		return 0, protoErr("list of %d in %d bytes", n, d.r.Len())
	}
	return n, nil
}

// skip passes over n values a newer peer added. Not msgpack's Skip: it
// reads a string's, binary's or extension's announced length into a buffer
// it grows as it goes, so a 13-byte frame announcing a 1 GiB string cost
// megabytes and seconds (found by FuzzDecode). Every length here is bounded
// by what is left of the body, and nesting by maxSkipDepth.
func (d *decoder) skip(n int) error {
	for range n {
		if err := d.skipValue(0); err != nil {
			return err
		}
	}
	return nil
}

// maxSkipDepth bounds the nesting of a skipped value: a frame of nested
// array headers must not recurse without end.
const maxSkipDepth = 32

func (d *decoder) skipValue(depth int) error {
	if depth > maxSkipDepth {
		return protoErr("values nested deeper than %d", maxSkipDepth)
	}
	c, err := d.dec.PeekCode()
	if err != nil {
		return protoErr("%v", err)
	}
	switch {
	case msgpcode.IsString(c), msgpcode.IsBin(c):
		n, err := d.dec.DecodeBytesLen()
		if err != nil {
			return protoErr("%v", err)
		}
		return d.seek(n)
	case msgpcode.IsExt(c):
		_, n, err := d.dec.DecodeExtHeader()
		if err != nil {
			return protoErr("%v", err)
		}
		return d.seek(n)
	case msgpcode.IsFixedArray(c), c == msgpcode.Array16, c == msgpcode.Array32:
		n, err := d.list()
		if err != nil {
			return err
		}
		for range n {
			if err := d.skipValue(depth + 1); err != nil {
				return err
			}
		}
		return nil
	case msgpcode.IsFixedMap(c), c == msgpcode.Map16, c == msgpcode.Map32:
		n, err := d.dec.DecodeMapLen()
		if err != nil {
			return protoErr("%v", err)
		}
		if n > d.r.Len() {
			return protoErr("map of %d in %d bytes", n, d.r.Len())
		}
		for range 2 * max(n, 0) {
			if err := d.skipValue(depth + 1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := d.dec.Skip(); err != nil { // a scalar: a fixed size, nothing allocated
		return protoErr("%v", err)
	}
	return nil
}

// seek passes over n bytes of the body.
func (d *decoder) seek(n int) error {
	if n < 0 {
		return nil
	}
	if n > d.r.Len() {
		return protoErr("%d bytes announced, %d left", n, d.r.Len())
	}
	_, err := d.r.Seek(int64(n), io.SeekCurrent)
	return err
}

func (d *decoder) isNil() bool {
	c, err := d.dec.PeekCode()
	if err != nil || c != msgpcode.Nil {
		return false
	}
	_ = d.dec.DecodeNil()
	return true
}

func (d *decoder) uint() (uint64, error) {
	v, err := d.dec.DecodeUint64()
	if err != nil {
		return 0, protoErr("%v", err)
	}
	return v, nil
}

func (d *decoder) int() (int64, error) {
	v, err := d.dec.DecodeInt64()
	if err != nil {
		return 0, protoErr("%v", err)
	}
	return v, nil
}

// raw reads a str or bin value, bounded by what is left of the body (a
// peer's length never allocates more than the frame it sent); nil for a
// msgpack nil.
func (d *decoder) raw() ([]byte, error) {
	n, err := d.dec.DecodeBytesLen()
	if err != nil {
		return nil, protoErr("%v", err)
	}
	if n < 0 {
		return nil, nil
	}
	if n > d.r.Len() {
		return nil, protoErr("%d bytes announced, %d left", n, d.r.Len())
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(&d.r, b); err != nil {
		return nil, protoErr("%v", err)
	}
	return b, nil
}

// keyValue reads a record's key (str or bin) and value (raw) into one
// allocation, joined (Record.SetJoined): they live and die together in the
// store. hasValue is false for a nil value.
func (d *decoder) keyValue() (joined []byte, keyLen int, hasValue bool, err error) {
	kn, err := d.dec.DecodeBytesLen()
	if err != nil {
		return nil, 0, false, protoErr("%v", err)
	}
	kn = max(kn, 0)
	if kn > d.r.Len() {
		return nil, 0, false, protoErr("%d key bytes announced, %d left", kn, d.r.Len())
	}
	at := len(d.body) - d.r.Len() // the key's offset in the body
	if _, err := d.r.Seek(int64(kn), io.SeekCurrent); err != nil {
		return nil, 0, false, protoErr("%v", err)
	}
	vn, err := d.dec.DecodeBytesLen()
	if err != nil {
		return nil, 0, false, protoErr("%v", err)
	}
	if vn > d.r.Len() {
		return nil, 0, false, protoErr("%d bytes announced, %d left", vn, d.r.Len())
	}
	b := make([]byte, kn+max(vn, 0)+8) // the last 8: the record's expiry (SetJoinedExpiring)
	copy(b, d.body[at:at+kn])
	if vn > 0 {
		if _, err := io.ReadFull(&d.r, b[kn:kn+vn]); err != nil {
			return nil, 0, false, protoErr("%v", err)
		}
	}
	return b, kn, vn >= 0, nil
}

// str is raw as a string, sharing raw's allocation (nothing else holds it).
func (d *decoder) str() (string, error) {
	b, err := d.raw()
	if len(b) == 0 {
		return "", err
	}
	return unsafe.String(unsafe.SliceData(b), len(b)), err
}

func (d *decoder) segment() (uint16, error) {
	v, err := d.uint()
	if err != nil {
		return 0, err
	}
	if v > 0xffff {
		return 0, protoErr("segment %d", v)
	}
	return uint16(v), nil
}

// fields decodes into each destination in order; a destination is a
// *string, *uint64, *int, *int64 or *cluster.NodeID.
func (d *decoder) fields(dst ...any) error {
	for _, p := range dst {
		switch v := p.(type) {
		case *string:
			s, err := d.str()
			if err != nil {
				return err
			}
			*v = s
		case *cluster.NodeID:
			s, err := d.str()
			if err != nil {
				return err
			}
			*v = cluster.NodeID(s)
		case *uint64:
			u, err := d.uint()
			if err != nil {
				return err
			}
			*v = u
		case *int64:
			i, err := d.int()
			if err != nil {
				return err
			}
			*v = i
		case *int:
			i, err := d.int()
			if err != nil {
				return err
			}
			*v = int(i)
		default:
			panic(fmt.Sprintf("replication: fields: %T", p))
		}
	}
	return nil
}

func decodeHello(body []byte) (hello, error) {
	d := newDecoder(body)
	defer d.release()
	var h hello
	extra, err := d.array(12)
	if err != nil {
		return h, err
	}
	if err := d.fields(&h.Version, &h.Store, &h.Cluster, &h.From, &h.Partition, &h.Identity,
		&h.Generation, &h.Epoch, &h.MapVersion, &h.First, &h.Last, &h.Incarnation); err != nil {
		return h, err
	}
	return h, d.skip(extra)
}

func decodeHelloReply(body []byte) (helloReply, error) {
	d := newDecoder(body)
	defer d.release()
	var r helloReply
	extra, err := d.array(3)
	if err != nil {
		return r, err
	}
	if err := d.fields(&r.Status, &r.Message); err != nil {
		return r, err
	}
	n, err := d.list()
	if err != nil {
		return r, err
	}
	r.States = make([]segState, n)
	for i := range r.States {
		s := &r.States[i]
		x, err := d.array(6)
		if err != nil {
			return r, err
		}
		seg, err := d.segment()
		if err != nil {
			return r, err
		}
		s.Segment = seg
		if err := d.fields(&s.Revision, &s.Lineage.Identity, &s.Lineage.Owner, &s.Lineage.Generation, &s.Lineage.Incarnation); err != nil {
			return r, err
		}
		if err := d.skip(x); err != nil {
			return r, err
		}
	}
	if extra > 0 { // field 4 (append-only: absent from a reply that predates it)
		if err := d.fields(&r.Generation); err != nil {
			return r, err
		}
		extra--
	}
	return r, d.skip(extra)
}

func decodeAcks(body []byte, dst []ack) ([]ack, error) {
	d := newDecoder(body)
	defer d.release()
	n, err := d.list()
	if err != nil {
		return dst, err
	}
	if n%2 != 0 {
		return dst, protoErr("ack list of %d", n)
	}
	for range n / 2 {
		seg, err := d.segment()
		if err != nil {
			return dst, err
		}
		rev, err := d.uint()
		if err != nil {
			return dst, err
		}
		dst = append(dst, ack{Segment: seg, Revision: rev})
	}
	return dst, nil
}

func decodeOps(body []byte) (uint16, []store.Op, error) {
	return decodeOpsInto(body, nil)
}

// decodeOpsInto is decodeOps reusing buf's array when it is large enough
// (a replica session decodes every Ops frame into one slice).
func decodeOpsInto(body []byte, buf []store.Op) (uint16, []store.Op, error) {
	d := newDecoder(body)
	defer d.release()
	extra, err := d.array(2)
	if err != nil {
		return 0, nil, err
	}
	seg, err := d.segment()
	if err != nil {
		return 0, nil, err
	}
	n, err := d.list()
	if err != nil {
		return 0, nil, err
	}
	var ops []store.Op
	if buf != nil && n <= cap(buf) {
		ops = buf[:n]
		clear(ops)
	} else {
		ops = make([]store.Op, n)
	}
	if ops, err = d.opsInto(ops); err != nil {
		return 0, nil, err
	}
	return seg, ops, d.skip(extra)
}

// ops reads a list of ops.
func (d *decoder) ops() ([]store.Op, error) {
	n, err := d.list()
	if err != nil {
		return nil, err
	}
	ops := make([]store.Op, n)
	return d.opsInto(ops)
}

// opsInto decodes len(ops) ops into ops.
func (d *decoder) opsInto(ops []store.Op) ([]store.Op, error) {
	for i := range ops {
		op := &ops[i]
		x, err := d.array(3)
		if err != nil {
			return nil, err
		}
		kind, err := d.uint()
		if err != nil {
			return nil, err
		}
		if kind < uint64(store.OpPut) || kind > uint64(store.LastOpKind) {
			return nil, protoErr("op kind %d", kind)
		}
		op.Kind = store.OpKind(kind)
		if err := d.recordInto(&op.Record); err != nil {
			return nil, err
		}
		if !d.isNil() {
			cx, err := d.array(3)
			if err != nil {
				return nil, err
			}
			cop, err := d.uint()
			if err != nil {
				return nil, err
			}
			cmd := &kv.Cmd{Op: kv.CmdOp(cop)}
			if cmd.Key, err = d.str(); err != nil {
				return nil, err
			}
			na, err := d.list()
			if err != nil {
				return nil, err
			}
			cmd.Args = make([][]byte, na)
			for j := range cmd.Args {
				b, err := d.raw()
				if err != nil {
					return nil, err
				}
				if b == nil {
					b = []byte{}
				}
				cmd.Args[j] = b
			}
			if err := d.skip(cx); err != nil {
				return nil, err
			}
			op.Cmd = cmd
		}
		if err := d.skip(x); err != nil {
			return nil, err
		}
	}
	return ops, nil
}

func (d *decoder) record() (store.Record, error) {
	var r store.Record
	err := d.recordInto(&r)
	return r, err
}

// recordInto decodes a record into *r (a decoded record escaping to the
// heap per op was a replica's largest allocation, issue 17).
func (d *decoder) recordInto(r *store.Record) error {
	extra, err := d.array(9)
	if err != nil {
		return err
	}
	joined, keyLen, hasValue, err := d.keyValue()
	if err != nil {
		return err
	}
	*r = store.Record{}
	var version, kind uint64
	var expiresAt int64
	var deleted bool
	if version, err = d.uint(); err != nil {
		return err
	}
	if r.Revision, err = d.uint(); err != nil {
		return err
	}
	if _, err = d.int(); err != nil { // the former creation time (D73)
		return err
	}
	if expiresAt, err = d.int(); err != nil {
		return err
	}
	if deleted, err = d.dec.DecodeBool(); err != nil {
		return protoErr("%v", err)
	}
	if kind, err = d.uint(); err != nil {
		return err
	}
	if kind > 0xff {
		return protoErr("value kind %d", kind)
	}
	r.Kind = store.ValueKind(kind)
	r.SetVersion(version)
	r.SetDeleted(deleted)
	r.SetJoinedExpiring(joined, keyLen, hasValue, expiresAt)
	if !d.isNil() {
		mx, err := d.array(2)
		if err != nil {
			return err
		}
		m := &store.Metadata{}
		if m.ContentType, err = d.str(); err != nil {
			return err
		}
		if !d.isNil() {
			n, err := d.dec.DecodeMapLen()
			if err != nil || n > d.r.Len() {
				return protoErr("labels: %v", err)
			}
			if n > 0 {
				m.Labels = make(map[string]string, n)
			}
			for range n {
				k, err := d.str()
				if err != nil {
					return err
				}
				v, err := d.str()
				if err != nil {
					return err
				}
				m.Labels[k] = v
			}
		}
		if err := d.skip(mx); err != nil {
			return err
		}
		r.SetMeta(m)
	}
	return d.skip(extra)
}

func decodeSnapBegin(body []byte) (seg uint16, rev uint64, count int, err error) {
	d := newDecoder(body)
	defer d.release()
	extra, err := d.array(3)
	if err != nil {
		return 0, 0, 0, err
	}
	if seg, err = d.segment(); err != nil {
		return 0, 0, 0, err
	}
	if err = d.fields(&rev, &count); err != nil {
		return 0, 0, 0, err
	}
	if count < 0 {
		return 0, 0, 0, protoErr("snapshot of %d records", count)
	}
	return seg, rev, count, d.skip(extra)
}

func decodeSnapChunk(body []byte) (uint16, []store.Record, error) {
	d := newDecoder(body)
	defer d.release()
	extra, err := d.array(2)
	if err != nil {
		return 0, nil, err
	}
	seg, err := d.segment()
	if err != nil {
		return 0, nil, err
	}
	n, err := d.list()
	if err != nil {
		return 0, nil, err
	}
	recs := make([]store.Record, n)
	for i := range recs {
		if recs[i], err = d.record(); err != nil {
			return 0, nil, err
		}
	}
	return seg, recs, d.skip(extra)
}

func decodeSnapEnd(body []byte) (seg uint16, rev uint64, prepared []store.Op, err error) {
	d := newDecoder(body)
	defer d.release()
	extra, err := d.array(2)
	if err != nil {
		return 0, 0, nil, err
	}
	if seg, err = d.segment(); err != nil {
		return 0, 0, nil, err
	}
	if err = d.fields(&rev); err != nil {
		return 0, 0, nil, err
	}
	if extra > 0 {
		if prepared, err = d.ops(); err != nil {
			return 0, 0, nil, err
		}
		extra--
	}
	for _, op := range prepared {
		if op.Kind != store.OpTxPrepare {
			return 0, 0, nil, protoErr("a snapshot carries a %v op", op.Kind)
		}
	}
	return seg, rev, prepared, d.skip(extra)
}

package bus

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Kind names a bus frame.
type Kind byte

const (
	// KindPublish is a message published on the sender: the receiver
	// delivers it to its own subscribers (Channel, Payload).
	KindPublish Kind = 1
	// KindSetting is a cluster setting (Name, Value) stamped by its origin
	// (Stamp, Origin): the highest (Stamp, Origin) wins everywhere.
	KindSetting Kind = 2
	// KindQuery asks the receiver's pub/sub state: Name is the PUBSUB
	// subcommand ("channels", "numsub", "numpat"), Args its arguments.
	KindQuery Kind = 3
	// KindReply answers a query: Args (channel names, or patterns for
	// numpat) and Ints (numsub's counts).
	KindReply Kind = 4
	// KindInvalidate carries client-side-caching invalidations from a
	// key's owner (CLIENT TRACKING, server/resp/tracking.go): Args are the
	// keys that changed; Name "flush" (and no keys) means every key may
	// have changed (FLUSHALL, or invalidations the sender had to drop).
	KindInvalidate Kind = 5
)

// MaxFrame bounds a frame's body: Redis's largest bulk string (512 MiB)
// plus room for a channel name. A longer length prefix is a broken or
// hostile stream, refused before anything is allocated for it.
const MaxFrame = 512<<20 + 64<<10

// Frame is one message of the bus protocol. Which fields a frame carries
// depends on its Kind.
type Frame struct {
	Kind    Kind
	Channel string
	Payload []byte
	Name    string
	Value   string
	Stamp   uint64
	Origin  string
	Args    []string
	Ints    []int64
}

// ErrFrame is a frame that does not decode.
var ErrFrame = errors.New("bus: malformed frame")

// AppendFrame appends f's encoding: a 4-byte big-endian body length, then
// the body (the kind byte and its fields: strings and byte strings with a
// uvarint length, integers as uvarints or zig-zag varints, lists with a
// uvarint count).
func AppendFrame(dst []byte, f *Frame) []byte {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0, byte(f.Kind))
	switch f.Kind {
	case KindPublish:
		dst = appendString(dst, f.Channel)
		dst = appendBytes(dst, f.Payload)
	case KindSetting:
		dst = appendString(dst, f.Name)
		dst = appendString(dst, f.Value)
		dst = binary.AppendUvarint(dst, f.Stamp)
		dst = appendString(dst, f.Origin)
	case KindQuery:
		dst = appendString(dst, f.Name)
		dst = appendStrings(dst, f.Args)
	case KindReply:
		dst = appendStrings(dst, f.Args)
		dst = binary.AppendUvarint(dst, uint64(len(f.Ints)))
		for _, n := range f.Ints {
			dst = binary.AppendVarint(dst, n)
		}
	case KindInvalidate:
		dst = appendString(dst, f.Name)
		dst = appendStrings(dst, f.Args)
	}
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return dst
}

func appendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

func appendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ss)))
	for _, s := range ss {
		dst = appendString(dst, s)
	}
	return dst
}

// DecodeFrame decodes a frame body (without its length prefix). Every
// length and count is checked against the bytes left, so a hostile body
// allocates no more than its own size.
func DecodeFrame(body []byte, f *Frame) error {
	*f = Frame{}
	if len(body) == 0 {
		return ErrFrame
	}
	d := decoder{b: body[1:]}
	f.Kind = Kind(body[0])
	switch f.Kind {
	case KindPublish:
		f.Channel = d.string()
		f.Payload = d.bytes()
	case KindSetting:
		f.Name = d.string()
		f.Value = d.string()
		f.Stamp = d.uvarint()
		f.Origin = d.string()
	case KindQuery:
		f.Name = d.string()
		f.Args = d.strings()
	case KindReply:
		f.Args = d.strings()
		n := d.count(1)
		if n > 0 {
			f.Ints = make([]int64, 0, n)
		}
		for i := 0; i < n && !d.bad; i++ {
			v, k := binary.Varint(d.b)
			if k <= 0 {
				d.bad = true
				break
			}
			d.b = d.b[k:]
			f.Ints = append(f.Ints, v)
		}
	case KindInvalidate:
		f.Name = d.string()
		f.Args = d.strings()
	default:
		return fmt.Errorf("%w: unknown kind %d", ErrFrame, body[0])
	}
	if d.bad || len(d.b) != 0 {
		return ErrFrame
	}
	return nil
}

type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) uvarint() uint64 {
	if d.bad {
		return 0
	}
	v, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[k:]
	return v
}

// count reads a length or count whose items take at least min bytes each.
func (d *decoder) count(min int) int {
	v := d.uvarint()
	if d.bad || v > uint64(len(d.b)) || (min > 0 && v > uint64(len(d.b)/min)) {
		d.bad = true
		return 0
	}
	return int(v)
}

func (d *decoder) bytes() []byte {
	n := d.count(0)
	if d.bad {
		return nil
	}
	b := d.b[:n:n]
	d.b = d.b[n:]
	return b
}

func (d *decoder) string() string { return string(d.bytes()) }

func (d *decoder) strings() []string {
	n := d.count(1)
	if d.bad || n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	for i := 0; i < n && !d.bad; i++ {
		out = append(out, d.string())
	}
	return out
}

// ReadFrame reads one frame from r. The returned frame's byte fields alias
// a buffer of its own (not reused).
func ReadFrame(r *bufio.Reader, f *Frame) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return fmt.Errorf("%w: %d-byte body", ErrFrame, n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	return DecodeFrame(body, f)
}

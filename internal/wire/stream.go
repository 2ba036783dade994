package wire

// Bodies of the streaming requests: watches (R-DS-6) and pub/sub (R-DS-7).

// WatchRequest asks for the changes of one key (Key != "") or of every key
// with a prefix.
//
//	[Key str, Prefix str, Snapshot bool, IncludeValues bool, Buffer uint,
//	 From array of [Segment uint, Revision uint, Key str, Version uint, Epoch uint],
//	 Marks bool]
//
// From (optional) resumes a watch: only its segments are watched, each
// from after the position it names (the server replays its op-log, or
// answers a resync when that history is gone). Marks asks for the
// WatchItemMark items (a resumable watch; implied by From); without it the
// stream is what clients that predate them expect.
type WatchRequest struct {
	Key           string
	Prefix        string
	Snapshot      bool
	IncludeValues bool
	Buffer        uint32
	From          []WatchPosition
	Marks         bool
}

// WatchPosition is a point of one segment's history: the revision of the
// last change delivered and that change's key and version.
type WatchPosition struct {
	Segment  uint16
	Revision uint64
	Key      string
	Version  uint64
	Epoch    uint64 // the partition's ownership epoch when the position was handed out
}

// MaxWatchPositions bounds From: one position per segment at most.
const MaxWatchPositions = 1 << 16

func AppendWatchRequest(dst []byte, r WatchRequest) []byte {
	n := 5
	if r.From != nil || r.Marks {
		n = 7
	}
	dst = appendArrayHeader(dst, n)
	dst = appendStr(dst, r.Key)
	dst = appendStr(dst, r.Prefix)
	dst = appendBool(dst, r.Snapshot)
	dst = appendBool(dst, r.IncludeValues)
	dst = appendUint(dst, uint64(r.Buffer))
	if n == 7 {
		if r.From == nil {
			dst = appendNil(dst)
		} else {
			dst = appendArrayHeader(dst, len(r.From))
		}
		for _, p := range r.From {
			dst = appendArrayHeader(dst, 5)
			dst = appendUint(dst, uint64(p.Segment))
			dst = appendUint(dst, p.Revision)
			dst = appendStr(dst, p.Key)
			dst = appendUint(dst, p.Version)
			dst = appendUint(dst, p.Epoch)
		}
		dst = appendBool(dst, r.Marks)
	}
	return dst
}

func (d *decoder) readWatchPositions() ([]WatchPosition, error) {
	n, err := d.readArrayHeader()
	if err != nil {
		return nil, err
	}
	if n > MaxWatchPositions || n > d.remaining() {
		return nil, d.fail("%d resume positions", n)
	}
	out := make([]WatchPosition, 0, n)
	for i := 0; i < n; i++ {
		m, err := d.readArrayHeader()
		if err != nil {
			return nil, err
		}
		if m < 4 {
			return nil, d.fail("resume position of %d fields", m)
		}
		var p WatchPosition
		seg, err := d.readUint(0xffff)
		if err != nil {
			return nil, err
		}
		p.Segment = uint16(seg)
		if p.Revision, err = d.readUint(^uint64(0)); err != nil {
			return nil, err
		}
		if p.Key, err = d.readString(); err != nil {
			return nil, err
		}
		if p.Version, err = d.readUint(^uint64(0)); err != nil {
			return nil, err
		}
		if m > 4 {
			if p.Epoch, err = d.readUint(^uint64(0)); err != nil {
				return nil, err
			}
		}
		if err := d.skip(max(0, m-5)); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func DecodeWatchRequest(body []byte, r *WatchRequest) error {
	d := decoder{b: body, body: "watch request"}
	n, err := d.beginStruct(2)
	if err != nil {
		return err
	}
	*r = WatchRequest{}
	d.field = "key"
	if r.Key, err = d.readString(); err != nil {
		return err
	}
	d.field = "prefix"
	if r.Prefix, err = d.readString(); err != nil {
		return err
	}
	if n > 2 {
		d.field = "snapshot"
		if r.Snapshot, err = d.readBool(); err != nil {
			return err
		}
	}
	if n > 3 {
		d.field = "include values"
		if r.IncludeValues, err = d.readBool(); err != nil {
			return err
		}
	}
	if n > 4 {
		d.field = "buffer"
		b, err := d.readUint(1 << 24)
		if err != nil {
			return err
		}
		r.Buffer = uint32(b)
	}
	if n > 5 {
		d.field = "from"
		if !d.consumeNil() {
			if r.From, err = d.readWatchPositions(); err != nil {
				return err
			}
		}
	}
	if n > 6 {
		d.field = "marks"
		if r.Marks, err = d.readBool(); err != nil {
			return err
		}
	}
	if err := d.endStruct(n, 7); err != nil {
		return err
	}
	return d.finish()
}

// Watch item kinds beyond the store's event kinds (1..127).
const (
	WatchItemSnapshot     = 0   // a live record of the initial snapshot
	WatchItemSnapshotDone = 255 // the snapshot is complete; events follow
	// WatchItemMark: Segment's events start after Revision (Key and
	// Version name the change at it when known). One per watched segment,
	// before WatchItemSnapshotDone.
	WatchItemMark = 254
	// WatchItemResync: a resumed Segment's history is gone; the
	// WatchItemResyncRecord items of that Segment that follow are its
	// matching live records.
	WatchItemResync       = 253
	WatchItemResyncRecord = 252
)

// WatchItem is one frame of a watch stream: a snapshot record, the
// end-of-snapshot marker, or an event.
//
//	[Kind uint, Key str, Value bin|nil, Version uint, Revision uint,
//	 ExpiresAt int, Command uint, KeyKind uint, Segment uint, Epoch uint]
type WatchItem struct {
	Kind      uint8
	Key       string
	Value     []byte
	Version   uint64
	Revision  uint64
	ExpiresAt int64
	Command   uint16
	KeyKind   uint8
	Segment   uint16
	Epoch     uint64
}

func AppendWatchItem(dst []byte, it *WatchItem) []byte {
	dst = appendArrayHeader(dst, 10)
	dst = appendUint(dst, uint64(it.Kind))
	dst = appendStr(dst, it.Key)
	if it.Value == nil {
		dst = appendNil(dst)
	} else {
		dst = appendBytes(dst, it.Value)
	}
	dst = appendUint(dst, it.Version)
	dst = appendUint(dst, it.Revision)
	dst = appendInt(dst, it.ExpiresAt)
	dst = appendUint(dst, uint64(it.Command))
	dst = appendUint(dst, uint64(it.KeyKind))
	dst = appendUint(dst, uint64(it.Segment))
	return appendUint(dst, it.Epoch)
}

// DecodeWatchItem decodes a watch item; Value aliases body.
func DecodeWatchItem(body []byte, it *WatchItem) error {
	d := decoder{b: body, body: "watch item"}
	n, err := d.beginStruct(2)
	if err != nil {
		return err
	}
	*it = WatchItem{}
	d.field = "kind"
	k, err := d.readUint(0xff)
	if err != nil {
		return err
	}
	it.Kind = uint8(k)
	d.field = "key"
	if it.Key, err = d.readString(); err != nil {
		return err
	}
	fields := []func() error{
		func() (err error) {
			if !d.consumeNil() {
				it.Value, err = d.readBytes()
			}
			return err
		},
		func() (err error) { it.Version, err = d.readUint(^uint64(0)); return err },
		func() (err error) { it.Revision, err = d.readUint(^uint64(0)); return err },
		func() (err error) { it.ExpiresAt, err = d.readInt(); return err },
		func() error { v, err := d.readUint(0xffff); it.Command = uint16(v); return err },
		func() error { v, err := d.readUint(0xff); it.KeyKind = uint8(v); return err },
		func() error { v, err := d.readUint(0xffff); it.Segment = uint16(v); return err },
		func() (err error) { it.Epoch, err = d.readUint(^uint64(0)); return err },
	}
	for i := 2; i < n && i-2 < len(fields); i++ {
		d.field = "watch item field"
		if err := fields[i-2](); err != nil {
			return err
		}
	}
	if err := d.endStruct(n, 10); err != nil {
		return err
	}
	return d.finish()
}

// SubscribeRequest subscribes to channels and glob patterns.
//
//	[Channels array of str, Patterns array of str, Buffer uint]
type SubscribeRequest struct {
	Channels []string
	Patterns []string
	Buffer   uint32
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = appendArrayHeader(dst, len(ss))
	for _, s := range ss {
		dst = appendStr(dst, s)
	}
	return dst
}

func (d *decoder) readStrings() ([]string, error) {
	n, err := d.readArrayHeader()
	if err != nil {
		return nil, err
	}
	if n > d.remaining() {
		return nil, d.truncated(n)
	}
	out := make([]string, 0, n)
	for range n {
		s, err := d.readString()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func AppendSubscribeRequest(dst []byte, r SubscribeRequest) []byte {
	dst = appendArrayHeader(dst, 3)
	dst = appendStrings(dst, r.Channels)
	dst = appendStrings(dst, r.Patterns)
	return appendUint(dst, uint64(r.Buffer))
}

func DecodeSubscribeRequest(body []byte, r *SubscribeRequest) error {
	d := decoder{b: body, body: "subscribe request"}
	n, err := d.beginStruct(2)
	if err != nil {
		return err
	}
	*r = SubscribeRequest{}
	d.field = "channels"
	if r.Channels, err = d.readStrings(); err != nil {
		return err
	}
	d.field = "patterns"
	if r.Patterns, err = d.readStrings(); err != nil {
		return err
	}
	if n > 2 {
		d.field = "buffer"
		b, err := d.readUint(1 << 24)
		if err != nil {
			return err
		}
		r.Buffer = uint32(b)
	}
	if err := d.endStruct(n, 3); err != nil {
		return err
	}
	return d.finish()
}

// MessageItem is one published message of a subscription stream.
//
//	[Channel str, Pattern str, Payload bin]
type MessageItem struct {
	Channel string
	Pattern string
	Payload []byte
}

func AppendMessageItem(dst []byte, m *MessageItem) []byte {
	dst = appendArrayHeader(dst, 3)
	dst = appendStr(dst, m.Channel)
	dst = appendStr(dst, m.Pattern)
	return appendBytes(dst, m.Payload)
}

// DecodeMessageItem decodes a message; Payload aliases body.
func DecodeMessageItem(body []byte, m *MessageItem) error {
	d := decoder{b: body, body: "message item"}
	n, err := d.beginStruct(3)
	if err != nil {
		return err
	}
	d.field = "channel"
	if m.Channel, err = d.readString(); err != nil {
		return err
	}
	d.field = "pattern"
	if m.Pattern, err = d.readString(); err != nil {
		return err
	}
	d.field = "payload"
	if m.Payload, err = d.readBytes(); err != nil {
		return err
	}
	if err := d.endStruct(n, 3); err != nil {
		return err
	}
	return d.finish()
}

// AppendPublishRequest appends [Channel str, Payload bin].
func AppendPublishRequest(dst []byte, channel string, payload []byte) []byte {
	dst = appendArrayHeader(dst, 2)
	dst = appendStr(dst, channel)
	return appendBytes(dst, payload)
}

// DecodePublishRequest decodes a publish request; payload aliases body.
func DecodePublishRequest(body []byte) (channel string, payload []byte, err error) {
	d := decoder{b: body, body: "publish request"}
	n, err := d.beginStruct(2)
	if err != nil {
		return "", nil, err
	}
	d.field = "channel"
	if channel, err = d.readString(); err != nil {
		return "", nil, err
	}
	d.field = "payload"
	if payload, err = d.readBytes(); err != nil {
		return "", nil, err
	}
	if err := d.endStruct(n, 2); err != nil {
		return "", nil, err
	}
	return channel, payload, d.finish()
}

// AppendEndStreamRequest appends [StreamID uint]: the request id of the
// OpWatch or OpSubscribe to end.
func AppendEndStreamRequest(dst []byte, streamID uint32) []byte {
	dst = appendArrayHeader(dst, 1)
	return appendUint(dst, uint64(streamID))
}

func DecodeEndStreamRequest(body []byte) (uint32, error) {
	d := decoder{b: body, body: "end-stream request"}
	n, err := d.beginStruct(1)
	if err != nil {
		return 0, err
	}
	d.field = "stream id"
	id, err := d.readUint(0xffffffff)
	if err != nil {
		return 0, err
	}
	if err := d.endStruct(n, 1); err != nil {
		return 0, err
	}
	return uint32(id), d.finish()
}

package sdk

// The change feed (R-OPS-4): every change of every key (or of a prefix),
// per segment in revision order, with a cursor the consumer stores and
// resumes from. It rides on the resumable watch: on a cluster it survives
// a failover or a migration of any segment the way a watch does.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"

	"github.com/zaris-io/zaris/internal/wire"
)

// Change is one change of the feed: a WatchEvent (put, delete, expired,
// evicted, expire, persist, collection command), or, with
// ChangesOptions.ResyncOnExpired, a WatchResync whose Records replace the
// segment's content.
type Change = WatchEvent

// CursorPosition is where a change feed stands in one segment: the epoch
// and revision of the last change consumed, and that change's key and
// version (which let another copy of the segment verify it holds the same
// history).
type CursorPosition struct {
	Epoch    uint64 `json:"e,omitempty"`
	Revision uint64 `json:"r"`
	Key      string `json:"k,omitempty"`
	Version  uint64 `json:"v,omitempty"`
}

// Cursor is a change feed's position in every segment (segment → position).
// Store it (String) after processing changes; ChangesOptions.Cursor resumes
// exactly after them.
type Cursor map[uint16]CursorPosition

// String encodes the cursor for storage or a URL (GET /v1/changes?cursor=).
func (c Cursor) String() string {
	m := make(map[string]CursorPosition, len(c))
	for s, p := range c {
		m[strconv.Itoa(int(s))] = p
	}
	b, _ := json.Marshal(m) // a map of plain structs always encodes
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCursor decodes Cursor.String.
func ParseCursor(s string) (Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: cursor: %v", ErrBadRequest, err)
	}
	var m map[string]CursorPosition
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: cursor: %v", ErrBadRequest, err)
	}
	c := make(Cursor, len(m))
	for k, p := range m {
		seg, err := strconv.ParseUint(k, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("%w: cursor: segment %q", ErrBadRequest, k)
		}
		c[uint16(seg)] = p
	}
	return c, nil
}

// ErrCursorExpired: the feed's history no longer reaches back to the
// cursor in some segment (below the trim floor of the op-log and the feed
// retention, or changes lost with a failed owner). Changes after it
// cannot be replayed: open the feed again with ResyncOnExpired (each such
// segment starts with a snapshot of its records), or without a cursor and
// with Snapshot.
var ErrCursorExpired = errors.New("zaris: change feed cursor expired: its history is gone; resynchronise from a snapshot")

// CursorExpiredError names the segment whose history was gone.
type CursorExpiredError struct{ Segment uint16 }

func (e *CursorExpiredError) Error() string {
	return fmt.Sprintf("%v (segment %d)", ErrCursorExpired, e.Segment)
}

func (e *CursorExpiredError) Unwrap() error { return ErrCursorExpired }

// ChangesOptions tune a change feed.
type ChangesOptions struct {
	// Prefix limits the feed to keys starting with it ("" = every key).
	Prefix string
	// Cursor resumes after the changes it covers; nil starts now.
	Cursor Cursor
	// Snapshot (without Cursor): the feed first offers the matching live
	// records (ChangeFeed.Snapshot), and then every change after them.
	Snapshot bool
	// ResyncOnExpired: a segment whose history is gone yields a
	// WatchResync change (its records now) instead of ending the feed with
	// ErrCursorExpired — the snapshot-then-feed path.
	ResyncOnExpired bool
	// Buffer is how many changes may wait for the consumer. Default 4096.
	Buffer int
}

// ChangeFeed is an open change feed.
type ChangeFeed struct {
	s       *WatchStream
	cursor  Cursor
	resync  bool
	pending []Change // resyncs known at open (a single node)
	err     error
}

// Changes opens the change feed (R-OPS-4).
func (c *Client) Changes(ctx context.Context, opts *ChangesOptions) (*ChangeFeed, error) {
	if err := c.check(ctx); err != nil {
		return nil, err
	}
	var o ChangesOptions
	if opts != nil {
		o = *opts
	}
	if o.Buffer <= 0 {
		o.Buffer = 4096
	}
	if o.Cursor != nil && o.Snapshot {
		return nil, fmt.Errorf("%w: a change feed resumes from a cursor or starts with a snapshot, not both", ErrBadRequest)
	}
	req := wire.WatchRequest{Prefix: o.Prefix, Snapshot: o.Snapshot, IncludeValues: true, Buffer: uint32(o.Buffer), Marks: true}
	if o.Cursor != nil {
		req.From = make([]wire.WatchPosition, 0, len(o.Cursor))
		for seg, p := range o.Cursor {
			req.From = append(req.From, wire.WatchPosition{Segment: seg, Revision: p.Revision, Key: p.Key, Version: p.Version, Epoch: p.Epoch})
		}
		sort.Slice(req.From, func(i, j int) bool { return req.From[i].Segment < req.From[j].Segment })
	}
	s, err := c.be.watch(ctx, req)
	if err != nil {
		return nil, err
	}
	f := &ChangeFeed{s: s, cursor: Cursor{}, resync: o.ResyncOnExpired}
	for seg, p := range o.Cursor {
		f.cursor[seg] = p
	}
	for _, m := range s.marks {
		f.cursor[m.Segment] = CursorPosition{Epoch: m.Epoch, Revision: m.Revision, Key: m.Key, Version: m.Version}
	}
	marks := map[uint16]wire.WatchPosition{}
	for _, m := range s.marks {
		marks[m.Segment] = m
	}
	for _, rs := range s.resyncs {
		if !o.ResyncOnExpired {
			s.Close()
			return nil, &CursorExpiredError{Segment: rs.segment}
		}
		m := marks[rs.segment]
		f.pending = append(f.pending, Change{Kind: WatchResync, Segment: rs.segment, Records: rs.records,
			Key: m.Key, Version: m.Version, Revision: m.Revision, Epoch: m.Epoch})
	}
	return f, nil
}

// Snapshot is the initial snapshot (ChangesOptions.Snapshot).
func (f *ChangeFeed) Snapshot() []WatchRecord { return f.s.Snapshot() }

// Next returns the next change. The feed's Cursor then covers it. After an
// error the feed is over: ErrCursorExpired (*CursorExpiredError), a lost
// connection on a single node, ErrWatchOverflow, ErrClosed.
func (f *ChangeFeed) Next(ctx context.Context) (Change, error) {
	if f.err != nil {
		return Change{}, f.err
	}
	var ch Change
	if len(f.pending) > 0 {
		ch, f.pending = f.pending[0], f.pending[1:]
	} else {
		select {
		case ev, ok := <-f.s.Events():
			if !ok {
				f.err = f.s.Err()
				if f.err == nil {
					f.err = ErrClosed
				}
				return Change{}, f.err
			}
			ch = ev
		case <-ctx.Done():
			return Change{}, ctx.Err()
		}
	}
	if ch.Kind == WatchResync && !f.resync {
		f.err = &CursorExpiredError{Segment: ch.Segment}
		f.s.Close()
		return Change{}, f.err
	}
	f.cursor[ch.Segment] = CursorPosition{Epoch: ch.Epoch, Revision: ch.Revision, Key: ch.Key, Version: ch.Version}
	return ch, nil
}

// Cursor is the position after the last change Next returned (a copy).
func (f *ChangeFeed) Cursor() Cursor { return maps.Clone(f.cursor) }

// Close ends the feed. Safe to call more than once.
func (f *ChangeFeed) Close() error { return f.s.Close() }

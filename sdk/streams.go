package sdk

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// Streams is the stream surface (R-DS-2): an append-only log whose entries
// get monotonic ids ("ms-seq"), read by range or after an id, and consumer
// groups that split the log over workers. A group tracks, per worker, the
// entries delivered but not yet acknowledged (the pending entries); a worker
// that crashes leaves them pending, and another claims them (Claim,
// AutoClaim) once they have been idle long enough: at-least-once delivery.
// Processing must therefore be idempotent, or deduplicated by entry id.
//
// The commands are the store's XADD … XREAD (see internal/kv); the methods
// are thin shells over Client.Do, the same on the embedded and the remote
// backend. As for the other typed surfaces, a refused command is a
// *CommandError: errors.Is(err, ErrBadRequest) for a malformed or too small
// id, ErrWrongType for a key of another kind, ErrItemTooLarge past the
// collection caps, and ErrNotFound for a group (or, for group commands, a
// stream) that does not exist (Redis's NOGROUP). A missing stream reads as
// empty.
//
// Ids are strings: "-" and "+" are the smallest and greatest ids in ranges,
// a bare "ms" stands for ms-0 as a start and ms-max as an end, and "(" id
// makes a range bound exclusive.
type Streams struct{ c *Client }

// Streams returns the stream surface of the client.
func (c *Client) Streams() *Streams { return &Streams{c: c} }

// Field is one field of a stream entry.
type Field struct {
	Name  string
	Value []byte
}

// Entry is a stream entry. Fields is nil for an entry that was deleted from
// the stream while pending (ReadGroupWith with an id, Claim never returns
// such entries).
type Entry struct {
	ID     string
	Fields []Field
}

// Value returns the value of the first field called name.
func (e Entry) Value(name string) ([]byte, bool) {
	for _, f := range e.Fields {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// FieldsFromMap returns m's fields sorted by name (an entry keeps the order
// of its fields; a map has none).
func FieldsFromMap(m map[string][]byte) []Field {
	out := make([]Field, 0, len(m))
	for k, v := range m {
		out = append(out, Field{Name: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// StreamTrim bounds a stream: by length (MaxLen, used when MinID is empty)
// or by age (MinID: entries with a smaller id are dropped). Trimming is
// exact.
type StreamTrim struct {
	MaxLen int64  // keep the MaxLen newest entries; 0 keeps none
	MinID  string // drop the entries below this id
}

func (t StreamTrim) args() [][]byte {
	if t.MinID != "" {
		return [][]byte{[]byte("MINID"), []byte("="), []byte(t.MinID)}
	}
	return [][]byte{[]byte("MAXLEN"), []byte("="), dsIntArg(t.MaxLen)}
}

// AddOptions qualify Add.
type AddOptions struct {
	// ID is the entry's id: "" or "*" lets the store pick (the current time
	// in ms, never below the last id), "<ms>-*" picks the sequence, and an
	// explicit "<ms>-<seq>" must be greater than the stream's last id.
	ID string
	// NoMkStream: do not create a missing stream; Add then returns "".
	NoMkStream bool
	// Trim, if set, trims the stream after adding.
	Trim *StreamTrim
}

// Add appends an entry with fields (at least one) and returns its id.
func (s *Streams) Add(ctx context.Context, key string, fields []Field, opts *AddOptions) (string, error) {
	id := "*"
	args := make([][]byte, 0, 6+2*len(fields))
	if opts != nil {
		if opts.NoMkStream {
			args = append(args, []byte("NOMKSTREAM"))
		}
		if opts.Trim != nil {
			args = append(args, opts.Trim.args()...)
		}
		if opts.ID != "" {
			id = opts.ID
		}
	}
	args = append(args, []byte(id))
	for _, f := range fields {
		args = append(args, []byte(f.Name), f.Value)
	}
	b, ok, err := dsBulk(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXAdd, Key: key, Args: args}))
	if err != nil || !ok {
		return "", err
	}
	return string(b), nil
}

func countArgs(args [][]byte, count int) [][]byte {
	if count > 0 {
		args = append(args, []byte("COUNT"), dsIntArg(int64(count)))
	}
	return args
}

// Range returns the entries from start to end (inclusive unless "(" is
// used), oldest first; at most count when count > 0.
func (s *Streams) Range(ctx context.Context, key, start, end string, count int) ([]Entry, error) {
	args := countArgs([][]byte{[]byte(start), []byte(end)}, count)
	return dsEntries(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXRange, Key: key, Args: args}))
}

// RevRange returns the entries from end down to start, newest first.
func (s *Streams) RevRange(ctx context.Context, key, end, start string, count int) ([]Entry, error) {
	args := countArgs([][]byte{[]byte(end), []byte(start)}, count)
	return dsEntries(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXRevRange, Key: key, Args: args}))
}

// Len is the number of entries.
func (s *Streams) Len(ctx context.Context, key string) (int, error) {
	return dsCount(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXLen, Key: key}))
}

// Del deletes entries by id and returns how many existed. The stream keeps
// its last id: later ids stay above it.
func (s *Streams) Del(ctx context.Context, key string, ids ...string) (int, error) {
	return dsCount(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXDel, Key: key, Args: dsStrArgs(ids)}))
}

// Trim trims the stream and returns how many entries it removed.
func (s *Streams) Trim(ctx context.Context, key string, t StreamTrim) (int, error) {
	return dsCount(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXTrim, Key: key, Args: t.args()}))
}

// CreateGroup creates a consumer group that delivers the entries after
// startID ("0": the whole stream, "$": only entries added from now on).
// mkStream creates a missing stream; without it a missing stream is
// ErrNotFound. An existing group is left as it is: created is false.
func (s *Streams) CreateGroup(ctx context.Context, key, group, startID string, mkStream bool) (created bool, err error) {
	args := [][]byte{[]byte("CREATE"), []byte(group), []byte(startID)}
	if mkStream {
		args = append(args, []byte("MKSTREAM"))
	}
	err = dsOK(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXGroup, Key: key, Args: args}))
	if ce := (*CommandError)(nil); errors.As(err, &ce) && ce.Status == StatusConflict {
		return false, nil // BUSYGROUP
	}
	return err == nil, err
}

// DestroyGroup deletes a group with its consumers and pending entries.
func (s *Streams) DestroyGroup(ctx context.Context, key, group string) (bool, error) {
	return dsBool(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXGroup, Key: key, Args: dsStrArgs([]string{"DESTROY", group})}))
}

// SetGroupID moves the group's last-delivered id ("$": the stream's last
// id); entries after it are delivered (again).
func (s *Streams) SetGroupID(ctx context.Context, key, group, id string) error {
	return dsOK(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXGroup, Key: key, Args: dsStrArgs([]string{"SETID", group, id})}))
}

// CreateConsumer adds a consumer to a group (reads and claims also create
// their consumer); false if it existed.
func (s *Streams) CreateConsumer(ctx context.Context, key, group, consumer string) (bool, error) {
	return dsBool(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXGroup, Key: key,
		Args: dsStrArgs([]string{"CREATECONSUMER", group, consumer})}))
}

// DeleteConsumer removes a consumer and drops its pending entries (they
// will not be delivered again); it returns how many it had.
func (s *Streams) DeleteConsumer(ctx context.Context, key, group, consumer string) (pending int, err error) {
	return dsCount(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXGroup, Key: key,
		Args: dsStrArgs([]string{"DELCONSUMER", group, consumer})}))
}

// ReadGroupOptions qualify ReadGroupWith.
type ReadGroupOptions struct {
	Count int // at most Count entries when > 0
	// After: "" or ">" reads entries never delivered to the group; an id
	// re-reads the consumer's own pending entries after it ("0": all),
	// without changing them — the recovery read of a restarted consumer.
	After string
	// NoAck delivers without a pending entry: at-most-once.
	NoAck bool
}

// ReadGroup delivers up to count (all when count <= 0) new entries to
// consumer; each stays pending for it until acknowledged.
func (s *Streams) ReadGroup(ctx context.Context, key, group, consumer string, count int) ([]Entry, error) {
	return s.ReadGroupWith(ctx, key, group, consumer, ReadGroupOptions{Count: count})
}

// ReadGroupWith is ReadGroup with options.
func (s *Streams) ReadGroupWith(ctx context.Context, key, group, consumer string, o ReadGroupOptions) ([]Entry, error) {
	args := countArgs([][]byte{[]byte(group), []byte(consumer)}, o.Count)
	if o.NoAck {
		args = append(args, []byte("NOACK"))
	}
	after := o.After
	if after == "" {
		after = ">"
	}
	args = append(args, []byte(after))
	return dsEntries(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXReadGroup, Key: key, Args: args}))
}

// Ack acknowledges entries: they leave the group's pending entries. It
// returns how many were pending.
func (s *Streams) Ack(ctx context.Context, key, group string, ids ...string) (int, error) {
	args := make([][]byte, 0, 1+len(ids))
	args = append(args, []byte(group))
	args = append(args, dsStrArgs(ids)...)
	return dsCount(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXAck, Key: key, Args: args}))
}

// PendingSummary is a group's pending entries in short.
type PendingSummary struct {
	Count           int64
	Lowest, Highest string // ids; "" when nothing is pending
	Consumers       []PendingConsumer
}

// PendingConsumer is how many entries one consumer has pending.
type PendingConsumer struct {
	Name    string
	Pending int64
}

// Pending summarizes the group's pending entries.
func (s *Streams) Pending(ctx context.Context, key, group string) (PendingSummary, error) {
	r, err := s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXPending, Key: key, Args: [][]byte{[]byte(group)}})
	if err != nil {
		return PendingSummary{}, err
	}
	if r.Type != kv.ReplyArray || len(r.Array) != 4 || r.Array[0].Type != kv.ReplyInt {
		return PendingSummary{}, r.shapeErr()
	}
	p := PendingSummary{Count: r.Array[0].Int, Lowest: string(r.Array[1].Bulk), Highest: string(r.Array[2].Bulk)}
	for _, c := range r.Array[3].Array {
		if c.Type != kv.ReplyArray || len(c.Array) != 2 {
			return PendingSummary{}, r.shapeErr()
		}
		n, perr := strconv.ParseInt(string(c.Array[1].Bulk), 10, 64)
		if perr != nil {
			return PendingSummary{}, r.shapeErr()
		}
		p.Consumers = append(p.Consumers, PendingConsumer{Name: string(c.Array[0].Bulk), Pending: n})
	}
	return p, nil
}

// PendingFilter selects pending entries.
type PendingFilter struct {
	Start, End string        // id bounds; "" is "-" and "+"
	Count      int           // at most Count entries; 0 means 100
	Consumer   string        // only this consumer's, if set
	MinIdle    time.Duration // only entries idle at least this long
}

// PendingEntry is one delivered, unacknowledged entry.
type PendingEntry struct {
	ID         string
	Consumer   string
	Idle       time.Duration // since the last delivery
	Deliveries int64
}

// PendingEntries lists the group's pending entries in id order.
func (s *Streams) PendingEntries(ctx context.Context, key, group string, f PendingFilter) ([]PendingEntry, error) {
	start, end, count := f.Start, f.End, f.Count
	if start == "" {
		start = "-"
	}
	if end == "" {
		end = "+"
	}
	if count <= 0 {
		count = 100
	}
	args := [][]byte{[]byte(group)}
	if f.MinIdle > 0 {
		args = append(args, []byte("IDLE"), dsIntArg(f.MinIdle.Milliseconds()))
	}
	args = append(args, []byte(start), []byte(end), dsIntArg(int64(count)))
	if f.Consumer != "" {
		args = append(args, []byte(f.Consumer))
	}
	r, err := s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXPending, Key: key, Args: args})
	if err != nil {
		return nil, err
	}
	if r.Type != kv.ReplyArray {
		return nil, r.shapeErr()
	}
	out := make([]PendingEntry, len(r.Array))
	for i, e := range r.Array {
		if e.Type != kv.ReplyArray || len(e.Array) != 4 {
			return nil, r.shapeErr()
		}
		out[i] = PendingEntry{ID: string(e.Array[0].Bulk), Consumer: string(e.Array[1].Bulk),
			Idle: time.Duration(e.Array[2].Int) * time.Millisecond, Deliveries: e.Array[3].Int}
	}
	return out, nil
}

func (s *Streams) claimArgs(group, consumer string, minIdle time.Duration, ids []string) [][]byte {
	args := make([][]byte, 0, 4+len(ids))
	args = append(args, []byte(group), []byte(consumer), dsIntArg(minIdle.Milliseconds()))
	return append(args, dsStrArgs(ids)...)
}

// Claim transfers the given pending entries that have been idle at least
// minIdle to consumer, counting a delivery, and returns them. Entries
// deleted from the stream leave the pending list instead.
func (s *Streams) Claim(ctx context.Context, key, group, consumer string, minIdle time.Duration, ids ...string) ([]Entry, error) {
	args := s.claimArgs(group, consumer, minIdle, ids)
	return dsEntries(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXClaim, Key: key, Args: args}))
}

// ClaimIDs is Claim returning only the ids, without counting a delivery.
func (s *Streams) ClaimIDs(ctx context.Context, key, group, consumer string, minIdle time.Duration, ids ...string) ([]string, error) {
	args := append(s.claimArgs(group, consumer, minIdle, ids), []byte("JUSTID"))
	return dsStrings(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXClaim, Key: key, Args: args}))
}

// AutoClaimResult is one step of an AutoClaim scan.
type AutoClaimResult struct {
	Next    string   // the cursor for the next call; "0-0" when the scan is complete
	Entries []Entry  // claimed
	Deleted []string // pending ids whose entry is gone: dropped from the pending list
}

// AutoClaim scans the group's pending entries from start ("0": the
// beginning) and claims for consumer up to count (100 when count <= 0) of
// those idle at least minIdle. Call it again with Next until Next is "0-0".
func (s *Streams) AutoClaim(ctx context.Context, key, group, consumer string, minIdle time.Duration, start string, count int) (AutoClaimResult, error) {
	if count <= 0 {
		count = 100
	}
	args := [][]byte{[]byte(group), []byte(consumer), dsIntArg(minIdle.Milliseconds()), []byte(start),
		[]byte("COUNT"), dsIntArg(int64(count))}
	r, err := s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXAutoClaim, Key: key, Args: args})
	if err != nil {
		return AutoClaimResult{}, err
	}
	if r.Type != kv.ReplyArray || len(r.Array) != 3 || r.Array[0].Type != kv.ReplyBulk {
		return AutoClaimResult{}, r.shapeErr()
	}
	res := AutoClaimResult{Next: string(r.Array[0].Bulk)}
	if res.Entries, err = dsEntries(dsReply{Reply: r.Array[1], op: r.op}, nil); err != nil {
		return AutoClaimResult{}, err
	}
	if res.Deleted, err = dsStrings(dsReply{Reply: r.Array[2], op: r.op}, nil); err != nil {
		return AutoClaimResult{}, err
	}
	return res, nil
}

// Read returns up to count (all when count <= 0) entries with an id greater
// than afterID ("0": from the beginning; "$": none — only Wait makes "$"
// useful). It involves no group and changes nothing.
func (s *Streams) Read(ctx context.Context, key, afterID string, count int) ([]Entry, error) {
	args := countArgs([][]byte{[]byte(afterID)}, count)
	return dsEntries(s.c.runDS(ctx, kv.Cmd{Op: kv.CmdXRead, Key: key, Args: args}))
}

// Polling bounds of the Wait methods. The store has no blocking read yet
// (a server push will replace the polling): the Wait methods repeat the
// read every pollEvery, clamped to [MinStreamPoll, MaxStreamPoll] (0 means
// DefaultStreamPoll), until entries arrive or ctx ends. Each poll is one
// read round trip, so a waiting consumer costs at most 1/MinStreamPoll
// requests per second.
const (
	MinStreamPoll     = time.Millisecond
	DefaultStreamPoll = 50 * time.Millisecond
	MaxStreamPoll     = 5 * time.Second
)

func pollInterval(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultStreamPoll
	}
	return min(max(d, MinStreamPoll), MaxStreamPoll)
}

// pollStream runs read until it returns entries, an error, or ctx ends.
func pollStream(ctx context.Context, every time.Duration, read func() ([]Entry, error)) ([]Entry, error) {
	every = pollInterval(every)
	var timer *time.Timer
	for {
		entries, err := read()
		if err != nil || len(entries) > 0 {
			return entries, err
		}
		if timer == nil {
			timer = time.NewTimer(every)
			defer timer.Stop()
		} else {
			timer.Reset(every)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

// ReadWait is Read that waits for entries: it returns as soon as there is
// at least one entry after afterID, or ctx's error. afterID "$" means the
// entries added after the call starts.
func (s *Streams) ReadWait(ctx context.Context, key, afterID string, count int, pollEvery time.Duration) ([]Entry, error) {
	if afterID == "$" {
		// The id of the newest entry: every later entry has a greater id.
		last, err := s.RevRange(ctx, key, "+", "-", 1)
		if err != nil {
			return nil, err
		}
		afterID = "0-0"
		if len(last) == 1 {
			afterID = last[0].ID
		}
	}
	return pollStream(ctx, pollEvery, func() ([]Entry, error) { return s.Read(ctx, key, afterID, count) })
}

// ReadGroupWait is ReadGroup that waits for new entries: it returns as soon
// as at least one is delivered to consumer, or ctx's error.
func (s *Streams) ReadGroupWait(ctx context.Context, key, group, consumer string, count int, pollEvery time.Duration) ([]Entry, error) {
	return pollStream(ctx, pollEvery, func() ([]Entry, error) { return s.ReadGroup(ctx, key, group, consumer, count) })
}

// dsEntries decodes an array of entries: [id, [field, value, …]] or
// [id, nil] for a pending entry deleted from the stream.
func dsEntries(r dsReply, err error) ([]Entry, error) {
	if err != nil {
		return nil, err
	}
	if r.Type != kv.ReplyArray {
		return nil, r.shapeErr()
	}
	out := make([]Entry, len(r.Array))
	for i, e := range r.Array {
		if e.Type != kv.ReplyArray || len(e.Array) != 2 || e.Array[0].Type != kv.ReplyBulk {
			return nil, r.shapeErr()
		}
		out[i].ID = string(e.Array[0].Bulk)
		switch fv := e.Array[1]; fv.Type {
		case kv.ReplyNil:
		case kv.ReplyArray:
			if len(fv.Array)%2 != 0 {
				return nil, r.shapeErr()
			}
			out[i].Fields = make([]Field, len(fv.Array)/2)
			for j := range out[i].Fields {
				out[i].Fields[j] = Field{Name: string(fv.Array[2*j].Bulk), Value: dsNonNil(fv.Array[2*j+1].Bulk)}
			}
		default:
			return nil, r.shapeErr()
		}
	}
	return out, nil
}

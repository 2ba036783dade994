// Package follow is the WAN follower (R-OPS-4): a cluster that follows
// another cluster's change feed. One applier per follower cluster runs on
// its control-plane leader: it reads the primary's feed with the SDK from
// the cursor kept in the follower's raft log, applies every change to its
// own cluster through an ordinary SDK client (so the follower's own
// replication copies it), and commits the cursor back to raft after the
// changes it covers are acknowledged. A restart of any node, or of the
// whole follower cluster, resumes from that cursor without a full copy.
//
// While the cluster follows, every node refuses client writes (the
// follow state is folded from raft on every node); the applier's
// connections carry the follow's key in their client name, which lets
// them through, and the applier's claim, which fences a deposed applier
// out (fence.go). Promotion (zarisctl promote) is a raft entry too.
package follow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/cluster"
)

// ClientNamePrefix starts the client name of the applier's connections to
// its own cluster; the follow's key and the applier's claim follow it
// (ClientName).
const ClientNamePrefix = "zaris-follower/"

// Plane is the follower cluster's control plane as the applier uses it.
type Plane interface {
	Follow() *cluster.FollowState
	CommitFollow(ctx context.Context, op cluster.FollowOp) error
	// ClaimFollow makes this applier the follow's only writer and
	// returns the claim (cluster.FollowClaim).
	ClaimFollow(ctx context.Context, generation uint64) (uint64, error)
}

// Options configure Run.
type Options struct {
	// State is the follow to run (its Source, Key, Generation and Cursor).
	State cluster.FollowState
	Plane Plane
	// DialLocal connects to this (the follower) cluster with the given
	// client name. Required.
	DialLocal func(ctx context.Context, clientName string) (*sdk.Client, error)
	// DialPrimary connects to the followed cluster. Default sdk.Connect.
	DialPrimary func(ctx context.Context, source string) (*sdk.Client, error)
	Stats       *Stats
	Logger      *slog.Logger
	// CommitEvery: how often the cursor of the applied changes is
	// committed to raft (default 1 s); CommitChanges: also after that many
	// changes (default 50 000).
	CommitEvery   time.Duration
	CommitChanges int
	// SampleEvery: how often the primary's head is sampled for the lag
	// (default 500 ms).
	SampleEvery time.Duration
	// BatchMax is the changes a lane gathers before the reader waits for
	// it (default 4096); a batch applied holds at most that many.
	BatchMax int
	// Lanes is how many batches are applied at once (default 4): the feed
	// is split by segment, so a key's changes stay in order (pipeline.go).
	Lanes int
	// FeedBuffer is the change feed's buffer (default 65 536 changes).
	FeedBuffer int
}

func (o *Options) defaults() {
	if o.DialPrimary == nil {
		o.DialPrimary = func(ctx context.Context, source string) (*sdk.Client, error) {
			return sdk.Connect(ctx, source, sdk.WithLogger(o.Logger.With("component", "follow-primary")))
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Stats == nil {
		o.Stats = NewStats()
	}
	if o.CommitEvery <= 0 {
		o.CommitEvery = time.Second
	}
	if o.CommitChanges <= 0 {
		o.CommitChanges = 50_000
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = 500 * time.Millisecond
	}
	if o.BatchMax <= 0 {
		o.BatchMax = 4096
	}
	if o.Lanes <= 0 {
		o.Lanes = 4
	}
	if o.FeedBuffer <= 0 {
		o.FeedBuffer = 1 << 16
	}
}

// ErrStale ends Run: the follow it ran was stopped (promoted) or replaced,
// or another applier claimed it.
var ErrStale = errors.New("follow: this follow was stopped or replaced, or another applier claimed it")

// Run claims the follow, then applies the primary's feed until ctx ends
// (nil), the follow is no longer current or another applier claimed it
// (ErrStale), or the claim fails (this node is not the leader). Connection
// failures are retried with backoff.
func Run(ctx context.Context, o Options) error {
	o.defaults()
	a := &applier{o: o, st: o.Stats, log: o.Logger.With("component", "follow", "source", Redact(o.State.Source))}
	claim, err := o.Plane.ClaimFollow(ctx, o.State.Generation)
	switch {
	case errors.Is(err, cluster.ErrFollowStale):
		return fmt.Errorf("%w: %v", ErrStale, err)
	case err != nil:
		return fmt.Errorf("claiming the follow: %w", err)
	}
	a.claim = claim
	if o.State.Cursor != "" {
		c, err := sdk.ParseCursor(o.State.Cursor)
		if err != nil {
			a.log.Error("the committed follow cursor is unreadable: copying the primary in full", "err", err)
		} else {
			a.cursor = c
		}
	}
	a.applied, a.localHead = o.State.Applied, o.State.Local
	a.st.begin(a.cursor, o.SampleEvery)
	defer a.st.end()
	backoff := 100 * time.Millisecond
	for {
		err := a.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrStale) {
			return err
		}
		a.st.disconnected(err)
		a.log.Warn("following the primary failed; retrying", "err", err, "retry_in", backoff.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
		if a.progressed {
			backoff, a.progressed = 100*time.Millisecond, false
		}
	}
}

// applier is one follow's run.
type applier struct {
	o   Options
	st  *Stats
	log *slog.Logger

	primary, local *sdk.Client
	claim          uint64 // this applier's claim: its writes and commits are fenced by it

	// mu guards the fields below while a session's lanes run (they
	// acknowledge batches in parallel); outside a session one goroutine
	// owns them.
	mu sync.Mutex
	// cursor is the position after the last change applied (nil: nothing
	// yet: the first session copies the primary in full).
	cursor      sdk.Cursor
	applied     uint64 // changes applied by this follow (committed with the cursor)
	sinceCommit int
	progressed  bool // the session applied something (resets the backoff)

	// commitNow asks the session's committing goroutine for a commit.
	commitNow chan struct{}
	// Owned by the committing goroutine.
	committed string // the cursor last committed
	localHead string // this cluster's head recorded with the last commit
}

// session connects, opens the feed and applies it until an error.
func (a *applier) session(ctx context.Context) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if a.primary, err = a.o.DialPrimary(ctx, a.o.State.Source); err != nil {
		return fmt.Errorf("connecting to the primary: %w", err)
	}
	defer a.primary.Close()
	if a.local, err = a.o.DialLocal(ctx, ClientName(a.o.State.Key, a.claim)); err != nil {
		return fmt.Errorf("connecting to this cluster: %w", err)
	}
	defer a.local.Close()
	if a.cursor != nil {
		lost, err := a.localLost(ctx)
		if err != nil {
			return err // unverified: never resume over data that may be gone
		}
		if lost {
			a.cursor = nil
		}
	}
	var feed *sdk.ChangeFeed
	if a.cursor == nil {
		if feed, err = a.fullCopy(ctx); err != nil {
			return err
		}
	} else {
		feed, err = a.primary.Changes(ctx, &sdk.ChangesOptions{Cursor: a.cursor, ResyncOnExpired: true, Buffer: a.o.FeedBuffer})
		if err != nil {
			return fmt.Errorf("opening the primary's change feed: %w", err)
		}
	}
	defer feed.Close()
	a.st.online()
	a.log.Info("following the primary's change feed", "generation", a.o.State.Generation)
	go a.sampleLoop(ctx)
	defer func() {
		// What was applied is covered: keep it across a restart.
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		if cerr := a.commit(cctx); errors.Is(cerr, ErrStale) {
			err = cerr
		}
	}()
	return a.pump(ctx, feed)
}

// fullCopy opens the feed with a snapshot and mirrors it: every record is
// written, every key of this cluster the primary does not hold is deleted.
func (a *applier) fullCopy(ctx context.Context) (*sdk.ChangeFeed, error) {
	a.log.Warn("no cursor: copying the primary in full before following its feed")
	feed, err := a.primary.Changes(ctx, &sdk.ChangesOptions{Snapshot: true, Buffer: a.o.FeedBuffer})
	if err != nil {
		return nil, fmt.Errorf("opening the primary's change feed with a snapshot: %w", err)
	}
	b := newBatch()
	b.resyncAll(feed.Snapshot())
	if err := a.apply(ctx, b); err != nil {
		feed.Close()
		return nil, err
	}
	a.cursor = feed.Cursor()
	a.st.fullCopy(a.cursor)
	a.progressed = true
	if err := a.commit(ctx); err != nil {
		feed.Close()
		return nil, err
	}
	return feed, nil
}

// current is ErrStale once the follow this applier runs is stopped or
// replaced, or another applier claimed it (a lock-free read of the folded
// state).
func (a *applier) current() error {
	if st := a.o.Plane.Follow(); !st.Following() || st.Generation != a.o.State.Generation || st.Claim > a.claim {
		return ErrStale
	}
	return nil
}

// commit records the cursor of the applied changes in raft, with this
// cluster's head read after them.
func (a *applier) commit(ctx context.Context) error {
	a.mu.Lock()
	if a.cursor == nil {
		a.mu.Unlock()
		return nil
	}
	cur, applied := a.cursor.String(), a.applied
	a.mu.Unlock()
	if cur == a.committed {
		return nil
	}
	if a.local != nil {
		if h, err := a.head(ctx, a.local); err == nil {
			// Only the revisions are compared (localLost): without the
			// keys the raft entry is about a third of its size.
			for seg, p := range h {
				h[seg] = sdk.CursorPosition{Revision: p.Revision}
			}
			a.localHead = h.String()
		}
	}
	local := a.localHead // the last one known when this cluster could not be asked
	err := a.o.Plane.CommitFollow(ctx, cluster.FollowOp{Kind: cluster.FollowCursor, Generation: a.o.State.Generation,
		Claim: a.claim, Cursor: cur, Applied: applied, At: time.Now().UnixNano(), Local: local})
	if errors.Is(err, cluster.ErrFollowStale) || errors.Is(err, cluster.ErrFollowClaimed) {
		return fmt.Errorf("%w: %v", ErrStale, err)
	}
	if err != nil {
		return fmt.Errorf("committing the follow cursor: %w", err)
	}
	a.committed = cur
	a.mu.Lock()
	a.sinceCommit = 0
	a.mu.Unlock()
	a.st.committed()
	return nil
}

// sampleLoop samples the primary's head (the position of every segment)
// for the lag, until ctx ends.
func (a *applier) sampleLoop(ctx context.Context) {
	t := time.NewTicker(a.o.SampleEvery)
	defer t.Stop()
	for {
		a.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// probePrefix matches no key: the probe feed delivers only its marks.
const probePrefix = "\xff\xfezaris-follower-probe\x00"

func (a *applier) sample(ctx context.Context) {
	at := time.Now()
	if head, err := a.head(ctx, a.primary); err == nil {
		a.st.sampled(at, head)
	}
}

// head is the position of every segment of c's cluster now.
func (a *applier) head(ctx context.Context, c *sdk.Client) (sdk.Cursor, error) {
	sctx, cancel := context.WithTimeout(ctx, max(5*a.o.SampleEvery, 2*time.Second))
	defer cancel()
	// The buffer holds the marks of every segment before the open returns.
	f, err := c.Changes(sctx, &sdk.ChangesOptions{Prefix: probePrefix, Buffer: 4096})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Cursor(), nil
}

// localLost reports whether this cluster's head went below the one
// recorded with the cursor in every segment that had changes: the data the
// cursor covers is gone (every node restarted; a store is memory), so the
// primary is copied in full again. One segment below its record is not
// enough: a restarted owner still recovering from its replica reports an
// empty segment for a while.
func (a *applier) localLost(ctx context.Context) (bool, error) {
	now, err := a.head(ctx, a.local)
	if err != nil {
		return false, fmt.Errorf("reading this cluster's head to check the cursor's data is still here: %w", err)
	}
	// A cursor that covers changes over a cluster that holds none: the
	// head recorded with the cursor may predate the writes (a commit under
	// load), so it cannot vouch for them — copy again.
	coversChanges, empty := false, true
	for _, p := range a.cursor {
		coversChanges = coversChanges || p.Revision > 0
	}
	for _, p := range now {
		empty = empty && p.Revision == 0
	}
	if coversChanges && empty {
		a.log.Error("this cluster holds nothing although its follow cursor covers changes: copying the primary in full")
		return true, nil
	}
	rec := a.o.Plane.Follow().Local
	if rec == "" {
		return false, nil
	}
	was, err := sdk.ParseCursor(rec)
	if err != nil {
		return false, nil
	}
	had, below := 0, 0
	for seg, p := range was {
		if p.Revision == 0 {
			continue
		}
		had++
		if now[seg].Revision < p.Revision {
			below++
		}
	}
	if had == 0 || below < had {
		return false, nil
	}
	a.log.Error("this cluster lost the data its follow cursor covers (every segment is below the head recorded with the cursor): copying the primary in full",
		"segments", had)
	return true, nil
}

// Redact hides the secrets of a connection string (token, password, key)
// for logs and status documents.
func Redact(source string) string {
	u, err := url.Parse(source)
	if err != nil {
		return "<unparsable connection string>"
	}
	q := u.Query()
	for k := range q {
		switch strings.ToLower(k) {
		case "token", "password", "key":
			q.Set(k, "REDACTED")
		}
	}
	u.RawQuery = q.Encode()
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	return u.String()
}

// ValidSource checks a follow source: a remote zaris:// or zariss://
// connection string.
func ValidSource(source string) error {
	cs, err := sdk.ParseConnString(source)
	if err != nil {
		return err
	}
	if cs.Inproc {
		return fmt.Errorf("%w: a follower follows a remote cluster, not an in-process store", sdk.ErrInvalidConnString)
	}
	return nil
}

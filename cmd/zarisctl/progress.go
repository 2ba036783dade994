package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Live-migration progress (rebalance, drain, add; R-MIG-1, issue #12):
// the leader's "rebalance" in GET /v1/cluster, polled until the command's
// condition holds. What is shown and when a wait is over are pure
// functions of the documents fetched (tested apart from any I/O).

// moving reports whether the map d describes has a partition in flight
// (incoming copies or a new owner named): a move a former leader started
// is in the map before the new leader's status lists it.
func moving(d *clusterDoc) bool {
	return slices.ContainsFunc(d.Partitions, func(p partitionDoc) bool { return len(p.Incoming) > 0 || p.MoveTo != "" })
}

// rebalanceSettled reports whether the leader (its own document) has no
// rebalance to do: none active, none requested and not planned yet, no
// move in flight in its status or its map. Otherwise it says what is
// still going on.
func rebalanceSettled(leader *clusterDoc) (bool, string) {
	rb := leader.Rebalance
	switch {
	case rb == nil:
		return false, "the leader shows no rebalance status yet"
	case rb.Pending:
		return false, "waiting for the leader to plan (membership stable, every member alive)"
	case rb.Active:
		return false, "rebalance active"
	case len(rb.Migrations) > 0 || moving(leader):
		return false, "moves in flight"
	}
	return true, ""
}

// request is an operator's rebalance request as the leader took it. A
// leader keeps a request in memory until it has planned it: a new leader
// (or the same after a lost term) knows nothing of a request it has not
// planned yet.
type request struct {
	Leader    string
	Term      uint64
	SawActive bool // a rebalance was seen active since the request
}

// ask reports whether the request must be sent again: the leader looks
// settled but is not the one (leader, term) that took the request, and no
// rebalance was ever seen active — the request may have died with the
// old leadership. Asking again is harmless: with nothing to move a
// rebalance ends at once.
func (r *request) ask(leader *clusterDoc) bool {
	if leader.Rebalance != nil && (leader.Rebalance.Active || len(leader.Rebalance.Migrations) > 0) {
		r.SawActive = true
	}
	settled, _ := rebalanceSettled(leader)
	return settled && !r.SawActive && (leader.Self != r.Leader || leader.Term != r.Term)
}

// addStep is what `add` does with one look at the leader.
type addStep int

const (
	addWait     addStep = iota // moves in flight or not planned yet
	addDone                    // settled, and the node holds data
	addSpare                   // settled over a plan that counted the node, which gave it nothing
	addAskAgain                // settled over a plan that did not count the node: request another
)

// addOutcome decides `add`'s next step (pure). A rebalance the leader
// planned while the joiner was not alive to it (a gossip suspicion on a
// busy machine, or a plan taken just before the node joined) ends with
// the node holding nothing although the layout has room for it: calling
// that a spare would end the command with a false partial success.
func addOutcome(settled, holds, planned bool) addStep {
	switch {
	case !settled:
		return addWait
	case holds:
		return addDone
	case planned:
		return addSpare
	}
	return addAskAgain
}

// plannedOver reports whether the leader's last rebalance was planned
// over node id.
func plannedOver(d *clusterDoc, id string) bool {
	return d.Rebalance != nil && slices.Contains(d.Rebalance.PlannedOver, id)
}

// holdsData reports whether node id owns or copies some partition of d's
// map.
func holdsData(d *clusterDoc, id string) bool {
	return slices.ContainsFunc(d.Partitions, func(p partitionDoc) bool {
		return p.ActiveOwner == id || slices.Contains(p.Replicas, id)
	})
}

// member reports whether d lists node id alive in its map.
func member(d *clusterDoc, id string) bool {
	return slices.ContainsFunc(d.Nodes, func(n nodeDoc) bool { return n.ID == id && n.InMap && n.State == "alive" })
}

// moved are a leader's cumulative counters of completed moves.
type moved struct {
	Moves, Aborted uint64
	Keys, Bytes    int64
}

func movedOf(rb *rebalanceDoc) moved {
	if rb == nil {
		return moved{}
	}
	return moved{Moves: rb.Completed, Aborted: rb.Aborted, Keys: rb.KeysMoved, Bytes: rb.BytesMoved}
}

// progress accumulates what the leaders moved since the command started:
// each leader's counters count from its own start, so every leader seen
// gets a baseline (its counters when first seen; the first leader's from
// before the request) and the progress is the sum of the differences.
type progress struct {
	start time.Time
	base  map[string]moved
	last  map[string]moved
	// segments done when the segment count was first known, and when:
	// the rate (and ETA) counts from there.
	rateFrom     time.Time
	rateFromDone int
	rateTotal    int
}

func newProgress(start time.Time) *progress {
	return &progress{start: start, base: map[string]moved{}, last: map[string]moved{}}
}

// baseline records leader's counters before the command asked anything.
func (p *progress) baseline(leader string, rb *rebalanceDoc) {
	if leader != "" {
		p.base[leader] = movedOf(rb)
	}
}

// progressView is one progress line's content.
type progressView struct {
	Waiting       string // why nothing moves yet ("" when moving)
	Reason        string
	SegmentsTotal int
	SegmentsDone  int
	Moving        int
	Moved         moved
	Elapsed       time.Duration
	ETA           time.Duration // < 0 unknown
}

// observe folds the leader's document in at instant now.
func (p *progress) observe(leader *clusterDoc, now time.Time) progressView {
	v := progressView{ETA: -1, Elapsed: now.Sub(p.start)}
	if leader == nil {
		v.Waiting = "no leader reachable"
		return p.fill(v)
	}
	rb := leader.Rebalance
	if rb == nil {
		v.Waiting = "the leader shows no rebalance status yet"
		return p.fill(v)
	}
	if _, ok := p.base[leader.Self]; !ok {
		p.base[leader.Self] = movedOf(rb)
	}
	p.last[leader.Self] = movedOf(rb)
	v.Reason, v.Moving = rb.Reason, len(rb.Migrations)
	switch {
	case rb.Pending && !rb.Active:
		_, v.Waiting = rebalanceSettled(leader)
	case !rb.Active && v.Moving == 0:
		v.Waiting = "waiting for the leader to plan"
	}
	if rb.Held != "" {
		v.Waiting = rb.Held // the leader's own word on why nothing steps
	}
	if rb.SegmentsTotal > 0 {
		v.SegmentsTotal, v.SegmentsDone = rb.SegmentsTotal, rb.SegmentsTotal-rb.SegmentsLeft
		if p.rateFrom.IsZero() || rb.SegmentsTotal != p.rateTotal || v.SegmentsDone < p.rateFromDone {
			// A new plan (or a new leader's): the rate restarts.
			p.rateFrom, p.rateFromDone, p.rateTotal = now, v.SegmentsDone, rb.SegmentsTotal
		}
		v.ETA = eta(v.SegmentsDone-p.rateFromDone, v.SegmentsTotal-v.SegmentsDone, now.Sub(p.rateFrom))
	}
	return p.fill(v)
}

func (p *progress) fill(v progressView) progressView {
	for id, last := range p.last {
		b := p.base[id]
		v.Moved.Moves += last.Moves - min(b.Moves, last.Moves)
		v.Moved.Aborted += last.Aborted - min(b.Aborted, last.Aborted)
		v.Moved.Keys += max(last.Keys-b.Keys, 0)
		v.Moved.Bytes += max(last.Bytes-b.Bytes, 0)
	}
	return v
}

// eta is the time left at the rate so far (done units in elapsed), < 0
// when no rate is known yet.
func eta(done, left int, elapsed time.Duration) time.Duration {
	if left <= 0 {
		return 0
	}
	if done <= 0 || elapsed <= 0 {
		return -1
	}
	return time.Duration(float64(elapsed) * float64(left) / float64(done)).Round(time.Second)
}

// fmtMB is a byte count in MB (10^6), as progress shows it.
func fmtMB(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

func fmtETA(d time.Duration) string {
	switch {
	case d < 0:
		return "ETA --"
	case d < time.Second:
		return "ETA <1s"
	}
	return "ETA " + d.String()
}

// progressLine is the plain one-line form (stdout not a terminal): what
// changed is readable in a log.
func progressLine(what string, v progressView) string {
	if v.Waiting != "" {
		return fmt.Sprintf("%s: %s; %d moves done, %d keys, %s moved", what, v.Waiting, v.Moved.Moves, v.Moved.Keys,
			fmtMB(v.Moved.Bytes))
	}
	segs := "segments: planning"
	if v.SegmentsTotal > 0 {
		segs = fmt.Sprintf("%d/%d segments", v.SegmentsDone, v.SegmentsTotal)
	}
	return fmt.Sprintf("%s: %s, %d moving, %d moves done, %d keys, %s moved, %s", what, segs, v.Moving, v.Moved.Moves,
		v.Moved.Keys, fmtMB(v.Moved.Bytes), fmtETA(v.ETA))
}

// progressBar is the terminal form, redrawn in place.
func progressBar(what string, v progressView, width int) string {
	if v.Waiting != "" {
		return fmt.Sprintf("%s: %s", what, v.Waiting)
	}
	filled := 0
	if v.SegmentsTotal > 0 {
		filled = width * v.SegmentsDone / v.SegmentsTotal
	}
	bar := strings.Repeat("#", filled) + strings.Repeat("-", width-filled)
	return fmt.Sprintf("%s [%s] %d/%d segments  %d moving  %d keys  %s  %s", what, bar, v.SegmentsDone, v.SegmentsTotal,
		v.Moving, v.Moved.Keys, fmtMB(v.Moved.Bytes), fmtETA(v.ETA))
}

// doneLine is the summary after a wait.
func doneLine(what string, v progressView) string {
	s := fmt.Sprintf("%s done in %s: %d moves, %d keys, %s moved", what, v.Elapsed.Round(100*time.Millisecond),
		v.Moved.Moves, v.Moved.Keys, fmtMB(v.Moved.Bytes))
	if v.Moved.Aborted > 0 {
		s += fmt.Sprintf(" (%d moves aborted and restarted)", v.Moved.Aborted)
	}
	return s
}

// isTerminal reports whether w is a character device (a terminal): the
// progress bar is redrawn in place there, printed as lines elsewhere.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// printer shows progress: in place on a terminal, else a line whenever
// what it says changes (at most one a second, and at least one every 10 s).
type printer struct {
	w        io.Writer
	tty      bool
	what     string
	lastText string
	lastAt   time.Time
	drawn    bool
}

func (p *printer) show(v progressView, now time.Time) {
	if p.tty {
		fmt.Fprintf(p.w, "\r%s\033[K", progressBar(p.what, v, 30))
		p.drawn = true
		return
	}
	key := v
	key.ETA, key.Elapsed = 0, 0
	text := progressLine(p.what, key)
	if p.lastAt.IsZero() || (text != p.lastText && now.Sub(p.lastAt) >= time.Second) || now.Sub(p.lastAt) >= 10*time.Second {
		fmt.Fprintln(p.w, progressLine(p.what, v))
		p.lastText, p.lastAt = text, now
	}
}

// end finishes the progress display with a last line.
func (p *printer) end(line string) {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintln(p.w, line)
}

// watcher polls the leader's document.
type watcher struct {
	a     *api
	addrs []string // HTTP addresses to ask, seeds first
}

func newWatcher(a *api, seeds []string, d *clusterDoc) *watcher {
	w := &watcher{a: a}
	w.learn(seeds)
	if d != nil {
		w.learnDoc(d)
	}
	return w
}

func (w *watcher) learn(addrs []string) {
	for _, a := range addrs {
		if a != "" && !slices.Contains(w.addrs, a) {
			w.addrs = append(w.addrs, a)
		}
	}
}

func (w *watcher) learnDoc(d *clusterDoc) {
	for _, n := range d.Nodes {
		if !gone(n.State) {
			w.learn([]string{n.HTTPAddr})
		}
	}
}

// leader returns the control-plane leader's own /v1/cluster: the first
// node that answers names it, and the leader is asked (nil, err when no
// leader answers).
func (w *watcher) leader(ctx context.Context) (*clusterDoc, error) {
	var errs []error
	for _, addr := range w.addrs {
		d, err := w.a.cluster(ctx, addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		w.learnDoc(d)
		if d.Leader == "" {
			errs = append(errs, fmt.Errorf("%s knows no control-plane leader", addr))
			continue
		}
		if d.Self == d.Leader {
			return d, nil
		}
		la := httpAddrOf(d, d.Leader)
		if la == "" {
			errs = append(errs, fmt.Errorf("leader %s has no HTTP address", d.Leader))
			continue
		}
		ld, err := w.a.cluster(ctx, la)
		switch {
		case err != nil:
			errs = append(errs, err)
		case ld.Self == ld.Leader:
			return ld, nil
		default:
			errs = append(errs, fmt.Errorf("%s (named leader by %s) does not lead", la, addr))
		}
	}
	if len(errs) == 0 {
		return nil, errors.New("no node to ask")
	}
	return nil, errors.Join(errs...)
}

// waitOutcome ends a wait: done says the condition holds; code and msg
// are the command's exit code and last line.
type waitOutcome struct {
	done bool
	code int
	msg  string
}

// watch polls the leader every interval and shows the progress until
// cond says the wait is over, the deadline passes (exit 1: the moves go
// on in the background) or ctx ends (exit 2).
func (w *watcher) watch(ctx context.Context, out *printer, pr *progress, wait, interval time.Duration,
	cond func(leader *clusterDoc, v progressView) waitOutcome) (int, error) {
	deadline := time.Now().Add(wait)
	for {
		ld, _ := w.leader(ctx)
		now := time.Now()
		v := pr.observe(ld, now)
		if ld != nil {
			if o := cond(ld, v); o.done {
				out.end(o.msg)
				return o.code, nil
			}
		}
		out.show(v, now)
		if now.After(deadline) {
			out.end(progressLine(out.what, v))
			return exitPartial, fmt.Errorf("not done after %s; the moves go on in the background (zarisctl migrations shows them)", wait)
		}
		select {
		case <-ctx.Done():
			out.end(progressLine(out.what, v))
			return exitError, fmt.Errorf("stopped waiting; the moves go on in the background (zarisctl migrations shows them)")
		case <-time.After(interval):
		}
	}
}

// writeMigrations prints the leader's moves in flight as a table, then
// one summary line.
func writeMigrations(w io.Writer, leader string, rb *rebalanceDoc, now time.Time) error {
	if rb == nil {
		_, err := fmt.Fprintf(w, "leader %s shows no rebalance status\n", leader)
		return err
	}
	if len(rb.Migrations) == 0 {
		fmt.Fprintln(w, "no migration in flight")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "PARTITION\tSEGMENTS\tSOURCE → TARGET\tINCOMING\tPHASE\tLAG\tKEYS\tSTARTED\tATTEMPTS\tLAST ABORT")
		for _, m := range rb.Migrations {
			started := "-"
			if !m.StartedAt.IsZero() {
				started = now.Sub(m.StartedAt).Round(100*time.Millisecond).String() + " ago"
			}
			fmt.Fprintf(tw, "%d\t%d-%d\t%s → %s\t%s\t%s\t%d\t%d\t%s\t%d\t%s\n", m.Partition, m.First, m.Last, m.Source,
				orDash(m.Target), orDash(strings.Join(m.Incoming, ",")), m.Phase, m.Lag, m.KeysHeld, started, m.Attempts,
				orDash(m.LastAbort))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	state := "no rebalance active"
	switch {
	case rb.Active:
		state = fmt.Sprintf("rebalance active (%s): %d/%d segments done", rb.Reason, rb.SegmentsTotal-rb.SegmentsLeft, rb.SegmentsTotal)
	case rb.Pending:
		state = "rebalance requested, not planned yet (membership stable, every member alive)"
	}
	if rb.Held != "" {
		state += " — held: " + rb.Held
	}
	_, err := fmt.Fprintf(w, "leader %s: %s; %d moves completed, %d aborted, %d keys and %s moved, fence pause last %s max %s\n",
		leader, state, rb.Completed, rb.Aborted, rb.KeysMoved, fmtMB(rb.BytesMoved), rb.FencePause.Round(time.Microsecond),
		rb.MaxFencePause.Round(time.Microsecond))
	return err
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// defaultWait bounds how long rebalance, add and drain wait for the moves
// by default: a big node's partitions take minutes to move.
const defaultWait = 15 * time.Minute

// pollInterval paces the progress polls.
const pollInterval = 250 * time.Millisecond

// leaderDoc is the control-plane leader's own /v1/cluster, found from the
// seeds.
func leaderDoc(ctx context.Context, a *api, g *globals) (*clusterDoc, *watcher, error) {
	d, _, err := a.discover(ctx, g)
	if err != nil {
		return nil, nil, err
	}
	w := newWatcher(a, seeds(g.http), d)
	// An election takes a few heartbeats: retry for one --timeout.
	deadline := time.Now().Add(g.timeout)
	for {
		ld, err := w.leader(ctx)
		if err == nil {
			return ld, w, nil
		}
		if time.Now().After(deadline) {
			return nil, w, fmt.Errorf("no control-plane leader answers: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, w, ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}

// cmdRebalance asks the leader to re-plan and migrate live, then, unless
// --wait is 0, shows the progress until the leader has nothing left to
// move.
func cmdRebalance(ctx context.Context, g *globals, args []string, stdout io.Writer) (int, error) {
	fs := flag.NewFlagSet("rebalance", flag.ContinueOnError)
	wait := fs.Duration("wait", defaultWait, "how long to wait for the moves (0 = do not wait)")
	if _, err := parseArgs(g, fs, args); err != nil {
		return exitError, err
	}
	a := newAPI(g)
	pr := newProgress(time.Now())
	ld, w, err := leaderDoc(ctx, a, g)
	if w == nil {
		return exitError, err
	}
	if ld != nil {
		pr.baseline(ld.Self, ld.Rebalance)
	}
	var out struct {
		MapVersion uint64 `json:"mapVersion"`
	}
	leader, err := a.onLeader(ctx, g, "/v1/cluster/rebalance", &out)
	if err != nil {
		return exitError, err
	}
	fmt.Fprintf(stdout, "rebalance requested from %s at map version %d: partitions migrate live\n", leader, out.MapVersion)
	if *wait <= 0 {
		return exitOK, nil
	}
	p := &printer{w: stdout, tty: isTerminal(stdout), what: "rebalance"}
	req := &request{Leader: leader}
	if ld != nil && ld.Self == leader {
		req.Term = ld.Term
	}
	return w.watch(ctx, p, pr, *wait, pollInterval, func(ld *clusterDoc, v progressView) waitOutcome {
		if req.ask(ld) {
			req.Leader, req.Term = ld.Self, ld.Term
			_, _ = a.onLeader(ctx, g, "/v1/cluster/rebalance", nil)
			return waitOutcome{}
		}
		if ok, _ := rebalanceSettled(ld); ok {
			return waitOutcome{done: true, code: exitOK, msg: doneLine("rebalance", v)}
		}
		return waitOutcome{}
	})
}

// cmdAdd waits until NODE (started with --join) is an alive member of
// the map, asks for a rebalance (harmless with auto-rebalance on) and
// shows the progress until NODE holds partitions and nothing moves.
func cmdAdd(ctx context.Context, g *globals, args []string, stdout io.Writer) (int, error) {
	fs := flag.NewFlagSet("add", flag.ContinueOnError)
	wait := fs.Duration("wait", defaultWait, "how long to wait for the node to join and take its share")
	pos, err := parseArgs(g, fs, args, "NODE")
	if err != nil {
		return exitError, err
	}
	id := pos[0]
	a := newAPI(g)
	d, _, err := a.discover(ctx, g)
	if err != nil {
		return exitError, err
	}
	w := newWatcher(a, seeds(g.http), d)
	deadline := time.Now().Add(*wait)
	said := false
	var ld *clusterDoc
	for {
		ld, err = w.leader(ctx)
		if err == nil && member(ld, id) {
			break
		}
		if !said {
			fmt.Fprintf(stdout, "waiting for %s to join (start it with --join any member's gossip address)\n", id)
			said = true
		}
		if time.Now().After(deadline) {
			return exitPartial, fmt.Errorf("%s is not an alive member of the map after %s", id, *wait)
		}
		select {
		case <-ctx.Done():
			return exitError, errors.New("interrupted while waiting for the node to join")
		case <-time.After(pollInterval):
		}
	}
	fmt.Fprintf(stdout, "%s is a member (map version %d)\n", id, ld.MapVersion)
	pr := newProgress(time.Now())
	pr.baseline(ld.Self, ld.Rebalance)
	leader, err := a.onLeader(ctx, g, "/v1/cluster/rebalance", nil)
	if err != nil {
		return exitError, err
	}
	req := &request{Leader: leader}
	if ld.Self == leader {
		req.Term = ld.Term
	}
	p := &printer{w: stdout, tty: isTerminal(stdout), what: "add " + id}
	return w.watch(ctx, p, pr, time.Until(deadline), pollInterval, func(ld *clusterDoc, v progressView) waitOutcome {
		if req.ask(ld) {
			req.Leader, req.Term = ld.Self, ld.Term
			_, _ = a.onLeader(ctx, g, "/v1/cluster/rebalance", nil)
			return waitOutcome{}
		}
		settled, _ := rebalanceSettled(ld)
		switch addOutcome(settled, holdsData(ld, id), plannedOver(ld, id)) {
		case addDone:
			return waitOutcome{done: true, code: exitOK, msg: doneLine("add "+id, v)}
		case addSpare:
			return waitOutcome{done: true, code: exitPartial, msg: fmt.Sprintf("rebalance done, but the plan gives %s no "+
				"partition (a spare: more nodes than the layout uses)", id)}
		case addAskAgain:
			_, _ = a.onLeader(ctx, g, "/v1/cluster/rebalance", nil)
		}
		return waitOutcome{}
	})
}

// cmdMigrations lists the leader's moves in flight.
func cmdMigrations(ctx context.Context, g *globals, args []string, stdout io.Writer) (int, error) {
	if _, err := parseArgs(g, flag.NewFlagSet("migrations", flag.ContinueOnError), args); err != nil {
		return exitError, err
	}
	ld, _, err := leaderDoc(ctx, newAPI(g), g)
	if err != nil {
		return exitError, err
	}
	if g.json {
		rb := ld.Rebalance
		if rb == nil {
			rb = &rebalanceDoc{}
		}
		if rb.Migrations == nil {
			rb.Migrations = []migrationDoc{}
		}
		return exitOK, json.NewEncoder(stdout).Encode(migrationsOut{Leader: ld.Self, Rebalance: rb})
	}
	return exitOK, writeMigrations(stdout, ld.Self, ld.Rebalance, time.Now())
}

// migrationsOut is `migrations --json`: the leader and its rebalance
// status as GET /v1/cluster gives it.
type migrationsOut struct {
	Leader    string        `json:"leader"`
	Rebalance *rebalanceDoc `json:"rebalance"`
}

func cmdEvict(ctx context.Context, g *globals, args []string, stdout io.Writer) (int, error) {
	pos, err := parseArgs(g, flag.NewFlagSet("evict", flag.ContinueOnError), args, "NODE")
	if err != nil {
		return exitError, err
	}
	leader, err := newAPI(g).onLeader(ctx, g, "/v1/cluster/evict?node="+url.QueryEscape(pos[0]), nil)
	switch {
	case isCode(err, http.StatusNotFound):
		return exitError, fmt.Errorf("unknown node %q: %w", pos[0], err)
	case isCode(err, http.StatusBadRequest):
		return exitError, fmt.Errorf("%s leads the control plane and cannot evict itself: "+
			"drain it, or evict it from the next leader: %w", pos[0], err)
	case err != nil:
		return exitError, err
	}
	fmt.Fprintf(stdout, "%s evicted by %s\n", pos[0], leader)
	return exitOK, nil
}

// cmdDrain asks NODE to decommission itself (POST /v1/node/decommission on
// that node), then, unless --wait is 0, shows the leader's progress while
// its partitions move and waits until the leader no longer lists it in
// the map.
func cmdDrain(ctx context.Context, g *globals, args []string, stdout io.Writer) (int, error) {
	fs := flag.NewFlagSet("drain", flag.ContinueOnError)
	wait := fs.Duration("wait", defaultWait, "how long to wait for the node to leave the map (0 = do not wait)")
	pos, err := parseArgs(g, fs, args, "NODE")
	if err != nil {
		return exitError, err
	}
	id := pos[0]
	a := newAPI(g)
	d, _, err := a.discover(ctx, g)
	if err != nil {
		return exitError, err
	}
	var target *nodeDoc
	for i := range d.Nodes {
		if d.Nodes[i].ID == id {
			target = &d.Nodes[i]
		}
	}
	switch {
	case target == nil:
		return exitError, fmt.Errorf("unknown node %q", id)
	case gone(target.State):
		return exitError, fmt.Errorf("node %s is already %s", id, target.State)
	case target.HTTPAddr == "":
		return exitError, fmt.Errorf("node %s has no HTTP address (HTTP off?)", id)
	}
	w := newWatcher(a, seeds(g.http), d)
	pr := newProgress(time.Now())
	if ld, err := w.leader(ctx); err == nil {
		pr.baseline(ld.Self, ld.Rebalance)
	}
	if err := a.do(ctx, http.MethodPost, target.HTTPAddr, "/v1/node/decommission", nil); err != nil {
		if isCode(err, http.StatusNotFound) {
			return exitError, fmt.Errorf("node %s does not offer /v1/node/decommission (older server?): %w", id, err)
		}
		return exitError, err
	}
	fmt.Fprintf(stdout, "%s is decommissioning: its partitions move live to the other members\n", id)
	if *wait <= 0 {
		return exitOK, nil
	}
	p := &printer{w: stdout, tty: isTerminal(stdout), what: "drain " + id}
	return w.watch(ctx, p, pr, *wait, pollInterval, func(ld *clusterDoc, v progressView) waitOutcome {
		if ld.Self != id && !inMap(ld, id) {
			return waitOutcome{done: true, code: exitOK, msg: doneLine("drain "+id, v) +
				fmt.Sprintf("; %s left the map (map version %d)", id, ld.MapVersion)}
		}
		return waitOutcome{}
	})
}

// inMap reports whether d lists node id in its applied map.
func inMap(d *clusterDoc, id string) bool {
	for _, n := range d.Nodes {
		if n.ID == id {
			return n.InMap
		}
	}
	return false
}

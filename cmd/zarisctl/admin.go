package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

func cmdRebalance(ctx context.Context, g *globals, args []string, stdout io.Writer) (int, error) {
	if _, err := parseArgs(g, flag.NewFlagSet("rebalance", flag.ContinueOnError), args); err != nil {
		return exitError, err
	}
	var out struct {
		MapVersion uint64 `json:"mapVersion"`
	}
	leader, err := newAPI(g).onLeader(ctx, g, "/v1/cluster/rebalance", &out)
	if err != nil {
		return exitError, err
	}
	fmt.Fprintf(stdout, "rebalance started by %s at map version %d: partitions migrate live (zarisctl status shows them)\n", leader, out.MapVersion)
	return exitOK, nil
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
// that node), then, unless --wait is 0, waits until the other nodes no
// longer list it in the map.
func cmdDrain(ctx context.Context, g *globals, args []string, stdout io.Writer) (int, error) {
	fs := flag.NewFlagSet("drain", flag.ContinueOnError)
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for the node to leave the map (0 = do not wait)")
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
	if err := a.do(ctx, http.MethodPost, target.HTTPAddr, "/v1/node/decommission", nil); err != nil {
		if isCode(err, http.StatusNotFound) {
			return exitError, fmt.Errorf("node %s does not offer /v1/node/decommission (older server?): %w", id, err)
		}
		return exitError, err
	}
	fmt.Fprintf(stdout, "%s is decommissioning\n", id)
	if *wait <= 0 {
		return exitOK, nil
	}
	var others []string
	for _, n := range d.Nodes {
		if n.ID != id && n.HTTPAddr != "" && !gone(n.State) {
			others = append(others, n.HTTPAddr)
		}
	}
	deadline := time.Now().Add(*wait)
	for {
		for _, addr := range others {
			if v, err := a.cluster(ctx, addr); err == nil && !inMap(v, id) && v.Leader != "" {
				fmt.Fprintf(stdout, "%s left the map (map version %d)\n", id, v.MapVersion)
				return exitOK, nil
			}
		}
		if time.Now().After(deadline) {
			return exitError, fmt.Errorf("%s still in the map after %s", id, *wait)
		}
		select {
		case <-ctx.Done():
			return exitError, errors.New("interrupted while waiting for the node to leave the map")
		case <-time.After(200 * time.Millisecond):
		}
	}
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

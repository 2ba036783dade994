package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// The WAN follower (R-OPS-4): zarisctl follow makes the cluster follow
// another cluster's change feed (client writes refused from then on),
// zarisctl promote stops following for good and opens writes.

// followDoc is the follow state the endpoints answer (GET /v1/cluster's
// "follow").
type followDoc struct {
	State          string `json:"state"`
	Source         string `json:"source"`
	Generation     uint64 `json:"generation"`
	AppliedChanges uint64 `json:"appliedChanges"`
	PromotedFrom   string `json:"promotedFrom"`
}

func cmdFollow(ctx context.Context, g *globals, args []string, stdout io.Writer) (int, error) {
	pos, err := parseArgs(g, flag.NewFlagSet("follow", flag.ContinueOnError), args, "zaris://PRIMARY_SEEDS/STORE")
	if err != nil {
		return exitError, err
	}
	var out json.RawMessage
	leader, err := newAPI(g).onLeader(ctx, g, "/v1/cluster/follow?source="+url.QueryEscape(pos[0]), &out)
	switch {
	case isCode(err, http.StatusConflict):
		return exitError, fmt.Errorf("this cluster already follows another primary (zarisctl promote first): %w", err)
	case err != nil:
		return exitError, err
	}
	return printFollow(g, stdout, out, "following (asked %s): client writes are refused until zarisctl promote\n", leader)
}

func cmdPromote(ctx context.Context, g *globals, args []string, stdout io.Writer) (int, error) {
	if _, err := parseArgs(g, flag.NewFlagSet("promote", flag.ContinueOnError), args); err != nil {
		return exitError, err
	}
	var out json.RawMessage
	leader, err := newAPI(g).onLeader(ctx, g, "/v1/cluster/promote", &out)
	if err != nil {
		return exitError, err
	}
	return printFollow(g, stdout, out, "promoted (asked %s): this cluster follows nothing; client writes are open\n", leader)
}

func printFollow(g *globals, stdout io.Writer, raw json.RawMessage, line, leader string) (int, error) {
	if g.json {
		fmt.Fprintf(stdout, "%s\n", raw)
		return exitOK, nil
	}
	var d followDoc
	if err := json.Unmarshal(raw, &d); err != nil {
		return exitError, fmt.Errorf("bad answer: %w", err)
	}
	fmt.Fprintf(stdout, line, leader)
	switch d.State {
	case "following":
		fmt.Fprintf(stdout, "source: %s\ngeneration: %d\napplied changes: %d\n", d.Source, d.Generation, d.AppliedChanges)
	case "promoted":
		fmt.Fprintf(stdout, "promoted from: %s\n", d.PromotedFrom)
	}
	return exitOK, nil
}

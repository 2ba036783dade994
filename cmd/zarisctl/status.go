package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// statusOut is `status --json`.
type statusOut struct {
	State      string         `json:"state"`
	Reasons    []string       `json:"reasons,omitempty"`
	ClusterID  string         `json:"clusterId"`
	Store      string         `json:"store"`
	Leader     string         `json:"leader"`
	Term       uint64         `json:"term"`
	MapVersion uint64         `json:"mapVersion"`
	Nodes      int            `json:"nodes"`
	InMap      int            `json:"inMap"`
	Partitions map[string]int `json:"partitions"` // by health
	Oldest     *uptimeOut     `json:"oldest,omitempty"`
	Newest     *uptimeOut     `json:"newest,omitempty"`
}

type uptimeOut struct {
	Node          string  `json:"node"`
	UptimeSeconds float64 `json:"uptimeSeconds"`
}

func cmdStatus(ctx context.Context, g *globals, args []string, stdout io.Writer) (int, error) {
	if _, err := parseArgs(g, flag.NewFlagSet("status", flag.ContinueOnError), args); err != nil {
		return exitError, err
	}
	a := newAPI(g)
	d, _, err := a.discover(ctx, g)
	if err != nil {
		var he *httpError
		if errors.As(err, &he) || errors.Is(err, errUsage) {
			return exitError, err // an answer that is not a cluster: not "Stopped"
		}
		state, why := decideState(nil, nil)
		if g.json {
			_ = json.NewEncoder(stdout).Encode(statusOut{State: state.String(), Reasons: why})
		} else {
			fmt.Fprintf(stdout, "state  %s\n", state)
		}
		return state.exitCode(), err
	}
	views := a.survey(ctx, d)
	view, unreached := decidingView(d, views)
	state, why := decideState(view, unreached)

	out := statusOut{
		State: state.String(), Reasons: why, ClusterID: view.ClusterID, Store: view.Store,
		Leader: view.Leader, Term: view.Term, MapVersion: view.MapVersion,
		Nodes: len(view.Nodes), Partitions: map[string]int{},
	}
	for _, n := range view.Nodes {
		if n.InMap {
			out.InMap++
		}
	}
	for _, p := range view.Partitions {
		out.Partitions[p.Health]++
	}
	for _, v := range views {
		if v.Info == nil {
			continue
		}
		u := &uptimeOut{Node: v.Info.NodeID, UptimeSeconds: v.Info.UptimeSeconds}
		if out.Oldest == nil || u.UptimeSeconds > out.Oldest.UptimeSeconds {
			out.Oldest = u
		}
		if out.Newest == nil || u.UptimeSeconds < out.Newest.UptimeSeconds {
			out.Newest = u
		}
	}
	if g.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return state.exitCode(), enc.Encode(out)
	}

	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "state\t%s\n", out.State)
	for _, r := range why {
		fmt.Fprintf(tw, "  why\t%s\n", r)
	}
	fmt.Fprintf(tw, "cluster\t%s (store %s)\n", orDash(out.ClusterID), out.Store)
	fmt.Fprintf(tw, "leader\t%s (term %d)\n", orDash(out.Leader), out.Term)
	fmt.Fprintf(tw, "map version\t%d\n", out.MapVersion)
	fmt.Fprintf(tw, "nodes\t%d (%d in map)\n", out.Nodes, out.InMap)
	var parts []string
	for _, h := range sortedKeys(out.Partitions) {
		parts = append(parts, fmt.Sprintf("%d %s", out.Partitions[h], h))
	}
	fmt.Fprintf(tw, "partitions\t%d: %s\n", len(view.Partitions), orDash(strings.Join(parts, ", ")))
	if out.Oldest != nil {
		fmt.Fprintf(tw, "uptime\toldest %s (%s), newest %s (%s)\n",
			fmtUptime(out.Oldest.UptimeSeconds), out.Oldest.Node, fmtUptime(out.Newest.UptimeSeconds), out.Newest.Node)
	}
	return state.exitCode(), tw.Flush()
}

// decidingView picks the document the verdict is drawn from: the leader's
// own view when it answered (it decides partition health), else the
// freshest map among the answers, else the discovering node's. unreached
// are the alive map members whose HTTP API did not answer.
func decidingView(d *clusterDoc, views []nodeView) (*clusterDoc, []string) {
	var unreached []string
	var leader, freshest *clusterDoc
	for _, v := range views {
		if v.Err != nil && v.Node.InMap && v.Node.State == "alive" {
			unreached = append(unreached, v.Node.ID)
		}
		if v.Cluster == nil {
			continue
		}
		if d.Leader != "" && v.Cluster.Self == d.Leader {
			leader = v.Cluster
		}
		if freshest == nil || v.Cluster.MapVersion > freshest.MapVersion {
			freshest = v.Cluster
		}
	}
	best := d
	switch {
	case leader != nil:
		best = leader
	case freshest != nil:
		best = freshest
	}
	return best, unreached
}

// nodeRow is one line of `nodes` (and of `nodes --json`).
type nodeRow struct {
	ID            string  `json:"id"`
	State         string  `json:"state"`
	Raft          string  `json:"raft"`
	Leader        bool    `json:"leader"`
	InMap         bool    `json:"inMap"`
	Partitions    []int   `json:"partitions"`
	MapVersion    *uint64 `json:"mapVersion"` // as that node sees it; null: it did not answer
	UptimeSeconds float64 `json:"uptimeSeconds"`
	MemoryUsed    int64   `json:"memoryUsedBytes"`
	MemoryMax     int64   `json:"memoryMaxBytes"`
	Items         int64   `json:"items"`
	Error         string  `json:"error,omitempty"`
	// noAnswer: its HTTP API did not answer at all (unreachableError).
	noAnswer bool
}

// nodesExit is the exit code of `zarisctl nodes`: exitError when a node is
// unreachable — the membership says so (unreachable, lost), or its HTTP API
// did not answer although it did not leave on purpose (decommissioned,
// evicted: those are gone by design) — else exitOK. A script running
// `zarisctl nodes` learns of a dead node from the code, not by parsing rows.
func nodesExit(rows []nodeRow) int {
	for _, r := range rows {
		switch r.State {
		case "decommissioned", "evicted":
			continue
		case "unreachable", "lost":
			return exitError
		}
		if r.noAnswer {
			return exitError
		}
	}
	return exitOK
}

func cmdNodes(ctx context.Context, g *globals, args []string, stdout io.Writer) (int, error) {
	if _, err := parseArgs(g, flag.NewFlagSet("nodes", flag.ContinueOnError), args); err != nil {
		return exitError, err
	}
	a := newAPI(g)
	d, _, err := a.discover(ctx, g)
	if err != nil {
		return exitError, err
	}
	views := a.survey(ctx, d)
	rows := make([]nodeRow, 0, len(views))
	for _, v := range views {
		r := nodeRow{
			ID: v.Node.ID, State: v.Node.State, Raft: v.Node.Raft, Leader: v.Node.Leader,
			InMap: v.Node.InMap, Partitions: v.Node.Partitions,
		}
		if r.Partitions == nil {
			r.Partitions = []int{}
		}
		if v.Cluster != nil {
			mv := v.Cluster.MapVersion
			r.MapVersion = &mv
		}
		if v.Info != nil {
			r.UptimeSeconds, r.Items = v.Info.UptimeSeconds, v.Info.Items
			r.MemoryUsed, r.MemoryMax = v.Info.Memory.UsedBytes, v.Info.Memory.MaxBytes
		}
		if v.Err != nil {
			r.Error = v.Err.Error()
			var ue *unreachableError
			r.noAnswer = errors.As(v.Err, &ue)
		}
		rows = append(rows, r)
	}
	if g.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return nodesExit(rows), enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tRAFT\tIN MAP\tPARTITIONS\tMAP VERSION\tUPTIME\tMEMORY\tITEMS")
	for _, r := range rows {
		raft := orDash(r.Raft)
		if r.Leader {
			raft += " (leader)"
		}
		mv, up, mem, items := "-", "-", "-", "-"
		if r.MapVersion != nil {
			mv = fmt.Sprint(*r.MapVersion)
		}
		if r.Error == "" && r.MapVersion != nil {
			up = fmtUptime(r.UptimeSeconds)
			mem = fmtBytes(r.MemoryUsed) + "/" + fmtBytes(r.MemoryMax)
			items = fmt.Sprint(r.Items)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.State, raft, yesNo(r.InMap),
			fmtInts(r.Partitions), mv, up, mem, items)
	}
	if err := tw.Flush(); err != nil {
		return exitError, err
	}
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(stdout, "%s: %s\n", r.ID, r.Error)
		}
	}
	return nodesExit(rows), nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func fmtInts(xs []int) string {
	if len(xs) == 0 {
		return "-"
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

func fmtUptime(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// isCode reports whether err is a node's answer with HTTP status code.
func isCode(err error, code int) bool {
	var he *httpError
	return errors.As(err, &he) && he.Code == code
}

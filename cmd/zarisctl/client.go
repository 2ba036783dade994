package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The documents zarisctl reads, decoded from the nodes' JSON
// (docs/OPERATIONS.md "GET /v1/cluster", "HTTP endpoints"): only the fields
// it shows, so a server that adds fields breaks nothing.
type clusterDoc struct {
	Self          string         `json:"self"`
	Store         string         `json:"store"`
	ClusterID     string         `json:"clusterId"`
	MapVersion    uint64         `json:"mapVersion"`
	TotalSegments int            `json:"totalSegments"`
	Leader        string         `json:"leader"`
	Term          uint64         `json:"term"`
	TrafficGate   string         `json:"trafficGate"`
	Nodes         []nodeDoc      `json:"nodes"`
	Partitions    []partitionDoc `json:"partitions"`
	// Rebalance: the leader's live-migration status (only the leader
	// sends it).
	Rebalance *rebalanceDoc `json:"rebalance"`
	Draining  []string      `json:"draining"`
}

// rebalanceDoc is the leader's "rebalance" (docs/OPERATIONS.md "Scaling:
// live migration").
type rebalanceDoc struct {
	Active        bool           `json:"active"`
	Pending       bool           `json:"pending"`
	Reason        string         `json:"reason,omitempty"`
	Migrations    []migrationDoc `json:"migrations"`
	Completed     uint64         `json:"completed_moves"`
	Aborted       uint64         `json:"aborted_moves"`
	SegmentsTotal int            `json:"segments_total"`
	SegmentsLeft  int            `json:"segments_left"`
	KeysMoved     int64          `json:"keys_moved"`
	BytesMoved    int64          `json:"bytes_moved"`
	FencePause    time.Duration  `json:"last_fence_pause_ns"`
	MaxFencePause time.Duration  `json:"max_fence_pause_ns"`
	PlannedOver   []string       `json:"planned_over,omitempty"`
	Held          string         `json:"held,omitempty"`
}

// migrationDoc is one partition's move in flight.
type migrationDoc struct {
	Partition int       `json:"partition"`
	First     int       `json:"first_segment"`
	Last      int       `json:"last_segment"`
	Source    string    `json:"source"`
	Target    string    `json:"target,omitempty"`
	Incoming  []string  `json:"incoming,omitempty"`
	Phase     string    `json:"phase"`
	Lag       uint64    `json:"lag"`
	KeysHeld  int64     `json:"keys_held"`
	StartedAt time.Time `json:"started_at"`
	Attempts  int       `json:"attempts"`
	LastAbort string    `json:"last_abort,omitempty"`
}

type nodeDoc struct {
	ID         string `json:"id"`
	ClientAddr string `json:"clientAddr"`
	HTTPAddr   string `json:"httpAddr"`
	State      string `json:"state"`
	InMap      bool   `json:"inMap"`
	Raft       string `json:"raft"`
	Leader     bool   `json:"leader"`
	Partitions []int  `json:"partitions"`
}

type partitionDoc struct {
	ID           int      `json:"id"`
	ActiveOwner  string   `json:"activeOwner"`
	Replicas     []string `json:"replicas"`
	Health       string   `json:"health"`
	Incoming     []string `json:"incoming"`
	MoveTo       string   `json:"moveTo"`
	FirstSegment int      `json:"firstSegment"`
	LastSegment  int      `json:"lastSegment"`
}

type infoDoc struct {
	NodeID        string  `json:"node_id"`
	Store         string  `json:"store"`
	Version       string  `json:"version"`
	State         string  `json:"state"`
	Ready         bool    `json:"ready"`
	UptimeSeconds float64 `json:"uptime_seconds"`
	Memory        struct {
		UsedBytes int64 `json:"used_bytes"`
		MaxBytes  int64 `json:"max_bytes"`
	} `json:"memory"`
	Items int64 `json:"items"`
}

// httpError is a node's non-2xx answer.
type httpError struct {
	Addr   string
	Code   int
	Status string // the body's "status" (kv.Status name), if any
	Msg    string // the body's "error", or the raw body
}

func (e *httpError) Error() string {
	switch e.Code {
	case http.StatusUnauthorized:
		return fmt.Sprintf("%s: 401 unauthorized: missing or wrong token (--token or $ZARIS_TOKEN)", e.Addr)
	case http.StatusConflict:
		return fmt.Sprintf("%s: 409 not the control-plane leader: %s", e.Addr, e.Msg)
	}
	return fmt.Sprintf("%s: %d %s: %s", e.Addr, e.Code, http.StatusText(e.Code), e.Msg)
}

// unreachableError is a node that did not answer at all.
type unreachableError struct {
	Addr string
	Err  error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("node %s unreachable: %v", e.Addr, e.Err)
}

func (e *unreachableError) Unwrap() error { return e.Err }

// api talks to nodes over their HTTP API.
type api struct {
	hc      *http.Client
	token   string
	timeout time.Duration
}

// transport carries every request zarisctl sends (tests observe it).
var transport http.RoundTripper = http.DefaultTransport

func newAPI(g *globals) *api {
	return &api{hc: &http.Client{Transport: transport}, token: g.token, timeout: g.timeout}
}

// do sends one request to addr and decodes a 2xx JSON answer into out (nil
// = discard). Other answers are *httpError, no answer *unreachableError.
func (a *api) do(ctx context.Context, method, addr, path string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", addr, err)
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return &unreachableError{Addr: addr, Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return &unreachableError{Addr: addr, Err: err}
	}
	if resp.StatusCode/100 != 2 {
		he := &httpError{Addr: addr, Code: resp.StatusCode, Msg: strings.TrimSpace(string(body))}
		var eb struct { // an RFC 9457 problem document
			Code   string `json:"code"`
			Detail string `json:"detail"`
		}
		if json.Unmarshal(body, &eb) == nil && eb.Detail != "" {
			he.Status, he.Msg = eb.Code, eb.Detail
		}
		return he
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = body
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s%s: bad answer: %w", addr, path, err)
	}
	return nil
}

func (a *api) cluster(ctx context.Context, addr string) (*clusterDoc, error) {
	var d clusterDoc
	if err := a.do(ctx, http.MethodGet, addr, "/v1/cluster", &d); err != nil {
		return nil, err
	}
	return &d, nil
}

func (a *api) info(ctx context.Context, addr string) (*infoDoc, error) {
	var d infoDoc
	if err := a.do(ctx, http.MethodGet, addr, "/v1/info", &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// seeds splits a --http or --addr list.
func seeds(list string) []string {
	var out []string
	for s := range strings.SplitSeq(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// discover returns the first /v1/cluster answer among the seeds, with the
// address that gave it. A 401 stops at once (every node has the same
// token); otherwise the error names every seed that failed.
func (a *api) discover(ctx context.Context, g *globals) (*clusterDoc, string, error) {
	list := seeds(g.http)
	if len(list) == 0 {
		return nil, "", fmt.Errorf("%w: --http is empty", errUsage)
	}
	var errs []error
	for _, addr := range list {
		d, err := a.cluster(ctx, addr)
		if err == nil {
			return d, addr, nil
		}
		var he *httpError
		if errors.As(err, &he) && he.Code == http.StatusUnauthorized {
			return nil, "", err
		}
		errs = append(errs, err)
	}
	return nil, "", fmt.Errorf("no node answers: %w", errors.Join(errs...))
}

// gone reports whether a node state means the node left for good (it is
// not queried).
func gone(state string) bool {
	return state == "evicted" || state == "decommissioned" || state == "lost"
}

// nodeView is what one node answered (nil fields: it did not).
type nodeView struct {
	Node    nodeDoc // as the discovering node lists it
	Cluster *clusterDoc
	Info    *infoDoc
	Err     error // the first failure, when Cluster or Info is missing
}

// survey fetches /v1/cluster and /v1/info from every node the discovered
// document lists that has an HTTP address and has not left, in parallel.
func (a *api) survey(ctx context.Context, d *clusterDoc) []nodeView {
	out := make([]nodeView, len(d.Nodes))
	var wg sync.WaitGroup
	for i, n := range d.Nodes {
		out[i].Node = n
		if n.HTTPAddr == "" || gone(n.State) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := &out[i]
			if v.Cluster, v.Err = a.cluster(ctx, n.HTTPAddr); v.Err != nil {
				return
			}
			v.Info, v.Err = a.info(ctx, n.HTTPAddr)
		}()
	}
	wg.Wait()
	return out
}

// httpAddrOf is node id's HTTP address in d ("" if unknown).
func httpAddrOf(d *clusterDoc, id string) string {
	for _, n := range d.Nodes {
		if n.ID == id {
			return n.HTTPAddr
		}
	}
	return ""
}

// onLeader sends POST path to the control-plane leader named by the
// discovered document. A 409 (the leader changed meanwhile) re-reads the
// cluster from the node that answered it and follows the leader it names,
// once.
func (a *api) onLeader(ctx context.Context, g *globals, path string, out any) (leader string, err error) {
	d, _, err := a.discover(ctx, g)
	if err != nil {
		return "", err
	}
	// An election takes a few heartbeats: a cluster without a leader is
	// asked again for one --timeout.
	deadline := time.Now().Add(a.timeout)
	for d.Leader == "" && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		if nd, _, err := a.discover(ctx, g); err == nil {
			d = nd
		}
	}
	for attempt := 0; ; attempt++ {
		if d.Leader == "" {
			return "", errors.New("the cluster has no control-plane leader (no quorum?)")
		}
		addr := httpAddrOf(d, d.Leader)
		if addr == "" {
			return "", fmt.Errorf("leader %s has no HTTP address", d.Leader)
		}
		err = a.do(ctx, http.MethodPost, addr, path, out)
		var he *httpError
		if attempt > 0 || !errors.As(err, &he) || he.Code != http.StatusConflict {
			return d.Leader, err
		}
		if d, err = a.cluster(ctx, addr); err != nil {
			return "", err
		}
	}
}

package server

import (
	"crypto/tls"
	"net/http"
	"time"

	"github.com/zaris-io/zaris/server/httpapi"
	"github.com/zaris-io/zaris/server/resp"
)

// consoleOptions wire the web console (/ui/, issue #18 item 5) to the node:
// its event ring, the RESP slow log, and the members it may forward to.
func (n *Node) consoleOptions() httpapi.ConsoleOptions {
	opts := httpapi.ConsoleOptions{
		NodeID:  n.cfg.NodeID,
		Events:  n.events.Since,
		Slowlog: n.consoleSlowlog,
		Peers:   n.consolePeers,
	}
	if n.tls != nil {
		// Members serve HTTPS with certificates of the cluster's CA when
		// one is configured (--tls-ca); else the system roots apply.
		opts.PeerScheme = "https"
		opts.PeerClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: n.tls.ClientCAs, MinVersion: tls.VersionTLS12},
		}}
	}
	return opts
}

// consoleSlowlog is the RESP service's slow log (none when RESP is off or
// replaced by an attached service).
func (n *Node) consoleSlowlog(limit int) []httpapi.SlowEntry {
	n.mu.Lock()
	rs, _ := n.services[EndpointRESP].(*resp.Server)
	n.mu.Unlock()
	if rs == nil {
		return nil
	}
	entries := rs.Slowlog(limit)
	out := make([]httpapi.SlowEntry, len(entries))
	for i, e := range entries {
		out[i] = httpapi.SlowEntry{ID: e.ID, At: e.At, Micros: e.Duration.Microseconds(), Args: e.Args,
			Client: e.Client, ClientName: e.ClientName}
	}
	return out
}

// consolePeers lists the members with their HTTP addresses.
func (n *Node) consolePeers() []httpapi.Peer {
	st := n.ClusterStatus()
	out := make([]httpapi.Peer, 0, len(st.Nodes))
	for _, m := range st.Nodes {
		out = append(out, httpapi.Peer{ID: string(m.ID), HTTPAddr: m.HTTPAddr})
	}
	return out
}

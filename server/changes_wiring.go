package server

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sync"

	"github.com/zaris-io/zaris/sdk"
)

// feedClient is the node's own SDK client behind GET /v1/changes: a
// cluster client dialled to this node's client port, so the HTTP feed
// covers every segment of the cluster and survives failovers and
// migrations like any SDK change feed (R-OPS-4). Dialled on first use,
// closed when the node stops.
type feedClient struct {
	mu     sync.Mutex
	c      *sdk.Client
	closed bool
}

func (n *Node) openChanges(ctx context.Context, opts *sdk.ChangesOptions) (*sdk.ChangeFeed, error) {
	c, err := n.feedClientConn(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", sdk.ErrUnavailable, err)
	}
	return c.Changes(ctx, opts)
}

func (n *Node) feedClientConn(ctx context.Context) (*sdk.Client, error) {
	f := &n.feed
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, sdk.ErrClosed
	}
	if f.c != nil {
		return f.c, nil
	}
	u, err := n.selfConnString()
	if err != nil {
		return nil, err
	}
	c, err := sdk.Connect(ctx, u, sdk.WithLogger(n.log.With("component", "changes")))
	if err != nil {
		return nil, err
	}
	f.c = c
	return c, nil
}

// closeFeedClient closes the feed's client (node stop).
func (n *Node) closeFeedClient() {
	f := &n.feed
	f.mu.Lock()
	c := f.c
	f.c, f.closed = nil, true
	f.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

// selfConnString is the connection string of this cluster through this
// node's client port, with the node's credentials and TLS material.
func (n *Node) selfConnString() (string, error) {
	addr := n.Addr(EndpointClient)
	if addr == nil {
		return "", fmt.Errorf("the client port is not open yet")
	}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "", fmt.Errorf("client port %v is not TCP", addr)
	}
	host := tcp.IP
	if host == nil || host.IsUnspecified() {
		host = net.IPv4(127, 0, 0, 1)
	}
	u := url.URL{Scheme: "zaris", Host: net.JoinHostPort(host.String(), fmt.Sprint(tcp.Port)), Path: "/" + n.cfg.Store}
	q := url.Values{}
	if n.cfg.Token != "" {
		q.Set("token", n.cfg.Token)
	}
	if n.tls != nil {
		u.Scheme = "zariss"
		if n.cfg.TLSCA != "" {
			q.Set("ca", n.cfg.TLSCA)
		}
		q.Set("cert", n.cfg.TLSCert)
		q.Set("key", n.cfg.TLSKey)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

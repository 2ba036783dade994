package server

import "github.com/zaris-io/zaris/server/resp"

// newRESPService builds the Redis-protocol front end of the node (R-RESP).
// TLS is applied by the Node on the listener, so the service itself runs
// plain; the token is the one the native protocol and the HTTP API require;
// the routing source is the one the native protocol serves, so CLUSTER SLOTS
// and MOVED redirects follow the committed partition map.
func (n *Node) newRESPService() (*resp.Server, error) {
	var barrier resp.WriteBarrier
	if n.repl.Barrier() {
		barrier = n.repl // sync replication; async writes pay nothing
	}
	return resp.New(resp.Config{
		WriteBarrier: barrier,
		FreezeCheck:  n.freezeCheck,
		Store:        n.store,
		NodeID:       n.cfg.NodeID,
		Version:      Version(),
		Token:        n.cfg.Token,
		Metrics:      n.metrics,
		Logger:       n.log,
		Routing:      n.routing,
		MaxRSSBytes:  n.cfg.MemoryMaxRSS,
	})
}

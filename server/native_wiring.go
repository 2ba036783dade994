package server

import (
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/metrics"
	"github.com/zaris-io/zaris/server/native"
	"github.com/zaris-io/zaris/server/resp"
)

// newNativeService builds the native-protocol front end of the node. TLS is
// applied by the Node on the listener, so the service itself runs plain.
func (n *Node) newNativeService() (*native.Server, error) {
	var barrier native.WriteBarrier
	if n.repl.Barrier() {
		barrier = n.repl // sync replication; async writes pay nothing
	}
	return native.New(native.Config{
		WriteBarrier: barrier,
		FreezeCheck:  n.freezeCheck,
		WriteGate:    nativeWriteGate{n},
		Store:        n.store,
		StoreName:    n.cfg.Store,
		NodeID:       n.cfg.NodeID,
		// Clients learn from it whether a copy can take over the partitions
		// of an owner that refuses connections.
		ReplicationFactor: n.cfg.ReplicationFactor,
		Version:           Version(),
		Token:             n.cfg.Token,
		ACL:               n.acl,
		KeyPerm:           resp.KeyPermOf,
		MinWorkers:        n.cfg.MinWorkers,
		MaxWorkers:        n.cfg.MaxWorkers,
		Routing:           n.routing,
		Logger:            n.log,
		EventLoops:        n.cfg.ClientEventLoops,
		Observer:          nativeObserver{rec: n.metrics, conns: n.metrics.Conns(metrics.ProtoNative)},
	})
}

// nativeObserver feeds native-protocol measurements into the node's metrics.
type nativeObserver struct {
	rec   *metrics.Recorder
	conns *metrics.ConnGauge
}

var opMetric = [...]metrics.Op{
	wire.OpGet: metrics.OpGet, wire.OpPut: metrics.OpPut, wire.OpDelete: metrics.OpDelete,
	wire.OpExpire: metrics.OpExpire, wire.OpPersist: metrics.OpPersist, wire.OpTTL: metrics.OpTTL,
	wire.OpBatch: metrics.OpBatch,
}

func (o nativeObserver) Op(shard uint32, op wire.Opcode, st kv.Status, d time.Duration) {
	m := metrics.OpOther
	if int(op) < len(opMetric) && (op == wire.OpGet || opMetric[op] != metrics.OpGet) {
		m = opMetric[op]
	}
	o.rec.OpShard(shard, m, st, d)
}

var _ native.PanicObserver = nativeObserver{}

func (o nativeObserver) ConnOpened() { o.conns.Inc() }
func (o nativeObserver) Panicked()   { o.rec.Panic(metrics.ProtoNative) }
func (o nativeObserver) ConnClosed() { o.conns.Dec() }

// Package ablation measures the latency floor of a GET and a SET layer by
// layer (issue #17, after the seeds' "latency floor" article): each layer of
// the request path on its own, so the gap between what a bare socket can do
// and what the full server does — and between Zaris and redis-server — is
// visible per layer. The package has no code of its own; its benchmarks
// (ablation_test.go) are the measurement:
//
//	go test -run '^$' -bench . -benchtime 2s ./test/ablation/
//
// Layers, each with the same request (GET or SET of a 16-byte key, 32-byte
// value):
//
//   - socket: a trivial Go TCP echo server on loopback, driven by the same
//     raw client as the full path (the bytes of the request come back);
//   - parse: the RESP front end's parser (server/resp.Parser) alone;
//   - route: the placement of the key (internal/placement: slot, segment);
//   - store: the store engine alone (server/store Get / Put);
//   - encode: the RESP reply (server/resp.Writer) alone;
//   - full path: a real node's RESP port (in-process server.Node), and a
//     real redis-server when one is on the PATH, same client;
//   - replicate: SET on a real 2-node cluster (server/clustertest) at RF 1
//     and at RF 2 sync (quorum all), on keys the node talked to owns.
//
// cmd/pongfloor is the I/O model's floor: a server that answers PING and
// nothing else, on a goroutine per connection or an epoll event loop per
// CPU, which test/vsredis's "floor" section measures with redis-benchmark
// at 50 connections beside redis-server and Zaris.
//
// Network benchmarks run one connection at pipeline depth 1 (the round trip)
// and 16 (the per-request cost once round trips are amortised); ns/op is per
// request.
package ablation

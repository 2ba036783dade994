// Package server owns the wiring of one Zaris node: its configuration
// (Config, DefaultConfig, Validate, LoadConfig), the Node lifecycle (NewNode,
// Start, Stop), the listeners the node binds for its protocol front ends and
// the node-level observability (Info, the per-node metrics Recorder and the
// HTTP service from server/httpapi).
//
// A Node owns exactly one store engine (server/store) and every listener of
// the node: it calls net.Listen itself, wraps the listener in TLS when TLS is
// configured, and hands it to a Service. Protocol front ends (the native
// protocol, RESP) are Services attached with Node.Attach before Start; the
// HTTP service is built in.
//
// The package holds no process globals: two Nodes in one test process
// (STYLE 13) have their own store, metrics registry, listeners and logger.
// It must not import the sdk or the integrations; the dependency direction is
// server → server/* → store → internal.
package server

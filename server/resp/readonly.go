package resp

// Writes on a follower cluster (R-OPS-4): while the cluster follows another
// cluster's change feed, write commands are refused as a Redis replica
// refuses them (replica-read-only); reads are served.

// msgReadOnly is Redis's refusal of a write on a read-only replica.
const msgReadOnly = "READONLY You can't write against a read only replica."

// readOnly reports whether writes are refused now (Config.ReadOnly).
func (c *conn) readOnly() bool {
	g := c.srv.cfg.ReadOnly
	return g != nil && g() != ""
}

package resp

// CLIENT NO-TOUCH (Redis 7.2): a client in no-touch mode reads keys without
// updating their access stamp (OBJECT IDLETIME keeps growing, the LRU
// eviction rank is unchanged), so a monitoring or analytics client does not
// keep cold keys alive; TOUCH still stamps the keys it names. The mode
// reaches the store as its no-touch views (store.Untouched, and
// Atomic.SetNoTouch for a locked view): see conn.segment.

// untouched reports whether the running command must leave access stamps
// as they were.
func (c *conn) untouched() bool { return c.mon.peeking || c.mon.noTouch.Load() && !c.mon.touching }

func cmdClientNoTouch(c *conn, args [][]byte) {
	switch {
	case eq(args[2], "ON"):
		c.mon.noTouch.Store(true)
	case eq(args[2], "OFF"):
		c.mon.noTouch.Store(false)
	default:
		c.err(msgSyntax)
		return
	}
	c.out.OK()
}

package resp

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MONITOR, CLIENT PAUSE/UNPAUSE and CLIENT NO-EVICT.
//
// MONITOR streams every command the node executes to the monitoring
// clients, formatted as Redis formats it:
//
//	+1700000000.123456 [0 127.0.0.1:5555] "SET" "k" "v"
//
// (arguments quoted and escaped as Redis's sdscatrepr, AUTH and HELLO's
// credentials redacted, admin commands and refused commands left out, as in
// Redis 7.0). The line goes through each monitor's output queue, under its
// output buffer limit.
//
// CLIENT PAUSE <ms> [WRITE|ALL] holds the commands of every client (ALL) or
// the commands that write (WRITE: write commands, PUBLISH, EVAL/EVALSHA/FCALL)
// until the pause ends: its timeout passes or CLIENT UNPAUSE. A held client
// has its earlier replies delivered and waits; nothing it sent is lost.

// monitorState is a connection's MONITOR and CLIENT flags.
type monitorState struct {
	monitor atomic.Bool
	noEvict atomic.Bool
	noTouch atomic.Bool // CLIENT NO-TOUCH (notouch.go)
	// touching: TOUCH runs, which stamps the keys even in no-touch mode
	// (only the connection's own goroutine reads and writes it).
	touching bool
	// peeking: a command that reads a key without it counting as an
	// access (TYPE, as Redis's LOOKUP_NOTOUCH), whatever the mode
	peeking bool
}

type monitorSet struct {
	n  atomic.Int32 // monitors: the hot path checks only this
	mu sync.Mutex
	m  map[*conn]struct{}
}

func (ms *monitorSet) add(c *conn) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.m == nil {
		ms.m = map[*conn]struct{}{}
	}
	if _, ok := ms.m[c]; !ok {
		ms.m[c] = struct{}{}
		ms.n.Add(1)
	}
}

func (ms *monitorSet) remove(c *conn) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if _, ok := ms.m[c]; ok {
		delete(ms.m, c)
		ms.n.Add(-1)
	}
}

// feed sends one executed command to every monitor.
func (ms *monitorSet) feed(from *conn, cmd *command, args [][]byte, at time.Time) {
	if cmd.flags&flagAdmin != 0 {
		return
	}
	var b []byte
	b = append(b, '+')
	b = strconv.AppendInt(b, at.Unix(), 10)
	b = append(b, '.')
	us := strconv.Itoa(at.Nanosecond() / 1000)
	b = append(b, strings.Repeat("0", 6-len(us))...)
	b = append(b, us...)
	b = append(b, " [0 "...)
	b = append(b, from.nc.RemoteAddr().String()...)
	b = append(b, ']')
	redact := 0 // arguments from this position on are credentials
	switch baseName(cmd) {
	case "auth":
		redact = 1
	case "hello":
		for i := 2; i < len(args); i++ {
			if eq(args[i], "AUTH") {
				redact = i + 1
				break
			}
		}
	}
	for i, a := range args {
		b = append(b, ' ')
		if redact > 0 && i >= redact && (baseName(cmd) == "auth" || i < redact+2) {
			b = append(b, `"(redacted)"`...)
			continue
		}
		b = appendRepr(b, a)
	}
	b = append(b, '\r', '\n')
	ms.mu.Lock()
	targets := make([]*conn, 0, len(ms.m))
	for m := range ms.m {
		targets = append(targets, m)
	}
	ms.mu.Unlock()
	for _, m := range targets {
		m.send(b)
	}
}

// appendRepr quotes s as Redis's sdscatrepr does.
func appendRepr(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, ch := range s {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch >= 0x20 && ch < 0x7f {
				b = append(b, ch)
			} else {
				b = append(b, '\\', 'x', hex[ch>>4], hex[ch&15])
			}
		}
	}
	return append(b, '"')
}

func cmdMonitor(c *conn, _ [][]byte) {
	if c.txn.multi {
		c.err("ERR MONITOR isn't allowed in MULTI")
		return
	}
	if c.mon.monitor.Swap(true) {
		return // already monitoring: Redis answers nothing more
	}
	// The replies before MONITOR go first; then the OK is queued and the
	// connection joins the monitors under the write lock, so that no
	// command can run between the client reading +OK and the monitor
	// seeing it, and no monitored line can overtake the OK.
	if !c.flush() {
		c.closing = true
		return
	}
	ok := []byte("+OK\r\n")
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		c.closing = true
		return
	}
	c.netOut.Add(uint64(len(ok)))
	if !c.enqueueLocked(ok) {
		c.closing = true
		return
	}
	c.srv.monitors.add(c)
}

// --- CLIENT PAUSE ---

type clientPause struct {
	// on is until != zero, read without the lock by every command (a
	// mutex per command for a pause that is almost never on); set under mu
	// before CLIENT PAUSE replies, so a command sent after that reply sees
	// it.
	on    atomic.Bool
	mu    sync.Mutex
	all   bool          // ALL; false = WRITE
	until time.Time     // zero: not paused
	done  chan struct{} // closed when the pause ends
	timer *time.Timer
}

// active reports whether cmd must wait, and the channel to wait on.
func (p *clientPause) active(cmd *command) (<-chan struct{}, bool) {
	if !p.on.Load() {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.until.IsZero() {
		return nil, false
	}
	if p.all || pausedByWrite(cmd) {
		return p.done, true
	}
	return nil, false
}

// pausedByWrite: the commands CLIENT PAUSE WRITE holds (Redis's "may
// replicate" commands).
func pausedByWrite(cmd *command) bool {
	if cmd.flags&flagWrite != 0 {
		return true
	}
	switch baseName(cmd) {
	case "publish", "spublish", "eval", "evalsha", "fcall", "pfcount", "wait":
		return true
	}
	return false
}

func (p *clientPause) start(d time.Duration, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	until := time.Now().Add(d)
	if !p.until.IsZero() {
		// As Redis: a new pause never shortens the current one, and ALL
		// stays ALL until the end.
		if until.Before(p.until) {
			until = p.until
		}
		all = all || p.all
		p.timer.Stop()
	} else {
		p.done = make(chan struct{})
	}
	p.all, p.until = all, until
	p.on.Store(true)
	p.timer = time.AfterFunc(time.Until(until), p.end)
}

func (p *clientPause) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.until.IsZero() {
		return
	}
	p.timer.Stop()
	p.until = time.Time{}
	p.on.Store(false)
	close(p.done)
}

func (p *clientPause) describe() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.until.IsZero():
		return "no"
	case p.all:
		return "all"
	}
	return "write"
}

// waitPause holds a command while the clients are paused. It reports false
// when the connection is closing instead.
func (c *conn) waitPause(cmd *command) bool {
	done, paused := c.srv.pause.active(cmd)
	if !paused {
		return true
	}
	c.leaveLoop()   // it waits
	if !c.flush() { // the replies before this command are delivered first
		return false
	}
	c.blocked.Store(true)
	defer c.blocked.Store(false)
	poll := time.NewTicker(blockPoll)
	defer poll.Stop()
	for {
		select {
		case <-done:
			return true
		case <-c.stop:
			return false
		case <-poll.C:
			if c.peerClosed() {
				return false
			}
		}
	}
}

func cmdClientPause(c *conn, args [][]byte) {
	ms, ok := parseInt(args[2])
	switch {
	case !ok:
		c.err("ERR timeout is not an integer or out of range")
		return
	case ms < 0:
		c.err("ERR timeout is negative")
		return
	}
	all := true
	if len(args) == 4 {
		switch {
		case eq(args[3], "WRITE"):
			all = false
		case eq(args[3], "ALL"):
		default:
			c.err("ERR CLIENT PAUSE mode must be WRITE or ALL")
			return
		}
	} else if len(args) > 4 {
		c.err(msgSyntax)
		return
	}
	c.srv.pause.start(time.Duration(min(ms, int64(1<<62)/int64(time.Millisecond)))*time.Millisecond, all)
	c.out.OK()
}

func cmdClientUnpause(c *conn, _ [][]byte) {
	c.srv.pause.end()
	c.out.OK()
}

func cmdClientNoEvict(c *conn, args [][]byte) {
	switch {
	case eq(args[2], "ON"):
		c.mon.noEvict.Store(true)
	case eq(args[2], "OFF"):
		c.mon.noEvict.Store(false)
	default:
		c.err(msgSyntax)
		return
	}
	c.out.OK()
}

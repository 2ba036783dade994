package resp

import (
	"sync"
	"time"
)

// Event loops (D66, internal/evloop). On Linux a plain-TCP connection
// starts on an event loop, which serves every readable connection in turn.
// A loop must never wait for anything but its epoll: only the commands in
// loopCommands (the local data commands that answer at once) run on it.
// Before anything else runs — or before one of those would wait (a client
// pause, the write barrier of sync replication, a streamed reply the
// client does not read) — the connection leaves the loop for good and goes
// on on the goroutine that ran the loop. TLS connections always have their
// own goroutine.

// loopCommands are the commands a connection may run while an event loop
// serves it. Each touches only the local store and the connection's
// buffers and never waits: a command missing here is served correctly
// (the connection leaves the loop first), only not on the loop.
var loopCommands = []string{
	// connection
	"ping", "echo", "select", "hello", "auth", "client|setinfo", "client|setname",
	"client|getname", "client|id", "config|get", "info", "dbsize", "time", "command|count",
	// strings
	"get", "set", "setnx", "setex", "psetex", "getset", "getdel", "getex", "mget", "mset",
	"msetnx", "incr", "decr", "incrby", "decrby", "incrbyfloat", "append", "strlen",
	"getrange", "setrange",
	// keys
	"del", "unlink", "exists", "expire", "pexpire", "expireat", "pexpireat", "ttl", "pttl",
	"persist", "type", "touch", "expiretime", "pexpiretime",
	// lists
	"lpush", "rpush", "lpushx", "rpushx", "lpop", "rpop", "llen", "lrange", "lindex", "lset",
	"lrem", "ltrim", "linsert", "lpos",
	// hashes
	"hset", "hsetnx", "hget", "hmset", "hmget", "hdel", "hlen", "hexists", "hgetall", "hkeys",
	"hvals", "hincrby", "hincrbyfloat", "hstrlen",
	// sets
	"sadd", "srem", "smembers", "sismember", "smismember", "scard", "spop", "srandmember",
	// sorted sets
	"zadd", "zrem", "zscore", "zmscore", "zcard", "zincrby", "zrange", "zrank", "zrevrank",
	"zcount", "zpopmin", "zpopmax", "zrangebyscore", "zrevrange", "zrevrangebyscore",
	"zrangebylex", "zrevrangebylex", "zlexcount", "zremrangebyrank", "zremrangebyscore",
	"zremrangebylex", "zrandmember", // a reply streamed to a slow reader leaves on its own
	// scans and random picks (an O(COUNT) page, as in Redis)
	"scan", "sscan", "hscan", "zscan", "randomkey", "hrandfield",
	// bits, HyperLogLog, geo, streams: one key's data, answered at once
	"getbit", "setbit", "bitcount", "bitpos", "bitfield", "bitfield_ro", "substr",
	"pfadd", "pfcount", "geoadd", "geopos", "geodist", "geohash", "xadd", "xlen", "xrange",
	"xrevrange",
	// blocking commands: the first try runs on the loop, in the order the
	// loop read the commands, and takes the client's place among the
	// blocked ones (D107); blockOn leaves the loop before it waits
	"blpop", "brpop", "brpoplpush", "blmove", "blmpop", "bzpopmin", "bzpopmax", "bzmpop",
	"xread", "xreadgroup",
}

var loopOnce sync.Once

// loopReady marks loopCommands in the command table (once every file's
// init has registered its commands).
func loopReady() {
	loopOnce.Do(func() {
		for _, name := range loopCommands {
			if cmd := commandByName(name); cmd != nil {
				cmd.onLoop = true
			}
		}
	})
}

// commandByName finds a command or a "parent|sub" subcommand by its
// lower-case name.
func commandByName(name string) *command {
	if cmd := commandTable[name]; cmd != nil {
		return cmd
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '|' {
			if parent := commandTable[name[:i]]; parent != nil {
				return parent.lookupSub([]byte(name[i+1:]))
			}
		}
	}
	return nil
}

// onLoop reports whether an event loop serves the connection.
func (c *conn) onLoop() bool { return c.member != nil && c.member.OnLoop() }

// leaveLoop moves the connection off its event loop before it runs
// something that may wait: this goroutine stays with the connection and a
// new one runs the loop. Called by the connection's reader only; a no-op
// on a connection with its own goroutine.
func (c *conn) leaveLoop() {
	if !c.onLoop() {
		return
	}
	c.member.Leave()
	c.srv.stats.loopLeaves.Add(1)
}

// Ready is one read batch on the event loop (evloop.Handler): read what is
// there, run it, write the replies. False when the connection must end.
func (c *conn) Ready() bool {
	if c.stopping.Load() {
		// Shut down (graceful): answer what was read, read no more. (A
		// socket whose input was shut down may still take a busy client's
		// bytes.)
		c.handleBuffered()
		c.flush()
		return false
	}
	if !c.fillNow() {
		return false
	}
	if fc := c.srv.cfg.FreezeCheck; fc != nil {
		fc(c.clock)
	}
	if !c.handleBuffered() {
		return false
	}
	if c.closing || !c.onLoop() {
		return c.flush() && !c.closing
	}
	return true // the loop writes the replies at the end of its round (Flush)
}

// Flush writes the replies of the read batch Ready served, once the loop
// has served every connection of its round (evloop.Flusher, D81).
func (c *conn) Flush() bool { return c.flush() }

// ServeLeft continues, on the goroutine that ran the event loop, a
// connection that left it in the middle of a read batch: alive says whether
// that batch left it open.
func (c *conn) ServeLeft(alive bool) {
	defer c.srv.forget(c)
	defer c.finish()
	defer c.stopAuthTimer()
	if alive {
		c.serveLoop()
	}
}

// Drop ends a connection the loop closes; waiting for a background writer
// to finish is done away from the loop.
func (c *conn) Drop() {
	c.wmu.Lock()
	writer := c.wstarted
	c.wmu.Unlock()
	end := func() {
		c.stopAuthTimer()
		c.finish()
		c.srv.forget(c)
	}
	if writer {
		go end()
		return
	}
	end()
}

// Expired reports a connection idle past the configured timeout (the
// goroutine model's read deadline, checked once a second).
func (c *conn) Expired(now time.Time) bool {
	t := time.Duration(c.srv.live.idleTimeout.Load())
	if t <= 0 || now.Sub(c.clock) <= t {
		return false
	}
	c.logger().Info("closing idle connection", "idle_timeout", t)
	return true
}

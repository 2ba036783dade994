package resp

import (
	"runtime"
	"sync"
)

// Event loops (D66). On Linux a plain-TCP connection starts on an event
// loop: one goroutine per loop waits on its own epoll instance and, for
// every readable connection in turn, reads what is there, runs the
// commands and writes the replies — two system calls a request instead of
// the goroutine-per-connection model's three and a wake-up, and the
// clients of a loop served in rounds as Redis serves them.
//
// A loop must never wait for anything but its epoll: only the commands in
// loopCommands (the local data commands that answer at once) run on it.
// Before anything else runs — or before one of those would wait (a client
// pause, the write barrier of sync replication, a streamed reply the
// client does not read) — the connection leaves the loop for good: the
// loop's current goroutine keeps serving that connection, exactly as its
// own goroutine would have from the start, and a fresh goroutine takes the
// loop over. TLS connections always have their own goroutine.

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

// defaultEventLoops is Config.EventLoops' default: one loop per two CPUs
// (the other CPU of each pair runs what the loops hand off, the GC and the
// rest of the node), at least one.
func defaultEventLoops() int {
	return max(1, runtime.GOMAXPROCS(0)/2)
}

// leaveLoop moves the connection off its event loop before it runs
// something that may wait: this goroutine stays with the connection and a
// new one runs the loop. Called by the connection's reader only; a no-op
// on a connection with its own goroutine.
func (c *conn) leaveLoop() {
	l := c.lp
	if l == nil {
		return
	}
	l.leave(c)
	c.srv.stats.loopLeaves.Add(1)
}

// serveLeft continues, on the goroutine that ran the event loop, a
// connection that left it in the middle of a read batch: alive says whether
// that batch left it open.
func (c *conn) serveLeft(alive bool) {
	defer c.srv.forget(c)
	defer c.finish()
	defer c.stopAuthTimer()
	if alive {
		c.serveLoop()
	}
}

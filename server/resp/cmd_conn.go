package resp

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/metrics"
)

// Connection commands: PING, ECHO, AUTH, HELLO, SELECT, QUIT, RESET, CLIENT.

// RedisVersion is the Redis version the front end reports (HELLO, INFO):
// the one whose commands and replies it follows.
const RedisVersion = "7.0.0"

const (
	connFlags = flagNoScript | flagLoading | flagStale
	authFlags = connFlags | flagFast | flagAllowBusy | flagNoAuth
)

func init() {
	register(
		&command{name: "ping", arity: -1, flags: flagFast, group: "connection", since: "1.0.0",
			summary: "Returns the server's liveliness response.", run: cmdPing},
		&command{name: "echo", arity: 2, flags: flagFast | flagLoading | flagStale, group: "connection", since: "1.0.0",
			summary: "Returns the given string.", run: cmdEcho},
		&command{name: "auth", arity: -2, flags: authFlags, group: "connection", since: "1.0.0",
			summary: "Authenticates the connection as a user (default: the node's token).", run: cmdAuth},
		&command{name: "hello", arity: -1, flags: authFlags, group: "connection", since: "6.0.0",
			summary: "Handshakes with the server: protocol version (RESP2/RESP3), authentication, client name.", run: cmdHello},
		&command{name: "select", arity: 2, flags: flagLoading | flagStale | flagFast, group: "connection", since: "1.0.0",
			summary: "Changes the selected database: only database 0 exists (cluster mode).", run: cmdSelect},
		&command{name: "quit", arity: -1, flags: authFlags, group: "connection", since: "1.0.0",
			summary: "Closes the connection after replying.", run: cmdQuit},
		&command{name: "reset", arity: 1, flags: authFlags, group: "connection", since: "6.2.0",
			summary: "Resets the connection: RESP2, no name, the default user (unauthenticated when it has a password).", run: cmdReset},
		&command{name: "client", arity: -2, group: "connection", since: "2.4.0",
			summary: "A container for client connection commands.", subs: []*command{
				{name: "id", arity: 2, flags: connFlags, summary: "Returns the unique client ID of the connection.", run: cmdClientID},
				{name: "setname", arity: 3, flags: connFlags, summary: "Sets the connection name.", run: cmdClientSetName},
				{name: "getname", arity: 2, flags: connFlags, summary: "Returns the name of the connection.", run: cmdClientGetName},
				{name: "info", arity: 2, flags: connFlags, summary: "Returns information about the connection.", run: cmdClientInfo},
				{name: "list", arity: -2, flags: flagAdmin | flagNoScript | flagLoading | flagStale, summary: "Lists open connections ([TYPE normal] [ID id ...]).", run: cmdClientList},
				{name: "kill", arity: -3, flags: flagAdmin | flagNoScript | flagLoading | flagStale, summary: "Terminates open connections (addr, or ID/ADDR/LADDR/USER/SKIPME filters).", run: cmdClientKill},
				{name: "setinfo", arity: 4, flags: connFlags, summary: "Sets the client library name or version (LIB-NAME, LIB-VER).", run: cmdClientSetInfo},
				{name: "reply", arity: 3, flags: connFlags, summary: "Instructs the server whether to reply to commands (ON, OFF, SKIP).", run: cmdClientReply},
				{name: "pause", arity: -3, flags: flagAdmin | flagNoScript | flagLoading | flagStale, summary: "Suspends commands processing (WRITE or ALL) for a time.", run: cmdClientPause},
				{name: "unblock", arity: -3, flags: flagAdmin | flagNoScript | flagLoading | flagStale, since: "5.0.0", summary: "Unblocks a client waiting in a blocking command — BLPOP, BRPOP, BLMOVE, BZPOPMIN and the like, XREAD/XREADGROUP BLOCK — or in WAIT (TIMEOUT: as if it timed out, the default; ERROR: with the UNBLOCKED error).", run: cmdClientUnblock},
				{name: "unpause", arity: 2, flags: flagAdmin | flagNoScript | flagLoading | flagStale, summary: "Resumes processing commands from paused clients.", run: cmdClientUnpause},
				{name: "no-touch", arity: 3, flags: flagNoScript | flagLoading | flagStale, since: "7.2.0", summary: "Controls whether commands sent by the client affect the LRU of keys (Redis 7.2; shown as flag T).", run: cmdClientNoTouch},
				{name: "no-evict", arity: 3, flags: flagAdmin | flagNoScript | flagLoading | flagStale, summary: "Sets the client eviction mode of the connection (Zaris never evicts clients; shown as flag e).", run: cmdClientNoEvict},
				{name: "help", arity: 2, flags: flagLoading | flagStale, summary: "Returns helpful text about the CLIENT subcommands.", run: cmdClientHelp},
			}},
		&command{name: "monitor", arity: 1, flags: flagAdmin | flagNoScript | flagLoading | flagStale, group: "server", since: "1.0.0",
			summary: "Listens for all requests received by the server in real-time.", run: cmdMonitor},
	)
}

func cmdPing(c *conn, args [][]byte) {
	if len(args) <= 2 && c.out.Proto == 2 && c.subscribed() {
		// Redis's PING in RESP2 subscribed mode: a "pong" message.
		c.out.Array(2)
		c.out.BulkString("pong")
		if len(args) == 2 {
			c.out.Bulk(args[1])
		} else {
			c.out.BulkString("")
		}
		return
	}
	switch len(args) {
	case 1:
		c.out.Simple("PONG")
	case 2:
		c.out.Bulk(args[1])
	default:
		c.err("ERR wrong number of arguments for 'ping' command")
	}
}

func cmdEcho(c *conn, args [][]byte) { c.out.Bulk(args[1]) }

const (
	msgWrongPass  = "WRONGPASS invalid username-password pair or user is disabled."
	msgNoPassword = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
)

func (c *conn) setAuthenticated(ok bool) {
	c.authed = ok
	c.lim.Unauthenticated = !ok
	if ok {
		c.everAuthed.Store(true)
	}
}

func (c *conn) authFailed(msg string) {
	c.status = kv.StatusUnauthorized
	c.srv.cfg.Metrics.AuthFailure(metrics.ProtoRESP)
	c.out.Error(msg)
}

func cmdAuth(c *conn, args [][]byte) {
	var user, pass []byte
	switch len(args) {
	case 2:
		pass = args[1]
		if !c.srv.authRequired() {
			c.err(msgNoPassword)
			return
		}
	case 3:
		user, pass = args[1], args[2]
	default:
		c.err(msgSyntax)
		return
	}
	if msg := c.authUser(user, pass); msg != "" {
		c.authFailed(msg)
		return
	}
	c.setAuthenticated(true)
	c.out.OK()
}

func cmdHello(c *conn, args [][]byte) {
	proto := c.out.Proto
	if len(args) >= 2 {
		v, ok := parseInt(args[1])
		if !ok {
			c.err("ERR Protocol version is not an integer or out of range")
			return
		}
		if v < 2 || v > 3 {
			c.err("NOPROTO unsupported protocol version")
			return
		}
		proto = int(v)
	}
	var user, pass, name []byte
	setName := false
	for j := 2; j < len(args); j++ {
		more := len(args) - j - 1
		switch {
		case eq(args[j], "AUTH") && more >= 2:
			user, pass = args[j+1], args[j+2]
			j += 2
		case eq(args[j], "SETNAME") && more >= 1:
			name, setName = args[j+1], true
			if !validClientName(name) {
				c.err(msgBadClientName)
				return
			}
			j++
		default:
			c.err("ERR Syntax error in HELLO option '" + truncate(args[j], 128) + "'")
			return
		}
	}
	if pass != nil {
		if msg := c.authUser(user, pass); msg != "" {
			c.authFailed(msg)
			return
		}
		c.setAuthenticated(true)
	}
	if !c.authed {
		c.err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if setName {
		c.setName(name)
	}
	c.out.Proto = proto
	c.proto.Store(int32(proto))
	c.out.Map(7)
	c.out.BulkString("server")
	c.out.BulkString("redis")
	c.out.BulkString("version")
	c.out.BulkString(RedisVersion)
	c.out.BulkString("proto")
	c.out.Int(int64(proto))
	c.out.BulkString("id")
	c.out.Int(c.id)
	c.out.BulkString("mode")
	c.out.BulkString("cluster")
	c.out.BulkString("role")
	c.out.BulkString("master")
	c.out.BulkString("modules")
	c.out.Array(0)
}

func cmdSelect(c *conn, args [][]byte) {
	db, ok := parseInt(args[1])
	switch {
	case !ok || db < -1<<31 || db > 1<<31-1:
		c.err(msgNotInteger)
	case db != 0:
		c.err("ERR SELECT is not allowed in cluster mode")
	default:
		c.out.OK()
	}
}

func cmdQuit(c *conn, _ [][]byte) {
	c.out.OK()
	c.closing = true
}

func cmdReset(c *conn, _ [][]byte) {
	if c.sub != nil {
		c.pmu.Lock()
		c.sub.Unsubscribe()
		c.sub.PUnsubscribe()
		c.pmu.Unlock()
	}
	if c.ssub != nil {
		c.pmu.Lock()
		c.ssub.Unsubscribe()
		c.pmu.Unlock()
	}
	c.txReset()
	c.trackReset()
	if c.mon.monitor.Swap(false) {
		c.srv.monitors.remove(c) // out of MONITOR mode: its own RESET is not fed to it
	}
	c.out.Proto = 2
	c.proto.Store(2)
	c.name.Store(nil)
	c.reply = replyOn
	c.user.Store(nil)
	c.aclSet = nil
	c.setAuthenticated(!c.srv.authRequired())
	c.out.Simple("RESET")
}

// --- CLIENT ---

const msgBadClientName = "ERR Client names cannot contain spaces, newlines or special characters."

// validClientName: printable ASCII without spaces, as Redis requires.
func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

func (c *conn) setName(b []byte) {
	if len(b) == 0 {
		c.name.Store(nil)
		return
	}
	s := string(b)
	c.name.Store(&s)
}

func loadString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func cmdClientID(c *conn, _ [][]byte) { c.out.Int(c.id) }

func cmdClientSetName(c *conn, args [][]byte) {
	if !validClientName(args[2]) {
		c.err(msgBadClientName)
		return
	}
	c.setName(args[2])
	c.out.OK()
}

func cmdClientGetName(c *conn, _ [][]byte) {
	if p := c.name.Load(); p != nil {
		c.out.BulkString(*p)
		return
	}
	c.out.Null()
}

func cmdClientInfo(c *conn, _ [][]byte) { c.out.Verbatim(c.describe(time.Now()) + "\n") }

// Client types as CLIENT LIST and CLIENT KILL filter them (Redis's
// getClientType): a subscribed client is pubsub, any other normal — the
// RESP port has no master or replica connections (replication is the
// cluster's own), so those types name no client.
const (
	clientNormal = "normal"
	clientPubSub = "pubsub"
	clientNone   = "none" // master, replica, slave
)

// clientTypeArg reads a TYPE filter's value; false for a name Redis does
// not know.
func clientTypeArg(b []byte) (string, bool) {
	switch {
	case eq(b, "normal"):
		return clientNormal, true
	case eq(b, "pubsub"):
		return clientPubSub, true
	case eq(b, "master"), eq(b, "replica"), eq(b, "slave"):
		return clientNone, true
	}
	return "", false
}

// clientType is o's type for a TYPE filter.
func (o *conn) clientType() string {
	if o.outputClass() == classPubSub {
		return clientPubSub
	}
	return clientNormal
}

func cmdClientList(c *conn, args [][]byte) {
	var ids map[int64]bool
	typ := ""
	for j := 2; j < len(args); j++ {
		switch {
		case eq(args[j], "TYPE") && j+1 < len(args):
			t, ok := clientTypeArg(args[j+1])
			if !ok {
				c.err("ERR Unknown client type '" + truncate(args[j+1], 128) + "'")
				return
			}
			typ = t
			j++
		case eq(args[j], "ID") && j+1 < len(args):
			ids = map[int64]bool{}
			for j++; j < len(args); j++ {
				id, ok := parseInt(args[j])
				if !ok || id <= 0 {
					c.err("ERR Invalid client ID")
					return
				}
				ids[id] = true
			}
		default:
			c.err(msgSyntax)
			return
		}
	}
	now := time.Now()
	var sb strings.Builder
	for _, o := range c.srv.snapshotClients() {
		if ids != nil && !ids[o.id] || typ != "" && o.clientType() != typ {
			continue
		}
		sb.WriteString(o.describe(now))
		sb.WriteByte('\n')
	}
	c.out.Verbatim(sb.String())
}

// describe is the connection's CLIENT LIST line, with the fields this server
// tracks (Redis's names; fields about features Zaris has not got are left
// out rather than made up).
func (c *conn) describe(now time.Time) string {
	c.wmu.Lock()
	omem := len(c.wq)
	c.wmu.Unlock()
	flags := ""
	switch {
	case c.mon.monitor.Load():
		flags += "O"
	case c.outputClass() == classPubSub:
		flags += "P"
	}
	if c.blocked.Load() {
		flags += "b"
	}
	trackFlags, redir := c.trackFlags()
	flags += trackFlags
	if c.mon.noEvict.Load() {
		flags += "e"
	}
	if c.mon.noTouch.Load() {
		flags += "T"
	}
	if flags == "" {
		flags = "N"
	}
	qbuf := c.inBuf.Load()
	events := "r"
	if omem > 0 {
		events = "rw"
	}
	cmd := "NULL"
	if lc := c.lastCmd.Load(); lc != nil {
		cmd = lc.name
	}
	age := int64(now.Sub(c.created) / time.Second)
	idle := int64(now.Sub(time.Unix(0, c.lastActive.Load())) / time.Second)
	var b bytes.Buffer
	b.WriteString("id=" + strconv.FormatInt(c.id, 10))
	b.WriteString(" addr=" + c.nc.RemoteAddr().String())
	b.WriteString(" laddr=" + c.nc.LocalAddr().String())
	b.WriteString(" fd=" + strconv.FormatInt(c.id, 10))
	b.WriteString(" name=" + loadString(c.name.Load()))
	b.WriteString(" age=" + strconv.FormatInt(age, 10))
	b.WriteString(" idle=" + strconv.FormatInt(max(idle, 0), 10))
	sub, psub := 0, 0
	if sp := c.subShared.Load(); sp != nil {
		sub, psub = len(sp.Channels(false)), len(sp.Channels(true))
	}
	b.WriteString(" flags=" + flags + " db=0 sub=" + strconv.Itoa(sub) + " psub=" + strconv.Itoa(psub) + " ssub=" + c.shardSubCount() + " multi=-1")
	b.WriteString(" qbuf=" + strconv.FormatInt(qbuf, 10) + " qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0")
	b.WriteString(" obl=0 oll=0 omem=" + strconv.Itoa(omem) + " tot-mem=" + strconv.FormatInt(qbuf+int64(omem), 10))
	b.WriteString(" events=" + events)
	b.WriteString(" cmd=" + cmd)
	b.WriteString(" user=" + c.userName() + " redir=" + redir)
	b.WriteString(" resp=" + strconv.Itoa(int(c.proto.Load())))
	b.WriteString(" lib-name=" + loadString(c.libName.Load()))
	b.WriteString(" lib-ver=" + loadString(c.libVer.Load()))
	return b.String()
}

func cmdClientKill(c *conn, args [][]byte) {
	if len(args) == 3 {
		// Old form: CLIENT KILL addr:port.
		addr := string(args[2])
		for _, o := range c.srv.snapshotClients() {
			if o.nc.RemoteAddr().String() == addr {
				o.kill(c)
				c.out.OK()
				return
			}
		}
		c.err("ERR No such client")
		return
	}
	var (
		id           int64
		addr, laddr  string
		typ          string
		skipMe       = true
		filtersFound bool
	)
	for j := 2; j < len(args); j += 2 {
		if j+1 >= len(args) {
			c.err(msgSyntax)
			return
		}
		v := args[j+1]
		switch {
		case eq(args[j], "ID"):
			n, ok := parseInt(v)
			if !ok || n <= 0 {
				c.err("ERR client-id should be greater than 0")
				return
			}
			id = n
		case eq(args[j], "ADDR"):
			addr = string(v)
		case eq(args[j], "LADDR"):
			laddr = string(v)
		case eq(args[j], "USER"):
			if string(v) != "default" {
				c.err("ERR No such user '" + truncate(v, 128) + "'")
				return
			}
		case eq(args[j], "TYPE"):
			t, ok := clientTypeArg(v)
			if !ok {
				c.err("ERR Unknown client type '" + truncate(v, 128) + "'")
				return
			}
			typ = t
		case eq(args[j], "SKIPME"):
			switch {
			case eq(v, "yes"):
				skipMe = true
			case eq(v, "no"):
				skipMe = false
			default:
				c.err(msgSyntax)
				return
			}
		default:
			c.err(msgSyntax)
			return
		}
		filtersFound = true
	}
	if !filtersFound {
		c.err(msgSyntax)
		return
	}
	killed := 0
	for _, o := range c.srv.snapshotClients() {
		switch {
		case id != 0 && o.id != id,
			addr != "" && o.nc.RemoteAddr().String() != addr,
			laddr != "" && o.nc.LocalAddr().String() != laddr,
			typ != "" && o.clientType() != typ,
			skipMe && o == c:
			continue
		}
		o.kill(c)
		killed++
	}
	c.out.Int(int64(killed))
}

// kill closes o on behalf of CLIENT KILL issued by by; a client killing
// itself gets its reply first.
func (o *conn) kill(by *conn) {
	o.killed.Store(true)
	if o == by {
		o.closing = true
		return
	}
	o.abort()
}

func cmdClientSetInfo(c *conn, args [][]byte) {
	attr, val := args[2], args[3]
	var dst interface{ Store(*string) }
	switch {
	case eq(attr, "LIB-NAME"):
		dst = &c.libName
	case eq(attr, "LIB-VER"):
		dst = &c.libVer
	default:
		c.err("ERR Unrecognized option '" + truncate(attr, 128) + "'")
		return
	}
	if !validClientName(val) && len(val) > 0 {
		c.err("ERR " + strings.ToLower(string(attr)) + " cannot contain spaces, newlines or special characters.")
		return
	}
	s := string(val)
	dst.Store(&s)
	c.out.OK()
}

// reply modes of CLIENT REPLY.
const (
	replyOn uint8 = iota
	replyOff
	replySkip     // skip the reply of the next command
	replySkipNext // set by SKIP itself: becomes replySkip after this command
)

func cmdClientReply(c *conn, args [][]byte) {
	switch {
	case eq(args[2], "ON"):
		c.reply = replyOn
		c.out.OK()
	case eq(args[2], "OFF"):
		c.reply = replyOff
	case eq(args[2], "SKIP"):
		c.reply = replySkipNext
	default:
		c.err(msgSyntax)
	}
}

func cmdClientHelp(c *conn, _ [][]byte) {
	writeHelp(c, "CLIENT", []string{
		"ID", "    Return the ID of the current connection.",
		"SETNAME <name>", "    Assign the name <name> to the current connection.",
		"GETNAME", "    Return the name of the current connection.",
		"INFO", "    Return information about the current client connection.",
		"LIST [TYPE normal] [ID <id> [<id> ...]]", "    Return information about client connections.",
		"KILL <ip:port>", "    Kill connection made from <ip:port>.",
		"KILL <option> <value> [<option> <value> [...]]", "    Kill connections. Options are: ID <id>, ADDR <ip:port>, LADDR <ip:port>, USER default, TYPE normal, SKIPME (YES|NO).",
		"SETINFO <option> <value>", "    Set client meta attr. Options are: LIB-NAME, LIB-VER.",
		"REPLY (ON|OFF|SKIP)", "    Control the replies sent to the current connection.",
	})
}

// writeHelp writes a HELP reply the way Redis does: a header line, the
// lines, and the HELP line, as simple strings.
func writeHelp(c *conn, cmd string, lines []string) {
	c.out.Array(len(lines) + 3)
	c.out.Simple(cmd + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		c.out.Simple(l)
	}
	c.out.Simple("HELP")
	c.out.Simple("    Print this help.")
}

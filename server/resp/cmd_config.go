package resp

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/internal/glob"
	"github.com/zaris-io/zaris/server/store"
)

// CONFIG GET/SET/RESETSTAT/REWRITE with Redis 7.0's parameter names, value
// syntax and errors. Three sorts of parameter:
//   - live: the value changes what the node does (maxmemory and
//     maxmemory-policy reach the store; timeout, maxclients,
//     proto-max-bulk-len, client-query-buffer-limit,
//     client-output-buffer-limit, slowlog-*, latency-monitor-threshold,
//     busy-reply-threshold, notify-keyspace-events reach the front end);
//   - accepted: Redis's encoding and tuning knobs (hash-max-listpack-*,
//     activerehashing, lazyfree-*, …) are validated as Redis validates them
//     and reported back, and change nothing: Zaris's collections have one
//     encoding each, and a client's set-up must not fail over them;
//   - immutable: what is fixed for the node's life (port, bind, databases,
//     cluster-enabled, …) answers Redis's "can't set immutable config".

// paramKind is how a parameter's value is parsed and printed.
type paramKind uint8

const (
	kindBool   paramKind = iota // yes|no
	kindInt                     // a decimal integer in [min, max]
	kindMem                     // a memory value (1gb, 10m, 4096) in [min, max]
	kindEnum                    // one of enum, any case
	kindString                  // any string
	kindCustom                  // parsed by parse
)

// configParam is one CONFIG parameter.
type configParam struct {
	name      string
	aliases   []string // other names of the same parameter (hash-max-ziplist-entries, …)
	kind      paramKind
	min, max  int64
	enum      []string
	deflt     string
	immutable bool
	// parse validates and normalises a kindCustom value, or refines the
	// check of another kind (an accepted value Zaris cannot honour); it
	// returns the value to store or Redis's error text.
	parse func(v string) (string, string)
	// apply makes a validated value take effect (live parameters).
	apply func(s *Server, v string)
	// get reads the value in force when it lives elsewhere than the
	// parameter store (the store's cap, the listener's port).
	get func(s *Server) string
}

// lfuParam is CONFIG's view of one of the store's two LFU parameters
// (which: 0 the log factor, 1 the decay time), read and set live there.
func lfuParam(name string, which int) *configParam {
	get := func(s *Server) [2]int {
		f, d := s.store.LFU()
		return [2]int{f, d}
	}
	return &configParam{name: name, kind: kindInt, min: 0, max: int32Max,
		get: func(s *Server) string { return strconv.Itoa(get(s)[which]) },
		apply: func(s *Server, v string) {
			p := get(s)
			p[which], _ = strconv.Atoi(v)
			_ = s.store.SetLFU(p[0], p[1])
		}}
}

// liveLimits are the front end's limits CONFIG SET may change while
// connections read them: atomics, loaded where they apply.
type liveLimits struct {
	maxClients   atomic.Int64
	idleTimeout  atomic.Int64 // ns; 0 = never
	queryLimit   atomic.Int64 // client-query-buffer-limit
	maxBulkLen   atomic.Int64 // proto-max-bulk-len
	outLimits    atomic.Pointer[outputLimits]
	slowerThan   atomic.Int64 // slowlog-log-slower-than, µs; <0 = off
	slowlogLen   atomic.Int64 // slowlog-max-len
	latencyMs    atomic.Int64 // latency-monitor-threshold, ms; 0 = off
	busyReplyMs  atomic.Int64 // busy-reply-threshold (lua-time-limit), ms
	startMaxMem  int64        // the store's cap at start: CONFIG SET maxmemory 0 returns to it
	tcpKeepalive atomic.Int64
}

// BusyReplyThreshold is the script time limit set with CONFIG SET
// busy-reply-threshold / lua-time-limit (Redis's default 5 s): past it a
// running script makes other clients' commands answer BUSY.
func (s *Server) BusyReplyThreshold() time.Duration {
	return time.Duration(s.live.busyReplyMs.Load()) * time.Millisecond
}

const (
	int32Max  = math.MaxInt32
	int64Max  = math.MaxInt64
	uint32Max = math.MaxUint32
)

var maxmemoryPolicies = []string{"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
	"allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"}

// configTable lists every parameter, by canonical name.
var configTable = []*configParam{
	// Memory and eviction: the store's real cap and policy.
	{name: "maxmemory", kind: kindMem, min: 0, max: int64Max, get: func(s *Server) string {
		return strconv.FormatInt(s.store.Config().MaxMemoryBytes, 10)
	}, apply: func(s *Server, v string) {
		n, _ := strconv.ParseInt(v, 10, 64)
		if n == 0 {
			n = s.live.startMaxMem // Zaris has no unlimited (R-MEM-1): 0 restores the node's configured cap
		}
		_ = s.store.SetMaxMemory(n)
	}},
	{name: "maxmemory-policy", kind: kindEnum, enum: maxmemoryPolicies,
		get: func(s *Server) string { return evictionPolicyName(s.store.Config().Eviction) },
		apply: func(s *Server, v string) {
			p, err := store.ParseEvictionPolicy(v)
			if err == nil {
				_ = s.store.SetEviction(p)
			}
		}},
	{name: "maxmemory-samples", kind: kindInt, min: 1, max: int32Max, deflt: "5"},
	{name: "maxmemory-eviction-tenacity", kind: kindInt, min: 0, max: 100, deflt: "10"},
	{name: "maxmemory-clients", kind: kindMem, min: 0, max: int64Max, deflt: "0"},
	lfuParam("lfu-log-factor", 0),
	lfuParam("lfu-decay-time", 1),
	{name: "replica-ignore-maxmemory", aliases: []string{"slave-ignore-maxmemory"}, kind: kindBool, deflt: "yes"},

	// Encodings: accepted and reported; Zaris has one encoding per type.
	{name: "hash-max-listpack-entries", aliases: []string{"hash-max-ziplist-entries"}, kind: kindInt, min: 0, max: int64Max, deflt: "512"},
	{name: "hash-max-listpack-value", aliases: []string{"hash-max-ziplist-value"}, kind: kindMem, min: 0, max: int64Max, deflt: "64"},
	{name: "zset-max-listpack-entries", aliases: []string{"zset-max-ziplist-entries"}, kind: kindInt, min: 0, max: int64Max, deflt: "128"},
	{name: "zset-max-listpack-value", aliases: []string{"zset-max-ziplist-value"}, kind: kindMem, min: 0, max: int64Max, deflt: "64"},
	{name: "set-max-intset-entries", kind: kindInt, min: 0, max: int64Max, deflt: "512"},
	{name: "set-max-listpack-entries", kind: kindInt, min: 0, max: int64Max, deflt: "128"},
	{name: "set-max-listpack-value", kind: kindMem, min: 0, max: int64Max, deflt: "64"},
	{name: "list-max-listpack-size", aliases: []string{"list-max-ziplist-size"}, kind: kindInt, min: math.MinInt32, max: int32Max, deflt: "-2"},
	{name: "list-compress-depth", kind: kindInt, min: 0, max: int32Max, deflt: "0"},
	{name: "stream-node-max-bytes", kind: kindMem, min: 0, max: int64Max, deflt: "4096"},
	{name: "stream-node-max-entries", kind: kindInt, min: 0, max: int64Max, deflt: "100"},
	{name: "hll-sparse-max-bytes", kind: kindMem, min: 0, max: int64Max, deflt: "3000"},
	{name: "activerehashing", kind: kindBool, deflt: "yes"},
	{name: "activedefrag", kind: kindBool, deflt: "no"},
	{name: "active-expire-effort", kind: kindInt, min: 1, max: 10, deflt: "1"},
	{name: "hz", kind: kindInt, min: 0, max: int32Max, deflt: "10"},
	{name: "dynamic-hz", kind: kindBool, deflt: "yes"},
	{name: "lazyfree-lazy-eviction", kind: kindBool, deflt: "no"},
	{name: "lazyfree-lazy-expire", kind: kindBool, deflt: "no"},
	{name: "lazyfree-lazy-server-del", kind: kindBool, deflt: "no"},
	{name: "lazyfree-lazy-user-del", kind: kindBool, deflt: "no"},
	{name: "lazyfree-lazy-user-flush", kind: kindBool, deflt: "no"},
	{name: "replica-lazy-flush", aliases: []string{"slave-lazy-flush"}, kind: kindBool, deflt: "no"},
	{name: "tracking-table-max-keys", kind: kindInt, min: 0, max: int64Max, deflt: "1000000",
		apply: func(s *Server, v string) { n, _ := strconv.ParseInt(v, 10, 64); s.trackSetMaxKeys(n) }},
	{name: "acllog-max-len", kind: kindInt, min: 0, max: int64Max, deflt: "128"},
	{name: "latency-tracking", kind: kindBool, deflt: "yes"},
	{name: "protected-mode", kind: kindBool, deflt: "yes"},
	{name: "loglevel", kind: kindEnum, enum: []string{"debug", "verbose", "notice", "warning"}, deflt: "notice"},

	// Persistence: Zaris keeps no RDB or AOF (durability is replication);
	// turning them off is accepted, asking for them is refused.
	{name: "save", kind: kindCustom, parse: parseSave, deflt: ""},
	{name: "appendonly", kind: kindBool, deflt: "no", parse: func(v string) (string, string) {
		if v == "yes" {
			return "", "Zaris keeps no append-only file (an in-memory cache; replicas hold the copies)"
		}
		return v, ""
	}},
	{name: "appendfsync", kind: kindEnum, enum: []string{"always", "everysec", "no"}, deflt: "everysec"},
	{name: "stop-writes-on-bgsave-error", kind: kindBool, deflt: "yes"},
	{name: "rdbcompression", kind: kindBool, deflt: "yes"},
	{name: "rdbchecksum", kind: kindBool, deflt: "yes"},

	// Connections and limits: live.
	{name: "timeout", kind: kindInt, min: 0, max: int32Max,
		get: func(s *Server) string { return strconv.FormatInt(s.live.idleTimeout.Load()/int64(time.Second), 10) },
		apply: func(s *Server, v string) {
			n, _ := strconv.ParseInt(v, 10, 64)
			s.live.idleTimeout.Store(n * int64(time.Second))
		}},
	{name: "tcp-keepalive", kind: kindInt, min: 0, max: int32Max,
		get:   func(s *Server) string { return strconv.FormatInt(s.live.tcpKeepalive.Load(), 10) },
		apply: func(s *Server, v string) { n, _ := strconv.ParseInt(v, 10, 64); s.live.tcpKeepalive.Store(n) }},
	{name: "maxclients", kind: kindInt, min: 1, max: uint32Max,
		get:   func(s *Server) string { return strconv.FormatInt(s.live.maxClients.Load(), 10) },
		apply: func(s *Server, v string) { n, _ := strconv.ParseInt(v, 10, 64); s.live.maxClients.Store(n) }},
	{name: "proto-max-bulk-len", kind: kindMem, min: 1 << 20, max: int64Max,
		get:   func(s *Server) string { return strconv.FormatInt(s.live.maxBulkLen.Load(), 10) },
		apply: func(s *Server, v string) { n, _ := strconv.ParseInt(v, 10, 64); s.live.maxBulkLen.Store(n) }},
	{name: "client-query-buffer-limit", kind: kindMem, min: 1 << 20, max: int64Max,
		get:   func(s *Server) string { return strconv.FormatInt(s.live.queryLimit.Load(), 10) },
		apply: func(s *Server, v string) { n, _ := strconv.ParseInt(v, 10, 64); s.live.queryLimit.Store(n) }},
	{name: "client-output-buffer-limit", kind: kindCustom, parse: nil, // set in init (needs the current value)
		get: func(s *Server) string { return s.live.outLimits.Load().String() }},
	{name: "notify-keyspace-events", kind: kindCustom, parse: parseNotifyKeyspaceEvents,
		get: func(s *Server) string { return s.NotifyKeyspaceEvents() },
		apply: func(s *Server, v string) {
			applyNotifyKeyspaceEvents(s, v)
			s.shareSetting("notify-keyspace-events", v)
		}},

	// Observability: live.
	{name: "slowlog-log-slower-than", kind: kindInt, min: -1, max: int64Max,
		get:   func(s *Server) string { return strconv.FormatInt(s.live.slowerThan.Load(), 10) },
		apply: func(s *Server, v string) { n, _ := strconv.ParseInt(v, 10, 64); s.live.slowerThan.Store(n) }},
	{name: "slowlog-max-len", kind: kindInt, min: 0, max: int64Max,
		get: func(s *Server) string { return strconv.FormatInt(s.live.slowlogLen.Load(), 10) },
		apply: func(s *Server, v string) {
			n, _ := strconv.ParseInt(v, 10, 64)
			s.live.slowlogLen.Store(n)
			s.slowlog.trim(int(min(n, int64(math.MaxInt32))))
		}},
	{name: "latency-monitor-threshold", kind: kindInt, min: 0, max: int64Max,
		get:   func(s *Server) string { return strconv.FormatInt(s.live.latencyMs.Load(), 10) },
		apply: func(s *Server, v string) { n, _ := strconv.ParseInt(v, 10, 64); s.live.latencyMs.Store(n) }},
	{name: "busy-reply-threshold", aliases: []string{"lua-time-limit"}, kind: kindInt, min: 0, max: int64Max,
		get: func(s *Server) string {
			return strconv.FormatInt(int64(time.Duration(s.scripts.limit.Load())/time.Millisecond), 10)
		},
		apply: func(s *Server, v string) {
			n, _ := strconv.ParseInt(v, 10, 64)
			s.live.busyReplyMs.Store(n)
			s.SetScriptTimeLimit(time.Duration(n) * time.Millisecond)
		}},

	// Fixed for the node's life.
	{name: "databases", immutable: true, get: func(*Server) string { return "1" }},
	{name: "cluster-enabled", immutable: true, get: func(*Server) string { return "yes" }},
	{name: "port", immutable: true, get: func(s *Server) string { return strconv.Itoa(s.port()) }},
	{name: "bind", immutable: true, get: func(s *Server) string { return s.bindAddr() }},
	{name: "daemonize", immutable: true, get: func(*Server) string { return "no" }},
	{name: "io-threads", immutable: true, get: func(*Server) string { return "1" }},
	{name: "tcp-backlog", immutable: true, get: func(*Server) string { return "511" }},
	{name: "unixsocket", immutable: true, get: func(*Server) string { return "" }},
	{name: "supervised", immutable: true, get: func(*Server) string { return "no" }},
	{name: "requirepass", immutable: true, get: func(*Server) string { return "" }}, // the token is never shown
	{name: "dbfilename", immutable: true, get: func(*Server) string { return "" }},
	{name: "appendfilename", immutable: true, get: func(*Server) string { return "" }},
}

// configByName finds a parameter by its name or an alias, any case.
var configByName = map[string]*configParam{}

func init() {
	for _, p := range configTable {
		if p.name == "client-output-buffer-limit" {
			p.parse = nil // parsed against the current classes in cmdConfigSet
		}
		for _, n := range append([]string{p.name}, p.aliases...) {
			if _, dup := configByName[n]; dup {
				panic("resp: config parameter " + n + " listed twice")
			}
			configByName[n] = p
		}
	}
}

// initConfig loads the parameter store's defaults and the live limits from
// the server's Config.
func (s *Server) initConfig() {
	s.cfgVals = map[string]string{}
	for _, p := range configTable {
		if p.get == nil {
			s.cfgVals[p.name] = p.deflt
		}
	}
	l := &s.live
	l.maxClients.Store(int64(s.cfg.MaxClients))
	l.idleTimeout.Store(int64(s.cfg.IdleTimeout))
	l.queryLimit.Store(int64(s.cfg.MaxQueryBuffer))
	l.maxBulkLen.Store(int64(s.cfg.Limits.MaxBulkLen))
	l.slowerThan.Store(10000)
	l.slowlogLen.Store(128)
	l.busyReplyMs.Store(5000)
	l.tcpKeepalive.Store(300)
	s.trk.maxKeys.Store(1_000_000)
	l.startMaxMem = s.store.Config().MaxMemoryBytes
	ol := defaultOutputLimits()
	l.outLimits.Store(&ol)
}

func evictionPolicyName(p store.EvictionPolicy) string {
	if p == store.EvictLRU {
		return "allkeys-lru"
	}
	return p.String()
}

// configValue is a parameter's current value.
func (s *Server) configValue(p *configParam) string {
	if p.get != nil {
		return p.get(s)
	}
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	return s.cfgVals[p.name]
}

// bindAddr is the address the RESP listener is bound to, as Redis's bind
// prints it.
func (s *Server) bindAddr() string {
	if a, ok := s.listenAddr.Load().(interface{ String() string }); ok {
		host := a.String()
		if i := strings.LastIndexByte(host, ':'); i >= 0 {
			host = strings.Trim(host[:i], "[]")
		}
		if host == "" || host == "::" || host == "0.0.0.0" {
			return "* -::*"
		}
		return host
	}
	return ""
}

func cmdConfigGet(c *conn, args [][]byte) {
	type pair struct{ name, value string }
	seen := map[string]bool{}
	var pairs []pair
	for _, pat := range args[2:] {
		lp := strings.ToLower(string(pat))
		for _, p := range configTable {
			for _, n := range append([]string{p.name}, p.aliases...) {
				if !seen[n] && glob.Match(lp, n) {
					seen[n] = true
					pairs = append(pairs, pair{n, c.srv.configValue(p)})
				}
			}
		}
	}
	c.out.Map(len(pairs))
	for _, p := range pairs {
		c.out.BulkString(p.name)
		c.out.BulkString(p.value)
	}
}

func configSetError(name, msg string) string {
	return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + msg
}

// validate parses a CONFIG SET value of p as Redis would, returning the
// normalised value or Redis's error text.
func (p *configParam) validate(s *Server, raw string) (string, string) {
	v := raw
	switch p.kind {
	case kindBool:
		switch strings.ToLower(v) {
		case "yes":
			v = "yes"
		case "no":
			v = "no"
		default:
			return "", "argument must be 'yes' or 'no'"
		}
	case kindInt:
		n, ok := parseStrtoll(v)
		if !ok {
			return "", "argument couldn't be parsed into an integer"
		}
		if n < p.min || n > p.max {
			return "", "argument must be between " + strconv.FormatInt(p.min, 10) + " and " + strconv.FormatInt(p.max, 10) + " inclusive"
		}
		v = strconv.FormatInt(n, 10)
	case kindMem:
		n, ok := parseMemory(v)
		if !ok || n > math.MaxInt64 {
			return "", "argument must be a memory value"
		}
		if int64(n) < p.min || int64(n) > p.max {
			return "", "argument must be between " + strconv.FormatInt(p.min, 10) + " and " + strconv.FormatInt(p.max, 10) + " inclusive"
		}
		v = strconv.FormatUint(n, 10)
	case kindEnum:
		found := false
		for _, e := range p.enum {
			if strings.EqualFold(e, v) {
				v, found = e, true
				break
			}
		}
		if !found {
			return "", "argument(s) must be one of the following: " + strings.Join(p.enum, ", ")
		}
	case kindCustom:
		if p.name == "client-output-buffer-limit" {
			ol, msg := s.live.outLimits.Load().parse(v)
			if msg != "" {
				return "", msg
			}
			return ol.String(), ""
		}
	}
	if p.parse != nil {
		return p.parse(v)
	}
	return v, ""
}

func cmdConfigSet(c *conn, args [][]byte) {
	if len(args)%2 != 0 {
		c.err(msgSyntax) // Redis 7.0: an odd number of arguments past the arity
		return
	}
	type change struct {
		p *configParam
		v string
	}
	var changes []change
	seen := map[string]bool{} // by the name given: an alias and its name are two names, as in Redis
	// Redis's order: every name is looked up first (unknown, immutable,
	// duplicate), then every value is validated; nothing applies unless all
	// pass.
	for j := 2; j < len(args); j += 2 {
		name := strings.ToLower(string(args[j]))
		p := configByName[name]
		switch {
		case p == nil:
			c.err("ERR Unknown option or number of arguments for CONFIG SET - '" + truncate(args[j], 128) + "'")
			return
		case p.immutable:
			c.err(configSetError(string(args[j]), "can't set immutable config"))
			return
		case seen[name]:
			c.err(configSetError(string(args[j]), "duplicate parameter"))
			return
		}
		seen[name] = true
		changes = append(changes, change{p: p, v: string(args[j+1])})
	}
	for i, ch := range changes {
		v, msg := ch.p.validate(c.srv, ch.v)
		if msg != "" {
			c.err(configSetError(string(args[2+2*i]), msg))
			return
		}
		changes[i].v = v
	}
	s := c.srv
	for _, ch := range changes {
		switch {
		case ch.p.name == "client-output-buffer-limit":
			ol, _ := s.live.outLimits.Load().parse(ch.v)
			s.live.outLimits.Store(&ol)
		case ch.p.apply != nil:
			ch.p.apply(s, ch.v)
		}
		if ch.p.get == nil {
			s.cfgMu.Lock()
			s.cfgVals[ch.p.name] = ch.v
			s.cfgMu.Unlock()
		}
	}
	c.out.OK()
}

// parseStrtoll parses an integer parameter as Redis does (strtoll with the
// whole string consumed): leading blanks, a sign and leading zeros are
// accepted; anything after the digits, or an overflow, is not.
func parseStrtoll(v string) (int64, bool) {
	v = strings.TrimLeft(v, " \t\n\v\f\r")
	neg := false
	if v != "" && (v[0] == '+' || v[0] == '-') {
		neg = v[0] == '-'
		v = v[1:]
	}
	if v == "" {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(v); i++ {
		d := v[i]
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + uint64(d-'0')
		if n > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return -int64(n), true // 1<<63 negated is MinInt64
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}

// parseMemory parses Redis's memory values (memtoull): digits with an
// optional unit b, k (1000), kb (1024), m, mb, g, gb, any case.
func parseMemory(v string) (uint64, bool) {
	l := strings.ToLower(v)
	mul := uint64(1)
	for _, u := range []struct {
		suffix string
		mul    uint64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}} {
		if strings.HasSuffix(l, u.suffix) {
			l, mul = l[:len(l)-len(u.suffix)], u.mul
			break
		}
	}
	if l == "" {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(l); i++ {
		d := l[i]
		if d < '0' || d > '9' {
			return 0, false
		}
		if n > (math.MaxUint64-uint64(d-'0'))/10 {
			return 0, false
		}
		n = n*10 + uint64(d-'0')
	}
	if n != 0 && mul > math.MaxUint64/n {
		return 0, false
	}
	return n * mul, true
}

// parseSave validates Redis's save parameter: pairs of seconds and changes.
// An empty value (no snapshots) is accepted; asking for snapshots is
// refused: Zaris writes no RDB file.
func parseSave(v string) (string, string) {
	f := strings.Fields(v)
	if len(f)%2 != 0 {
		return "", "Invalid save parameters"
	}
	for _, x := range f {
		if n, ok := parseInt([]byte(x)); !ok || n < 0 || n > int32Max {
			return "", "Invalid save parameters"
		}
	}
	if len(f) > 0 {
		return "", "Zaris writes no RDB snapshots (an in-memory cache; replicas hold the copies): only save \"\" is accepted"
	}
	return "", ""
}

func parseNotifyKeyspaceEvents(v string) (string, string) {
	flags, ok := normaliseNotifyFlags(v)
	if !ok {
		return "", "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
	}
	return flags, ""
}

func applyNotifyKeyspaceEvents(s *Server, flags string) {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	s.notifyEvents = flags
	s.applyNotify(flags) // under cfgMu: the publisher follows the last value set
}

// Keyspace event classes, in the order Redis prints them.
const notifyAllClasses = "g$lshzxetd"

// normaliseNotifyFlags validates and normalises the flags the way Redis's
// keyspaceEventsStringToFlags / keyspaceEventsFlagsToString do.
func normaliseNotifyFlags(v string) (string, bool) {
	var set [256]bool
	for i := 0; i < len(v); i++ {
		ch := v[i]
		switch {
		case ch == 'A':
			for j := 0; j < len(notifyAllClasses); j++ {
				set[notifyAllClasses[j]] = true
			}
		case strings.IndexByte(notifyAllClasses+"KEmn", ch) >= 0:
			set[ch] = true
		default:
			return "", false
		}
	}
	var b strings.Builder
	all := true
	for j := 0; j < len(notifyAllClasses); j++ {
		all = all && set[notifyAllClasses[j]]
	}
	if all {
		b.WriteByte('A')
	} else {
		for j := 0; j < len(notifyAllClasses); j++ {
			if set[notifyAllClasses[j]] {
				b.WriteByte(notifyAllClasses[j])
			}
		}
	}
	for _, ch := range []byte("KEmn") {
		if set[ch] {
			b.WriteByte(ch)
		}
	}
	return b.String(), true
}

func cmdConfigResetStat(c *conn, _ [][]byte) {
	c.srv.resetStats()
	c.srv.cmdStats.reset()
	c.out.OK()
}

// cmdConfigRewrite: a Zaris node is configured by flags and its config
// file is not Redis's; there is nothing Redis-shaped to rewrite.
func cmdConfigRewrite(c *conn, _ [][]byte) {
	c.err("ERR The server is running without a config file")
}

func cmdConfigHelp(c *conn, _ [][]byte) {
	var names []string
	for _, p := range configTable {
		if !p.immutable {
			names = append(names, p.name)
		}
	}
	sort.Strings(names)
	writeHelp(c, "CONFIG", []string{
		"GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>", "    Set the configuration <directive> to <value> (settable: " + strings.Join(names, ", ") + ").",
		"RESETSTAT", "    Reset statistics reported by the INFO command.",
		"REWRITE", "    Refused: a Zaris node has no Redis config file to rewrite.",
	})
}

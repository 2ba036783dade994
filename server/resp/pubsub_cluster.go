package resp

import (
	"context"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zaris-io/zaris/internal/panics"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/server/bus"
	"github.com/zaris-io/zaris/server/store"
)

// Pub/sub across the cluster (R-DS-7) and Redis 7's sharded pub/sub.
//
// PUBLISH delivers to this node's subscribers and the store's broker
// forwards the message to every other member through the cluster bus
// (server/bus): a subscriber on any node receives it once. Its reply is
// the number of this node's subscribers that received it — what Redis
// Cluster answers — so that PUBLISH never waits for another node. PUBSUB
// CHANNELS, NUMSUB and NUMPAT ask every member and merge the answers.
//
// SSUBSCRIBE, SUNSUBSCRIBE and SPUBLISH address a shard channel: it lives
// on the node that owns its slot (a MOVED redirect elsewhere), in a
// namespace of its own (a PUBLISH never reaches an SSUBSCRIBE). When the
// slot's partition moves or fails over, the node that lost it sends each
// of its subscribers Redis's "sunsubscribe" push for the channel, so the
// client subscribes again where the slot now lives.

// clusterQueryTimeout bounds a PUBSUB question to the other members; one
// that does not answer in time is left out of the answer.
const clusterQueryTimeout = 2 * time.Second

func init() {
	p := func(c *command) *command { c.group = "pubsub"; return c }
	psFlags := flagPubSub | flagNoScript | flagLoading | flagStale
	register(
		p(&command{name: "ssubscribe", arity: -2, flags: psFlags, first: 1, last: -1, step: 1, since: "7.0.0",
			summary: "Listens for messages published to shard channels.", run: cmdSSubscribe}),
		p(&command{name: "sunsubscribe", arity: -1, flags: psFlags, first: 1, last: -1, step: 1, since: "7.0.0",
			summary: "Stops listening to messages posted to shard channels (all of them without arguments).", run: cmdSUnsubscribe}),
		p(&command{name: "spublish", arity: 3, flags: flagPubSub | flagLoading | flagStale | flagFast, first: 1, last: 1, step: 1, since: "7.0.0",
			summary: "Posts a message to a shard channel; returns the number of subscribers that received it.", run: cmdSPublish}),
	)
	ps := commandTable["pubsub"]
	for _, sub := range []*command{
		{name: "shardchannels", arity: -2, flags: flagPubSub | flagLoading | flagStale, summary: "Returns the active shard channels ([pattern]).", run: cmdPubSubShardChannels},
		{name: "shardnumsub", arity: -2, flags: flagPubSub | flagLoading | flagStale, summary: "Returns the count of subscribers of shard channels.", run: cmdPubSubShardNumSub},
	} {
		sub.parent = ps
		sub.name = "pubsub|" + sub.name
		sub.group = "pubsub"
		sub.since = "7.0.0"
		ps.subs = append(ps.subs, sub)
	}
}

// clusterAnswers asks the other members a PUBSUB question through the bus
// (none without a bus: a node on its own).
func (c *conn) clusterAnswers(name string, args []string) []bus.Frame {
	b := c.srv.cfg.Bus
	if b == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterQueryTimeout)
	defer cancel()
	out, _ := b.Query(ctx, name, args)
	return out
}

// clusterChannels is PUBSUB CHANNELS over every member.
func (c *conn) clusterChannels(pattern string) []string {
	set := map[string]struct{}{}
	for _, ch := range c.srv.store.PubSub().ActiveChannels(pattern) {
		set[ch] = struct{}{}
	}
	var args []string
	if pattern != "" {
		args = []string{pattern}
	}
	for _, r := range c.clusterAnswers("channels", args) {
		for _, ch := range r.Args {
			set[ch] = struct{}{}
		}
	}
	out := make([]string, 0, len(set))
	for ch := range set {
		out = append(out, ch)
	}
	sort.Strings(out)
	return out
}

// clusterNumSub is PUBSUB NUMSUB over every member.
func (c *conn) clusterNumSub(channels []string) []int64 {
	counts := make([]int64, len(channels))
	for i, ch := range channels {
		counts[i] = int64(c.srv.store.PubSub().NumSub(ch))
	}
	if len(channels) == 0 {
		return counts
	}
	for _, r := range c.clusterAnswers("numsub", channels) {
		for i := 0; i < len(r.Ints) && i < len(counts); i++ {
			counts[i] += r.Ints[i]
		}
	}
	return counts
}

// clusterNumPat is PUBSUB NUMPAT over every member: the number of distinct
// patterns subscribed anywhere (Redis counts unique patterns).
func (c *conn) clusterNumPat() int {
	set := map[string]struct{}{}
	for _, p := range c.srv.store.PubSub().ActivePatterns() {
		set[p] = struct{}{}
	}
	for _, r := range c.clusterAnswers("numpat", nil) {
		for _, p := range r.Args {
			set[p] = struct{}{}
		}
	}
	return len(set)
}

// --- sharded pub/sub ---

// shardSubs tracks the connections with shard subscriptions, for the
// owner check that unsubscribes the channels whose slot left this node.
type shardSubs struct {
	once  sync.Once
	mu    sync.Mutex // guards conns, stop
	conns map[*conn]struct{}
	stop  chan struct{}
}

// shardCheckInterval: how soon after a slot leaves this node its shard
// subscribers get their sunsubscribe.
const shardCheckInterval = 100 * time.Millisecond

func (s *Server) trackShardConn(c *conn) {
	sh := &s.shards
	sh.once.Do(func() {
		sh.mu.Lock()
		sh.conns = map[*conn]struct{}{}
		if sh.stop == nil {
			sh.stop = make(chan struct{})
			go s.watchShardOwners(sh.stop)
		}
		sh.mu.Unlock()
	})
	sh.mu.Lock()
	if sh.conns != nil {
		sh.conns[c] = struct{}{}
	}
	sh.mu.Unlock()
}

func (s *Server) untrackShardConn(c *conn) {
	sh := &s.shards
	sh.mu.Lock()
	delete(sh.conns, c)
	sh.mu.Unlock()
}

// stopShardWatch ends the owner check (Shutdown, Close); safe twice.
func (s *Server) stopShardWatch() {
	sh := &s.shards
	sh.once.Do(func() {}) // no check starts after this
	sh.mu.Lock()
	if sh.stop != nil {
		select {
		case <-sh.stop:
		default:
			close(sh.stop)
		}
	} else {
		sh.stop = make(chan struct{})
		close(sh.stop)
	}
	sh.mu.Unlock()
}

func (s *Server) watchShardOwners(stop chan struct{}) {
	t := time.NewTicker(shardCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		s.checkShardOwners()
	}
}

// checkShardOwners runs one owner check; a panic (a bug) is logged and the
// next tick checks again.
func (s *Server) checkShardOwners() {
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("panic in the shard-channel owner check", "panic", panics.Describe(v), "stack", string(debug.Stack()))
		}
	}()
	s.shards.mu.Lock()
	conns := make([]*conn, 0, len(s.shards.conns))
	for c := range s.shards.conns {
		conns = append(conns, c)
	}
	s.shards.mu.Unlock()
	for _, c := range conns {
		c.dropMovedShardChannels()
	}
}

// shardServed reports whether the slot of shard channel ch is still this
// node's: a segment this node owns, or one the committed map still names it
// the owner of. A segment only fenced or between two applies of the same
// ownership (not owned for a moment, the map unchanged) keeps its
// subscribers; only a map that hands the slot to another node ends them.
func (s *Server) shardServed(ch string) bool {
	seg := placement.SegmentOf(ch, s.segs)
	if s.store.Segment(seg).Owned() {
		return true
	}
	src := s.cfg.Routing
	if src == nil {
		return true
	}
	m := src.RoutingMap()
	if m == nil || int(seg) >= len(m.SegmentOwner) {
		return true
	}
	owner := m.SegmentOwner[seg]
	if owner < 0 || int(owner) >= len(m.Nodes) {
		return true // no node serves it (CLUSTERDOWN): not moved anywhere
	}
	return m.Nodes[owner].ID == s.cfg.NodeID
}

// dropMovedShardChannels unsubscribes the connection from the shard
// channels whose slot this node no longer serves, with a "sunsubscribe"
// push for each (Redis's answer to a slot that left the node).
func (c *conn) dropMovedShardChannels() {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	sub := c.ssub
	if sub == nil {
		return
	}
	var gone []string
	for _, ch := range sub.Channels(false) {
		if !c.srv.shardServed(ch) {
			gone = append(gone, ch)
		}
	}
	if len(gone) == 0 {
		return
	}
	sort.Strings(gone)
	counts := sub.Unsubscribe(gone...)
	w := Writer{Proto: int(c.proto.Load())}
	for i, ch := range gone {
		w.Push(3)
		w.BulkString("sunsubscribe")
		w.BulkString(ch)
		w.Int(int64(counts[i]))
	}
	c.send(w.B)
}

// shardSubscription returns the connection's shard subscription, creating
// it and its forwarder on first use.
func (c *conn) shardSubscription() *store.Subscription {
	if c.ssub == nil {
		c.ssub = c.srv.store.ShardPubSub().NewSubscription(subscriberBuffer)
		c.ssubShared.Store(c.ssub)
		c.srv.trackShardConn(c)
		go c.forward(c.ssub)
	}
	return c.ssub
}

func cmdSSubscribe(c *conn, args [][]byte) {
	names := make([]string, len(args)-1)
	for i, a := range args[1:] {
		names[i] = string(a)
	}
	// Every channel is of one slot (the dispatcher refuses CROSSSLOT on a
	// multi-node cluster): the first one names the owner.
	if !c.srv.shardServed(names[0]) {
		c.err(c.movedError(args[1]))
		return
	}
	sub := c.shardSubscription()
	c.pmu.Lock()
	defer c.pmu.Unlock()
	counts := sub.Subscribe(names...)
	for i, n := range names {
		c.out.Push(3)
		c.out.BulkString("ssubscribe")
		c.out.BulkString(n)
		c.out.Int(int64(counts[i]))
	}
	c.flush() // the confirmations before any message
}

func cmdSUnsubscribe(c *conn, args [][]byte) {
	var names []string
	for _, a := range args[1:] {
		names = append(names, string(a))
	}
	if c.ssub == nil && len(names) == 0 {
		c.out.Push(3)
		c.out.BulkString("sunsubscribe")
		c.out.Null()
		c.out.Int(0)
		return
	}
	sub := c.shardSubscription()
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if len(names) == 0 {
		names = sub.Channels(false)
		sort.Strings(names)
	}
	if len(names) == 0 {
		c.out.Push(3)
		c.out.BulkString("sunsubscribe")
		c.out.Null()
		c.out.Int(int64(sub.Count()))
		return
	}
	counts := sub.Unsubscribe(names...)
	for i, n := range names {
		c.out.Push(3)
		c.out.BulkString("sunsubscribe")
		c.out.BulkString(n)
		c.out.Int(int64(counts[i]))
	}
}

func cmdSPublish(c *conn, args [][]byte) {
	served := false
	if ch := view(args[1]); c.tx != nil && c.tx.Holds(ch) {
		// Inside EXEC or a script the channel's segment is locked by this
		// very command (its key spec names the channel): ask the view.
		served = c.tx.Serves(ch)
	} else {
		served = c.srv.shardServed(string(args[1]))
	}
	if !served {
		c.err(c.movedError(args[1]))
		return
	}
	c.out.Int(int64(c.srv.store.ShardPubSub().Publish(string(args[1]), append([]byte(nil), args[2]...))))
}

// PUBSUB SHARDCHANNELS / SHARDNUMSUB answer for this node, as Redis
// Cluster does: a shard channel lives on its slot's owner.
func cmdPubSubShardChannels(c *conn, args [][]byte) {
	pattern := ""
	switch len(args) {
	case 2:
	case 3:
		pattern = string(args[2])
	default:
		c.err("ERR unknown subcommand or wrong number of arguments for '" + cString(truncate(args[1], 128)) + "'. Try PUBSUB HELP.")
		return
	}
	chans := onlyEmptyName(c.srv.store.ShardPubSub().ActiveChannels(pattern), len(args) == 3 && pattern == "")
	slices.Sort(chans)
	c.out.Array(len(chans))
	for _, ch := range chans {
		c.out.BulkString(ch)
	}
}

func cmdPubSubShardNumSub(c *conn, args [][]byte) {
	b := c.srv.store.ShardPubSub()
	c.out.Array(2 * (len(args) - 2))
	for _, ch := range args[2:] {
		c.out.Bulk(ch)
		c.out.Int(int64(b.NumSub(string(ch))))
	}
}

// --- cluster settings ---

// shareSetting sends a setting made here by CONFIG SET to every member.
func (s *Server) shareSetting(name, value string) {
	if s.cfg.Bus != nil {
		s.cfg.Bus.Set(name, value)
	}
}

// ApplyClusterSetting applies a cluster setting another member made
// (the node's bus calls it): notify-keyspace-events, and the members'
// client-tracking interest ("tracking@<node id>", tracking.go).
func (s *Server) ApplyClusterSetting(name, value string) {
	switch name {
	case "notify-keyspace-events":
		flags, ok := normaliseNotifyFlags(value)
		if !ok {
			s.log.Warn("ignored an invalid cluster setting from a peer", "name", name, "value", value)
			return
		}
		applyNotifyKeyspaceEvents(s, flags)
	default:
		if id, ok := strings.CutPrefix(name, trackBusSetting); ok {
			s.trackPeerSetting(id, value)
			return
		}
		s.log.Warn("ignored an unknown cluster setting from a peer", "name", name)
	}
}

// shardSubCount is CLIENT LIST's ssub field.
func (c *conn) shardSubCount() string {
	if sp := c.ssubShared.Load(); sp != nil {
		return strconv.Itoa(sp.Count())
	}
	return "0"
}

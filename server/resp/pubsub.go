package resp

import (
	"slices"
	"sort"
	"strings"

	"github.com/zaris-io/zaris/server/store"
)

// Pub/Sub (R-DS-7) on the store's broker: SUBSCRIBE, PSUBSCRIBE,
// UNSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, PUBSUB. A connection's first
// subscription starts a forwarder goroutine that turns the subscription's
// messages into push replies ("message"/"pmessage", a RESP3 push or a RESP2
// array) and queues them behind the connection's replies. The reader holds
// pmu while it changes the subscription and writes the confirmations, so a
// message never overtakes the confirmation of its subscription.
//
// In RESP2 a subscribed connection accepts only the subscription commands,
// PING, QUIT and RESET, as in Redis; in RESP3 it accepts everything.

// subscriberBuffer: messages a subscriber may fall behind by before it is
// disconnected (its subscription overflows), like Redis's pubsub
// client-output-buffer-limit.
const subscriberBuffer = 4096

func init() {
	p := func(c *command) *command { c.group = "pubsub"; return c }
	psFlags := flagPubSub | flagNoScript | flagLoading | flagStale
	register(
		p(&command{name: "subscribe", arity: -2, flags: psFlags, since: "2.0.0",
			summary: "Listens for messages published to channels.", run: cmdSubscribe(false)}),
		p(&command{name: "psubscribe", arity: -2, flags: psFlags, since: "2.0.0",
			summary: "Listens for messages published to channels that match one or more patterns.", run: cmdSubscribe(true)}),
		p(&command{name: "unsubscribe", arity: -1, flags: psFlags, since: "2.0.0",
			summary: "Stops listening to messages posted to channels (all of them without arguments).", run: cmdUnsubscribe(false)}),
		p(&command{name: "punsubscribe", arity: -1, flags: psFlags, since: "2.0.0",
			summary: "Stops listening to messages published to channels that match one or more patterns (all without arguments).", run: cmdUnsubscribe(true)}),
		p(&command{name: "publish", arity: 3, flags: flagPubSub | flagLoading | flagStale | flagFast, since: "2.0.0",
			summary: "Posts a message to a channel; returns the number of subscribers that received it.", run: cmdPublish}),
		p(&command{name: "pubsub", arity: -2, since: "2.8.0", summary: "A container for Pub/Sub commands.", subs: []*command{
			{name: "channels", arity: -2, flags: flagPubSub | flagLoading | flagStale, summary: "Returns the active channels ([pattern]).", run: cmdPubSubChannels},
			{name: "numsub", arity: -2, flags: flagPubSub | flagLoading | flagStale, summary: "Returns a count of subscribers to channels.", run: cmdPubSubNumSub},
			{name: "numpat", arity: 2, flags: flagPubSub | flagLoading | flagStale, summary: "Returns a count of unique pattern subscriptions.", run: cmdPubSubNumPat},
			{name: "help", arity: 2, flags: flagLoading | flagStale, summary: "Returns helpful text about the PUBSUB subcommands.", run: cmdPubSubHelp},
		}}),
	)
}

// subscribedMode: a RESP2 connection with subscriptions accepts only these.
var subscribedModeCommands = map[string]bool{
	"subscribe": true, "psubscribe": true, "unsubscribe": true, "punsubscribe": true,
	"ssubscribe": true, "sunsubscribe": true,
	"ping": true, "quit": true, "reset": true,
}

// subscribed reports whether the connection has any subscription.
func (c *conn) subscribed() bool {
	return c.sub != nil && c.sub.Count() > 0 || c.ssub != nil && c.ssub.Count() > 0
}

// subscription returns the connection's subscription, creating it and its
// forwarder on first use.
func (c *conn) subscription() *store.Subscription {
	if c.sub == nil {
		c.sub = c.srv.store.PubSub().NewSubscription(subscriberBuffer)
		c.subShared.Store(c.sub)
		go c.forward(c.sub)
	}
	return c.sub
}

// forward writes the subscription's messages to the client until the
// subscription ends. A subscriber that fell behind is disconnected.
func (c *conn) forward(sub *store.Subscription) {
	defer c.guard("(pub/sub forwarder)")
	var w Writer
	for m := range sub.Messages() {
		ok := c.forwardBatch(&w, sub, m)
		w.B = keep(w.B)
		if !ok {
			return
		}
	}
	if sub.Err() != nil {
		c.logger().Warn("closing connection: the subscriber fell behind its messages", "buffer", subscriberBuffer)
		c.abort()
	}
}

// forwardBatch queues m and the messages already waiting behind it in one
// write, under pmu (released by defer: a panic must not leave it held).
func (c *conn) forwardBatch(w *Writer, sub *store.Subscription, m store.Message) bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	w.Proto = int(c.proto.Load())
	w.B = appendMessage(w, m)
drain: // batch what is already waiting into one write
	for len(w.B) < flushThreshold {
		select {
		case m, ok := <-sub.Messages():
			if !ok {
				break drain
			}
			w.B = appendMessage(w, m)
		default:
			break drain
		}
	}
	return c.send(w.B)
}

func appendMessage(w *Writer, m store.Message) []byte {
	if m.Sharded {
		w.Push(3)
		w.BulkString("smessage")
	} else if m.Pattern != "" {
		w.Push(4)
		w.BulkString("pmessage")
		w.BulkString(m.Pattern)
	} else {
		w.Push(3)
		w.BulkString("message")
	}
	w.BulkString(m.Channel)
	w.Bulk(m.Payload)
	return w.B
}

func cmdSubscribe(pattern bool) func(c *conn, args [][]byte) {
	kind := "subscribe"
	if pattern {
		kind = "psubscribe"
	}
	return func(c *conn, args [][]byte) {
		names := make([]string, len(args)-1)
		for i, a := range args[1:] {
			names[i] = string(a)
		}
		sub := c.subscription()
		c.pmu.Lock()
		defer c.pmu.Unlock()
		var counts []int
		if pattern {
			counts = sub.PSubscribe(names...)
		} else {
			counts = sub.Subscribe(names...)
		}
		for i, n := range names {
			c.out.Push(3)
			c.out.BulkString(kind)
			c.out.BulkString(n)
			c.out.Int(int64(counts[i]))
		}
		c.flush() // the confirmations before any message
	}
}

func cmdUnsubscribe(pattern bool) func(c *conn, args [][]byte) {
	kind := "unsubscribe"
	if pattern {
		kind = "punsubscribe"
	}
	return func(c *conn, args [][]byte) {
		var names []string
		for _, a := range args[1:] {
			names = append(names, string(a))
		}
		if c.sub == nil && len(names) == 0 {
			c.out.Push(3)
			c.out.BulkString(kind)
			c.out.Null()
			c.out.Int(0)
			return
		}
		sub := c.subscription()
		c.pmu.Lock()
		defer c.pmu.Unlock()
		if len(names) == 0 {
			names = sub.Channels(pattern)
			sort.Strings(names)
		}
		if len(names) == 0 {
			c.out.Push(3)
			c.out.BulkString(kind)
			c.out.Null()
			c.out.Int(int64(sub.Count()))
			return
		}
		var counts []int
		if pattern {
			counts = sub.PUnsubscribe(names...)
		} else {
			counts = sub.Unsubscribe(names...)
		}
		for i, n := range names {
			c.out.Push(3)
			c.out.BulkString(kind)
			c.out.BulkString(n)
			c.out.Int(int64(counts[i]))
		}
	}
}

func cmdPublish(c *conn, args [][]byte) {
	c.out.Int(int64(c.srv.store.PubSub().Publish(string(args[1]), append([]byte(nil), args[2]...))))
}

func cmdPubSubChannels(c *conn, args [][]byte) {
	pattern := ""
	switch len(args) {
	case 2:
	case 3:
		pattern = string(args[2])
	default: // Redis's addReplySubcommandSyntaxError, the subcommand as typed
		c.err("ERR unknown subcommand or wrong number of arguments for '" + cString(truncate(args[1], 128)) + "'. Try PUBSUB HELP.")
		return
	}
	chans := onlyEmptyName(c.clusterChannels(pattern), len(args) == 3 && pattern == "")
	c.out.Array(len(chans))
	for _, ch := range chans {
		c.out.BulkString(ch)
	}
}

// onlyEmptyName keeps of chans the empty channel name alone when empty is
// set: an empty PUBSUB CHANNELS pattern is a glob that matches only "" (as
// in Redis), where ActiveChannels("") lists every channel.
func onlyEmptyName(chans []string, empty bool) []string {
	if !empty {
		return chans
	}
	return slices.DeleteFunc(chans, func(ch string) bool { return ch != "" })
}

func cmdPubSubNumSub(c *conn, args [][]byte) {
	names := make([]string, len(args)-2)
	for i, ch := range args[2:] {
		names[i] = string(ch)
	}
	counts := c.clusterNumSub(names)
	c.out.Array(2 * len(names))
	for i, ch := range args[2:] {
		c.out.Bulk(ch)
		c.out.Int(counts[i])
	}
}

func cmdPubSubNumPat(c *conn, _ [][]byte) { c.out.Int(int64(c.clusterNumPat())) }

func cmdPubSubHelp(c *conn, _ [][]byte) {
	writeHelp(c, "PUBSUB", []string{
		"CHANNELS [<pattern>]", "    Return the currently active channels matching a <pattern> (default: '*').",
		"NUMPAT", "    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]", "    Return the number of subscribers for the specified channels, excluding pattern subscriptions(default: no channels).",
		"SHARDCHANNELS [<pattern>]", "    Return the currently active shard level channels matching a <pattern> (default: '*').",
		"SHARDNUMSUB [<shardchannel> ...]", "    Return the number of subscribers for the specified shard level channel(s)",
	})
}

// subscribedModeError is Redis's refusal of a command in RESP2 subscribed
// mode.
func subscribedModeError(name string) string {
	return "ERR Can't execute '" + strings.ToLower(name) + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
}

package resp

import (
	"errors"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/panics"
	"github.com/zaris-io/zaris/server/metrics"
	"github.com/zaris-io/zaris/server/store"
)

// Keyspace notifications (R-RESP-3): with notify-keyspace-events holding K
// and/or E and at least one event class, a publisher goroutine follows a
// store watch of every key (R-DS-6) and publishes each change on the
// broker, on "__keyspace@0__:<key>" (the event name) and
// "__keyevent@0__:<event>" (the key), as Redis does. Because the watch sees
// every change the store applies — the sweeper's expirations and the
// evictor's evictions included — "expired" and "evicted" are published
// too.
//
// Event names come from what the store applies: a value write is "set"
// (whatever string command produced it: INCR and APPEND also notify "set"),
// a collection mutation is named after its logged effect (HINCRBY is logged
// as an HSET and notifies "hset"), except where Redis names the command
// (SPOP, S*STORE: eventNames).
//
// On a cluster every node runs its publisher on its own store and publishes
// only the changes of the segments it owns — a replica's applies are the
// owner's events already — on the broker, which forwards them to every
// other member (server/bus): a subscriber on any node gets each owner's
// events once. notify-keyspace-events is a cluster setting: CONFIG SET on
// one node is sent to every member (pubsub_cluster.go). Stream group bookkeeping (XGROUP,
// XREADGROUP, XCLAIM) and the 'n' (new key) and 'm' (key miss) classes are
// not published.

// notifyWatchBuffer: events the publisher may fall behind by before its
// watch ends (it then resubscribes; the events in between are lost, as
// notifications are fire-and-forget in Redis too).
const notifyWatchBuffer = 1 << 16

type notifier struct {
	mu   sync.Mutex    // guards stop, done
	stop chan struct{} // closes the running publisher
	done chan struct{}
}

// applyNotify (re)starts or stops the publisher for normalised flags. Lock
// order: Server.cfgMu → notifier.mu → Server.mu.
func (s *Server) applyNotify(flags string) {
	n := &s.notify
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stop != nil {
		close(n.stop)
		<-n.done
		n.stop, n.done = nil, nil
	}
	classes := expandNotifyFlags(flags)
	if !classes['K'] && !classes['E'] || !anyClass(classes) {
		return
	}
	s.mu.Lock()
	shutting := s.shutting
	s.mu.Unlock()
	if shutting {
		return
	}
	// Watch before returning: CONFIG SET's effect is immediate, the writes
	// that follow it are notified.
	w, _, err := s.store.Watch(store.WatchOptions{Buffer: notifyWatchBuffer})
	if err != nil {
		s.log.Error("keyspace notifications: cannot watch the store", "err", err)
		return
	}
	n.stop, n.done = make(chan struct{}), make(chan struct{})
	go s.publishEvents(w, classes, n.stop, n.done)
}

func (s *Server) stopNotify() { s.applyNotify("") }

func expandNotifyFlags(flags string) (set [256]bool) {
	for i := 0; i < len(flags); i++ {
		if flags[i] == 'A' {
			for j := 0; j < len(notifyAllClasses); j++ {
				set[notifyAllClasses[j]] = true
			}
			continue
		}
		set[flags[i]] = true
	}
	return set
}

func anyClass(set [256]bool) bool {
	for j := 0; j < len(notifyAllClasses); j++ {
		if set[notifyAllClasses[j]] {
			return true
		}
	}
	return false
}

func (s *Server) publishEvents(w *store.Watch, classes [256]bool, stop, done chan struct{}) {
	defer close(done)
	defer func() {
		if v := recover(); v != nil {
			s.cfg.Metrics.Panic(metrics.ProtoRESP)
			s.log.Error("panic in the keyspace-notification publisher; notifications stop until CONFIG SET notify-keyspace-events",
				"panic", panics.Describe(v), "stack", string(debug.Stack()))
		}
	}()
	broker := s.store.PubSub()
	for {
		for ended := false; !ended; {
			select {
			case <-stop:
				w.Close()
				return
			case ev, ok := <-w.Events():
				if !ok {
					ended = true
					break
				}
				if !s.store.Segment(ev.Segment).Owned() {
					continue // a replica's apply: the owner publishes it
				}
				for _, e := range eventNames(ev) {
					if e.name == "" || !classes[e.class] {
						continue
					}
					if classes['K'] {
						broker.Publish("__keyspace@0__:"+ev.Key, []byte(e.name))
					}
					if classes['E'] {
						broker.Publish("__keyevent@0__:"+e.name, []byte(ev.Key))
					}
				}
			}
		}
		if !errors.Is(w.Err(), store.ErrWatchOverflow) {
			return // the store closed
		}
		s.log.Warn("keyspace notifications fell behind the writes; events were lost", "buffer", notifyWatchBuffer)
		var err error
		if w, _, err = s.store.Watch(store.WatchOptions{Buffer: notifyWatchBuffer}); err != nil {
			s.log.Error("keyspace notifications: cannot watch the store", "err", err)
			return
		}
	}
}

type notifyEvent struct {
	name  string
	class byte
}

// eventNames are the Redis events of a store change, in Redis's order
// (none when it is not published). The logged effect names most of them;
// the command that produced it (Event.Origin) names those Redis calls
// after the command: SPOP (logged as SREM), SINTERSTORE / SUNIONSTORE /
// SDIFFSTORE (logged as a delete and an SADD), and a collection command
// that emptied its key, which Redis notifies as the command and then "del".
func eventNames(ev store.Event) []notifyEvent {
	switch ev.Kind {
	case store.EventPut:
		switch ev.Origin {
		case kv.CmdRestore:
			return []notifyEvent{{"restore", 'g'}}
		case kv.CmdCopy:
			return []notifyEvent{{"copy_to", 'g'}}
		}
		e, named := putEvents[ev.Origin]
		if !named {
			e = notifyEvent{"set", '$'}
		}
		switch {
		case e.name == "":
			return nil // PFCOUNT's refreshed cache: Redis does not notify it
		case ev.SetExpiry:
			return []notifyEvent{e, {"expire", 'g'}}
		}
		return []notifyEvent{e}
	case store.EventDelete:
		if ev.Replaced {
			return nil // the first half of a S*STORE: its own event follows
		}
		if ev.Name != "" {
			return []notifyEvent{{ev.Name, nameClass(ev.Name)}, {"del", 'g'}}
		}
		if e, ok := originEvents[ev.Origin]; ok && !storeOrigins[ev.Origin] {
			return []notifyEvent{e, {"del", 'g'}}
		}
		if e, ok := commandEvents[ev.Origin]; ok {
			return []notifyEvent{e, {"del", 'g'}}
		}
		return []notifyEvent{{"del", 'g'}}
	case store.EventExpire:
		return []notifyEvent{{"expire", 'g'}}
	case store.EventPersist:
		return []notifyEvent{{"persist", 'g'}}
	case store.EventExpired:
		return []notifyEvent{{"expired", 'x'}}
	case store.EventEvicted:
		return []notifyEvent{{"evicted", 'e'}}
	case store.EventCommand:
		if ev.Name != "" {
			return []notifyEvent{{ev.Name, nameClass(ev.Name)}}
		}
		if e, ok := originEvents[ev.Origin]; ok {
			return []notifyEvent{e}
		}
		// A command logged as another (HINCRBY as HSET, ZINCRBY as ZADD)
		// is notified under its own name.
		if e, ok := commandEvents[ev.Origin]; ok {
			return []notifyEvent{{e.name, e.class}}
		}
		if e, ok := commandEvents[ev.Command]; ok {
			return []notifyEvent{{e.name, e.class}}
		}
	}
	return nil
}

// nameClass is the notify-keyspace-events class of an event name the
// store gives (Event.Name): zpopmin, zincr, zremrangeby… (sorted sets),
// lpop, rpop (lists), xgroup-… (streams).
func nameClass(name string) byte {
	switch name[0] {
	case 'z':
		return 'z'
	case 'x':
		return 't'
	}
	return 'l'
}

// eventName is the first Redis event of a store change ("" when none).
func eventName(ev store.Event) (string, byte) {
	if es := eventNames(ev); len(es) > 0 {
		return es[0].name, es[0].class
	}
	return "", 0
}

// putEvents name the events of the string commands whose write is a new
// value (a put) but which Redis notifies under their own name; every other
// put is "set". INCR, DECR and DECRBY are INCRBY in the store, as in
// Redis's event; BITFIELD notifies "setbit" and PFMERGE "pfadd" there too.
var putEvents = map[kv.CmdOp]notifyEvent{
	kv.CmdIncrBy:      {"incrby", '$'},
	kv.CmdIncrByFloat: {"incrbyfloat", '$'},
	kv.CmdAppend:      {"append", '$'},
	kv.CmdSetRange:    {"setrange", '$'},
	kv.CmdSetBit:      {"setbit", '$'},
	kv.CmdBitField:    {"setbit", '$'},
	kv.CmdPFAdd:       {"pfadd", '$'},
	kv.CmdPFCount:     {},
}

// originEvents name the events of commands whose logged effect is another
// command.
var originEvents = map[kv.CmdOp]notifyEvent{
	kv.CmdSPop:        {"spop", 's'},
	kv.CmdSInterStore: {"sinterstore", 's'},
	kv.CmdSUnionStore: {"sunionstore", 's'},
	kv.CmdSDiffStore:  {"sdiffstore", 's'},
}

// storeOrigins: an S*STORE whose result is empty deletes its destination,
// which Redis notifies as "del" alone.
var storeOrigins = map[kv.CmdOp]bool{kv.CmdSInterStore: true, kv.CmdSUnionStore: true, kv.CmdSDiffStore: true}

var commandEvents = func() map[kv.CmdOp]struct {
	name  string
	class byte
} {
	m := map[kv.CmdOp]struct {
		name  string
		class byte
	}{}
	for class, ops := range map[byte][]kv.CmdOp{
		'h': {kv.CmdHSet, kv.CmdHSetNX, kv.CmdHIncrBy, kv.CmdHIncrByFloat, kv.CmdHDel},
		'l': {kv.CmdLPush, kv.CmdRPush, kv.CmdLPop, kv.CmdRPop, kv.CmdLRem, kv.CmdLTrim, kv.CmdLSet, kv.CmdLInsert},
		's': {kv.CmdSAdd, kv.CmdSRem},
		'z': {kv.CmdZAdd, kv.CmdZIncrBy, kv.CmdZRem},
		't': {kv.CmdXAdd, kv.CmdXDel, kv.CmdXTrim, kv.CmdXSetID},
	} {
		for _, op := range ops {
			name := strings.ToLower(op.String())
			switch op {
			case kv.CmdHSetNX:
				name = "hset"
			case kv.CmdZIncrBy:
				name = "zincr"
			}
			m[op] = struct {
				name  string
				class byte
			}{name, class}
		}
	}
	return m
}()

package resp

import (
	"strconv"
	"strings"
	"time"
)

// Output buffer limits per client class, as Redis's
// client-output-buffer-limit: "<class> <hard> <soft> <soft seconds>" for the
// classes normal, replica (printed "slave") and pubsub. A client whose
// pending replies pass its class's hard limit is disconnected at once; one
// that stays above the soft limit for more than the soft seconds is
// disconnected when its next reply is queued. 0 = no such limit. Whatever
// the class says, Config.OutputBufferLimit stays the node's absolute bound
// (a normal client's "0 0 0" does not mean unbounded memory).
//
// What counts is what the background writer has yet to hand to the socket
// (conn.wq): the replies a client has not read beyond what the kernel's
// socket buffers hold.

// outputClass is a client class of client-output-buffer-limit.
type outputClass uint8

const (
	classNormal outputClass = iota
	classReplica
	classPubSub
	numOutputClasses
)

var outputClassNames = [numOutputClasses]string{"normal", "slave", "pubsub"}

// classLimit is one class's limits.
type classLimit struct {
	hard, soft  int64
	softSeconds int64
}

// outputLimits are every class's limits; immutable once published (CONFIG
// SET stores a new one).
type outputLimits [numOutputClasses]classLimit

func defaultOutputLimits() outputLimits {
	return outputLimits{
		classNormal:  {},
		classReplica: {hard: 256 << 20, soft: 64 << 20, softSeconds: 60},
		classPubSub:  {hard: 32 << 20, soft: 8 << 20, softSeconds: 60},
	}
}

// String is the value CONFIG GET prints.
func (l *outputLimits) String() string {
	var b strings.Builder
	for i, cl := range l {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(outputClassNames[i] + " " + strconv.FormatInt(cl.hard, 10) + " " +
			strconv.FormatInt(cl.soft, 10) + " " + strconv.FormatInt(cl.softSeconds, 10))
	}
	return b.String()
}

// parse applies a CONFIG SET value to a copy of l, validating it as Redis
// does; it returns Redis's error text on failure.
func (l *outputLimits) parse(v string) (outputLimits, string) {
	out := *l
	f := strings.Fields(v)
	if len(f)%4 != 0 || len(f) == 0 {
		return out, "Wrong number of arguments in buffer limit configuration."
	}
	for i := 0; i < len(f); i += 4 {
		var class outputClass
		switch strings.ToLower(f[i]) {
		case "normal":
			class = classNormal
		case "slave", "replica":
			class = classReplica
		case "pubsub":
			class = classPubSub
		default:
			return out, "Invalid client class specified in buffer limit configuration."
		}
		hard, ok1 := parseMemory(f[i+1])
		soft, ok2 := parseMemory(f[i+2])
		secs, ok3 := parseInt([]byte(f[i+3]))
		if !ok1 || !ok2 || !ok3 || secs < 0 || hard > 1<<62 || soft > 1<<62 {
			return out, "Error in hard, soft or soft_seconds setting in buffer limit configuration."
		}
		out[class] = classLimit{hard: int64(hard), soft: int64(soft), softSeconds: secs}
	}
	return out, ""
}

// outputClass is the connection's client class: pubsub while it has a
// subscription, normal otherwise.
func (c *conn) outputClass() outputClass {
	if sub := c.subShared.Load(); sub != nil && sub.Count() > 0 {
		return classPubSub
	}
	if sub := c.ssubShared.Load(); sub != nil && sub.Count() > 0 {
		return classPubSub
	}
	return classNormal
}

// overOutputLimit decides, with wmu held, whether a queue of pending bytes
// passes the client's limits: the node's absolute bound, its class's hard
// limit, or its soft limit for longer than the soft seconds. It returns
// the reason, or "" when the client may keep its replies.
func (c *conn) overOutputLimit(pending int64) string {
	if pending > int64(c.srv.cfg.OutputBufferLimit) {
		return "the node's output buffer limit"
	}
	class := c.outputClass()
	cl := c.srv.live.outLimits.Load()[class]
	if cl.hard > 0 && pending > cl.hard {
		return outputClassNames[class] + " hard limit"
	}
	if cl.soft > 0 && pending > cl.soft {
		now := time.Now()
		if c.softSince.IsZero() {
			c.softSince = now // first seen over: Redis starts the clock here
			return ""
		}
		if now.Sub(c.softSince) > time.Duration(cl.softSeconds)*time.Second {
			return outputClassNames[class] + " soft limit for " + strconv.FormatInt(cl.softSeconds, 10) + "s"
		}
		return ""
	}
	c.softSince = time.Time{}
	return ""
}

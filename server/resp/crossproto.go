package resp

import (
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// Cross-protocol scripting (issue #15 item 4): a web page can make a
// browser POST to the RESP port, and a RESP server that reads the request
// line by line runs whatever the body holds (`curl -X POST --data-binary
// $'SET pwned yes\r\n' http://127.0.0.1:6380/` set the key). Redis's rule,
// followed here: a command named POST or "Host:" is an HTTP request, not a
// client — the connection is closed at once, with no reply and nothing
// after it run, and the event is logged (at most once a minute, as Redis).

// crossProtocol reports whether the command name is an HTTP request line or
// header that Redis treats as a cross-protocol attack.
func crossProtocol(name []byte) bool {
	return kv.IsOption(name, "post") || kv.IsOption(name, "host:")
}

// crossProtocolLogged is when the last attack was logged (unix ns).
var crossProtocolLogged atomic.Int64

// crossProtocolAttack logs a connection closed for cross-protocol
// scripting.
func (s *Server) crossProtocolAttack(c *conn) {
	now := time.Now().UnixNano()
	last := crossProtocolLogged.Load()
	if now-last < int64(time.Minute) || !crossProtocolLogged.CompareAndSwap(last, now) {
		return
	}
	c.logger().Warn("Possible SECURITY ATTACK detected: somebody sent a POST or Host: command to the RESP port, " +
		"likely a cross-protocol scripting attempt from a web page; connection aborted")
}

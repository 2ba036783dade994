package native

import (
	"strings"
	"time"

	"github.com/zaris-io/zaris/internal/acl"
	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/store"
)

// Users on the native protocol: the handshake names a user (empty:
// "default") and presents its password in Token; every request is then
// checked as the Redis command it amounts to (Get = GET, Put = SET,
// Delete = DEL, a Command by its Redis name), with the same categories,
// key patterns and channel patterns as on RESP. A refusal answers
// StatusUnauthorized with Redis's NOPERM text and is recorded in ACL LOG.

// nativeCmd is the Redis command a request amounts to and the permission
// it needs on its key.
func nativeCmd(op wire.Opcode) (string, acl.Perm) {
	switch op {
	case wire.OpGet:
		return "get", acl.PermRead
	case wire.OpTTL:
		return "ttl", acl.PermRead
	case wire.OpDelete:
		return "del", acl.PermWrite
	case wire.OpPersist:
		return "persist", acl.PermRW
	case wire.OpPut:
		return "set", acl.PermWrite
	case wire.OpExpire:
		return "expire", acl.PermRW
	}
	return "", 0
}

// keyPerm is the permission command name needs on its key: Redis's key
// specification's where it tells (Config.KeyPerm), else fallback.
func (c *conn) keyPerm(name string, fallback acl.Perm) acl.Perm {
	if kp := c.srv.cfg.KeyPerm; kp != nil {
		if p, ok := kp(name); ok {
			return p
		}
	}
	return fallback
}

// user is the connection's user when it must be checked (nil: may do
// anything); ok=false when it was deleted since the handshake.
func (c *conn) aclUser() (*acl.User, bool) {
	if c.srv.acl == nil {
		return nil, true
	}
	set := c.srv.acl.Users()
	if set != c.aclSet {
		c.aclSet, c.aclU = set, set.User(c.userName)
	}
	if c.aclU == nil {
		return nil, false
	}
	if c.aclU.Unrestricted {
		return nil, true
	}
	return c.aclU, true
}

// denied checks command name on key (nil: keyless) with permission p;
// it returns the NOPERM message ("" = allowed) and logs a refusal.
func (c *conn) denied(u *acl.User, name string, key []byte, p acl.Perm) string {
	reason, object, msg := "", "", ""
	switch {
	case !u.CanRun(acl.CommandID(name)):
		reason, object = "command", name
		msg = "NOPERM this user has no permissions to run the '" + name + "' command"
	case key != nil && !u.CanKey(key, p):
		reason, object = "key", string(key)
		msg = "NOPERM this user has no permissions to access one of the keys used as arguments"
	default:
		return ""
	}
	c.srv.acl.Log.Add(reason, "toplevel", object, u.Name, "native addr="+c.nc.RemoteAddr().String(), time.Now())
	return msg
}

// permit checks frame f before it runs; false = refused (answered).
func (c *conn) permit(f wire.Frame) bool {
	u, ok := c.aclUser()
	if !ok {
		c.refuse(f.ID, f.Op, kv.StatusUnauthorized, "the user was deleted")
		return false
	}
	if u == nil {
		return true
	}
	msg := ""
	switch f.Op {
	case wire.OpGet, wire.OpTTL, wire.OpDelete, wire.OpPersist, wire.OpExpire:
		name, p := nativeCmd(f.Op)
		p = c.keyPerm(name, p)
		key, err := keyOf(f)
		if err != nil {
			return true // a malformed body: the handler answers BadRequest
		}
		msg = c.denied(u, name, key, p)
	case wire.OpPut:
		var req wire.PutRequest
		if wire.DecodePutRequest(f.Body, &req) != nil {
			return true
		}
		msg = c.denied(u, "set", req.Key, acl.PermWrite)
	case wire.OpCommand:
		var cmd kv.Cmd
		if wire.DecodeCommandRequest(f.Body, &cmd) != nil {
			return true
		}
		p := acl.PermRead
		if store.CommandWrites(cmd.Op) {
			p = acl.PermRW
		}
		var key []byte
		if !cmd.Op.NodeLevel() {
			key = []byte(cmd.Key)
		}
		name := strings.ToLower(cmd.Op.String())
		msg = c.denied(u, name, key, c.keyPerm(name, p))
	case wire.OpBatch:
		var items []wire.BatchItem
		items, err := wire.DecodeBatchRequest(f.Body, items)
		if err != nil {
			return true
		}
		for i := range items {
			name, p := "get", acl.PermRead
			switch items[i].Op {
			case wire.BatchPut:
				name, p = "set", acl.PermWrite
			case wire.BatchDelete:
				name, p = "del", acl.PermWrite
			}
			if msg = c.denied(u, name, items[i].Key, p); msg != "" {
				break
			}
		}
	case wire.OpWatch:
		// A change feed sees every key: only a user with every key may watch.
		if !u.AllKeys || !u.CanRun(acl.CommandID("scan")) {
			msg = "NOPERM this user has no permissions to access one of the keys used as arguments"
			c.srv.acl.Log.Add("key", "toplevel", "*", u.Name, "native addr="+c.nc.RemoteAddr().String(), time.Now())
		}
	case wire.OpPublish:
		ch, _, err := wire.DecodePublishRequest(f.Body)
		if err != nil {
			return true
		}
		if msg = c.denied(u, "publish", nil, 0); msg == "" && !u.CanChannel([]byte(ch), false) {
			msg = "NOPERM this user has no permissions to access one of the channels used as arguments"
			c.srv.acl.Log.Add("channel", "toplevel", ch, u.Name, "native addr="+c.nc.RemoteAddr().String(), time.Now())
		}
	case wire.OpSubscribe:
		var req wire.SubscribeRequest
		if wire.DecodeSubscribeRequest(f.Body, &req) != nil {
			return true
		}
		if msg = c.denied(u, "subscribe", nil, 0); msg == "" {
			for _, ch := range req.Channels {
				if !u.CanChannel([]byte(ch), false) {
					msg = "NOPERM this user has no permissions to access one of the channels used as arguments"
				}
			}
			for _, p := range req.Patterns {
				if !u.CanChannel([]byte(p), true) {
					msg = "NOPERM this user has no permissions to access one of the channels used as arguments"
				}
			}
		}
	}
	if msg == "" {
		return true
	}
	c.refuse(f.ID, f.Op, kv.StatusUnauthorized, msg)
	return false
}

func keyOf(f wire.Frame) ([]byte, error) {
	if f.Op == wire.OpExpire {
		k, _, err := wire.DecodeExpireRequest(f.Body)
		return k, err
	}
	return wire.DecodeKeyRequest(f.Body)
}

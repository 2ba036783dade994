package httpapi

import (
	"encoding/base64"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/zaris-io/zaris/internal/acl"
	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/metrics"
)

// Users on HTTP: "Authorization: Basic base64(user:password)" or
// "Authorization: Bearer <password>" (the default user's: the --token of
// old). Without credentials a request runs as the default user when it
// needs no password. Key routes are checked as GET/SET/DEL on the key;
// /metrics, /v1/info and /v1/cluster as INFO; the admin routes
// (rebalance, evict, decommission) need every @admin command.

const userKey = "zaris.user"

// aclAuthenticate is the authentication middleware with users.
func (s *Server) aclAuthenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		name, pass, given := credentials(r)
		now := time.Now()
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		var u *acl.User
		if given {
			if !s.acl.Limiter.Allowed(host, now) {
				s.rec.AuthFailure(metrics.ProtoHTTP)
				s.acl.Log.Add("auth", "toplevel", "AUTH", name, "http addr="+r.RemoteAddr, now)
				return failCode(c, http.StatusTooManyRequests, kv.StatusUnauthorized, "too many failed authentication attempts from this address; retry later", nil)
			}
			u = s.acl.Authenticate(name, []byte(pass))
		} else if d := s.acl.Users().User("default"); d != nil && d.On && d.NoPass {
			u = d
		}
		if u == nil {
			if given {
				s.acl.Limiter.Failed(host, now)
				s.acl.Log.Add("auth", "toplevel", "AUTH", name, "http addr="+r.RemoteAddr, now)
			}
			s.rec.AuthFailure(metrics.ProtoHTTP)
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Basic realm="zaris", Bearer realm="zaris"`)
			return fail(c, kv.StatusUnauthorized, "missing or wrong credentials (Basic user:password or Bearer password)")
		}
		c.Set(userKey, u)
		if msg := s.routePermission(c, u); msg != "" {
			return failCode(c, http.StatusForbidden, kv.StatusUnauthorized, msg, nil)
		}
		return next(c)
	}
}

// credentials reads Basic or Bearer credentials; Bearer is the default user's.
func credentials(r *http.Request) (user, pass string, ok bool) {
	scheme, rest, _ := strings.Cut(r.Header.Get(echo.HeaderAuthorization), " ")
	rest = strings.TrimSpace(rest)
	switch {
	case strings.EqualFold(scheme, "Bearer") && rest != "":
		return "default", rest, true
	case strings.EqualFold(scheme, "Basic"):
		raw, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return "", "", true // malformed: a failed attempt
		}
		u, p, _ := strings.Cut(string(raw), ":")
		if u == "" {
			u = "default"
		}
		return u, p, true
	}
	return "", "", false
}

// routePermission checks the non-key routes (key routes are checked with
// their key in checkRequest); it returns the refusal ("" = allowed).
func (s *Server) routePermission(c echo.Context, u *acl.User) string {
	if u.Unrestricted {
		return ""
	}
	p := c.Request().URL.Path
	switch {
	case strings.HasPrefix(p, keysPrefix):
		return ""
	case p == "/v1/cluster/rebalance" || p == "/v1/cluster/evict" || p == "/v1/node/decommission" ||
		p == "/v1/cluster/follow" || p == "/v1/cluster/promote":
		if !u.CanRunAll(acl.CatAdmin) {
			s.acl.Log.Add("command", "toplevel", p, u.Name, "http addr="+c.Request().RemoteAddr, time.Now())
			return "NOPERM this user has no permissions to run the '" + p + "' admin endpoint (it needs every @admin command)"
		}
	default: // /metrics, /v1/info, /v1/cluster
		if !u.CanRun(acl.CommandID("info")) {
			s.acl.Log.Add("command", "toplevel", "info", u.Name, "http addr="+c.Request().RemoteAddr, time.Now())
			return "NOPERM this user has no permissions to run the 'info' command"
		}
	}
	return ""
}

// keyPermission checks a key route: GET/HEAD as GET, PUT as SET, DELETE as DEL.
func (s *Server) keyPermission(c echo.Context, op metrics.Op, key string) string {
	u, _ := c.Get(userKey).(*acl.User)
	if u == nil || u.Unrestricted {
		return ""
	}
	name, perm := "get", acl.PermRead
	switch op {
	case metrics.OpPut:
		name, perm = "set", acl.PermWrite
	case metrics.OpDelete:
		name, perm = "del", acl.PermWrite
	}
	switch {
	case !u.CanRun(acl.CommandID(name)):
		s.acl.Log.Add("command", "toplevel", name, u.Name, "http addr="+c.Request().RemoteAddr, time.Now())
		return "NOPERM this user has no permissions to run the '" + name + "' command"
	case !u.CanKey([]byte(key), perm):
		s.acl.Log.Add("key", "toplevel", key, u.Name, "http addr="+c.Request().RemoteAddr, time.Now())
		return "NOPERM this user has no permissions to access one of the keys used as arguments"
	}
	return ""
}

// aclAccess is the console's rule when the node has users (D43): an
// admin is a user who authenticated with a password (Basic, or Bearer for
// the default user) and may run every @admin command; a user who may run
// INFO reads; without credentials the default user reads when it needs no
// password. A nopass user never becomes admin: with no --token anyone could
// claim it. Failed attempts count against the same per-host limit as the
// API's.
func (s *Server) aclAccess(r *http.Request) Access {
	name, pass, given := credentials(r)
	var u *acl.User
	if given {
		now := time.Now()
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		if !s.acl.Limiter.Allowed(host, now) {
			return AccessNone
		}
		if u = s.acl.Authenticate(name, []byte(pass)); u == nil {
			s.acl.Limiter.Failed(host, now)
			s.acl.Log.Add("auth", "toplevel", "AUTH", name, "http addr="+r.RemoteAddr, now)
			return AccessNone
		}
	} else if d := s.acl.Users().User("default"); d != nil && d.On && d.NoPass {
		u = d
	}
	switch {
	case u == nil:
		return AccessNone
	case given && !u.NoPass && (u.Unrestricted || u.CanRunAll(acl.CatAdmin)):
		return AccessAdmin
	case u.Unrestricted || u.CanRun(acl.CommandID("info")):
		return AccessRead
	}
	return AccessNone
}

package sdk

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultPort is the default native-protocol port of a server.
const DefaultPort = 7861

// ErrInvalidConnString is wrapped by every connection-string parse error.
var ErrInvalidConnString = errors.New("zaris: invalid connection string")

// ConnString is a parsed connection string.
type ConnString struct {
	Inproc    bool     // zaris://inproc/<store>
	TLS       bool     // zariss://
	Endpoints []string // host:port bootstrap endpoints (remote only)
	Store     string

	Token       string        // token= (or password=): the user's password
	User        string        // user= the ACL user (default: "default")
	CAFile      string        // ca=
	CertFile    string        // cert=  (mutual TLS)
	KeyFile     string        // key=   (mutual TLS)
	ServerName  string        // servername= (TLS SNI / verification name)
	Timeout     time.Duration // timeout= default per-call deadline when the context has none
	DialTimeout time.Duration // dialTimeout=

	clientName string // WithClientName ("" = zaris-go-sdk)
}

var connOptions = map[string]bool{"user": true, "password": true, "token": true, "ca": true, "cert": true, "key": true, "servername": true, "timeout": true, "dialTimeout": true}

// ParseConnString parses a Zaris connection string (R-CLIENT-1). Errors wrap
// ErrInvalidConnString and say what is wrong.
func ParseConnString(s string) (ConnString, error) {
	bad := func(format string, args ...any) (ConnString, error) {
		return ConnString{}, fmt.Errorf("%w %q: %s", ErrInvalidConnString, redact(s), fmt.Sprintf(format, args...))
	}
	var cs ConnString
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return bad("missing scheme (want zaris:// or zariss://)")
	}
	switch scheme {
	case "zaris":
	case "zariss":
		cs.TLS = true
	default:
		return bad("unknown scheme %q (want zaris or zariss)", scheme)
	}
	rest, query, _ := strings.Cut(rest, "?")
	authority, path, ok := strings.Cut(rest, "/")
	if !ok || path == "" {
		return bad("missing store name (…/<store>)")
	}
	if err := validStoreName(path); err != nil {
		return bad("%v", err)
	}
	cs.Store = path
	if authority == "inproc" {
		if cs.TLS {
			return bad("inproc takes no TLS (use zaris://inproc/<store>)")
		}
		if query != "" {
			return bad("inproc takes no options")
		}
		cs.Inproc = true
		return cs, nil
	}
	if authority == "" {
		return bad("missing host:port")
	}
	for _, ep := range strings.Split(authority, ",") {
		host, port, err := net.SplitHostPort(ep)
		if err != nil {
			if !strings.Contains(ep, ":") || (strings.HasPrefix(ep, "[") && strings.HasSuffix(ep, "]")) {
				host, port = strings.Trim(ep, "[]"), strconv.Itoa(DefaultPort)
			} else {
				return bad("endpoint %q: %v", ep, err)
			}
		}
		if host == "" {
			return bad("endpoint %q has no host", ep)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return bad("endpoint %q: port %q out of 1..65535", ep, port)
		}
		cs.Endpoints = append(cs.Endpoints, net.JoinHostPort(host, port))
	}
	values, err := url.ParseQuery(query)
	if err != nil {
		return bad("options: %v", err)
	}
	for k, v := range values {
		if !connOptions[k] {
			return bad("unknown option %q", k)
		}
		if len(v) != 1 {
			return bad("option %q given %d times", k, len(v))
		}
	}
	cs.Token, cs.User = values.Get("token"), values.Get("user")
	if pw := values.Get("password"); pw != "" {
		if cs.Token != "" {
			return bad("give password or token, not both")
		}
		cs.Token = pw
	}
	cs.CAFile, cs.CertFile, cs.KeyFile = values.Get("ca"), values.Get("cert"), values.Get("key")
	cs.ServerName = values.Get("servername")
	if (cs.CertFile == "") != (cs.KeyFile == "") {
		return bad("cert and key must be given together")
	}
	if !cs.TLS && (cs.CAFile != "" || cs.CertFile != "" || cs.ServerName != "") {
		return bad("ca/cert/key/servername need TLS: use zariss://")
	}
	for name, dst := range map[string]*time.Duration{"timeout": &cs.Timeout, "dialTimeout": &cs.DialTimeout} {
		if v := values.Get(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return bad("option %s=%q is not a positive duration", name, v)
			}
			*dst = d
		}
	}
	return cs, nil
}

func validStoreName(name string) error {
	if len(name) > 64 {
		return fmt.Errorf("store name longer than 64 bytes")
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("store name %q: only letters, digits, '-', '_' and '.' are allowed", name)
		}
	}
	return nil
}

// redact hides a token or password in an error message.
func redact(s string) string {
	for _, opt := range []string{"token=", "password="} {
		i := strings.Index(s, opt)
		if i < 0 {
			continue
		}
		j := strings.IndexByte(s[i:], '&')
		if j < 0 {
			s = s[:i] + opt + "REDACTED"
		} else {
			s = s[:i] + opt + "REDACTED" + s[i+j:]
		}
	}
	return s
}

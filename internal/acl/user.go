package acl

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"unsafe"

	"github.com/zaris-io/zaris/internal/glob"
)

// Perm is a key permission: read, write or both.
type Perm uint8

const (
	PermRead  Perm = 1
	PermWrite Perm = 2
	PermRW         = PermRead | PermWrite
)

// KeyPattern is one key rule: ~p (read and write), %R~p, %W~p, %RW~p.
type KeyPattern struct {
	Pattern string
	Perm    Perm
}

func (k KeyPattern) String() string {
	switch k.Perm {
	case PermRead:
		return "%R~" + k.Pattern
	case PermWrite:
		return "%W~" + k.Pattern
	}
	return "~" + k.Pattern
}

// User is one user. A User reachable from a Set is never mutated: a change
// builds a copy (clone) and publishes a new Set.
type User struct {
	Name     string
	On       bool
	NoPass   bool
	Sanitize string   // "", "sanitize-payload" or "skip-sanitize-payload" (kept for ACL LIST)
	Hashes   []string // SHA-256 hex of each password, in the order added
	AllKeys  bool     // ~* / allkeys
	Keys     []KeyPattern
	AllChans bool // &* / allchannels
	Chans    []string
	// allCmds: the rules start from +@all (future commands allowed).
	allCmds bool
	allowed []uint64 // bit per catalog id

	// Unrestricted: every command, key and channel — the hot path skips
	// every check.
	Unrestricted bool
}

// newUser is a user as ACL SETUSER creates it: off, no password, no
// command, key or channel.
func newUser(name string) *User {
	return &User{Name: name, allowed: make([]uint64, currentCatalog().words)}
}

// DefaultUser is the "default" user: on, every permission, with the
// given password (nopass when it is empty).
func DefaultUser(password string) *User {
	u := newUser("default")
	u.On, u.AllKeys, u.AllChans = true, true, true
	u.setAll(true)
	if password == "" {
		u.NoPass = true
	} else {
		u.Hashes = []string{HashPassword(password)}
	}
	u.refresh()
	return u
}

// HashPassword is the stored form of a password: SHA-256 in lower-case hex.
func HashPassword(p string) string {
	h := sha256.Sum256([]byte(p))
	return hex.EncodeToString(h[:])
}

func (u *User) clone() *User {
	c := *u
	c.Hashes = slices.Clone(u.Hashes)
	c.Keys = slices.Clone(u.Keys)
	c.Chans = slices.Clone(u.Chans)
	c.allowed = slices.Clone(u.allowed)
	if need := currentCatalog().words; len(c.allowed) < need {
		c.allowed = append(c.allowed, make([]uint64, need-len(c.allowed))...)
	}
	return &c
}

func (u *User) refresh() {
	all := u.allCmds
	for id := range currentCatalog().cmds {
		if !all {
			break
		}
		all = u.has(id)
	}
	u.Unrestricted = u.AllKeys && u.AllChans && all
}

// CheckPassword reports whether p opens u (on, and nopass or a matching hash).
func (u *User) CheckPassword(p []byte) bool {
	if !u.On {
		return false
	}
	if u.NoPass {
		return true
	}
	h := sha256.Sum256(p)
	got := hex.EncodeToString(h[:])
	ok := 0
	for _, want := range u.Hashes {
		ok |= subtle.ConstantTimeCompare([]byte(got), []byte(want))
	}
	return ok == 1
}

// CanRun reports whether u may run the command with catalog id id.
func (u *User) CanRun(id int) bool {
	if u.Unrestricted {
		return true
	}
	if id < 0 {
		return u.allCmds // a command the catalog does not know: only +@all
	}
	w := id >> 6
	return w < len(u.allowed) && u.allowed[w]&(1<<(id&63)) != 0
}

// CanRunAll reports whether u may run every command of category c.
func (u *User) CanRunAll(c Cat) bool {
	if u.Unrestricted {
		return true
	}
	for id, cmd := range currentCatalog().cmds {
		if cmd.Cats&c != 0 && !u.has(id) {
			return false
		}
	}
	return true
}

// CanKey reports whether u may access key with permission p.
func (u *User) CanKey(key []byte, p Perm) bool {
	if u.AllKeys {
		return true
	}
	k := unsafe.String(unsafe.SliceData(key), len(key)) // read only, not retained
	if p == 0 {
		// A key the command neither reads nor writes (EXISTS, TYPE): any
		// pattern that matches it will do, as in Redis.
		for _, kp := range u.Keys {
			if glob.Match(kp.Pattern, k) {
				return true
			}
		}
		return false
	}
	var have Perm
	for _, kp := range u.Keys {
		if kp.Perm&p&^have != 0 && glob.Match(kp.Pattern, k) {
			have |= kp.Perm
			if have&p == p {
				return true
			}
		}
	}
	return have&p == p
}

// CanChannel reports whether u may publish or subscribe to channel ch;
// pattern = ch is a PSUBSCRIBE pattern, which must equal one of u's
// patterns (Redis's rule: a pattern is not matched against patterns).
func (u *User) CanChannel(ch []byte, pattern bool) bool {
	if u.AllChans {
		return true
	}
	s := string(ch)
	for _, p := range u.Chans {
		if pattern && p == s || !pattern && glob.Match(p, s) {
			return true
		}
	}
	return false
}

func (u *User) setAll(on bool) {
	for i := range u.allowed {
		u.allowed[i] = 0
		if on {
			u.allowed[i] = ^uint64(0)
		}
	}
	u.allCmds = on
}

func (u *User) has(id int) bool { return u.allowed[id>>6]&(1<<(id&63)) != 0 }

func (u *User) setBit(id int, on bool) {
	if on {
		u.allowed[id>>6] |= 1 << (id & 63)
	} else {
		u.allowed[id>>6] &^= 1 << (id & 63)
	}
}

// The messages of ACL SETUSER errors, as Redis 7.0 words them.
var (
	errSyntax      = errors.New("Syntax error")
	errUnknownCmd  = errors.New("Unknown command or category name in ACL")
	errAfterAll    = errors.New("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
	errAfterAllCh  = errors.New("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels")
	errBadHash     = errors.New("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
	errNoSuchPass  = errors.New("The password you are trying to remove from the user does not exist")
	errFirstArg    = errors.New("Allowing first-arg of a subcommand is not supported")
	errSubOfNonCnt = errors.New("Unknown command or category name in ACL")
)

// apply applies one SETUSER rule to u (a private copy).
func (u *User) apply(rule string) error {
	low := strings.ToLower(rule)
	switch low {
	case "on":
		u.On = true
		return nil
	case "off":
		u.On = false
		return nil
	case "nopass":
		u.NoPass, u.Hashes = true, nil
		return nil
	case "resetpass":
		u.NoPass, u.Hashes = false, nil
		return nil
	case "allkeys":
		u.AllKeys, u.Keys = true, nil
		return nil
	case "resetkeys":
		u.AllKeys, u.Keys = false, nil
		return nil
	case "allchannels":
		u.AllChans, u.Chans = true, nil
		return nil
	case "resetchannels":
		u.AllChans, u.Chans = false, nil
		return nil
	case "allcommands", "+@all":
		u.setAll(true)
		return nil
	case "nocommands", "-@all":
		u.setAll(false)
		return nil
	case "sanitize-payload", "skip-sanitize-payload":
		u.Sanitize = low
		return nil
	case "reset":
		n := newUser(u.Name)
		n.Sanitize = "sanitize-payload"
		*u = *n
		return nil
	}
	if rule == "" {
		return errSyntax
	}
	switch rule[0] {
	case '>', '<', '#', '!':
		return u.applyPassword(rule)
	case '~':
		return u.addKey(rule[1:], PermRW)
	case '%':
		perm, pat, ok := parseKeyPerm(rule)
		if !ok {
			return errSyntax
		}
		return u.addKey(pat, perm)
	case '&':
		if u.AllChans {
			return errAfterAllCh
		}
		p := rule[1:]
		if p == "*" {
			u.AllChans, u.Chans = true, nil
			return nil
		}
		if !slices.Contains(u.Chans, p) {
			u.Chans = append(u.Chans, p)
		}
		return nil
	case '+', '-':
		return u.applyCommand(low[1:], rule[0] == '+')
	}
	return errSyntax
}

func parseKeyPerm(rule string) (Perm, string, bool) {
	spec, pat, ok := strings.Cut(rule[1:], "~")
	if !ok {
		return 0, "", false
	}
	var p Perm
	for _, c := range spec {
		switch c {
		case 'R', 'r':
			p |= PermRead
		case 'W', 'w':
			p |= PermWrite
		default:
			return 0, "", false
		}
	}
	if p == 0 {
		return 0, "", false
	}
	return p, pat, true
}

func (u *User) addKey(pat string, p Perm) error {
	if u.AllKeys {
		return errAfterAll
	}
	if pat == "*" && p == PermRW {
		u.AllKeys, u.Keys = true, nil
		return nil
	}
	for i, k := range u.Keys {
		if k.Pattern == pat {
			u.Keys[i].Perm |= p
			return nil
		}
	}
	u.Keys = append(u.Keys, KeyPattern{Pattern: pat, Perm: p})
	return nil
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range []byte(h) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (u *User) applyPassword(rule string) error {
	var h string
	switch rule[0] {
	case '>', '<':
		h = HashPassword(rule[1:])
	default:
		h = rule[1:]
		if !validHash(h) {
			return errBadHash
		}
	}
	switch rule[0] {
	case '>', '#':
		if !slices.Contains(u.Hashes, h) {
			u.Hashes = append(u.Hashes, h)
		}
		u.NoPass = false
	default:
		i := slices.Index(u.Hashes, h)
		if i < 0 {
			return errNoSuchPass
		}
		u.Hashes = slices.Delete(u.Hashes, i, i+1)
	}
	return nil
}

func (u *User) applyCommand(name string, allow bool) error {
	c := currentCatalog()
	if strings.HasPrefix(name, "@") {
		cat, ok := CategoryByName(name[1:])
		if !ok {
			return errUnknownCmd
		}
		for id, cmd := range c.cmds {
			if cmd.Cats&cat != 0 {
				u.setBit(id, allow)
			}
		}
		return nil
	}
	id, ok := c.ids[name]
	if !ok {
		if parent, _, sub := strings.Cut(name, "|"); sub {
			if _, ok := c.ids[parent]; ok && len(c.cmds[c.ids[parent]].Subs) == 0 {
				return errFirstArg
			}
		}
		return errUnknownCmd
	}
	u.setBit(id, allow)
	for _, s := range c.cmds[id].Subs {
		if sid, ok := c.ids[s]; ok {
			u.setBit(sid, allow)
		}
	}
	return nil
}

// Describe is u as ACL LIST shows it, without the leading "user name".
func (u *User) Describe() string {
	parts := []string{"off"}
	if u.On {
		parts[0] = "on"
	}
	if u.NoPass {
		parts = append(parts, "nopass")
	}
	if u.Sanitize != "" {
		parts = append(parts, u.Sanitize)
	}
	for _, h := range u.Hashes {
		parts = append(parts, "#"+h)
	}
	if k := u.KeysString(); k != "" {
		parts = append(parts, k)
	}
	if u.AllChans {
		parts = append(parts, "&*")
	} else {
		parts = append(parts, "resetchannels")
		if c := u.ChannelsString(); c != "" {
			parts = append(parts, c)
		}
	}
	parts = append(parts, u.CommandsString())
	return strings.Join(parts, " ")
}

// Flags are the flags ACL GETUSER lists.
func (u *User) Flags() []string {
	f := []string{"off"}
	if u.On {
		f[0] = "on"
	}
	if u.NoPass {
		f = append(f, "nopass")
	}
	if u.Sanitize != "" {
		f = append(f, u.Sanitize)
	}
	return f
}

// CommandsString is the command rules as ACL GETUSER's "commands" shows
// them. Like Redis 7.0, it is computed from the allowed set, not kept:
// the base (+@all or -@all), then the categories that bring the set
// closest, greedily, then the single commands still different, by name.
func (u *User) CommandsString() string {
	c := currentCatalog()
	fake := make([]bool, len(c.cmds))
	out := []string{"-@all"}
	if u.allCmds {
		out[0] = "+@all"
		for i := range fake {
			fake[i] = true
		}
	}
	applied := make([]bool, len(CategoryNames))
	for {
		best, bestGain := -1, 0
		for j := range CategoryNames {
			if applied[j] {
				continue
			}
			cat := Cat(1) << j
			gain := 0
			for id, cmd := range c.cmds {
				if cmd.Cats&cat == 0 || fake[id] != u.allCmds {
					continue // only commands the rule would toggle
				}
				if u.has(id) != u.allCmds {
					gain++ // toggling brings it to the target
				} else {
					gain--
				}
			}
			if gain > bestGain {
				best, bestGain = j, gain
			}
		}
		if best < 0 {
			break
		}
		applied[best] = true
		cat := Cat(1) << best
		for id, cmd := range c.cmds {
			if cmd.Cats&cat != 0 {
				fake[id] = !u.allCmds
			}
		}
		sign := "+@"
		if u.allCmds {
			sign = "-@"
		}
		out = append(out, sign+CategoryNames[best])
	}
	emit := func(id int) {
		if fake[id] == u.has(id) {
			return
		}
		fake[id] = u.has(id)
		sign := "-"
		if fake[id] {
			sign = "+"
		}
		out = append(out, sign+c.cmds[id].Name)
	}
	for id, cmd := range c.cmds {
		if strings.Contains(cmd.Name, "|") {
			continue // with its container, below
		}
		if len(cmd.Subs) > 0 && fake[id] != u.has(id) {
			emit(id) // the container's rule covers its subcommands
			for _, s := range cmd.Subs {
				if sid, ok := c.ids[s]; ok {
					fake[sid] = u.has(id)
				}
			}
		}
		emit(id)
		for _, s := range cmd.Subs {
			if sid, ok := c.ids[s]; ok {
				emit(sid)
			}
		}
	}
	return strings.Join(out, " ")
}

// KeysString is the key rules as ACL GETUSER's "keys" shows them.
func (u *User) KeysString() string {
	if u.AllKeys {
		return "~*"
	}
	s := make([]string, len(u.Keys))
	for i, k := range u.Keys {
		s[i] = k.String()
	}
	return strings.Join(s, " ")
}

// ChannelsString is the channel rules as ACL GETUSER's "channels" shows them.
func (u *User) ChannelsString() string {
	if u.AllChans {
		return "&*"
	}
	s := make([]string, len(u.Chans))
	for i, c := range u.Chans {
		s[i] = "&" + c
	}
	return strings.Join(s, " ")
}

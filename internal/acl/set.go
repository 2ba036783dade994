package acl

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Set is an immutable snapshot of the users, by name.
type Set struct {
	users map[string]*User
}

// NewSet is the set a node starts from: only the default user, whose
// password is token (nopass when token is empty).
func NewSet(token string) *Set {
	return &Set{users: map[string]*User{"default": DefaultUser(token)}}
}

// User returns the user named name, or nil.
func (s *Set) User(name string) *User { return s.users[name] }

// Names lists the user names, sorted.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.users))
	for n := range s.users {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// List is ACL LIST: one "user <name> <rules>" line per user, sorted by name.
func (s *Set) List() []string {
	names := s.Names()
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "user " + n + " " + s.users[n].Describe()
	}
	return out
}

// Op is one change to the users, as the control-plane log records it:
// "setuser" (User, Rules) or "deluser" (Users). Passwords in Rules are
// already hashed (Normalize): the log never holds a clear password.
type Op struct {
	Kind  string   `msgpack:"k"`
	User  string   `msgpack:"u,omitempty"`
	Rules []string `msgpack:"r,omitempty"`
	Users []string `msgpack:"us,omitempty"`
}

// Op kinds.
const (
	OpSetUser = "setuser"
	OpDelUser = "deluser"
)

// RuleError is a refused SETUSER rule; Error() is Redis's reply text
// without the "ERR " prefix.
type RuleError struct {
	Rule string
	Err  error
}

func (e *RuleError) Error() string {
	return "Error in ACL SETUSER modifier '" + e.Rule + "': " + e.Err.Error()
}

// ErrBadUserName: a user name with a space or a NUL.
var ErrBadUserName = errors.New("Usernames can't contain spaces or null characters")

// ErrDeleteDefault: DELUSER default.
var ErrDeleteDefault = errors.New("The 'default' user cannot be removed")

// Apply returns the set after op and, for a deluser, how many users it
// removed. A refused op leaves s unchanged (the result is nil).
func (s *Set) Apply(op Op) (*Set, int, error) {
	switch op.Kind {
	case OpSetUser:
		if strings.ContainsAny(op.User, " \x00") {
			return nil, 0, ErrBadUserName
		}
		var u *User
		if old := s.users[op.User]; old != nil {
			u = old.clone()
		} else {
			u = newUser(op.User)
		}
		for _, r := range op.Rules {
			if err := u.apply(r); err != nil {
				return nil, 0, &RuleError{Rule: r, Err: err}
			}
		}
		u.refresh()
		next := s.with()
		next.users[op.User] = u
		return next, 0, nil
	case OpDelUser:
		for _, n := range op.Users {
			if n == "default" {
				return nil, 0, ErrDeleteDefault
			}
		}
		next, n := s.with(), 0
		for _, name := range op.Users {
			if _, ok := next.users[name]; ok {
				delete(next.users, name)
				n++
			}
		}
		return next, n, nil
	}
	return nil, 0, fmt.Errorf("acl: unknown operation %q", op.Kind)
}

func (s *Set) with() *Set {
	n := &Set{users: make(map[string]*User, len(s.users)+1)}
	for k, v := range s.users {
		n.users[k] = v
	}
	return n
}

// Normalize replaces clear passwords by their hashes (>p → #sha256(p),
// <p → !sha256(p)) so that an op can be logged and replicated.
func Normalize(op Op) Op {
	if op.Kind != OpSetUser {
		return op
	}
	out := op
	out.Rules = make([]string, len(op.Rules))
	for i, r := range op.Rules {
		switch {
		case strings.HasPrefix(r, ">"):
			r = "#" + HashPassword(r[1:])
		case strings.HasPrefix(r, "<"):
			r = "!" + HashPassword(r[1:])
		}
		out.Rules[i] = r
	}
	return out
}

// Lines is the set as SETUSER ops (ACL LIST's rules), for snapshots.
func (s *Set) Lines() []Op {
	var out []Op
	for _, n := range s.Names() {
		out = append(out, Op{Kind: OpSetUser, User: n, Rules: strings.Fields(s.users[n].Describe())})
	}
	return out
}

// FromLines rebuilds a set from Lines (a snapshot): exactly those users.
func FromLines(lines []Op) (*Set, error) {
	s := &Set{users: map[string]*User{}}
	for _, op := range lines {
		next, _, err := s.Apply(op)
		if err != nil {
			return nil, err
		}
		s = next
	}
	if s.users["default"] == nil {
		return nil, errors.New("acl: a snapshot without the default user")
	}
	return s, nil
}

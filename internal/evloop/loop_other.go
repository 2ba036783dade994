//go:build !linux

package evloop

import (
	"log/slog"
	"net"
)

// Loop exists on Linux only (epoll): Start returns none elsewhere, so no
// Member is ever made.
type Loop struct{}

// Member is a connection registered on a loop.
type Member struct{}

// Conn is the socket of a connection a loop serves.
type Conn struct{ net.Conn }

func Start(int, *slog.Logger) ([]*Loop, error) { return nil, nil }

func Wrap(nc net.Conn) (net.Conn, bool) { return nc, false }

func (l *Loop) NewMember(net.Conn, Handler) *Member { return &Member{} }
func (l *Loop) Stop()                               {}

func (m *Member) Register() bool  { return false }
func (m *Member) OnLoop() bool    { return false }
func (m *Member) Leave()          {}
func (m *Member) Abort(bool) bool { return false }

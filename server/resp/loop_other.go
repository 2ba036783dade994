//go:build !linux

package resp

import "net"

// eventLoop exists on Linux only (epoll); elsewhere every connection has
// its own goroutine.
type eventLoop struct{}

func newEventLoops(*Server, int) ([]*eventLoop, error) { return nil, nil }

func (l *eventLoop) adopt(*conn) bool { return false }
func (l *eventLoop) release(*conn)    {}
func (l *eventLoop) leave(*conn)      {}

func wrapForLoop(nc net.Conn) (net.Conn, bool) { return nc, false }
func (l *eventLoop) run()                      {}
func (l *eventLoop) stop()                     {}

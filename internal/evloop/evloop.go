// Package evloop owns the epoll event loops the front ends serve plain-TCP
// connections on (D66): a loop's goroutine waits on its own epoll instance
// and, for every readable connection in turn, has the front end read once,
// run what arrived and write the replies — two system calls a request and
// no goroutine wake-ups, the clients of a loop served in rounds.
//
// A loop must never wait for anything but its epoll. A front end runs on
// the loop only what answers at once; before anything that may wait, it
// calls Member.Leave: the connection leaves the loop for good, the
// goroutine that ran the loop stays with it (so the work goes on exactly
// as on a goroutine of its own) and a new goroutine takes the loop over.
//
// While a loop owns a socket the descriptor is out of Go's netpoller
// (Conn): were it in both, the runtime's poller would wake a thread for
// every request too. Only the loop closes a socket it polls — others call
// Member.Abort, which shuts it down; the loop then reads the end of the
// stream and drops the connection. Closing the descriptor under the loop
// would remove it from the epoll set silently and leak the connection.
//
// Linux only; elsewhere Start returns no loops and every connection keeps
// its own goroutine.
package evloop

import (
	"runtime"
	"time"
)

// Handler is a front end's connection as a loop sees it.
type Handler interface {
	// Ready serves one readiness: read what the socket holds (without
	// waiting), run it, write the replies. False when the connection must
	// end. It may call Member.Leave.
	Ready() bool
	// ServeLeft goes on serving a connection that left the loop during
	// Ready, on the goroutine that ran it; alive is what Ready returned.
	// It returns when the connection has ended.
	ServeLeft(alive bool)
	// Drop ends a connection the loop closes (Ready returned false, or
	// Expired): it was released from the loop already. It must not wait
	// (whatever may, it runs on a goroutine of its own).
	Drop()
	// Expired reports, once a sweep (every SweepEvery), whether the
	// connection must end for lack of progress (an idle timeout, a frame
	// that does not complete); it logs why.
	Expired(now time.Time) bool
}

// Flusher is a Handler whose Ready leaves its replies for the loop to write
// once it has served every connection one wait reported ready: the replies
// of a round then leave together, as Redis writes its clients' replies
// before it sleeps, and a client with several connections is woken once a
// round instead of once per connection (D81). Flush writes them; false when
// the connection must end (the loop then drops it). A Flusher's Ready must
// still write before it returns false or leaves the loop.
type Flusher interface {
	Flush() bool
}

// MaxLoops bounds the loops a server starts (two epoll descriptors and a
// goroutine each): a mistyped count must not exhaust the descriptors.
const MaxLoops = 1024

// SweepEvery is how often a loop asks its connections whether they
// expired.
const SweepEvery = time.Second

// DefaultLoops is the default number of loops: one per two CPUs (the
// other CPU of each pair runs what leaves the loops, the GC and the rest
// of the node), at least one.
func DefaultLoops() int {
	return max(1, runtime.GOMAXPROCS(0)/2)
}

package resp

import "time"

// SlowlogEntry is one SLOWLOG entry, for the web console.
type SlowlogEntry struct {
	ID         int64
	At         time.Time
	Duration   time.Duration
	Args       []string // as SLOWLOG GET shows them (cut like Redis)
	Client     string   // remote address
	ClientName string
}

// Slowlog returns up to n slow-log entries, newest first (SLOWLOG GET n).
func (s *Server) Slowlog(n int) []SlowlogEntry {
	entries := s.slowlog.snapshot(max(n, 0))
	out := make([]SlowlogEntry, len(entries))
	for i, e := range entries {
		out[i] = SlowlogEntry{ID: e.id, At: time.Unix(e.at, 0), Duration: time.Duration(e.micros) * time.Microsecond,
			Args: e.args, Client: e.addr, ClientName: e.clientNm}
	}
	return out
}

package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// EntryOptions set the expiration of one entry, like .NET's
// DistributedCacheEntryOptions. The zero value means "no expiration" (or the
// cache's Options.DefaultOptions when those are set).
type EntryOptions struct {
	// AbsoluteExpiration is the instant the entry expires. Zero = none. It
	// must be in the future when Set is called.
	AbsoluteExpiration time.Time
	// AbsoluteExpirationRelativeToNow is the entry's lifetime from Set.
	// Zero = none; negative is invalid. It wins over AbsoluteExpiration when
	// both are set.
	AbsoluteExpirationRelativeToNow time.Duration
	// SlidingExpiration: the entry expires after this long without a Get or
	// Refresh; every Get or Refresh pushes the expiry out again, but never
	// past the absolute deadline. Zero = none; negative is invalid.
	SlidingExpiration time.Duration
}

// IsZero reports whether no expiration is set.
func (o EntryOptions) IsZero() bool {
	return o.AbsoluteExpiration.IsZero() && o.AbsoluteExpirationRelativeToNow == 0 && o.SlidingExpiration == 0
}

// ErrInvalidOptions is wrapped by every *OptionsError: errors.Is(err,
// ErrInvalidOptions) detects invalid entry options.
var ErrInvalidOptions = errors.New("cache: invalid entry options")

// ErrInvalidEntry: the stored bytes under a key are not a cache entry (the
// key was written by something else than this package).
var ErrInvalidEntry = errors.New("cache: stored value is not a cache entry")

// OptionsError says which EntryOptions field is invalid and why.
type OptionsError struct {
	Field  string
	Reason string
}

func (e *OptionsError) Error() string {
	return fmt.Sprintf("cache: invalid entry options: %s %s", e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidOptions) hold.
func (e *OptionsError) Unwrap() error { return ErrInvalidOptions }

// plan is the resolved expiration of one write.
type plan struct {
	sliding  time.Duration // 0 = none
	deadline int64         // absolute deadline, Unix ns; 0 = none
	ttl      time.Duration // the store's time to live for the write; 0 = none
}

// resolve validates opts at instant now and turns them into a plan. It is a
// pure function (no clock read, no I/O), tested as a table.
func resolve(opts EntryOptions, now time.Time) (plan, error) {
	switch {
	case opts.AbsoluteExpirationRelativeToNow < 0:
		return plan{}, &OptionsError{"AbsoluteExpirationRelativeToNow", "must be positive"}
	case opts.SlidingExpiration < 0:
		return plan{}, &OptionsError{"SlidingExpiration", "must be positive"}
	}
	var p plan
	p.sliding = opts.SlidingExpiration
	switch {
	case opts.AbsoluteExpirationRelativeToNow > 0: // relative wins, as in .NET
		p.deadline = now.Add(opts.AbsoluteExpirationRelativeToNow).UnixNano()
	case !opts.AbsoluteExpiration.IsZero():
		if !opts.AbsoluteExpiration.After(now) {
			return plan{}, &OptionsError{"AbsoluteExpiration", "must be in the future"}
		}
		p.deadline = opts.AbsoluteExpiration.UnixNano()
	}
	p.ttl, _ = lifetime(p.sliding, p.deadline, now.UnixNano())
	return p, nil
}

// lifetime is the time to live an entry gets at instant now (Unix ns):
// min(sliding, deadline − now), deadline − now without sliding, sliding
// without deadline, 0 (no expiry) with neither. expired reports a deadline
// already reached.
func lifetime(sliding time.Duration, deadline, now int64) (ttl time.Duration, expired bool) {
	if deadline == 0 {
		return sliding, false
	}
	left := time.Duration(deadline - now)
	if left <= 0 {
		return 0, true
	}
	if sliding > 0 && sliding < left {
		return sliding, false
	}
	return left, false
}

// The envelope (see the package doc).
const (
	envelopeMagic   = 0xCA
	envelopeVersion = 1
	headerSize      = 18
)

type header struct {
	sliding  time.Duration
	deadline int64
}

func encodeEntry(h header, value []byte) []byte {
	buf := make([]byte, headerSize+len(value))
	buf[0] = envelopeMagic
	buf[1] = envelopeVersion
	binary.BigEndian.PutUint64(buf[2:], uint64(h.sliding))
	binary.BigEndian.PutUint64(buf[10:], uint64(h.deadline))
	copy(buf[headerSize:], value)
	return buf
}

func decodeEntry(b []byte) (header, []byte, error) {
	if len(b) < headerSize || b[0] != envelopeMagic || b[1] != envelopeVersion {
		return header{}, nil, ErrInvalidEntry
	}
	h := header{
		sliding:  time.Duration(binary.BigEndian.Uint64(b[2:])),
		deadline: int64(binary.BigEndian.Uint64(b[10:])),
	}
	if h.sliding < 0 || h.deadline < 0 {
		return header{}, nil, ErrInvalidEntry
	}
	return h, b[headerSize:], nil
}

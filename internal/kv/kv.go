// Package kv owns the vocabulary shared by every layer that speaks about a
// key-value operation: the Status taxonomy (R-KV-5), the Result of a single
// operation, PutOptions, and the sentinel errors a Result converts to.
//
// It is a leaf package: it imports nothing of Zaris. The store engine, the
// wire codec and the SDK all use these exact types, so an embedded call
// returns the engine's Result without any conversion, and a remote call
// decodes straight into it.
package kv

import (
	"errors"
	"fmt"
	"time"
)

// Status is the typed outcome of an operation. Expected outcomes (a miss, a
// version conflict, a full node) are statuses, never Go errors.
//
// The numeric values are part of the wire protocol: append only, never reorder.
type Status uint8

const (
	StatusSuccess Status = iota
	StatusNotFound
	StatusConflict
	StatusItemTooLarge
	StatusCapacityExceeded
	StatusMoved
	StatusOwnershipChanging
	StatusMigrating
	StatusReplicaSyncPending
	StatusReplicaWriteRejected
	StatusUnavailable
	StatusUnauthorized
	StatusBadRequest
	StatusTimeout
	// StatusWrongType: an operation against a key holding another kind of
	// value (R-DS). Appended after the fixed list of API.md.
	StatusWrongType
	// StatusInternal: the server failed while serving the request (a bug it
	// contained: the request's connection is closed, the node keeps
	// serving). Appended after StatusWrongType.
	StatusInternal
	// StatusReadOnly: a write sent to a cluster that follows another
	// cluster's change feed (a WAN follower, R-OPS-4): it serves reads and
	// refuses client writes until an operator promotes it. Appended after
	// StatusInternal.
	StatusReadOnly

	statusCount // keep last
)

var statusNames = [...]string{
	StatusSuccess:              "Success",
	StatusNotFound:             "NotFound",
	StatusConflict:             "Conflict",
	StatusItemTooLarge:         "ItemTooLarge",
	StatusCapacityExceeded:     "CapacityExceeded",
	StatusMoved:                "Moved",
	StatusOwnershipChanging:    "OwnershipChanging",
	StatusMigrating:            "Migrating",
	StatusReplicaSyncPending:   "ReplicaSyncPending",
	StatusReplicaWriteRejected: "ReplicaWriteRejected",
	StatusUnavailable:          "Unavailable",
	StatusUnauthorized:         "Unauthorized",
	StatusBadRequest:           "BadRequest",
	StatusTimeout:              "Timeout",
	StatusWrongType:            "WrongType",
	StatusInternal:             "Internal",
	StatusReadOnly:             "ReadOnly",
}

func (s Status) String() string {
	if s < statusCount {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Valid reports whether s is a status this build knows.
func (s Status) Valid() bool { return s < statusCount }

// Sentinel errors, one per non-success status, so callers can branch with
// errors.Is(result.Err(), kv.ErrNotFound).
var (
	ErrNotFound             = errors.New("zaris: not found")
	ErrConflict             = errors.New("zaris: version conflict")
	ErrItemTooLarge         = errors.New("zaris: item too large")
	ErrCapacityExceeded     = errors.New("zaris: capacity exceeded")
	ErrMoved                = errors.New("zaris: key moved to another owner")
	ErrOwnershipChanging    = errors.New("zaris: ownership changing")
	ErrMigrating            = errors.New("zaris: segment migrating")
	ErrReplicaSyncPending   = errors.New("zaris: replica sync pending")
	ErrReplicaWriteRejected = errors.New("zaris: write rejected by a replica")
	ErrUnavailable          = errors.New("zaris: unavailable")
	ErrUnauthorized         = errors.New("zaris: unauthorized")
	ErrBadRequest           = errors.New("zaris: bad request")
	ErrTimeout              = errors.New("zaris: timeout")
	ErrWrongType            = errors.New("zaris: operation against a key holding the wrong kind of value")
	ErrInternal             = errors.New("zaris: internal server error")
	ErrReadOnly             = errors.New("zaris: read-only: this cluster follows another cluster's change feed")
)

var statusErrors = [...]error{
	StatusNotFound:             ErrNotFound,
	StatusConflict:             ErrConflict,
	StatusItemTooLarge:         ErrItemTooLarge,
	StatusCapacityExceeded:     ErrCapacityExceeded,
	StatusMoved:                ErrMoved,
	StatusOwnershipChanging:    ErrOwnershipChanging,
	StatusMigrating:            ErrMigrating,
	StatusReplicaSyncPending:   ErrReplicaSyncPending,
	StatusReplicaWriteRejected: ErrReplicaWriteRejected,
	StatusUnavailable:          ErrUnavailable,
	StatusUnauthorized:         ErrUnauthorized,
	StatusBadRequest:           ErrBadRequest,
	StatusTimeout:              ErrTimeout,
	StatusWrongType:            ErrWrongType,
	StatusInternal:             ErrInternal,
	StatusReadOnly:             ErrReadOnly,
}

// Err returns nil for StatusSuccess and the status's sentinel otherwise.
func (s Status) Err() error {
	if s == StatusSuccess {
		return nil
	}
	if s < statusCount {
		return statusErrors[s]
	}
	return fmt.Errorf("zaris: unknown status %d", uint8(s))
}

// Redirect reports whether the status means "the map the caller routed with
// is wrong": the client refreshes its routing table and retries (R-CLIENT-3).
func (s Status) Redirect() bool {
	switch s {
	case StatusMoved, StatusOwnershipChanging, StatusReplicaWriteRejected,
		StatusMigrating, StatusReplicaSyncPending, StatusUnavailable:
		return true
	}
	return false
}

// SegmentWrite is what a write barrier waits for: a write applied at
// Revision of Segment (a revision's apply implies every earlier one of its
// segment, so one entry per segment, at the highest revision written).
type SegmentWrite struct {
	Segment  uint16
	Revision uint64
}

// Result is the outcome of one key operation (R-KV-1).
type Result struct {
	Status   Status
	Value    []byte
	Version  uint64        // per-key ItemVersion: 1 on create, +1 per write
	Revision uint64        // per-segment revision of the mutation that produced it
	TTL      time.Duration // remaining time to live; 0 = none
	// Detail says why a request was refused, with the limit it passed
	// ("value of 2048 bytes exceeds --max-item-bytes 1024"); "" on success
	// and when the status says it all.
	Detail string
}

// OK reports Status == StatusSuccess.
func (r Result) OK() bool { return r.Status == StatusSuccess }

// Err is nil when OK; otherwise an error for which errors.Is(err, ErrX) holds
// for the status's sentinel. Its text carries Detail when there is one.
func (r Result) Err() error { return StatusError(r.Status, r.Detail) }

// StatusError is the error of a refused operation: the status's sentinel,
// with detail (the reason and the limit) appended to its text when set. nil
// for StatusSuccess.
func StatusError(s Status, detail string) error {
	base := s.Err()
	if base == nil || detail == "" {
		return base
	}
	return &DetailError{Status: s, Detail: detail}
}

// DetailError is a refusal with its reason: errors.Is(err, ErrItemTooLarge)
// (the status's sentinel) holds, and Error() reads
// "zaris: item too large: value of 2048 bytes exceeds --max-item-bytes 1024".
type DetailError struct {
	Status Status
	Detail string
}

func (e *DetailError) Error() string { return e.Status.Err().Error() + ": " + e.Detail }

// Unwrap returns the status's sentinel.
func (e *DetailError) Unwrap() error { return e.Status.Err() }

// PutOptions qualify a write. The zero value is an unconditional write
// without expiry.
type PutOptions struct {
	IfMatchVersion uint64        // 0 = unconditional; else Conflict unless current version matches
	IfAbsent       bool          // create only; Conflict if the key exists
	TTL            time.Duration // 0 = no expiry; negative = BadRequest
	// KeepTTL: a replace keeps the key's current expiry (Redis SET …
	// KEEPTTL); without it a replace sets TTL (none when 0). With TTL > 0 it
	// is BadRequest.
	KeepTTL     bool
	ContentType string // optional metadata, "" = none
	Labels      map[string]string
	// ExpireAt is an absolute expiry, Unix nanoseconds (Redis SET …
	// EXAT/PXAT: the key expires at the instant given, not at a TTL counted
	// from when the write reaches the store); 0 = none. With TTL or KeepTTL
	// it is BadRequest. An instant not after the write leaves no key.
	ExpireAt int64
}

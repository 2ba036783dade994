package sdk

import (
	"fmt"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// Status is the typed outcome of an operation (R-KV-5). It is the same type
// the store engine and the wire protocol use, so nothing is translated.
type Status = kv.Status

// The statuses, in their fixed order.
const (
	StatusSuccess              = kv.StatusSuccess
	StatusNotFound             = kv.StatusNotFound
	StatusConflict             = kv.StatusConflict
	StatusItemTooLarge         = kv.StatusItemTooLarge
	StatusCapacityExceeded     = kv.StatusCapacityExceeded
	StatusMoved                = kv.StatusMoved
	StatusOwnershipChanging    = kv.StatusOwnershipChanging
	StatusMigrating            = kv.StatusMigrating
	StatusReplicaSyncPending   = kv.StatusReplicaSyncPending
	StatusReplicaWriteRejected = kv.StatusReplicaWriteRejected
	StatusUnavailable          = kv.StatusUnavailable
	StatusUnauthorized         = kv.StatusUnauthorized
	StatusBadRequest           = kv.StatusBadRequest
	StatusTimeout              = kv.StatusTimeout
	StatusWrongType            = kv.StatusWrongType
	StatusInternal             = kv.StatusInternal
	StatusReadOnly             = kv.StatusReadOnly
)

// Sentinel errors returned by Result.Err, for errors.Is.
var (
	ErrNotFound             = kv.ErrNotFound
	ErrConflict             = kv.ErrConflict
	ErrItemTooLarge         = kv.ErrItemTooLarge
	ErrCapacityExceeded     = kv.ErrCapacityExceeded
	ErrMoved                = kv.ErrMoved
	ErrOwnershipChanging    = kv.ErrOwnershipChanging
	ErrMigrating            = kv.ErrMigrating
	ErrReplicaSyncPending   = kv.ErrReplicaSyncPending
	ErrReplicaWriteRejected = kv.ErrReplicaWriteRejected
	ErrUnavailable          = kv.ErrUnavailable
	ErrUnauthorized         = kv.ErrUnauthorized
	ErrBadRequest           = kv.ErrBadRequest
	ErrTimeout              = kv.ErrTimeout
	ErrWrongType            = kv.ErrWrongType
	ErrInternal             = kv.ErrInternal
	ErrReadOnly             = kv.ErrReadOnly
)

// Result is the outcome of one key operation (R-KV-1). Expected outcomes are
// statuses: a Get of a missing key is StatusNotFound with a nil error. A call
// that did not do what it was asked (a refused write, an unreachable owner)
// also returns Err() as its error, so `if err != nil` catches it and the
// error says why.
type Result struct {
	Status   Status
	Value    []byte
	Version  uint64        // per-key ItemVersion: 1 on create, +1 per write
	Revision uint64        // per-segment revision of the mutation that produced it
	TTL      time.Duration // remaining time to live; 0 = none
	// Detail is why the server refused the request, with the limit it
	// passed ("value of 2048 bytes exceeds --max-item-bytes 1024"); "" when
	// the status says it all.
	Detail string
}

// OK reports Status == StatusSuccess.
func (r Result) OK() bool { return r.Status == StatusSuccess }

// Err is nil when OK; otherwise an error for which errors.Is(err, ErrX) holds
// for the status's sentinel (ErrNotFound, ErrConflict, ErrItemTooLarge…),
// whose text carries Detail.
func (r Result) Err() error { return kv.StatusError(r.Status, r.Detail) }

// PutOptions qualify a write. The zero value is an unconditional write
// without expiry.
type PutOptions struct {
	IfMatchVersion uint64        // 0 = unconditional; else Conflict unless current version matches
	IfAbsent       bool          // create only; Conflict if the key exists
	TTL            time.Duration // 0 = no expiry; negative = BadRequest
	// KeepTTL: a replace keeps the key's current expiry, as Redis SET …
	// KEEPTTL (a new key gets none); without it a replace, CAS included,
	// sets TTL. With TTL > 0 it is BadRequest.
	KeepTTL     bool
	ContentType string // optional metadata, "" = none
	Labels      map[string]string
	// ExpireAt is an absolute expiry, Unix nanoseconds (time.Time.UnixNano):
	// the key expires at that instant of the store's clock, as Redis SET …
	// PXAT; 0 = none. With TTL or KeepTTL it is BadRequest.
	ExpireAt int64
}

// kvOptions is opts as the engine and the wire codec take them (the same
// layout, so the conversion copies nothing).
func (o *PutOptions) kv() *kv.PutOptions { return (*kv.PutOptions)(o) }

// tooLarge is the ItemTooLarge a client answers itself, before sending a
// value that cannot fit (the engine's cap, or a frame's).
func tooLarge(size int, limit string) Result {
	return Result{Status: StatusItemTooLarge, Detail: fmt.Sprintf("value of %d bytes exceeds %s", size, limit)}
}

// resultOf converts an engine or wire result (same layout).
func resultOf(r kv.Result) Result { return Result(r) }

// KV is one item of PutMany.
type KV struct {
	Key   string
	Value []byte
	TTL   time.Duration
}

// BatchOp is the operation of one BatchItem.
type BatchOp uint8

const (
	BatchGet BatchOp = iota
	BatchPut
	BatchDelete
)

func (o BatchOp) String() string {
	switch o {
	case BatchGet:
		return "get"
	case BatchPut:
		return "put"
	case BatchDelete:
		return "delete"
	}
	return "unknown"
}

// BatchItem is one operation of ExecuteBatch.
type BatchItem struct {
	Op      BatchOp
	Key     string
	Value   []byte
	Options *PutOptions
}

// ItemResult answers the BatchItem at Index.
type ItemResult struct {
	Index int
	Op    BatchOp
	Key   string
	Result
}

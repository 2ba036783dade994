package sdk

import (
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
)

// Result is the outcome of one key operation: Status, Value, Version
// (per-key ItemVersion), Revision (per-segment) and the remaining TTL.
type Result = kv.Result

// PutOptions qualify a write: IfMatchVersion (CAS), IfAbsent (create only),
// TTL, and optional ContentType and Labels metadata.
type PutOptions = kv.PutOptions

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

package sdk

import (
	"github.com/vmihailenco/msgpack/v5"

	"github.com/zaris-io/zaris/internal/mpsafe"
)

// Serializer turns typed values into the opaque bytes the store keeps
// (R-KV-6). The default is MessagePack.
type Serializer interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// MsgpackSerializer is the default Serializer. Unmarshal checks a value's
// announced lengths against its size first (internal/mpsafe): a cached
// value another client wrote must not make a reader allocate gigabytes.
type MsgpackSerializer struct{}

func (MsgpackSerializer) Marshal(v any) ([]byte, error)      { return msgpack.Marshal(v) }
func (MsgpackSerializer) Unmarshal(data []byte, v any) error { return mpsafe.Unmarshal(data, v) }

package sdk

import "github.com/vmihailenco/msgpack/v5"

// Serializer turns typed values into the opaque bytes the store keeps
// (R-KV-6). The default is MessagePack.
type Serializer interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// MsgpackSerializer is the default Serializer.
type MsgpackSerializer struct{}

func (MsgpackSerializer) Marshal(v any) ([]byte, error)      { return msgpack.Marshal(v) }
func (MsgpackSerializer) Unmarshal(data []byte, v any) error { return msgpack.Unmarshal(data, v) }

package sdk_test

import (
	"bytes"
	"github.com/zaris-io/zaris/internal/kv"
	"io"
	"net"
	"testing"

	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/sdk"
)

func getFrame(id uint32, key string) []byte {
	return wire.AppendFrame(nil, id, wire.OpGet, 0, wire.AppendKeyRequest(nil, key))
}

func readAll(nc net.Conn) ([]byte, error) {
	var buf bytes.Buffer
	_, err := io.Copy(&buf, nc)
	return buf.Bytes(), err
}

type rawResponse struct {
	st    sdk.Status
	isErr bool
}

func decodeOne(t *testing.T, b []byte) rawResponse {
	t.Helper()
	f, _, err := wire.DecodeFrame(b, 0)
	if err != nil {
		t.Fatalf("decoding %q: %v", b, err)
	}
	if f.Flags.Has(wire.FlagError) {
		var e wire.ErrorResponse
		if err := wire.DecodeErrorResponse(f.Body, &e); err != nil {
			t.Fatal(err)
		}
		return rawResponse{st: e.Status, isErr: true}
	}
	var r kv.Result
	if err := wire.DecodeResult(f.Body, &r); err != nil {
		t.Fatal(err)
	}
	return rawResponse{st: r.Status}
}

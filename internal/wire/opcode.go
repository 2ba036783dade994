package wire

import (
	"fmt"
	"strings"
)

// Opcode names the operation a frame carries. A response frame repeats the
// opcode of the request it answers.
//
// The numeric values are part of the protocol: append new opcodes after the
// last one (data-structure operations included), never reorder or reuse a
// value. 0 is never a valid opcode, so a zeroed header is caught at once.
type Opcode uint8

const (
	OpHandshake  Opcode = iota + 1 // first frame of every connection; HandshakeRequest / HandshakeResponse
	OpPing                         // liveness; the response body echoes the request body
	OpGet                          // key request → Result
	OpPut                          // PutRequest → Result
	OpDelete                       // key request → Result
	OpExpire                       // expire request → Result
	OpPersist                      // key request → Result
	OpTTL                          // key request → Result (Result.TTL)
	OpBatch                        // batch request → batch result
	OpInfo                         // empty body → InfoResponse
	OpCommand                      // command request → Reply (data structures, R-DS)
	OpWatch                        // watch request → a stream of WatchItem frames (R-DS-6)
	OpSubscribe                    // subscribe request → a stream of MessageItem frames (R-DS-7)
	OpEndStream                    // end-stream request {stream id} → Reply OK; ends a watch or subscription
	OpPublish                      // publish request → Reply Int (receivers)
	OpRoutingMap                   // empty body → RoutingMap; with FlagStream in the request: a stream of maps, one per change (push)

	opEnd // keep last: one past the highest opcode this build knows
)

var opcodeNames = [...]string{
	OpHandshake:  "Handshake",
	OpPing:       "Ping",
	OpGet:        "Get",
	OpPut:        "Put",
	OpDelete:     "Delete",
	OpExpire:     "Expire",
	OpPersist:    "Persist",
	OpTTL:        "TTL",
	OpBatch:      "Batch",
	OpInfo:       "Info",
	OpCommand:    "Command",
	OpWatch:      "Watch",
	OpSubscribe:  "Subscribe",
	OpEndStream:  "EndStream",
	OpPublish:    "Publish",
	OpRoutingMap: "RoutingMap",
}

func (op Opcode) String() string {
	if op.Valid() {
		return opcodeNames[op]
	}
	return fmt.Sprintf("Opcode(%d)", uint8(op))
}

// Valid reports whether op is an opcode this build knows. A server answers an
// unknown opcode with an error response rather than closing the connection:
// the frame header is intact, so the stream is still in sync.
func (op Opcode) Valid() bool { return op > 0 && op < opEnd }

// Flags qualify a frame. Bits a receiver does not know are ignored; senders
// leave them zero.
type Flags uint8

const (
	// FlagResponse is set on every frame a server sends in answer to a
	// request; the frame carries the request's id and opcode.
	FlagResponse Flags = 1 << iota
	// FlagError marks a response whose body is an ErrorResponse instead of the
	// opcode's normal response body: the request could not be executed at all
	// (malformed frame or body, unknown opcode, no handshake yet, frame too
	// large). Per-key outcomes are never protocol errors; they travel as a
	// Result's Status.
	FlagError
	// FlagStream marks one item of a response stream (OpWatch, OpSubscribe):
	// more frames with the same id follow. The stream's last frame has
	// FlagResponse without FlagStream — with FlagError when the stream
	// ended abnormally (a consumer that fell behind), with an empty body when
	// the client ended it.
	FlagStream
)

// Has reports whether every bit of x is set in f.
func (f Flags) Has(x Flags) bool { return f&x == x }

func (f Flags) String() string {
	if f == 0 {
		return "0"
	}
	var parts []string
	if f.Has(FlagResponse) {
		parts = append(parts, "Response")
	}
	if f.Has(FlagError) {
		parts = append(parts, "Error")
	}
	if f.Has(FlagStream) {
		parts = append(parts, "Stream")
	}
	if rest := f &^ (FlagResponse | FlagError | FlagStream); rest != 0 {
		parts = append(parts, fmt.Sprintf("%#02x", uint8(rest)))
	}
	return strings.Join(parts, "|")
}

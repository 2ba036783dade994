// Package wire is the codec of Zaris's native binary protocol: the frame
// layout, the opcodes and flags, the MessagePack bodies of every request and
// response, the handshake and the rules by which the protocol evolves. It is
// pure: no network, no goroutines, no clock. The server's listener
// (server/native) and the SDK's connection both drive it from their own loops.
//
// It imports only the standard library and internal/kv, whose Status,
// Result and PutOptions it encodes as they are: statuses are never redefined
// here. It must not import anything of the server or the SDK.
//
// # Frames
//
// A connection carries a sequence of frames in each direction:
//
//	offset  size  field
//	0       4     length      big-endian uint32: the bytes after this field (6 + body)
//	4       4     request id  big-endian uint32
//	8       1     opcode      Opcode
//	9       1     flags       Flags
//	10      n     body        one MessagePack value, or nothing
//
// The header layout is fixed for every protocol version, so that any server
// can read any client's handshake. A reader bounds the length field with a
// maximum frame size (DefaultMaxFrameSize unless configured); a larger frame
// is reported with its header (*FrameTooLargeError) and skipped without being
// buffered, so the server may answer it by id and keep the connection.
//
// The client picks request ids; they are unique among the requests in
// flight on one connection. Each response carries its request's id and
// opcode with FlagResponse set; responses may arrive in any order (the
// connection is fully pipelined). Id 0 is reserved for frames a server may
// one day send unasked (push notifications); clients number requests from 1.
//
// A request that cannot be executed at all — malformed body, unknown opcode,
// frame too large, no handshake yet — is answered with FlagResponse|FlagError
// and an ErrorResponse body {Status, Message}. Expected per-key outcomes (a
// miss, a conflict, a moved key) are never protocol errors: they are the
// Status of a Result. A malformed length field (ErrMalformedFrame) or a
// truncated frame leaves the stream unreadable; the connection is closed.
//
// # Bodies
//
// Every body is a MessagePack array whose elements are the fields of a
// struct in a fixed order (each Append function documents its list). Keys and
// text are str, values are bin, "absent" is nil. Encoders use the shortest
// form of every value and leave out trailing fields at their zero value.
// Decoders accept any integer width, str or bin for keys and text, nil for
// any field (meaning its zero value), fewer fields than they know (the
// missing optional ones take their zero value) and more (the extra ones are
// skipped). They return errors wrapping ErrMalformedBody on any other input,
// never panic, and never size an allocation by a declared length that the
// remaining bytes cannot back.
//
// Decoded keys and values alias the body they were decoded from, which for a
// FrameReader is valid only until its next Next: whoever keeps one copies it.
//
// Ping and Info requests have empty bodies; a Ping response echoes the
// request's body.
//
// # Handshake
//
// The first frame a client sends is OpHandshake with a HandshakeRequest
// {ProtocolVersion, Store, Token, ClientName}. Until a handshake succeeds the
// server answers any other frame with an error response (StatusUnauthorized)
// and closes. The server replies with a HandshakeResponse {Status,
// ProtocolVersion, NodeID, ServerVersion, Message, MaxFrameSize}:
//
//   - StatusSuccess: the connection speaks ProtocolVersion from now on;
//   - StatusUnauthorized: the token is missing or wrong;
//   - StatusBadRequest: the store name is not the cluster's (never silently
//     another store), or there is no common protocol version; Message says
//     which. The server closes the connection after any failure.
//
// # Versioning
//
// ProtocolVersion is a single integer. The client sends the highest version
// it speaks; the server answers with the highest version both speak
// (NegotiateVersion), or StatusBadRequest with a message naming its supported
// range when the client is older than its MinProtocolVersion; the client
// closes the connection unless it speaks the chosen version
// (SupportedVersion).
//
// Within a version the protocol only grows: new opcodes, flags, statuses
// (kv.Status) and batch operations take new values; new body fields are
// appended at the end of a struct and are optional, so old decoders skip
// them and new decoders default them. Renumbering, removing or changing the
// type of a field needs a new ProtocolVersion. The handshake bodies are
// frozen apart from appended fields, since they are read before a version is
// agreed.
package wire

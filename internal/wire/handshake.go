package wire

import (
	"fmt"
	"math"

	"github.com/zaris-io/zaris/internal/kv"
)

const (
	// ProtocolVersion is the highest protocol version this build speaks.
	ProtocolVersion uint16 = 1
	// MinProtocolVersion is the lowest protocol version this build still
	// accepts. Raising it drops support for older peers.
	MinProtocolVersion uint16 = 1
)

// NegotiateVersion is the server's rule: given the highest version a client
// speaks, it returns the version the connection will use — the highest both
// speak — and false when there is none (the client is older than
// MinProtocolVersion); the server then answers StatusBadRequest with a
// message naming the range it supports.
func NegotiateVersion(clientVersion uint16) (uint16, bool) {
	v := min(clientVersion, ProtocolVersion)
	return v, v >= MinProtocolVersion
}

// SupportedVersion is the client's check of the version a server chose: the
// client closes the connection if it does not speak it.
func SupportedVersion(v uint16) bool {
	return v >= MinProtocolVersion && v <= ProtocolVersion
}

// HandshakeRequest is the body of the first frame a client sends.
//
//	[ProtocolVersion uint]                     (required; the highest the client speaks)
//	[Store str, Token str, ClientName str]     (optional)
type HandshakeRequest struct {
	ProtocolVersion uint16
	Store           string // must equal the cluster's store name
	Token           string // authentication token; "" when security is off
	ClientName      string // free text for logs and diagnostics
	// User names the user Token is the password of ("" = default); sent
	// only when set, so older servers see the four fields they know.
	User string
}

// String redacts the token so that logging a request cannot leak it.
func (h HandshakeRequest) String() string {
	tok := ""
	if h.Token != "" {
		tok = "<redacted>"
	}
	return fmt.Sprintf("{ProtocolVersion:%d Store:%q Token:%s ClientName:%q}",
		h.ProtocolVersion, h.Store, tok, h.ClientName)
}

// AppendHandshakeRequest appends a handshake request body.
func AppendHandshakeRequest(dst []byte, h HandshakeRequest) []byte {
	n := 4
	if h.User != "" {
		n = 5
	}
	dst = append(dst, mpFixArray|byte(n))
	dst = appendUint(dst, uint64(h.ProtocolVersion))
	dst = appendStr(dst, h.Store)
	dst = appendStr(dst, h.Token)
	dst = appendStr(dst, h.ClientName)
	if h.User != "" {
		dst = appendStr(dst, h.User)
	}
	return dst
}

// DecodeHandshakeRequest decodes a handshake request body into h,
// overwriting every field.
func DecodeHandshakeRequest(body []byte, h *HandshakeRequest) error {
	*h = HandshakeRequest{}
	d := decoder{b: body, body: "handshake request"}
	n, err := d.beginStruct(1)
	if err != nil {
		return err
	}
	d.field = "protocol version"
	v, err := d.readUint(math.MaxUint16)
	if err != nil {
		return err
	}
	h.ProtocolVersion = uint16(v)
	fields := [...]*string{&h.Store, &h.Token, &h.ClientName, &h.User}
	names := [...]string{"store", "token", "client name", "user"}
	for i := 0; i < len(fields) && i < n-1; i++ {
		d.field = names[i]
		if *fields[i], err = d.readString(); err != nil {
			return err
		}
	}
	if err := d.endStruct(n, 1+len(fields)); err != nil {
		return err
	}
	return d.finish()
}

// HandshakeResponse answers a handshake. Status is StatusSuccess when the
// connection is open for requests; StatusUnauthorized for a bad token;
// StatusBadRequest for a store mismatch or no common protocol version, with
// Message saying which. On any other status the server closes the
// connection after sending it.
//
//	[Status uint]                                          (required)
//	[ProtocolVersion uint, NodeID str, ServerVersion str,
//	 Message str, MaxFrameSize uint]                       (optional)
type HandshakeResponse struct {
	Status          kv.Status
	ProtocolVersion uint16 // the version chosen for this connection
	NodeID          string
	ServerVersion   string // the server build, for diagnostics
	Message         string // why the handshake failed; "" on success
	// MaxFrameSize is the largest length field the server accepts; a client
	// splits batches to stay below it. 0 means DefaultMaxFrameSize.
	MaxFrameSize uint32
}

// AppendHandshakeResponse appends a handshake response body.
func AppendHandshakeResponse(dst []byte, h HandshakeResponse) []byte {
	dst = append(dst, mpFixArray|6)
	dst = appendUint(dst, uint64(h.Status))
	dst = appendUint(dst, uint64(h.ProtocolVersion))
	dst = appendStr(dst, h.NodeID)
	dst = appendStr(dst, h.ServerVersion)
	dst = appendStr(dst, h.Message)
	return appendUint(dst, uint64(h.MaxFrameSize))
}

// DecodeHandshakeResponse decodes a handshake response body into h,
// overwriting every field.
func DecodeHandshakeResponse(body []byte, h *HandshakeResponse) error {
	*h = HandshakeResponse{}
	d := decoder{b: body, body: "handshake response"}
	n, err := d.beginStruct(1)
	if err != nil {
		return err
	}
	d.field = "status"
	st, err := d.readUint(math.MaxUint8)
	if err != nil {
		return err
	}
	h.Status = kv.Status(st)
	if n > 1 {
		d.field = "protocol version"
		v, err := d.readUint(math.MaxUint16)
		if err != nil {
			return err
		}
		h.ProtocolVersion = uint16(v)
	}
	fields := [...]*string{&h.NodeID, &h.ServerVersion, &h.Message}
	names := [...]string{"node id", "server version", "message"}
	for i := 0; i < len(fields) && i < n-2; i++ {
		d.field = names[i]
		if *fields[i], err = d.readString(); err != nil {
			return err
		}
	}
	if n > 5 {
		d.field = "max frame size"
		v, err := d.readUint(math.MaxUint32)
		if err != nil {
			return err
		}
		h.MaxFrameSize = uint32(v)
	}
	if err := d.endStruct(n, 6); err != nil {
		return err
	}
	return d.finish()
}

// InfoResponse answers OpInfo (whose request body is empty): a flat set of
// named facts about the node for operators and diagnostics. The set of
// fields is the server's; none is part of the protocol.
//
//	[Status uint]                     (required)
//	[Fields map{str:str}|nil]         (optional)
type InfoResponse struct {
	Status kv.Status
	Fields map[string]string // nil when empty
}

// AppendInfoResponse appends an info response body.
func AppendInfoResponse(dst []byte, r InfoResponse) []byte {
	dst = append(dst, mpFixArray|2)
	dst = appendUint(dst, uint64(r.Status))
	return appendStringMap(dst, r.Fields)
}

// DecodeInfoResponse decodes an info response body into r, overwriting every
// field.
func DecodeInfoResponse(body []byte, r *InfoResponse) error {
	*r = InfoResponse{}
	d := decoder{b: body, body: "info response"}
	n, err := d.beginStruct(1)
	if err != nil {
		return err
	}
	d.field = "status"
	st, err := d.readUint(math.MaxUint8)
	if err != nil {
		return err
	}
	r.Status = kv.Status(st)
	if n > 1 {
		d.field = "fields"
		if r.Fields, err = d.readStringMap(); err != nil {
			return err
		}
	}
	if err := d.endStruct(n, 2); err != nil {
		return err
	}
	return d.finish()
}

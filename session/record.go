package session

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/gorilla/sessions"
)

// Serializer encodes the values of a session for the store.
type Serializer interface {
	Serialize(s *sessions.Session) ([]byte, error)
	Deserialize(data []byte, s *sessions.Session) error
}

// GobSerializer encodes session values with encoding/gob (the default).
// Concrete types other than the basic ones must be gob.Register-ed.
//
// The map is written as two parallel lists, keys and values, in a canonical
// key order, so equal values give equal bytes whatever Go's map iteration
// order: Commit detects a changed session by comparing bytes, without
// decoding. (Values holding maps of their own may still encode in varying
// order; that costs at most an unneeded write, never a lost one.)
type GobSerializer struct{}

// gobValues is the encoded form of a session's values.
type gobValues struct {
	Keys   []interface{}
	Values []interface{}
}

// Serialize implements Serializer.
func (GobSerializer) Serialize(s *sessions.Session) ([]byte, error) {
	type kv struct {
		order string
		k, v  interface{}
	}
	entries := make([]kv, 0, len(s.Values))
	for k, v := range s.Values {
		entries = append(entries, kv{fmt.Sprintf("%T\x00%v", k, k), k, v})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].order < entries[j].order })
	g := gobValues{Keys: make([]interface{}, len(entries)), Values: make([]interface{}, len(entries))}
	for i, e := range entries {
		g.Keys[i], g.Values[i] = e.k, e.v
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&g); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Deserialize implements Serializer.
func (GobSerializer) Deserialize(data []byte, s *sessions.Session) error {
	var g gobValues
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&g); err != nil {
		return err
	}
	if len(g.Keys) != len(g.Values) {
		return errors.New("session: corrupt values: keys and values differ in length")
	}
	if s.Values == nil {
		s.Values = make(map[interface{}]interface{}, len(g.Keys))
	}
	for i, k := range g.Keys {
		s.Values[k] = g.Values[i]
	}
	return nil
}

// canonical marks GobSerializer's output as independent of map order.
func (GobSerializer) canonical() {}

// The stored record (see the package doc).
const (
	recordMagic0  = 'Z'
	recordMagic1  = 'S'
	recordVersion = 1
	recordHeader  = 11
)

// ErrInvalidRecord: the bytes under a session key are not a session record.
var ErrInvalidRecord = errors.New("session: stored value is not a session record")

func encodeRecord(created int64, payload []byte) []byte {
	b := make([]byte, recordHeader+len(payload))
	b[0], b[1], b[2] = recordMagic0, recordMagic1, recordVersion
	binary.BigEndian.PutUint64(b[3:], uint64(created))
	copy(b[recordHeader:], payload)
	return b
}

func decodeRecord(b []byte) (created int64, payload []byte, err error) {
	if len(b) < recordHeader || b[0] != recordMagic0 || b[1] != recordMagic1 || b[2] != recordVersion {
		return 0, nil, ErrInvalidRecord
	}
	created = int64(binary.BigEndian.Uint64(b[3:]))
	if created <= 0 {
		return 0, nil, ErrInvalidRecord
	}
	return created, b[recordHeader:], nil
}

// idBytes is the entropy of a session id: 256 bits.
const idBytes = 32

var idLen = base64.RawURLEncoding.EncodedLen(idBytes)

func newID() string {
	var b [idBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// validID reports whether id has the exact shape newID produces, so that a
// decoded cookie can never address an arbitrary key.
func validID(id string) bool {
	if len(id) != idLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// lifetime is the time to live a session created at created (Unix ns) gets
// at instant now: min(idle, created+absolute−now); absolute ≤ 0 = no cap.
// ok is false once the cap is reached. Pure; tested as a table.
func lifetime(idle, absolute time.Duration, created, now int64) (ttl time.Duration, ok bool) {
	if absolute <= 0 {
		return idle, true
	}
	left := time.Duration(created + int64(absolute) - now)
	if left <= 0 {
		return 0, false
	}
	if idle < left {
		return idle, true
	}
	return left, true
}

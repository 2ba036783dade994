// Package mpsafe decodes msgpack that arrives from outside the process — a
// client's argument, a peer's message, a cached value another client wrote.
//
// msgpack.Unmarshal trusts the lengths a message announces: a string, binary
// or extension header announcing a gigabyte makes it allocate towards that
// gigabyte in 1 MiB steps until the input runs out, and the buffer it grew
// stays in the library's decoder pool (100 nine-byte messages: 5 GB
// allocated, 1 GB kept). Check walks a message first, without allocating,
// and refuses any length past the end of the input and any nesting deeper
// than MaxDepth; Unmarshal is Check, then msgpack.Unmarshal.
package mpsafe

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// MaxDepth bounds how deeply arrays and maps may nest.
const MaxDepth = 64

// ErrMalformed is wrapped by every error Check returns.
var ErrMalformed = errors.New("mpsafe: malformed msgpack")

// Unmarshal decodes b into v once Check accepts it.
func Unmarshal(b []byte, v any) error {
	if err := Check(b); err != nil {
		return err
	}
	return msgpack.Unmarshal(b, v)
}

// Check reports whether b starts with one complete msgpack value whose
// every announced length fits in b and whose nesting is at most MaxDepth.
// Bytes after that value are not looked at (msgpack.Unmarshal ignores them
// too).
func Check(b []byte) error {
	_, err := value(b, 0, 0)
	return err
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// value checks the value at off and returns the offset after it.
func value(b []byte, off, depth int) (int, error) {
	if depth > MaxDepth {
		return 0, malformed("nested deeper than %d", MaxDepth)
	}
	if off >= len(b) {
		return 0, malformed("truncated at byte %d", off)
	}
	c := b[off]
	off++
	switch {
	case c <= 0x7f || c >= 0xe0: // positive and negative fixint
		return off, nil
	case c <= 0x8f: // fixmap
		return elements(b, off, 2*int(c&0x0f), depth)
	case c <= 0x9f: // fixarray
		return elements(b, off, int(c&0x0f), depth)
	case c <= 0xbf: // fixstr
		return skip(b, off, int(c&0x1f))
	}
	switch c {
	case 0xc0, 0xc2, 0xc3: // nil, false, true
		return off, nil
	case 0xc4, 0xd9: // bin8, str8
		return sized(b, off, 1, 0)
	case 0xc5, 0xda: // bin16, str16
		return sized(b, off, 2, 0)
	case 0xc6, 0xdb: // bin32, str32
		return sized(b, off, 4, 0)
	case 0xc7: // ext8: length, type, data
		return sized(b, off, 1, 1)
	case 0xc8:
		return sized(b, off, 2, 1)
	case 0xc9:
		return sized(b, off, 4, 1)
	case 0xca: // float32
		return skip(b, off, 4)
	case 0xcb: // float64
		return skip(b, off, 8)
	case 0xcc, 0xd0: // uint8, int8
		return skip(b, off, 1)
	case 0xcd, 0xd1:
		return skip(b, off, 2)
	case 0xce, 0xd2:
		return skip(b, off, 4)
	case 0xcf, 0xd3:
		return skip(b, off, 8)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16: type and data
		return skip(b, off, 1+1<<(c-0xd4))
	case 0xdc: // array16
		n, off, err := length(b, off, 2)
		if err != nil {
			return 0, err
		}
		return elements(b, off, n, depth)
	case 0xdd:
		n, off, err := length(b, off, 4)
		if err != nil {
			return 0, err
		}
		return elements(b, off, n, depth)
	case 0xde: // map16
		n, off, err := length(b, off, 2)
		if err != nil {
			return 0, err
		}
		return elements(b, off, 2*n, depth)
	case 0xdf:
		n, off, err := length(b, off, 4)
		if err != nil {
			return 0, err
		}
		return elements(b, off, 2*n, depth)
	}
	return 0, malformed("code 0x%02x at byte %d", c, off-1)
}

// length reads a big-endian length of width bytes at off.
func length(b []byte, off, width int) (int, int, error) {
	if len(b)-off < width {
		return 0, 0, malformed("truncated length at byte %d", off)
	}
	switch width {
	case 1:
		return int(b[off]), off + 1, nil
	case 2:
		return int(binary.BigEndian.Uint16(b[off:])), off + 2, nil
	}
	return int(binary.BigEndian.Uint32(b[off:])), off + 4, nil
}

// sized skips a length of width bytes, extra bytes (an extension's type)
// and the data the length announces.
func sized(b []byte, off, width, extra int) (int, error) {
	n, off, err := length(b, off, width)
	if err != nil {
		return 0, err
	}
	return skip(b, off, extra+n)
}

// skip passes over n bytes at off.
func skip(b []byte, off, n int) (int, error) {
	if n > len(b)-off {
		return 0, malformed("%d bytes announced at byte %d, %d left", n, off, len(b)-off)
	}
	return off + n, nil
}

// elements checks n values from off: each takes a byte at least, so a count
// past what is left is refused before any is looked at.
func elements(b []byte, off, n, depth int) (int, error) {
	if n > len(b)-off {
		return 0, malformed("%d elements announced at byte %d, %d bytes left", n, off, len(b)-off)
	}
	var err error
	for range n {
		if off, err = value(b, off, depth+1); err != nil {
			return 0, err
		}
	}
	return off, nil
}

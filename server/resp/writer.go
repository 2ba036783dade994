package resp

import (
	"math"
	"strconv"

	"github.com/tidwall/redcon"

	"github.com/zaris-io/zaris/internal/kv"
)

// Writer appends replies to B in the protocol version the client chose
// (HELLO): RESP2 by default, RESP3 when Proto is 3. Each method writes the
// RESP3 type when the client speaks RESP3 and its RESP2 equivalent
// otherwise (a map becomes a flat array, a double a bulk string, a null
// "$-1" or "*-1"), the same choices Redis makes. The RESP2 primitives are
// redcon's appenders.
//
// It is a pure encoder: no I/O.
type Writer struct {
	B     []byte
	Proto int // 2 or 3
	// OnError, when set, sees every error reply written (INFO errorstats).
	OnError func(msg string)
}

func (w *Writer) resp3() bool { return w.Proto == 3 }

// Simple writes a simple string: +s.
func (w *Writer) Simple(s string) { w.B = redcon.AppendString(w.B, s) }

// OK writes +OK.
func (w *Writer) OK() { w.B = redcon.AppendOK(w.B) }

// Error writes an error reply; msg starts with its code ("ERR …",
// "WRONGTYPE …"). Newlines become spaces, as Redis sanitises them.
func (w *Writer) Error(msg string) {
	if w.OnError != nil {
		w.OnError(msg)
	}
	w.B = redcon.AppendError(w.B, msg)
}

// Int writes an integer: :n.
func (w *Writer) Int(n int64) { w.B = redcon.AppendInt(w.B, n) }

// Bulk writes a bulk string.
func (w *Writer) Bulk(b []byte) { w.B = redcon.AppendBulk(w.B, b) }

// BulkString writes a bulk string.
func (w *Writer) BulkString(s string) { w.B = redcon.AppendBulkString(w.B, s) }

// BulkInt writes n as a bulk string.
func (w *Writer) BulkInt(n int64) {
	var tmp [20]byte
	w.B = redcon.AppendBulk(w.B, strconv.AppendInt(tmp[:0], n, 10))
}

// Null writes a null bulk string: $-1 (RESP2) or _ (RESP3).
func (w *Writer) Null() {
	if w.resp3() {
		w.B = append(w.B, '_', '\r', '\n')
		return
	}
	w.B = redcon.AppendNull(w.B)
}

// NullArray writes a null array: *-1 (RESP2) or _ (RESP3).
func (w *Writer) NullArray() {
	if w.resp3() {
		w.B = append(w.B, '_', '\r', '\n')
		return
	}
	w.B = append(w.B, '*', '-', '1', '\r', '\n')
}

// Array writes an array header of n elements.
func (w *Writer) Array(n int) { w.B = redcon.AppendArray(w.B, n) }

// Map writes a map header of n key-value pairs (RESP2: an array of 2n).
func (w *Writer) Map(n int) {
	if w.resp3() {
		w.B = appendHeader(w.B, '%', n)
		return
	}
	w.B = redcon.AppendArray(w.B, 2*n)
}

// Set writes a set header of n elements (RESP2: an array).
func (w *Writer) Set(n int) {
	if w.resp3() {
		w.B = appendHeader(w.B, '~', n)
		return
	}
	w.B = redcon.AppendArray(w.B, n)
}

// Push writes the header of an out-of-band push message of n elements
// (RESP2: an array, as pub/sub messages are).
func (w *Writer) Push(n int) {
	if w.resp3() {
		w.B = appendHeader(w.B, '>', n)
		return
	}
	w.B = redcon.AppendArray(w.B, n)
}

// Double writes a floating-point number: ,f (RESP3) or a bulk string.
func (w *Writer) Double(f float64) {
	var tmp [32]byte
	s := FormatFloat(tmp[:0], f)
	w.DoubleText(s)
}

// DoubleText writes a number already formatted the way Redis prints
// scores.
func (w *Writer) DoubleText(s []byte) {
	if w.resp3() {
		w.B = append(w.B, ',')
		w.B = append(w.B, s...)
		w.B = append(w.B, '\r', '\n')
		return
	}
	w.B = redcon.AppendBulk(w.B, s)
}

// Bool writes a boolean: #t/#f (RESP3) or :1/:0.
func (w *Writer) Bool(b bool) {
	switch {
	case w.resp3() && b:
		w.B = append(w.B, '#', 't', '\r', '\n')
	case w.resp3():
		w.B = append(w.B, '#', 'f', '\r', '\n')
	case b:
		w.Int(1)
	default:
		w.Int(0)
	}
}

// Verbatim writes text as a verbatim string of format "txt" (RESP3) or a
// bulk string.
func (w *Writer) Verbatim(text string) {
	if w.resp3() {
		w.B = appendHeader(w.B, '=', len(text)+4)
		w.B = append(w.B, "txt:"...)
		w.B = append(w.B, text...)
		w.B = append(w.B, '\r', '\n')
		return
	}
	w.B = redcon.AppendBulkString(w.B, text)
}

func appendHeader(b []byte, c byte, n int) []byte {
	b = append(b, c)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// FormatFloat appends f the way Redis prints a score or a float: the
// shortest representation that parses back to f, "inf"/"-inf" for
// infinities.
func FormatFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		return append(dst, "nan"...)
	}
	return kv.AppendShortestG(dst, f)
}

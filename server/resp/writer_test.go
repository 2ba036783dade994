package resp

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriterRESP2AndRESP3(t *testing.T) {
	type step func(w *Writer)
	cases := []struct {
		name       string
		do         step
		resp2, rs3 string
	}{
		{"ok", func(w *Writer) { w.OK() }, "+OK\r\n", "+OK\r\n"},
		{"error newlines sanitised", func(w *Writer) { w.Error("ERR a\r\nb") }, "-ERR a  b\r\n", "-ERR a  b\r\n"},
		{"int", func(w *Writer) { w.Int(-42) }, ":-42\r\n", ":-42\r\n"},
		{"bulk binary", func(w *Writer) { w.Bulk([]byte("a\r\nb")) }, "$4\r\na\r\nb\r\n", "$4\r\na\r\nb\r\n"},
		{"null", func(w *Writer) { w.Null() }, "$-1\r\n", "_\r\n"},
		{"null array", func(w *Writer) { w.NullArray() }, "*-1\r\n", "_\r\n"},
		{"map", func(w *Writer) { w.Map(2) }, "*4\r\n", "%2\r\n"},
		{"set", func(w *Writer) { w.Set(3) }, "*3\r\n", "~3\r\n"},
		{"push", func(w *Writer) { w.Push(3) }, "*3\r\n", ">3\r\n"},
		{"double", func(w *Writer) { w.Double(1.5) }, "$3\r\n1.5\r\n", ",1.5\r\n"},
		{"double inf", func(w *Writer) { w.Double(math.Inf(-1)) }, "$4\r\n-inf\r\n", ",-inf\r\n"},
		{"bool", func(w *Writer) { w.Bool(true) }, ":1\r\n", "#t\r\n"},
		{"verbatim", func(w *Writer) { w.Verbatim("a:b\r\n") }, "$5\r\na:b\r\n\r\n", "=9\r\ntxt:a:b\r\n\r\n"},
		{"bulk int", func(w *Writer) { w.BulkInt(1234567) }, "$7\r\n1234567\r\n", "$7\r\n1234567\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w2 := Writer{Proto: 2}
			tc.do(&w2)
			require.Equal(t, tc.resp2, string(w2.B))
			w3 := Writer{Proto: 3}
			tc.do(&w3)
			require.Equal(t, tc.rs3, string(w3.B))
		})
	}
}

func TestFormatFloat(t *testing.T) {
	for f, want := range map[float64]string{0: "0", 1: "1", -2.5: "-2.5", 0.1: "0.1", 1e21: "1e+21", math.Inf(1): "inf"} {
		require.Equal(t, want, string(FormatFloat(nil, f)))
	}
}

package mpsafe

import (
	"bytes"
	"errors"
	"runtime"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

type sample struct {
	Name   string
	Labels map[string]string
	Items  []any
	Blob   []byte
	N      int64
	F      float64
	T      bool
}

// TestCheckAcceptsWhatMsgpackEncodes: every value the library writes —
// every type, empty and long lengths, nesting — passes Check and decodes
// the same through Unmarshal.
func TestCheckAcceptsWhatMsgpackEncodes(t *testing.T) {
	values := []any{
		nil, true, false, 0, -1, 127, -32, 200, -200, 70000, -70000, 1 << 40, -(1 << 40), uint64(1 << 63),
		float32(1.5), 2.25, "", "x", string(bytes.Repeat([]byte{'s'}, 40)), string(bytes.Repeat([]byte{'s'}, 300)),
		string(bytes.Repeat([]byte{'s'}, 70000)), []byte{}, []byte{1, 2}, bytes.Repeat([]byte{1}, 70000),
		[]any{}, []any{1, "a", []any{[]any{map[string]any{"k": []byte{9}}}}}, make([]int, 20), make([]int, 70000),
		map[string]int{}, map[string]int{"a": 1, "b": 2}, sample{Name: "n", Labels: map[string]string{"a": "b"},
			Items: []any{1, 2.5, nil}, Blob: []byte("blob"), N: -5, F: 3.5, T: true},
	}
	for _, v := range values {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := Check(b); err != nil {
			t.Fatalf("%T %.40v: %v", v, v, err)
		}
		if err := Check(b[:len(b)-1]); err == nil && len(b) > 1 {
			t.Fatalf("%T %.40v: a value one byte short passed", v, v)
		}
	}
	var got sample
	want := sample{Name: "n", Labels: map[string]string{"a": "b"}, Blob: []byte("blob"), N: 7}
	b, _ := msgpack.Marshal(want)
	if err := Unmarshal(b, &got); err != nil || got.Name != "n" || got.Labels["a"] != "b" || string(got.Blob) != "blob" || got.N != 7 {
		t.Fatalf("Unmarshal: %+v %v", got, err)
	}
}

// TestCheckRefusesHostileLengths names the inputs it exists for: lengths
// and counts past the end of the input (which msgpack.Unmarshal allocates
// towards), nesting without end, and the one code msgpack never uses —
// each refused with ErrMalformed and without allocating.
func TestCheckRefusesHostileLengths(t *testing.T) {
	cases := map[string][]byte{
		"str32 of 1 GiB in a map":  {0x81, 0xa1, 'A', 0xdb, 0x40, 0x00, 0x00, 0x00, 'x'},
		"bin32 of 4 GiB":           {0xc6, 0xff, 0xff, 0xff, 0xff},
		"ext32 of 2 GiB":           {0xc9, 0x7f, 0xff, 0xff, 0xff, 0x01},
		"array32 of 4 G elements":  {0xdd, 0xff, 0xff, 0xff, 0xff, 0x01},
		"map16 of 65 535 pairs":    {0xde, 0xff, 0xff, 0x01, 0x02},
		"str8 past the end":        {0xd9, 0x05, 'a'},
		"fixext16 cut short":       {0xd8, 0x01, 0x02},
		"a length cut short":       {0xda, 0x01},
		"arrays nested 1 000 deep": bytes.Repeat([]byte{0x91}, 1000),
		"the unused code 0xc1":     {0xc1},
		"nothing":                  {},
	}
	for name, b := range cases {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := Check(b)
		var v any
		uerr := Unmarshal(b, &v)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrMalformed) || !errors.Is(uerr, ErrMalformed) {
			t.Errorf("%s: Check = %v, Unmarshal = %v; want ErrMalformed", name, err, uerr)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
			t.Errorf("%s: refusing a %d-byte input allocated %d bytes", name, len(b), grew)
		}
	}
}

// FuzzCheck: Check never panics, and whatever it accepts msgpack decodes
// without allocating more than a bounded multiple of the input.
func FuzzCheck(f *testing.F) {
	for _, v := range []any{nil, 1, "s", []byte{1}, []any{1, "a"}, map[string]any{"k": []any{1.5, nil}}} {
		b, _ := msgpack.Marshal(v)
		f.Add(b)
	}
	f.Add([]byte{0x81, 0xa1, 'A', 0xdb, 0x40, 0x00, 0x00, 0x00, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		if Check(b) != nil {
			return
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var v any
		_ = msgpack.Unmarshal(b, &v)
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(1<<20+len(b)*256) {
			t.Fatalf("a %d-byte input Check accepted allocated %d bytes", len(b), grew)
		}
	})
}

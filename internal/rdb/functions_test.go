package rdb

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFunctionPayloads: libraries' codes round-trip, and each refusal has
// Redis's text.
func TestFunctionPayloads(t *testing.T) {
	codes := [][]byte{[]byte("#!lua name=a\nredis.register_function('fa', function() return 1 end)"), []byte("#!lua name=b\n" + string(make([]byte, 300)))}
	got, err := RestoreFunctions(DumpFunctions(codes))
	require.NoError(t, err)
	require.Equal(t, codes, got)
	got, err = RestoreFunctions(Seal([]byte{opFunctionPreGA, 1, 'x', 3, 'L', 'U', 'A', 1, 1, 'd', 1, 'c'}, Version))
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("#!lua name=x\nc")}, got, "a release candidate's function, as Redis 7.0 reads it")
	got, err = RestoreFunctions(DumpFunctions(nil))
	require.NoError(t, err)
	require.Empty(t, got)

	for _, c := range []struct {
		name    string
		payload []byte
		want    string
	}{
		{"no footer", []byte{1, 2}, "DUMP payload version or checksum are wrong"},
		{"bad CRC", append(DumpFunctions(codes)[:len(DumpFunctions(codes))-1], 0), "DUMP payload version or checksum are wrong"},
		{"pre-GA function cut short", Seal([]byte{opFunctionPreGA, 1, 'x'}, Version), "Failed loading engine name"},
		{"a key's value", Seal([]byte{0, 1, 'x'}, Version), "given type is not a function"},
		{"code cut short", Seal([]byte{opFunction2, 9, 'x'}, Version), "Failed loading library payload"},
		{"a huge length", Seal([]byte{opFunction2, 0x81, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, Version), "Failed loading library payload"},
	} {
		_, err := RestoreFunctions(c.payload)
		require.EqualError(t, err, c.want, c.name)
		require.True(t, err != nil && !errors.Is(err, ErrFormat), c.name)
	}
}

// FuzzRestoreFunctions: no payload panics RestoreFunctions; what it reads
// dumps back to the same codes.
func FuzzRestoreFunctions(f *testing.F) {
	f.Add(DumpFunctions([][]byte{[]byte("#!lua name=a\nredis.register_function('f', function() return 1 end)")}))
	f.Add(DumpFunctions(nil))
	f.Add(Seal([]byte{opFunction2, 0xC3, 3, 5, 2, 'a', 'b', 'c'}, Version))
	f.Fuzz(func(t *testing.T, payload []byte) {
		codes, err := RestoreFunctions(payload)
		if err != nil {
			return
		}
		again, err := RestoreFunctions(DumpFunctions(codes))
		if err != nil || len(again) != len(codes) {
			t.Fatalf("round trip: %v, %d codes of %d", err, len(again), len(codes))
		}
		for i := range codes {
			if string(again[i]) != string(codes[i]) {
				t.Fatalf("code %d differs", i)
			}
		}
	})
}

package placement

import (
	"math/rand/v2"
	"testing"
)

// Every value was read from redis-server 7.0.15 `CLUSTER KEYSLOT` on this
// machine (R-PLACE-1).
func TestSlotMatchesRedisClusterKeyslot(t *testing.T) {
	cases := []struct {
		key  string
		slot uint16
	}{
		{"", 0},
		{"foo", 12182},
		{"bar", 5061},
		{"hello", 866},
		{"key", 12539},
		{"user:1000", 1649},
		{"123456789", 12739}, // CRC16/XMODEM check value 0x31C3 → 12739
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"user1000", 3443},
		{"foo{}{bar}", 8363},    // empty first tag: whole key hashed
		{"foo{{bar}}zap", 4015}, // tag is "{bar"
		{"foo{bar}{zap}", 5061}, // only the first tag counts: "bar"
		{"{}", 15257},           // empty tag → whole key "{}"
		{"{", 4092},             // unclosed
		{"}{a}", 15495},         // tag "a"
		{"a", 15495},
		{"a{b}{c}", 3300}, // tag "b"
		{"b", 3300},
		{"héllo", 11061}, // non-ASCII: bytes of the UTF-8 encoding
		{"{é}x", 10180},
		{"é", 10180},
	}
	for _, c := range cases {
		if got := Slot(c.key); got != c.slot {
			t.Errorf("Slot(%q) = %d, want %d", c.key, got, c.slot)
		}
	}
}

func TestHashTagEdgeCases(t *testing.T) {
	cases := []struct{ key, tag string }{
		{"{}", "{}"},
		{"{", "{"},
		{"}", "}"},
		{"}{a}", "a"},
		{"a{b}{c}", "b"},
		{"{a", "{a"},
		{"a}", "a}"},
		{"{{a}}", "{a"},
		{"x{}y{z}", "x{}y{z}"}, // first '{' has an empty tag: whole key, Redis does not look further
		{"{user}:1", "user"},
	}
	for _, c := range cases {
		if got := HashTag(c.key); got != c.tag {
			t.Errorf("HashTag(%q) = %q, want %q", c.key, got, c.tag)
		}
	}
}

func TestSegmentOfCoversSlotRanges(t *testing.T) {
	for _, total := range []int{1, 3, 7, 256, 1000, 16384} {
		next := uint16(0)
		for seg := 0; seg < total; seg++ {
			lo, hi := SlotRange(uint16(seg), total)
			if lo != next {
				t.Fatalf("total=%d seg=%d: first slot %d, want %d (ranges must be contiguous)", total, seg, lo, next)
			}
			if SegmentOfSlot(lo, total) != uint16(seg) || SegmentOfSlot(hi, total) != uint16(seg) {
				t.Fatalf("total=%d seg=%d: range [%d,%d] does not map back", total, seg, lo, hi)
			}
			next = hi + 1
		}
		if next != 0 && int(next) != SlotCount {
			t.Fatalf("total=%d: ranges end at %d", total, next)
		}
	}
	if got := SegmentOf("foo", 256); got != uint16(12182*256/16384) {
		t.Fatalf("SegmentOf(foo)=%d", got)
	}
}

func TestCRC16CheckValue(t *testing.T) {
	if got := CRC16("123456789"); got != 0x31C3 {
		t.Fatalf("CRC16 check value = %#x, want 0x31c3", got)
	}
}

func TestSlotDoesNotAllocate(t *testing.T) {
	allocs := testing.AllocsPerRun(1000, func() { _ = SegmentOf("user:{42}:profile", 256) })
	if allocs != 0 {
		t.Fatalf("SegmentOf allocated %.1f times per call", allocs)
	}
}

// crcBitwise is the reference, bit-at-a-time CRC16/XMODEM.
func crcBitwise(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// refSlot is a deliberately naive reimplementation of Redis's keyHashSlot.
func refSlot(key string) uint16 {
	s := -1
	for i := 0; i < len(key); i++ {
		if key[i] == '{' {
			s = i
			break
		}
	}
	if s < 0 {
		return crcBitwise([]byte(key)) & 16383
	}
	e := -1
	for j := s + 1; j < len(key); j++ {
		if key[j] == '}' {
			e = j
			break
		}
	}
	if e < 0 || e == s+1 {
		return crcBitwise([]byte(key)) & 16383
	}
	return crcBitwise([]byte(key[s+1:e])) & 16383
}

func FuzzSlot(f *testing.F) {
	for _, s := range []string{"", "{", "}", "{}", "}{a}", "a{b}{c}", "héllo", "{user1000}.following", "\x00\xff{\x80}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		got := Slot(key)
		if got >= SlotCount {
			t.Fatalf("slot %d out of range", got)
		}
		if want := refSlot(key); got != want {
			t.Fatalf("Slot(%q)=%d, reference %d", key, got, want)
		}
		if seg := SegmentOf(key, 256); seg >= 256 {
			t.Fatalf("segment %d out of range", seg)
		}
	})
}

func BenchmarkSlot(b *testing.B) {
	keys := []string{"user:1000", "session:5f2b8c1e9d3a4b6f", "{tenant42}:orders:2026-11"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = SegmentOf(keys[i%len(keys)], DefaultSegments)
	}
}

// TestCRC16SlicedMatchesBitwise: the eight-bytes-at-a-time CRC16 equals the
// bit-at-a-time reference at every length around its eight-byte steps and
// their tails, on random bytes and on bytes with every bit set.
func TestCRC16SlicedMatchesBitwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 70; n++ {
		for round := range 50 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32())
				if round == 0 {
					b[i] = 0xff
				}
			}
			if got, want := CRC16(string(b)), crcBitwise(b); got != want {
				t.Fatalf("CRC16 of %d bytes %x = %#x, bitwise %#x", n, b, got, want)
			}
		}
	}
}

// Package placement owns THE placement function of Zaris (R-PLACE-4): key →
// Redis Cluster hash slot (CRC16/XMODEM of the hash tag or the whole key, mod
// 16384) → segment. The client and every server component route with these
// functions and nothing else, so a key can never be placed two ways.
//
// It is a leaf package: it imports nothing of Zaris.
package placement

import "strings"

// SlotCount is the number of Redis Cluster hash slots.
const SlotCount = 16384

// DefaultSegments is the number of segments of a store (R-PLACE-3). It is
// fixed for the life of a cluster.
const DefaultSegments = 256

// crcTables are the tables of CRC16/XMODEM (polynomial 0x1021, init 0, no
// reflection), computed once at package initialisation. crcTables[0] is the
// byte-at-a-time table; crcTables[k][b] is crcTables[0][b] carried through
// k more zero bytes, so that eight bytes fold in with eight independent
// lookups (slicing-by-8) instead of a chain of eight dependent ones.
var crcTables = func() (t [8][256]uint16) {
	for i := range t[0] {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[0][i] = crc
	}
	for k := 1; k < len(t); k++ {
		for i := range t[k] {
			prev := t[k-1][i]
			t[k][i] = prev<<8 ^ t[0][prev>>8]
		}
	}
	return t
}()

// CRC16 returns the CRC16/XMODEM checksum of s. It takes a string so that
// routing a key never converts (and so never allocates). Every key of every
// request goes through it, often more than once.
func CRC16(s string) uint16 {
	var crc uint16
	t := &crcTables
	for ; len(s) >= 8; s = s[8:] {
		// The register's two bytes fold into the first two of the eight.
		crc = t[7][byte(crc>>8)^s[0]] ^ t[6][byte(crc)^s[1]] ^ t[5][s[2]] ^ t[4][s[3]] ^
			t[3][s[4]] ^ t[2][s[5]] ^ t[1][s[6]] ^ t[0][s[7]]
	}
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ t[0][byte(crc>>8)^s[i]]
	}
	return crc
}

// HashTag returns the part of key that is hashed (R-PLACE-2): the bytes
// between the first '{' and the first '}' after it, when that span is not
// empty; otherwise the whole key. Matching is on bytes, exactly like Redis,
// so multi-byte UTF-8 keys behave identically.
func HashTag(key string) string {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return key
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return key // '{' without a closing '}', or "{}" (an empty tag): the whole key
	}
	return key[i+1 : i+1+j]
}

// Slot returns the Redis Cluster hash slot of key (R-PLACE-1): identical to
// Redis's CLUSTER KEYSLOT.
func Slot(key string) uint16 {
	return CRC16(HashTag(key)) & (SlotCount - 1)
}

// SegmentOf returns the segment of key (R-PLACE-3): Slot(key)*totalSegments/16384.
// totalSegments must be in 1..16384.
func SegmentOf(key string, totalSegments int) uint16 {
	return SegmentOfSlot(Slot(key), totalSegments)
}

// SegmentOfSlot maps a slot to its segment; consecutive slots share a segment,
// so a segment is a contiguous slot range (what CLUSTER SLOTS reports).
func SegmentOfSlot(slot uint16, totalSegments int) uint16 {
	return uint16(uint32(slot) * uint32(totalSegments) / SlotCount)
}

// SlotRange returns the first and last slot (inclusive) of segment seg.
func SlotRange(seg uint16, totalSegments int) (first, last uint16) {
	// smallest slot s with s*total/16384 >= seg  ⇔ s >= ceil(seg*16384/total)
	lo := (uint32(seg)*SlotCount + uint32(totalSegments) - 1) / uint32(totalSegments)
	hi := (uint32(seg+1)*SlotCount+uint32(totalSegments)-1)/uint32(totalSegments) - 1
	return uint16(lo), uint16(hi)
}

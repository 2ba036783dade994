package rdb

import (
	"encoding/binary"
	"math/bits"
)

// Redis's CRC64 is Jones's polynomial, reflected, with an initial value of 0
// and no final xor — not hash/crc64's convention (which inverts before and
// after), and hash/crc64 rebuilds its slicing tables on every large call for
// a polynomial it does not know, so the package keeps its own tables.
const jonesPoly = 0xad93d23594c935a9

// crcTab[k][b] is the CRC of byte b followed by k zero bytes (slicing-by-8).
var crcTab = func() *[8][256]uint64 {
	var t [8][256]uint64
	poly := bits.Reverse64(jonesPoly)
	for i := range 256 {
		c := uint64(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ poly
			} else {
				c >>= 1
			}
		}
		t[0][i] = c
	}
	for i := range 256 {
		c := t[0][i]
		for k := 1; k < 8; k++ {
			c = t[0][byte(c)] ^ c>>8
			t[k][i] = c
		}
	}
	return &t
}()

// crc64 continues Redis's CRC64 crc over p.
func crc64(crc uint64, p []byte) uint64 {
	t := crcTab
	for len(p) >= 8 {
		crc ^= binary.LittleEndian.Uint64(p)
		crc = t[7][byte(crc)] ^ t[6][byte(crc>>8)] ^ t[5][byte(crc>>16)] ^ t[4][byte(crc>>24)] ^
			t[3][byte(crc>>32)] ^ t[2][byte(crc>>40)] ^ t[1][byte(crc>>48)] ^ t[0][byte(crc>>56)]
		p = p[8:]
	}
	for _, b := range p {
		crc = t[0][byte(crc)^b] ^ crc>>8
	}
	return crc
}

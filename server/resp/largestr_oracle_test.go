package resp_test

import (
	"strconv"
	"strings"
	"testing"
)

// largeStringsScript edits strings past the size where Zaris pages them
// (64 KiB, store/pagedstr.go) with every command that edits or reads part
// of a string, across page edges and past the end, and reads them whole
// after each kind of edit; COPY's copy is edited apart from its source.
func largeStringsScript() []oracleRow {
	var out []oracleRow
	add := func(args ...string) { out = append(out, oracleRow{cmpExact, args}) }
	big := strings.Repeat("0123456789abcdef", 70000/16)
	add("SET", "bs", big, "EXAT", "4102444800")
	add("SETBIT", "bs", "7", "1")
	add("SETRANGE", "bs", "4094", "across-a-page-edge")
	add("SETRANGE", "bs", "69990", "past-the-end")
	add("SETRANGE", "bs", "100", "")
	add("GET", "bs")
	for _, r := range [][2]string{{"0", "20"}, {"4090", "4100"}, {"65530", "65545"}, {"-30", "-1"}, {"69980", "80000"}, {"5", "2"}} {
		add("GETRANGE", "bs", r[0], r[1])
	}
	add("SUBSTR", "bs", "8190", "8200")
	add("STRLEN", "bs")
	add("SETBIT", "bs", strconv.Itoa(8*4096+3), "1")
	add("SETBIT", "bs", strconv.Itoa(8*200000), "1")
	for _, b := range []int{0, 7, 8*4096 + 3, 8 * 150000, 8 * 200000, 8*200000 + 1, 8 * 300000} {
		add("GETBIT", "bs", strconv.Itoa(b))
	}
	add("BITCOUNT", "bs")
	add("BITCOUNT", "bs", "4000", "9000")
	add("BITCOUNT", "bs", "32760", "32800", "BIT")
	add("BITCOUNT", "bs", "-5", "-1")
	add("BITPOS", "bs", "1")
	add("BITPOS", "bs", "0", "100")
	add("BITPOS", "bs", "1", "70000", "-1")
	add("BITPOS", "bs", "0", "199990")
	add("BITPOS", "bs", "1", "150000", "199999")
	add("BITFIELD", "bs", "GET", "u8", "0", "SET", "u16", "#5000", "1234", "INCRBY", "i5", "524000", "7", "GET", "u32", "4000000000")
	add("BITFIELD", "bs", "SET", "u8", "1700000", "5")
	add("BITFIELD", "bs", "OVERFLOW", "FAIL", "INCRBY", "u2", "100", "10")
	add("BITFIELD_RO", "bs", "GET", "u8", "8", "GET", "i16", "1699992")
	add("STRLEN", "bs")
	add("APPEND", "bs", "xyz")
	add("GET", "bs")
	add("EXPIRETIME", "bs")
	add("OBJECT", "ENCODING", "bs")
	add("COPY", "bs", "bs2")
	add("SETBIT", "bs2", "9", "1")
	add("SETRANGE", "bs2", "4096", "copy-only")
	add("GET", "bs")
	add("GET", "bs2")
	add("INCR", "bs")
	add("GETEX", "bs", "PERSIST")
	add("TTL", "bs")
	add("GETSET", "bs", "small")
	add("GET", "bs")
	// Grown from nothing past the paging size, by each command.
	add("SETBIT", "bm", "600000", "1")
	add("SETRANGE", "sr", "100000", "x")
	add("BITFIELD", "bf", "SET", "u8", "#70000", "200")
	add("GET", "bm")
	add("GET", "sr")
	add("GET", "bf")
	add("BITCOUNT", "bm")
	add("GETDEL", "sr")
	add("EXISTS", "sr")
	return out
}

// TestLargeStringsLikeRedis runs largeStringsScript on redis-server and on
// a lone Zaris node and compares every reply byte for byte.
func TestLargeStringsLikeRedis(t *testing.T) {
	compareScriptWithRedis(t, largeStringsScript())
}

package resp_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStreamApproxTrimLikeRedis: "~" trimming (XADD and XTRIM, MAXLEN and
// MINID, with and without LIMIT) removes the whole nodes redis-server 7.0
// removes, so XLEN, the first entry and the replies agree, whatever the
// entries look like: small and large values (a node closes at 100 entries
// or at 4096 bytes of listpack), values Redis stores as integers, fields
// that change between entries, ids far apart, XDELs and exact trims in
// between (D119). Every reply is compared byte for byte, and XINFO
// STREAM's length and radix-tree-keys after each step.
func TestStreamApproxTrimLikeRedis(t *testing.T) {
	want, got := dialRaw(t, startRedis(t, false)), dialRaw(t, startNode(t).RESPAddr().String())
	rng := rand.New(rand.NewPCG(7, 17))
	var diffs []string
	run := func(args ...string) {
		w, g := want.do(args...), got.do(args...)
		if w != g && len(diffs) < 20 {
			diffs = append(diffs, fmt.Sprintf("%q:\n    redis: %q\n    zaris: %q", args, w, g))
		}
	}
	check := func(key string) {
		run("XLEN", key)
		run("XRANGE", key, "-", "+", "COUNT", "1")
		w, g := xinfoKeys(want.do("XINFO", "STREAM", key)), xinfoKeys(got.do("XINFO", "STREAM", key))
		if w != g && len(diffs) < 20 {
			diffs = append(diffs, fmt.Sprintf("XINFO STREAM %s: redis %s, zaris %s", key, w, g))
		}
	}
	values := []func(i int) string{
		func(int) string { return "value" },
		func(i int) string { return strconv.Itoa(i * 37) },                            // stored as an integer
		func(i int) string { return strconv.Itoa(-i*1000003) + "x" },                  // looks numeric, is not
		func(i int) string { return strings.Repeat("v", 40+i%20) },                    // ~70 entries a node
		func(i int) string { return strings.Repeat("w", 300+i%200) },                  // the byte cap first
		func(i int) string { return strings.Repeat("z", 3000) },                       // one entry a node
		func(i int) string { return fmt.Sprintf("%0*d", 1+i%25, i) },                  // leading zeros: a string
		func(i int) string { return strconv.FormatInt(int64(i)*922337203685477, 10) }, // wide integers
	}
	for vi, value := range values {
		key := fmt.Sprintf("s%d", vi)
		ms := uint64(1)
		for i := 1; i <= 1500; i++ {
			ms += uint64(rng.IntN(3)) * uint64(1+rng.IntN(100000))
			id := fmt.Sprintf("%d-%d", ms, i)
			field := "field"
			if i%7 == 0 {
				field = "other" // not the node's master fields
			}
			args := []string{"XADD", key}
			switch i % 5 {
			case 0:
				args = append(args, "MAXLEN", "~", strconv.Itoa(50+rng.IntN(300)))
			case 1:
				args = append(args, "MAXLEN", "~", strconv.Itoa(rng.IntN(400)), "LIMIT", strconv.Itoa(rng.IntN(250)))
			case 2:
				args = append(args, "MINID", "~", fmt.Sprintf("%d-0", ms/2))
			}
			run(append(args, id, field, value(i), "n", strconv.Itoa(i))...)
			switch {
			case i%97 == 0:
				run("XDEL", key, id, fmt.Sprintf("%d-%d", ms, i-1))
			case i%131 == 0:
				run("XTRIM", key, "MAXLEN", strconv.Itoa(200+rng.IntN(100)))
			case i%151 == 0:
				run("XTRIM", key, "MAXLEN", "~", strconv.Itoa(rng.IntN(200)))
			case i%173 == 0:
				run("XTRIM", key, "MINID", "~", fmt.Sprintf("%d-0", ms-uint64(rng.IntN(1000000))), "LIMIT", "100")
			case i%211 == 0:
				run("XTRIM", key, "MAXLEN", "~", "0", "LIMIT", "0")
			}
			if i%50 == 0 {
				check(key)
			}
		}
		check(key)
	}
	require.Empty(t, diffs, "\"~\" trimming differs from redis-server:\n%s", strings.Join(diffs, "\n"))
}

// xinfoKeys picks XINFO STREAM's length and radix-tree-keys out of its raw
// RESP2 reply (a flat array of names and values).
func xinfoKeys(raw string) string {
	lines := strings.Split(raw, "\r\n")
	var out []string
	for i := 0; i+2 < len(lines); i++ {
		if lines[i] == "length" || lines[i] == "radix-tree-keys" {
			out = append(out, lines[i]+"="+lines[i+1])
		}
	}
	return strings.Join(out, " ")
}

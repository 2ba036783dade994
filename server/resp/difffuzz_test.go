package resp_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/respdiff"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server/resp"
)

// diffSeeds are the fixed seeds of the bounded pass `make test` runs.
var diffSeeds = []int64{1, 2, 3, 4}

// TestDiffFuzz is the differential fuzzer (internal/respdiff): commands
// drawn from the command table, with Redis's argument grammar, extreme and
// malformed values, run on a real redis-server and on a Zaris node, replies
// compared. Any mismatch fails the test with its minimised reproducer as a
// ready-to-paste row for diff_regress_test.go.
//
// By default it runs a bounded pass on fixed seeds; ZARIS_DIFFFUZZ_TIME
// (a duration, `make fuzz-resp FUZZTIME=10m`) runs one long pass seeded by
// the clock (ZARIS_DIFFFUZZ_SEED replays a seed). ZARIS_DIFFFUZZ_ONLY, a
// comma-separated list of command names (`make fuzz-resp FUZZONLY=…`),
// draws only those commands.
func TestDiffFuzz(t *testing.T) {
	redisAddr := startRedis(t, false)
	n := startNode(t)
	base := respdiff.Config{
		RedisAddr: redisAddr, ZarisAddr: n.RESPAddr().String(), Commands: resp.DiffCommands(),
		Timeout: testscale.D(10 * time.Second), Logf: t.Logf,
	}
	if o := os.Getenv("ZARIS_DIFFFUZZ_ONLY"); o != "" {
		base.Only = strings.Split(o, ",")
	}
	var runs []respdiff.Config
	if d := os.Getenv("ZARIS_DIFFFUZZ_TIME"); d != "" {
		dur, err := time.ParseDuration(d)
		require.NoError(t, err, "ZARIS_DIFFFUZZ_TIME")
		c := base
		c.Seed, c.Duration = time.Now().UnixNano(), dur
		if s := os.Getenv("ZARIS_DIFFFUZZ_SEED"); s != "" {
			c.Seed, err = strconv.ParseInt(s, 10, 64)
			require.NoError(t, err, "ZARIS_DIFFFUZZ_SEED")
		}
		runs = append(runs, c)
	} else {
		for _, seed := range diffSeeds {
			c := base
			c.Seed, c.MaxCommands, c.Duration, c.QuickOpen = seed, 3000, testscale.D(5*time.Second), true
			runs = append(runs, c)
		}
	}
	var rows []string
	for i, c := range runs {
		t.Logf("respdiff: seed %d", c.Seed)
		rep, err := respdiff.Run(c)
		require.NoError(t, err)
		if i == 0 {
			t.Logf("respdiff: compared %d commands: %s", len(rep.Compared), strings.Join(rep.Compared, " "))
			t.Logf("respdiff: Zaris only (not compared): %s", strings.Join(rep.ZarisOnly, " "))
			t.Logf("respdiff: redis-server only (%d, not compared): %s", len(rep.RedisOnly), strings.Join(rep.RedisOnly, " "))
		}
		t.Logf("respdiff: %s", rep.Summary())
		for _, m := range rep.Mismatches {
			if o := respdiff.OpenFor(m); o != nil {
				t.Logf("respdiff: open (%s; owner: %s): %s", o.Name, o.Owner, m.Row())
				continue
			}
			rows = append(rows, m.Signature()+"\n\t"+m.Row())
		}
		require.False(t, rep.Dead, "the Zaris node stopped answering: %s", rows)
	}
	require.Empty(t, rows, "replies differ from redis-server; reproducers:\n%s", strings.Join(rows, "\n"))
}

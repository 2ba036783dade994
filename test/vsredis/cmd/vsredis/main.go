// Command vsredis measures zaris-server against redis-server side by side
// (issue #17): the RESP table (redis-benchmark), the native table
// (zaris-bench on both), RSS per key (redis-cli --pipe), with server CPU per
// request, and prints markdown tables. scripts/bench-vs-redis.sh builds the
// binaries and runs it; see test/vsredis.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/zaris-io/zaris/test/vsredis"
)

func main() {
	cfg := vsredis.DefaultConfig()
	flag.StringVar(&cfg.ZarisServer, "zaris-server", "bin/zaris-server", "zaris-server binary")
	flag.StringVar(&cfg.ZarisBench, "zaris-bench", "bin/zaris-bench", "zaris-bench binary")
	flag.StringVar(&cfg.RedisServer, "redis-server", "redis-server", "redis-server binary")
	flag.StringVar(&cfg.RedisBenchmark, "redis-benchmark", "redis-benchmark", "redis-benchmark binary")
	flag.StringVar(&cfg.RedisCLI, "redis-cli", "redis-cli", "redis-cli binary")
	flag.StringVar(&cfg.PongFloor, "pongfloor", "bin/pongfloor", "test/ablation/cmd/pongfloor binary (the floor section)")
	quick := flag.Bool("quick", false, "one short round (about two minutes): a smoke run, not figures to publish")
	rounds := flag.Int("rounds", 0, "interleaved rounds (default 3, 1 with -quick)")
	sections := flag.String("sections", strings.Join(cfg.Sections, ","), "sections to run: resp, native, memory, floor")
	tests := flag.String("tests", strings.Join(cfg.RESPTests, ","), "redis-benchmark -t tests of the RESP table")
	pipelines := flag.String("pipelines", "1,16", "redis-benchmark -P values of the RESP table")
	flag.StringVar(&cfg.TempDir, "tmp", "", "directory of the --pipe input file (default $TMPDIR)")
	flag.Parse()
	if *quick {
		cfg.Quick()
	}
	if *rounds > 0 {
		cfg.Rounds = *rounds
	}
	cfg.Sections = strings.Split(*sections, ",")
	cfg.RESPTests = strings.Split(*tests, ",")
	cfg.RESPPipelines = nil
	for _, p := range strings.Split(*pipelines, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "vsredis: -pipelines %q: want positive integers\n", *pipelines)
			os.Exit(2)
		}
		cfg.RESPPipelines = append(cfg.RESPPipelines, n)
	}
	cfg.Progress = os.Stderr

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := vsredis.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vsredis:", err)
		os.Exit(1)
	}
	res.Write(os.Stdout)
}

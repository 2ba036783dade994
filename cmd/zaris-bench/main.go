// Command zaris-bench is a load generator for Zaris in the spirit of
// redis-benchmark and memtier_benchmark. It speaks the Zaris native protocol
// (internal/wire, one connection per simulated client, pipelined frames
// matched by request id) and RESP2 (a minimal GET/SET client), so the same
// tool drives zaris-server and redis-server for side-by-side comparisons.
//
// Each connection sends --pipeline requests in one write and then reads
// their responses (redis-benchmark's pipelining); a request's latency is
// its own write → response time, recorded in an internal/hdr histogram.
// The load stops by itself after --duration or --requests.
//
// It only sends load to loopback addresses (127.0.0.0/8, ::1) unless
// --allow-remote is given.
//
// It imports internal/wire, internal/kv and internal/hdr, never the server
// or the SDK: it measures the protocol as any client would see it. (Its
// tests start the real server/native listener in-process and a real
// redis-server.)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK    = 0
	exitRun   = 1 // connection failure, handshake rejection, lost connection, interrupt
	exitUsage = 2 // bad flags
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError marks errors in the command line.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// execute parses args, runs the benchmark and returns the exit code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newCommand(stdout, stderr)
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "zaris-bench:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitRun
}

func newCommand(stdout, stderr io.Writer) *cobra.Command {
	cfg := DefaultConfig()
	var protocol, ratio string
	cmd := &cobra.Command{
		Use:   "zaris-bench",
		Short: "Load generator for Zaris (native protocol) and RESP servers such as redis-server",
		Long: `zaris-bench opens --connections connections to a Zaris node (--protocol native)
or a RESP server (--protocol resp, e.g. redis-server), sends a random mix of
GET and SET requests over a keyspace, --pipeline requests per write, for
--duration or --requests, and reports throughput, hits/misses, errors and
latency percentiles (each request's own write → response time).

Only loopback targets (127.0.0.0/8, ::1) are allowed unless --allow-remote.`,
		Example: `  zaris-bench --protocol native --addr 127.0.0.1:7861 --store default -c 50 -P 16 --duration 10s
  zaris-bench --protocol resp --addr 127.0.0.1:6379 -c 50 -P 16 -n 1000000 --ratio 1:0 --json`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			flags := cmd.Flags()
			cfg.Protocol = Protocol(protocol)
			var err error
			if cfg.GetRatio, cfg.SetRatio, err = parseRatio(ratio); err != nil {
				return usageError{fmt.Errorf("--ratio: %w", err)}
			}
			// -n alone bounds the run by count only; --duration keeps its
			// default unless a count is asked for.
			if flags.Changed("requests") && !flags.Changed("duration") {
				cfg.Duration = 0
			}
			if !flags.Changed("token") {
				cfg.Token = os.Getenv("ZARIS_TOKEN")
			}
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			_, err = run(cmd.Context(), cfg, stdout, stderr)
			return err
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })

	f := cmd.Flags()
	f.SortFlags = false
	f.StringVar(&protocol, "protocol", string(cfg.Protocol), "wire protocol: native (Zaris) or resp (RESP2: Zaris RESP front end, redis-server)")
	f.StringVar(&cfg.Addr, "addr", "", "target host:port (default "+DefaultNativeAddr+" native, "+DefaultRESPAddr+" resp)")
	f.BoolVar(&cfg.AllowRemote, "allow-remote", false, "allow a target outside 127.0.0.0/8 and ::1")
	f.StringVar(&cfg.Store, "store", cfg.Store, "store name for the native handshake")
	f.StringVar(&cfg.Token, "token", "", "auth token: native handshake, or AUTH over RESP (default $ZARIS_TOKEN)")
	f.BoolVar(&cfg.TLS, "tls", false, "native protocol over TLS (zariss)")
	f.StringVar(&cfg.CAFile, "ca", "", "PEM file of CA certificates to trust with --tls (default: system roots)")
	f.IntVarP(&cfg.Connections, "connections", "c", cfg.Connections, "simulated clients, one connection each")
	f.IntVarP(&cfg.Pipeline, "pipeline", "P", cfg.Pipeline, "requests per connection sent before reading their responses")
	f.IntVarP(&cfg.DataSize, "data-size", "d", cfg.DataSize, "SET value size in bytes")
	f.IntVar(&cfg.Keyspace, "keyspace", cfg.Keyspace, "number of distinct keys, chosen uniformly at random")
	f.StringVar(&cfg.KeyPrefix, "key-prefix", cfg.KeyPrefix, "prefix of every key (keys are prefix + zero-padded index)")
	f.StringVar(&ratio, "ratio", "1:1", "GET:SET weights, e.g. 1:1, 9:1, 1:0 (GET only), 0:1 (SET only)")
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "run time (with -n: stop at whichever comes first)")
	f.Int64VarP(&cfg.Requests, "requests", "n", 0, "total requests over all connections (instead of --duration)")
	f.BoolVar(&cfg.Warmup, "warmup", cfg.Warmup, "SET every key once before measuring when the mix has GETs, so GETs hit")
	f.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "limit on dialing, the handshake, and waiting for one batch's responses")
	f.DurationVar(&cfg.Progress, "progress", cfg.Progress, "interval of the progress line on stderr (0 disables)")
	f.BoolVar(&cfg.JSON, "json", false, "print the final report as JSON")
	f.Uint64Var(&cfg.Seed, "seed", 0, "random seed for keys and the GET/SET mix (0: from the clock)")
	return cmd
}

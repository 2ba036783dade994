// Command zarisctl is the operators' CLI for a zaris cluster (R-OPS-1).
//
// It owns the operator's view of the cluster and nothing else: it reads the
// nodes' HTTP API (/v1/cluster, /v1/info, /metrics), asks the control-plane
// leader for the membership changes the HTTP API offers (rebalance, evict),
// asks a node to decommission itself (drain), and reads and writes keys
// through the Go SDK. Every decision it shows (Running/Partial/Stopped) is a
// pure function over what it fetched (state.go), so the rule is tested apart
// from any I/O. It must not import the server packages: it speaks only the
// documented HTTP API and the SDK, as any operator tool would.
//
// Exit codes: 0 success (status: Running); 1 the cluster answered but not
// with success (status: Partial; get/del: NotFound; rebalance, add, drain
// not done within --wait); 2 an error (status: Stopped, a node
// unreachable, 401 bad token, 409 not the leader twice, bad arguments).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// Exit codes (documented in the package comment and the usage text).
const (
	exitOK      = 0
	exitPartial = 1 // status Partial; get/del NotFound; a wait not done in time
	exitError   = 2 // status Stopped; unreachable, unauthorized, bad arguments
)

const usage = `zarisctl — operate a zaris cluster

usage: zarisctl [global flags] COMMAND [flags] [args]

commands:
  status                     cluster state (Running/Partial/Stopped), leader, map, partitions, uptime
  nodes                      one row per node: state, raft role, map version it sees, memory, items
  top [--interval 2s] [--count N]
                             live per-node ops/s, memory, items, replication lag (Ctrl-C stops)
  rebalance [--wait 15m]     re-plan the map over every live member and migrate live (nothing
                             is lost), then show the progress until nothing moves (a bar on a
                             terminal, lines otherwise; --wait 0: do not wait; Ctrl-C stops
                             waiting, the moves go on)
  add NODE [--wait 15m]      wait until NODE (started with --join) is a member, ask for a
                             rebalance and show the progress until NODE holds partitions
  drain NODE [--wait 15m]    decommission NODE: its partitions move away live (progress shown;
                             a big node takes minutes), then it leaves the map and stops
  migrations                 the leader's moves in flight: partition, segments, source → target,
                             incoming copies, phase, lag, keys, started, attempts, last abort
  evict NODE                 remove NODE from the cluster for good (on the leader; its data
                             is gone with it at RF 1 — drain a live node instead)
  follow zaris://SEEDS/STORE make this cluster a WAN follower of that primary: its leader applies
                             the primary's change feed; client writes are refused until promote
  promote                    stop following for good (RPO: what the feed had not delivered);
                             client writes open
  get KEY                    print the value of KEY
  set KEY VALUE [--ttl D]    write KEY
  del KEY                    delete KEY
  cert [--dir certs] [--hosts h1,ip2] [--days 365] [--force]
                             make a development CA and a node and a client certificate
                             (ECDSA P-256; the node's names localhost, 127.0.0.1 and --hosts)

global flags (also accepted after the command):
  --http host:port[,...]     HTTP address of any node (default 127.0.0.1:7801); the others are
                             discovered from /v1/cluster
  --token T                  bearer token (default $ZARIS_TOKEN)
  --timeout D                per-request timeout (default 5s)
  --json                     machine-readable output (status, nodes, migrations)
  --addr host:port[,...]     client (native) addresses for get/set/del (default: discovered)
  --store NAME               store for get/set/del (default: the cluster's)

exit codes: 0 success (status Running; rebalance/add/drain done);
            1 status Partial, get/del NotFound, rebalance/add/drain not done within --wait
              (the moves go on), add: NODE holds nothing after the rebalance;
            2 error (status Stopped, node unreachable, 401, 409, bad arguments, interrupted)

zarisctl never asks for a data loss: no command sends accept-data-loss.
`

// globals are the flags every command accepts.
type globals struct {
	http    string
	token   string
	timeout time.Duration
	json    bool
	addr    string
	store   string
}

// register defines the global flags on fs with the current values as
// defaults, so registering them again on a command's flag set keeps what
// was parsed before the command name.
func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.http, "http", g.http, "HTTP address(es) of any node")
	fs.StringVar(&g.token, "token", g.token, "bearer token (default $ZARIS_TOKEN)")
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "per-request timeout")
	fs.BoolVar(&g.json, "json", g.json, "machine-readable output")
	fs.StringVar(&g.addr, "addr", g.addr, "client addresses for get/set/del")
	fs.StringVar(&g.store, "store", g.store, "store for get/set/del")
}

// errUsage marks an error in the arguments (exit 2 after the message).
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command without process concerns: tests call it.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &globals{http: "127.0.0.1:7801", token: os.Getenv("ZARIS_TOKEN"), timeout: 5 * time.Second}
	fs := flag.NewFlagSet("zarisctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		fmt.Fprintf(stderr, "zarisctl: %v\n\n%s", err, usage)
		return exitError
	}
	if fs.NArg() == 0 {
		fmt.Fprint(stderr, usage)
		return exitError
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	cmd, ok := commands[name]
	if !ok {
		if name == "help" {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		fmt.Fprintf(stderr, "zarisctl: unknown command %q\n\n%s", name, usage)
		return exitError
	}
	code, err := cmd(ctx, g, rest, stdout)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		fmt.Fprintf(stderr, "zarisctl %s: %v\n", name, err)
		if errors.Is(err, errUsage) {
			fmt.Fprintf(stderr, "run 'zarisctl --help' for usage\n")
		}
		if code == exitOK {
			code = exitError
		}
	}
	return code
}

// command runs one subcommand; a non-nil error is printed on stderr.
type command func(ctx context.Context, g *globals, args []string, stdout io.Writer) (int, error)

var commands = map[string]command{
	"status":     cmdStatus,
	"nodes":      cmdNodes,
	"top":        cmdTop,
	"rebalance":  cmdRebalance,
	"add":        cmdAdd,
	"migrations": cmdMigrations,
	"evict":      cmdEvict,
	"drain":      cmdDrain,
	"get":        cmdGet,
	"cert":       cmdCert,
	"set":        cmdSet,
	"del":        cmdDel,
	"follow":     cmdFollow,
	"promote":    cmdPromote,
}

// parseArgs parses a command's flags (the global ones included) wherever
// they appear among its positional arguments, and checks the count of
// positionals.
func parseArgs(g *globals, fs *flag.FlagSet, args []string, positional ...string) ([]string, error) {
	fs.SetOutput(io.Discard)
	g.register(fs)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != len(positional) {
		want := "no arguments"
		if len(positional) > 0 {
			want = strings.Join(positional, " ")
		}
		return nil, fmt.Errorf("%w: want %s, got %d argument(s)", errUsage, want, len(pos))
	}
	return pos, nil
}

package vsredis

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// The floor section (issue #17's latency-floor question, asked of the I/O
// model): redis-benchmark's PING_MBULK at 50 connections against Redis,
// Zaris's RESP port, and test/ablation/cmd/pongfloor — a server that only
// answers PING — once per I/O model (a goroutine per connection on Go's
// netpoller, an epoll event loop per CPU, and a single epoll event loop as
// Redis runs). The pongfloor rows are the
// ceiling a Go server on that model reaches: what is left between Zaris and
// the goroutine floor is Zaris's own code, what is between the two floors
// is the I/O model.

// FloorServers are the floor section's servers, in table order.
var FloorServers = []string{"redis", "zaris", "go-goroutine", "go-epoll", "go-epoll-1"}

// floorModels are pongfloor's variants: server name → its flags.
var floorModels = []struct {
	name string
	args []string
}{
	{"go-goroutine", []string{"-io", "goroutine"}},
	{"go-epoll", []string{"-io", "epoll"}},
	{"go-epoll-1", []string{"-io", "epoll", "-loops", "1"}},
}

// FloorRow is one pipeline depth's samples on every floor server.
type FloorRow struct {
	Pipeline int
	Samples  map[string][]Sample
}

// StartPongFloor starts pongfloor with args on a kernel-chosen port and
// waits for its "listening <addr>" line.
func StartPongFloor(bin, name string, args []string, deadline time.Duration) (*Server, error) {
	s, err := start(name, bin, append(args, "-addr", "127.0.0.1:0"))
	if err != nil {
		return nil, err
	}
	var addr string
	err = s.awaitLine(deadline, func(line []byte) bool {
		var ok bool
		addr, ok = strings.CutPrefix(string(line), "listening ")
		return ok
	})
	if err != nil {
		return nil, fmt.Errorf("pongfloor %s: %w", strings.Join(args, " "), err)
	}
	s.RESPAddr = addr
	if err := ping(addr); err != nil {
		s.Stop()
		return nil, fmt.Errorf("pongfloor %s does not answer PING: %w", strings.Join(args, " "), err)
	}
	return s, nil
}

func runFloor(ctx context.Context, cfg Config, progress io.Writer) ([]*FloorRow, error) {
	var rows []*FloorRow
	for _, p := range cfg.RESPPipelines {
		rows = append(rows, &FloorRow{Pipeline: p, Samples: map[string][]Sample{}})
	}
	for round := range cfg.Rounds {
		fmt.Fprintf(progress, "floor round %d/%d\n", round+1, cfg.Rounds)
		servers, err := floorServers(cfg)
		if err != nil {
			return nil, err
		}
		for i, row := range rows {
			// Rotate the order every row and round: no server always runs
			// first (or right after a noisy one).
			for k := range servers {
				s := servers[(k+i+round)%len(servers)]
				smp, err := measure(s, func() (BenchResult, error) {
					return RedisBenchmark(ctx, cfg.RedisBenchmark, s.RESPAddr, "ping_mbulk", cfg.RESPRequests,
						[]string{"-c", strconv.Itoa(cfg.RESPClients), "-P", strconv.Itoa(row.Pipeline)})
				})
				if err != nil {
					stopAll(servers)
					return nil, fmt.Errorf("PING_MBULK -P %d: %w", row.Pipeline, err)
				}
				row.Samples[s.Name] = append(row.Samples[s.Name], smp)
				fmt.Fprintf(progress, "  PING_MBULK -P %-3d %-13s %12.0f ops/s  server CPU %6.2f µs/op  (load %s)\n",
					row.Pipeline, s.Name, smp.OpsPerSec, smp.CPUMicrosPerOp, LoadAverage())
			}
		}
		stopAll(servers)
	}
	return rows, nil
}

func floorServers(cfg Config) ([]*Server, error) {
	var out []*Server
	add := func(s *Server, err error) error {
		if err == nil {
			out = append(out, s)
		}
		return err
	}
	err := add(StartRedis(cfg.RedisServer, 30*time.Second))
	if err == nil {
		err = add(StartZaris(cfg.ZarisServer, 60*time.Second))
	}
	for _, m := range floorModels {
		if err == nil {
			err = add(StartPongFloor(cfg.PongFloor, m.name, m.args, 30*time.Second))
		}
	}
	if err != nil {
		stopAll(out)
		return nil, err
	}
	return out, nil
}

func stopAll(servers []*Server) {
	for _, s := range servers {
		s.Stop()
	}
}

func (r *Results) writeFloor(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "I/O floor: `redis-benchmark -h 127.0.0.1 -p PORT -t ping_mbulk -n %d -c %d -P {1|16} --csv` against redis-server, zaris-server's RESP port, and `test/ablation/cmd/pongfloor` (answers PING and nothing else) as go-goroutine (`-io goroutine`: a goroutine per connection on Go's netpoller, as Zaris's front ends), go-epoll (`-io epoll`: an epoll event loop per CPU) and go-epoll-1 (`-io epoll -loops 1`: one loop, as Redis). **/Redis** is the median of the per-round throughput ratios.\n\n",
		c.RESPRequests, c.RESPClients)
	fmt.Fprintln(w, "| -P | server | rps | **/Redis** | p99 ms | server CPU µs/op |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, row := range r.Floor {
		redis := row.Samples["redis"]
		for _, name := range FloorServers {
			ss := row.Samples[name]
			var per []float64
			for i := range min(len(ss), len(redis)) {
				per = append(per, ss[i].OpsPerSec/redis[i].OpsPerSec)
			}
			fmt.Fprintf(w, "| %d | %s | %s | **%.2f** | %.2f | %.2f |\n", row.Pipeline, name,
				thousands(Median(field(ss, ops))), Median(per), Median(field(ss, p99))/1000, Median(field(ss, cpu)))
		}
	}
	fmt.Fprintln(w)
}

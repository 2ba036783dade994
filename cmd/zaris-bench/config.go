package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Protocol is the wire protocol the benchmark speaks.
type Protocol string

const (
	ProtocolNative Protocol = "native" // Zaris native frames (internal/wire)
	ProtocolRESP   Protocol = "resp"   // RESP2, for Zaris's RESP front end or redis-server
)

// Default addresses per protocol (DESIGN.md ports: client 7861, RESP 6380).
const (
	DefaultNativeAddr = "127.0.0.1:7861"
	DefaultRESPAddr   = "127.0.0.1:6380"
)

// Limits on the workload shape: a benchmark is not a stress test of the
// tool itself, and these bound its memory.
const (
	maxConnections = 10_000
	maxPipeline    = 10_000
	maxDataSize    = 4 << 20 // the default maximum item size (SPEC R-MEM-3)
	maxKeyPrefix   = 1024
)

// Config is one benchmark run. The zero value is not valid; start from
// DefaultConfig.
type Config struct {
	// Protocol is native or resp. Default native.
	Protocol Protocol
	// Addr is host:port of the target. "" means the protocol's default
	// (DefaultNativeAddr or DefaultRESPAddr).
	Addr string
	// AllowRemote permits a target that is not a loopback address. Default
	// false: load goes only to 127.0.0.0/8 or ::1.
	AllowRemote bool
	// Store is the store name sent in the native handshake. Default
	// "default". Ignored by RESP.
	Store string
	// Token authenticates: in the native handshake, or with AUTH over RESP.
	// "" sends none.
	Token string
	// TLS dials the native protocol over TLS (zariss). CAFile is a PEM bundle
	// of roots to trust; "" uses the system roots.
	TLS    bool
	CAFile string

	// Connections is the number of simulated clients, one TCP connection
	// each. Default 50.
	Connections int
	// Pipeline is the number of requests each connection sends before reading
	// their responses. Default 1 (no pipelining).
	Pipeline int
	// DataSize is the size in bytes of every SET value. Default 32.
	DataSize int
	// Keyspace is the number of distinct keys, chosen uniformly. Default 100000.
	Keyspace int
	// KeyPrefix starts every key. Default "key:".
	KeyPrefix string
	// GetRatio:SetRatio is the mix of operations. Default 1:1; 1:0 is GET
	// only, 0:1 SET only.
	GetRatio, SetRatio int

	// Duration bounds the run in time; Requests bounds it in completed
	// requests over all connections. At least one must be set; with both,
	// the run stops at whichever comes first. 0 means unbounded on that axis.
	Duration time.Duration
	Requests int64
	// Warmup SETs every key of the keyspace once before the measured run
	// when the mix contains GETs, so that GETs hit. Default true.
	Warmup bool
	// Timeout bounds dialing, the handshake, and the wait for any one
	// pipelined batch's responses. Default 5s.
	Timeout time.Duration
	// Progress is the interval of the live progress line on stderr; 0
	// disables it. Default 1s.
	Progress time.Duration
	// JSON prints the final report as JSON instead of text.
	JSON bool
	// Seed makes key and operation choices reproducible. 0 picks one from
	// the clock.
	Seed uint64
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		Protocol:    ProtocolNative,
		Store:       "default",
		Connections: 50,
		Pipeline:    1,
		DataSize:    32,
		Keyspace:    100_000,
		KeyPrefix:   "key:",
		GetRatio:    1,
		SetRatio:    1,
		Duration:    10 * time.Second,
		Warmup:      true,
		Timeout:     5 * time.Second,
		Progress:    time.Second,
	}
}

// address returns Addr, or the protocol's default.
func (c *Config) address() string {
	if c.Addr != "" {
		return c.Addr
	}
	if c.Protocol == ProtocolRESP {
		return DefaultRESPAddr
	}
	return DefaultNativeAddr
}

// warmupEnabled reports whether the run pre-populates the keyspace.
func (c *Config) warmupEnabled() bool { return c.Warmup && c.GetRatio > 0 }

// Validate checks every field and the fields against each other.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch c.Protocol {
	case ProtocolNative, ProtocolRESP:
	default:
		bad("--protocol %q: want native or resp", c.Protocol)
	}
	if c.Protocol == ProtocolNative && c.Store == "" {
		bad("--store must not be empty for the native protocol")
	}
	if c.Protocol == ProtocolRESP && c.TLS {
		bad("--tls is supported for the native protocol only")
	}
	if c.CAFile != "" && !c.TLS {
		bad("--ca needs --tls")
	}
	if c.Connections < 1 || c.Connections > maxConnections {
		bad("--connections %d: want 1..%d", c.Connections, maxConnections)
	}
	if c.Pipeline < 1 || c.Pipeline > maxPipeline {
		bad("--pipeline %d: want 1..%d", c.Pipeline, maxPipeline)
	}
	if c.DataSize < 0 || c.DataSize > maxDataSize {
		bad("--data-size %d: want 0..%d", c.DataSize, maxDataSize)
	}
	if c.Keyspace < 1 {
		bad("--keyspace %d: want ≥ 1", c.Keyspace)
	}
	if len(c.KeyPrefix) > maxKeyPrefix {
		bad("--key-prefix longer than %d bytes", maxKeyPrefix)
	}
	if c.GetRatio < 0 || c.SetRatio < 0 || c.GetRatio+c.SetRatio == 0 {
		bad("--ratio %d:%d: want non-negative GET:SET weights, not both 0", c.GetRatio, c.SetRatio)
	}
	if c.Duration < 0 {
		bad("--duration %v: must not be negative", c.Duration)
	}
	if c.Requests < 0 {
		bad("--requests %d: must not be negative", c.Requests)
	}
	if c.Duration == 0 && c.Requests == 0 {
		bad("one of --duration or --requests must bound the run")
	}
	if c.Timeout <= 0 {
		bad("--timeout %v: must be positive", c.Timeout)
	}
	if c.Progress < 0 {
		bad("--progress %v: must not be negative (0 disables it)", c.Progress)
	}
	return errors.Join(errs...)
}

// parseRatio parses "GET:SET" weights such as "1:1", "1:0", "9:1".
func parseRatio(s string) (get, set int, err error) {
	g, st, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("ratio %q: want GET:SET, e.g. 1:1, 1:0 or 0:1", s)
	}
	get, err1 := strconv.Atoi(strings.TrimSpace(g))
	set, err2 := strconv.Atoi(strings.TrimSpace(st))
	if err1 != nil || err2 != nil || get < 0 || set < 0 || get+set == 0 {
		return 0, 0, fmt.Errorf("ratio %q: want non-negative integers GET:SET, not both 0", s)
	}
	return get, set, nil
}

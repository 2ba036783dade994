package main

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseRatio(t *testing.T) {
	cases := []struct {
		in       string
		get, set int
		ok       bool
	}{
		{"1:1", 1, 1, true},
		{"1:0", 1, 0, true},
		{"0:1", 0, 1, true},
		{"9:1", 9, 1, true},
		{" 3 : 7 ", 3, 7, true},
		{"0:0", 0, 0, false},  // nothing to do
		{"-1:2", 0, 0, false}, // negative weight
		{"1", 0, 0, false},    // no separator
		{"a:b", 0, 0, false},
		{"1:1:1", 0, 0, false},
	}
	for _, c := range cases {
		get, set, err := parseRatio(c.in)
		if (err == nil) != c.ok || (c.ok && (get != c.get || set != c.set)) {
			t.Errorf("parseRatio(%q) = %d, %d, %v; want %d, %d, ok=%v", c.in, get, set, err, c.get, c.set, c.ok)
		}
	}
}

// TestValidate: each row is a configuration that would misbehave if run.
func TestValidate(t *testing.T) {
	if err := (func() *Config { c := DefaultConfig(); return &c })().Validate(); err != nil {
		t.Fatalf("DefaultConfig invalid: %v", err)
	}
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"unknown protocol", func(c *Config) { c.Protocol = "http" }, "--protocol"},
		{"unbounded run never stops", func(c *Config) { c.Duration, c.Requests = 0, 0 }, "bound the run"},
		{"no connections", func(c *Config) { c.Connections = 0 }, "--connections"},
		{"zero pipeline sends nothing", func(c *Config) { c.Pipeline = 0 }, "--pipeline"},
		{"empty keyspace", func(c *Config) { c.Keyspace = 0 }, "--keyspace"},
		{"value above max item size", func(c *Config) { c.DataSize = maxDataSize + 1 }, "--data-size"},
		{"no operations", func(c *Config) { c.GetRatio, c.SetRatio = 0, 0 }, "--ratio"},
		{"native without store", func(c *Config) { c.Store = "" }, "--store"},
		{"RESP over TLS unsupported", func(c *Config) { c.Protocol, c.TLS = ProtocolRESP, true }, "--tls"},
		{"CA without TLS is ignored silently", func(c *Config) { c.CAFile = "ca.pem" }, "--ca"},
		{"no timeout hangs forever", func(c *Config) { c.Timeout = 0 }, "--timeout"},
		{"negative requests", func(c *Config) { c.Requests = -1 }, "--requests"},
	}
	for _, tc := range cases {
		cfg := DefaultConfig()
		tc.mutate(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error mentioning %s", tc.name, err, tc.want)
		}
	}
}

func TestDefaultAddress(t *testing.T) {
	cfg := DefaultConfig()
	if cfg.address() != DefaultNativeAddr {
		t.Errorf("native default %q", cfg.address())
	}
	cfg.Protocol = ProtocolRESP
	if cfg.address() != DefaultRESPAddr {
		t.Errorf("resp default %q", cfg.address())
	}
	cfg.Addr = "127.0.0.1:1"
	if cfg.address() != "127.0.0.1:1" {
		t.Errorf("explicit addr %q", cfg.address())
	}
}

// TestResolveTarget: only loopback targets pass without --allow-remote, and
// the address dialed is the one checked. No row sends a packet.
func TestResolveTarget(t *testing.T) {
	cases := []struct {
		addr   string
		remote bool // --allow-remote
		dial   string
		ok     bool
	}{
		{"127.0.0.1:7861", false, "127.0.0.1:7861", true},
		{"127.45.6.7:1", false, "127.45.6.7:1", true}, // all of 127.0.0.0/8
		{"[::1]:6380", false, "[::1]:6380", true},
		{"[::ffff:127.0.0.1]:6380", false, "127.0.0.1:6380", true},
		{"localhost:6380", false, "", true}, // resolves to 127.0.0.1 or ::1
		{":6380", false, "", true},          // empty host means localhost
		{"192.0.2.1:7861", false, "", false},
		{"10.0.0.1:7861", false, "", false},
		{"[2001:db8::1]:7861", false, "", false},
		{"0.0.0.0:7861", false, "", false}, // "any" is not a loopback target
		{"192.0.2.1:7861", true, "192.0.2.1:7861", true},
		{"no-port", false, "", false},
	}
	for _, c := range cases {
		tgt, err := resolveTarget(context.Background(), c.addr, c.remote)
		if (err == nil) != c.ok {
			t.Errorf("%s (allow-remote %v): err = %v, want ok=%v", c.addr, c.remote, err, c.ok)
			continue
		}
		if !c.ok {
			if c.addr != "no-port" && (!errors.Is(err, ErrRemoteTarget) || !strings.Contains(err.Error(), "--allow-remote")) {
				t.Errorf("%s: err = %v, want ErrRemoteTarget explaining --allow-remote", c.addr, err)
			}
			continue
		}
		if len(tgt.addrs) == 0 || c.dial != "" && tgt.addrs[0] != c.dial {
			t.Errorf("%s: dials %q, want %q first", c.addr, tgt.addrs, c.dial)
		}
		for _, a := range tgt.addrs {
			ap, err := netip.ParseAddrPort(a)
			if err != nil || !c.remote && !isLoopback(ap.Addr()) {
				t.Errorf("%s: dials %q, which is not loopback", c.addr, a)
			}
		}
	}
}

// TestLimiterExactCount: concurrent takers are handed exactly the request
// budget, never more, whatever their batch sizes.
func TestLimiterExactCount(t *testing.T) {
	for _, budget := range []int64{1, 999, 1000, 123457} {
		cfg := DefaultConfig()
		cfg.Duration, cfg.Requests = 0, budget
		lim := newLimiter(&cfg, time.Now())
		var total atomic.Int64
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				for {
					n := lim.take(1 + i*7)
					if n == 0 {
						return
					}
					if n < 0 || n > 1+i*7 {
						t.Errorf("take(%d) = %d", 1+i*7, n)
					}
					total.Add(int64(n))
				}
			})
		}
		wg.Wait()
		if total.Load() != budget {
			t.Errorf("budget %d: handed out %d", budget, total.Load())
		}
	}
}

func TestLimiterDeadline(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Duration = time.Minute
	lim := newLimiter(&cfg, time.Now())
	if lim.take(16) != 16 {
		t.Error("before the deadline: want the whole batch")
	}
	lim = newLimiter(&cfg, time.Now().Add(-2*time.Minute))
	if lim.take(16) != 0 {
		t.Error("after the deadline: want 0")
	}
}

func TestKeyGen(t *testing.T) {
	cases := []struct {
		prefix   string
		keyspace int
		i        int
		want     string
	}{
		{"key:", 100_000, 42, "key:00042"},
		{"key:", 100_000, 99_999, "key:99999"},
		{"", 1, 0, "0"},
		{"p", 10, 9, "p9"},
		{"p", 11, 3, "p03"},
	}
	for _, c := range cases {
		cfg := Config{KeyPrefix: c.prefix, Keyspace: c.keyspace}
		g := newKeyGen(&cfg)
		got := string(g.appendKey(nil, c.i))
		if got != c.want || len(got) != g.len() {
			t.Errorf("key(%q, %d, %d) = %q (len %d), want %q", c.prefix, c.keyspace, c.i, got, g.len(), c.want)
		}
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// ErrRemoteTarget is returned for a target outside 127.0.0.0/8 and ::1
// without --allow-remote.
var ErrRemoteTarget = errors.New("refusing to send load to a non-loopback address")

// target is where the benchmark connects.
type target struct {
	// dial is the ip:port every connection dials. For a host name it is one
	// resolved address, so that the loopback check and the connections agree
	// (a name cannot resolve to loopback at check time and elsewhere later).
	dial string
	// host is the host as the user wrote it, for TLS server name checks.
	host string
}

// resolveTarget resolves addr and, unless allowRemote, refuses any target
// that is not a loopback address. A load generator pointed at the wrong
// host is a denial of service on someone else's machine, so the safe
// default is to refuse and to say why.
func resolveTarget(ctx context.Context, addr string, allowRemote bool) (target, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return target{}, fmt.Errorf("--addr %q: %w", addr, err)
	}
	if host == "" {
		host = "localhost"
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		ips, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return target{}, fmt.Errorf("--addr %q: resolving %s: %w", addr, host, err)
		}
	}
	for _, ip := range ips {
		if allowRemote || isLoopback(ip) {
			return target{dial: net.JoinHostPort(ip.Unmap().String(), port), host: host}, nil
		}
	}
	return target{}, fmt.Errorf("%w: %s resolves to %v, which is not in 127.0.0.0/8 or ::1; "+
		"this tool generates heavy load and by default only targets the local machine; "+
		"pass --allow-remote if you own the target and mean it", ErrRemoteTarget, addr, ips)
}

// isLoopback reports whether ip is in 127.0.0.0/8 or is ::1 (also as an
// IPv4-mapped 127.x address). Zones are ignored.
func isLoopback(ip netip.Addr) bool {
	return ip.Unmap().WithZone("").IsLoopback()
}

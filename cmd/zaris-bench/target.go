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
	// addrs are the ip:port candidates, IPv4 first, that passed the
	// loopback check. Connections dial these and never the name again, so a
	// name cannot resolve to loopback at check time and elsewhere later.
	addrs []string
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
	tgt := target{host: host}
	// IPv4 first: "localhost" servers listen on 127.0.0.1 more often than
	// on ::1 (redis-server --bind 127.0.0.1, the defaults of this project).
	for _, v4 := range []bool{true, false} {
		for _, ip := range ips {
			if ip.Unmap().Is4() == v4 && (allowRemote || isLoopback(ip)) {
				tgt.addrs = append(tgt.addrs, net.JoinHostPort(ip.Unmap().WithZone(ip.Zone()).String(), port))
			}
		}
	}
	if len(tgt.addrs) > 0 {
		return tgt, nil
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

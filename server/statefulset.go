package server

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kubernetes StatefulSet support (R-OPS-6). A StatefulSet names its pods
// NAME-0..NAME-(N-1); with a headless service they resolve as
// NAME-i.DOMAIN. Every pod can therefore compute the whole registry from
// its own name, the replica count and the service's domain: nothing lists
// the nodes by hand, and the same pod template serves every pod.

// MaxStatefulSetReplicas bounds --statefulset-replicas: the derived
// registry lists every pod, and the registry is for a fixed set of nodes.
const MaxStatefulSetReplicas = 1024

// StatefulSetPorts are the ports of every pod of the set: a pod template
// gives all pods the same ports. RESP and HTTP may be 0 (off); none may be
// EphemeralPort, which other pods could not know.
type StatefulSetPorts struct {
	Client, Peer, Gossip, RESP, HTTP int
}

// ParsePodName splits a StatefulSet pod name NAME-ORDINAL into its base
// name and ordinal ("my-zaris-2" → "my-zaris", 2). The ordinal is the
// digits after the last '-', written as Kubernetes writes it: no sign, no
// leading zero ("zaris-01" would name a node no other pod lists).
func ParsePodName(pod string) (base string, ordinal int, err error) {
	i := strings.LastIndexByte(pod, '-')
	if i <= 0 || i == len(pod)-1 {
		return "", 0, fmt.Errorf("pod name %q has no ordinal suffix (want NAME-ORDINAL, e.g. zaris-0)", pod)
	}
	base, digits := pod[:i], pod[i+1:]
	for _, c := range digits {
		if c < '0' || c > '9' {
			return "", 0, fmt.Errorf("pod name %q has no ordinal suffix (want NAME-ORDINAL, e.g. zaris-0)", pod)
		}
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n >= MaxStatefulSetReplicas {
		return "", 0, fmt.Errorf("pod name %q: ordinal %s out of range 0..%d", pod, digits, MaxStatefulSetReplicas-1)
	}
	if digits != strconv.Itoa(n) {
		return "", 0, fmt.Errorf("pod name %q: ordinal %q has a leading zero (Kubernetes names the pod %s-%d)", pod, digits, base, n)
	}
	return base, n, nil
}

// StatefulSetRegistry derives the node registry of a StatefulSet from one
// pod's view: podName is this pod's name (NAME-ORDINAL), replicas the
// set's size and domain its headless service's DNS domain. Entry i is
// {id NAME-i, host NAME-i.DOMAIN, ports}. It is pure: no DNS lookup (the
// names resolve only once the pods exist).
//
// Every error is a *ConfigError naming the option to fix: node-id for a
// pod name that is no StatefulSet pod's, statefulset-replicas for a size
// out of range or a pod beyond it, statefulset-domain for a domain that
// does not make host names, and the port option for a port other pods
// could not know.
func StatefulSetRegistry(podName string, replicas int, domain string, ports StatefulSetPorts) ([]NodeEntry, error) {
	bad := func(option, format string, args ...any) error {
		return &ConfigError{Option: option, Problem: fmt.Sprintf(format, args...)}
	}
	if replicas < 1 || replicas > MaxStatefulSetReplicas {
		return nil, bad("statefulset-replicas", "%d out of range 1..%d (the StatefulSet's spec.replicas)", replicas, MaxStatefulSetReplicas)
	}
	base, ordinal, err := ParsePodName(podName)
	if err != nil {
		return nil, bad("node-id", "%v; with statefulset-replicas the node id (or $HOSTNAME) must be the pod name", err)
	}
	if ordinal >= replicas {
		return nil, bad("statefulset-replicas", "%d, but this pod is %q (ordinal %d): the registry would not list it; raise statefulset-replicas with spec.replicas",
			replicas, podName, ordinal)
	}
	domain = strings.TrimSpace(domain)
	switch {
	case domain == "":
		return nil, bad("statefulset-domain", "empty: give the headless service's domain, e.g. zaris.default.svc.cluster.local")
	case strings.HasPrefix(domain, "."):
		return nil, bad("statefulset-domain", "%q starts with a dot: give it without the pod name, e.g. zaris.default.svc.cluster.local", domain)
	case !hostnamePattern.MatchString(domain):
		return nil, bad("statefulset-domain", "%q is not a DNS domain (no scheme, port or path: e.g. zaris.default.svc.cluster.local)", domain)
	}
	for _, p := range []struct {
		option string
		port   int
		offOK  bool
	}{{"client-port", ports.Client, false}, {"peer-port", ports.Peer, false}, {"gossip-port", ports.Gossip, false},
		{"resp-port", ports.RESP, true}, {"http-port", ports.HTTP, true}} {
		switch {
		case p.port == EphemeralPort:
			return nil, bad(p.option, "-1 (ephemeral) with statefulset-replicas: the other pods must know every port, give a fixed one")
		case p.port == 0 && p.offOK:
		case p.port < 1 || p.port > 65535:
			return nil, bad(p.option, "%d out of range 1..65535", p.port)
		}
	}
	out := make([]NodeEntry, replicas)
	for i := range out {
		id := base + "-" + strconv.Itoa(i)
		host := id + "." + domain
		if !ValidNodeID(id) {
			return nil, bad("node-id", "pod %q gives node id %q: want 1-64 characters of [A-Za-z0-9._-] starting with a letter or digit", podName, id)
		}
		if len(strings.TrimSuffix(host, ".")) > 253 || !hostnamePattern.MatchString(host) {
			return nil, bad("statefulset-domain", "pod %q would resolve as %q, which is not a valid host name (labels of at most 63 characters, 253 in all)", id, host)
		}
		out[i] = NodeEntry{ID: id, Host: host, ClientPort: ports.Client, PeerPort: ports.Peer, GossipPort: ports.Gossip,
			RESPPort: ports.RESP, HTTPPort: ports.HTTP}
	}
	return out, nil
}

// applyStatefulSet is LoadConfig's step between the flags and the registry
// ports: with statefulset-replicas it derives cfg.Nodes from the pod name
// (cfg.NodeID, else $HOSTNAME, which Kubernetes sets to the pod name), sets
// the node id to the pod name, and binds every interface unless bind was
// set (the pod advertises its registry host, its DNS name). sources
// records where each value came from, for the errors of Validate.
func applyStatefulSet(cfg *Config, lookupEnv func(string) (string, bool), sources map[string]string) error {
	if cfg.StatefulSetReplicas == 0 && cfg.StatefulSetDomain == "" {
		return nil
	}
	fail := func(err error) error {
		var ce *ConfigError
		if errors.As(err, &ce) && ce.Source == "" {
			ce.Source = sources[ce.Option]
		}
		return err
	}
	if cfg.StatefulSetReplicas == 0 {
		return fail(&ConfigError{Option: "statefulset-domain", Problem: "set without statefulset-replicas, which derives the registry (set both, or neither)"})
	}
	if len(cfg.Nodes) > 0 {
		return fail(&ConfigError{Option: "statefulset-replicas",
			Problem: "set together with nodes: the registry is either derived from the StatefulSet or listed, not both"})
	}
	pod, from := cfg.NodeID, sources["node-id"]
	if pod == "" {
		pod, _ = lookupEnv("HOSTNAME")
		from = "env HOSTNAME"
	}
	if pod == "" {
		return fail(&ConfigError{Option: "node-id",
			Problem: "empty and $HOSTNAME is unset: statefulset-replicas needs the pod name (Kubernetes sets HOSTNAME)"})
	}
	nodes, err := StatefulSetRegistry(pod, cfg.StatefulSetReplicas, cfg.StatefulSetDomain,
		StatefulSetPorts{Client: cfg.ClientPort, Peer: cfg.PeerPort, Gossip: cfg.GossipPort, RESP: cfg.RESPPort, HTTP: cfg.HTTPPort})
	if err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) && ce.Option == "node-id" {
			ce.Source = from
		}
		return fail(err)
	}
	cfg.NodeID, sources["node-id"] = pod, from
	cfg.Nodes = nodes
	sources["nodes"] = fmt.Sprintf("statefulset-replicas=%d for pod %q", cfg.StatefulSetReplicas, pod)
	if sources["bind"] == "" {
		cfg.Bind, sources["bind"] = "0.0.0.0", "statefulset-replicas"
	}
	return nil
}

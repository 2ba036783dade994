package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
)

// ErrNoNetns: this machine cannot build a private network (not root, no
// `ip`, or no namespace, veth and bridge support in the kernel).
var ErrNoNetns = errors.New("chaos: network namespaces unavailable")

// Net is a private network for a partition test: one network namespace per
// node, each with a veth link into a bridge in the root namespace, where
// the test itself runs (it reaches every node; the nodes reach each other
// through the bridge). Isolate cuts one node off from the other nodes — not
// from the test — with blackhole routes on both sides, the way a switch
// failure between racks does: packets vanish, connections stall until
// their timeouts, nothing is refused.
type Net struct {
	bridge string
	prefix string // "10.213.X." — node i is prefix+i, the bridge prefix+254
	ns     []string
	veth   []string
}

// NewNet builds the network for n nodes (1..200).
func NewNet(n int) (*Net, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: not root", ErrNoNetns)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("%w: no ip command (iproute2)", ErrNoNetns)
	}
	// Names and the subnet are unique per process and per call: a test
	// builds one network after another, and the kernel may still be
	// tearing the last one down.
	seq := netSeq.Add(1)
	id := (os.Getpid()%1000)*100 + int(seq%100)
	nt := &Net{bridge: fmt.Sprintf("zb%d", id), prefix: fmt.Sprintf("10.213.%d.", (os.Getpid()+int(seq))%250)}
	if err := ip("link", "add", nt.bridge, "type", "bridge"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoNetns, err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = nt.Close()
		}
	}()
	if err := ipAll([][]string{
		{"addr", "add", nt.prefix + "254/24", "dev", nt.bridge},
		{"link", "set", nt.bridge, "up"},
	}); err != nil {
		return nil, err
	}
	for i := 1; i <= n; i++ {
		ns, veth := fmt.Sprintf("zaris-%d-%d", id, i), fmt.Sprintf("zv%dn%d", id, i)
		if err := ip("netns", "add", ns); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoNetns, err)
		}
		nt.ns = append(nt.ns, ns)
		if err := ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoNetns, err)
		}
		nt.veth = append(nt.veth, veth)
		if err := ipAll([][]string{
			{"link", "set", veth, "master", nt.bridge},
			{"link", "set", veth, "up"},
			{"-n", ns, "link", "set", "lo", "up"},
			{"-n", ns, "addr", "add", nt.Host(i-1) + "/24", "dev", "eth0"},
			{"-n", ns, "link", "set", "eth0", "up"},
		}); err != nil {
			return nil, err
		}
	}
	ok = true
	return nt, nil
}

var netSeq atomic.Int64

// Host is node i's address (0-based, as Cluster numbers nodes).
func (nt *Net) Host(i int) string { return fmt.Sprint(nt.prefix, i+1) }

// Wrap is the command prefix that runs a process in node i's namespace
// (Options.Wrap).
func (nt *Net) Wrap(i int) []string { return []string{"ip", "netns", "exec", nt.ns[i]} }

// Isolate cuts node i off from every other node, both ways; the root
// namespace (the test, its clients) still reaches it.
func (nt *Net) Isolate(i int) error { return nt.routes(i, "add") }

// Heal undoes Isolate(i).
func (nt *Net) Heal(i int) error { return nt.routes(i, "del") }

func (nt *Net) routes(i int, verb string) error {
	var cmds [][]string
	for j := range nt.ns {
		if j == i {
			continue
		}
		cmds = append(cmds,
			[]string{"-n", nt.ns[i], "route", verb, "blackhole", nt.Host(j) + "/32"},
			[]string{"-n", nt.ns[j], "route", verb, "blackhole", nt.Host(i) + "/32"})
	}
	return ipAll(cmds)
}

// Close removes the namespaces (their veth ends go with them) and the
// bridge. Processes still running in a namespace keep it alive until they
// exit: kill them first.
func (nt *Net) Close() error {
	var errs []error
	for _, veth := range nt.veth {
		_ = ip("link", "del", veth) // usually gone with its namespace already
	}
	for _, ns := range nt.ns {
		if err := ip("netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	if err := ip("link", "del", nt.bridge); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func ipAll(cmds [][]string) error {
	for _, c := range cmds {
		if err := ip(c...); err != nil {
			return err
		}
	}
	return nil
}

package server

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

var stsPorts = StatefulSetPorts{Client: 7861, Peer: 7811, Gossip: 7946, RESP: 6380, HTTP: 7801}

// Each row names the mistake the derivation refuses (or must get right).
func TestStatefulSetRegistry(t *testing.T) {
	const domain = "zaris.default.svc.cluster.local"
	for _, tc := range []struct {
		name     string
		pod      string
		replicas int
		domain   string
		ports    StatefulSetPorts
		option   string   // the ConfigError's option; "" = valid
		ids      []string // want, when valid
		host0    string
	}{
		{name: "three pods", pod: "zaris-1", replicas: 3, domain: domain, ports: stsPorts,
			ids: []string{"zaris-0", "zaris-1", "zaris-2"}, host0: "zaris-0.zaris.default.svc.cluster.local"},
		{name: "one pod", pod: "zaris-0", replicas: 1, domain: domain, ports: stsPorts, ids: []string{"zaris-0"},
			host0: "zaris-0.zaris.default.svc.cluster.local"},
		{name: "dashes inside the set name keep the base whole", pod: "my-zaris-2", replicas: 3, domain: "my-zaris.ns.svc", ports: stsPorts,
			ids: []string{"my-zaris-0", "my-zaris-1", "my-zaris-2"}, host0: "my-zaris-0.my-zaris.ns.svc"},
		{name: "a digit-only base is a base", pod: "cache-7-10", replicas: 11, domain: domain, ports: stsPorts,
			ids:   []string{"cache-7-0", "cache-7-1", "cache-7-2", "cache-7-3", "cache-7-4", "cache-7-5", "cache-7-6", "cache-7-7", "cache-7-8", "cache-7-9", "cache-7-10"},
			host0: "cache-7-0.zaris.default.svc.cluster.local"},
		{name: "fully qualified domain with the root dot", pod: "zaris-0", replicas: 2, domain: domain + ".", ports: stsPorts,
			ids: []string{"zaris-0", "zaris-1"}, host0: "zaris-0.zaris.default.svc.cluster.local."},
		{name: "RESP and HTTP off stay off on every pod", pod: "zaris-0", replicas: 2, domain: domain,
			ports: StatefulSetPorts{Client: 1, Peer: 2, Gossip: 3}, ids: []string{"zaris-0", "zaris-1"}, host0: "zaris-0.zaris.default.svc.cluster.local"},

		{name: "host name without an ordinal (not a StatefulSet pod)", pod: "zaris", replicas: 3, domain: domain, ports: stsPorts, option: "node-id"},
		{name: "Deployment pod name (random suffix)", pod: "zaris-7d9f8b6c4-x2k9p", replicas: 3, domain: domain, ports: stsPorts, option: "node-id"},
		{name: "trailing dash", pod: "zaris-", replicas: 3, domain: domain, ports: stsPorts, option: "node-id"},
		{name: "no base name", pod: "-1", replicas: 3, domain: domain, ports: stsPorts, option: "node-id"},
		{name: "empty pod name", pod: "", replicas: 3, domain: domain, ports: stsPorts, option: "node-id"},
		{name: "FQDN as the pod name", pod: "zaris-0.zaris.default.svc.cluster.local", replicas: 3, domain: domain, ports: stsPorts, option: "node-id"},
		{name: "leading zero would name a node no other pod lists", pod: "zaris-01", replicas: 3, domain: domain, ports: stsPorts, option: "node-id"},
		{name: "signed ordinal", pod: "zaris-+1", replicas: 3, domain: domain, ports: stsPorts, option: "node-id"},
		{name: "ordinal overflows", pod: "zaris-99999999999999999999", replicas: 3, domain: domain, ports: stsPorts, option: "node-id"},
		{name: "base that makes an invalid node id", pod: "_zaris-0", replicas: 3, domain: domain, ports: stsPorts, option: "node-id"},

		{name: "scaled-up pod the registry would not list", pod: "zaris-3", replicas: 3, domain: domain, ports: stsPorts, option: "statefulset-replicas"},
		{name: "zero replicas", pod: "zaris-0", replicas: 0, domain: domain, ports: stsPorts, option: "statefulset-replicas"},
		{name: "negative replicas", pod: "zaris-0", replicas: -3, domain: domain, ports: stsPorts, option: "statefulset-replicas"},
		{name: "absurd replicas", pod: "zaris-0", replicas: MaxStatefulSetReplicas + 1, domain: domain, ports: stsPorts, option: "statefulset-replicas"},

		{name: "empty domain", pod: "zaris-0", replicas: 3, domain: "", ports: stsPorts, option: "statefulset-domain"},
		{name: "blank domain", pod: "zaris-0", replicas: 3, domain: "  ", ports: stsPorts, option: "statefulset-domain"},
		{name: "domain with a leading dot", pod: "zaris-0", replicas: 3, domain: ".zaris.default.svc", ports: stsPorts, option: "statefulset-domain"},
		{name: "domain with a port", pod: "zaris-0", replicas: 3, domain: "zaris.default.svc:7946", ports: stsPorts, option: "statefulset-domain"},
		{name: "domain as a URL", pod: "zaris-0", replicas: 3, domain: "http://zaris.default.svc", ports: stsPorts, option: "statefulset-domain"},
		{name: "host name over 253 characters", pod: "zaris-0", replicas: 3, ports: stsPorts, option: "statefulset-domain",
			domain: strings.TrimSuffix(strings.Repeat(strings.Repeat("a", 60)+".", 5), ".")},

		{name: "ephemeral client port no other pod could know", pod: "zaris-0", replicas: 3, domain: domain,
			ports: StatefulSetPorts{Client: -1, Peer: 7811, Gossip: 7946}, option: "client-port"},
		{name: "ephemeral HTTP port", pod: "zaris-0", replicas: 3, domain: domain,
			ports: StatefulSetPorts{Client: 7861, Peer: 7811, Gossip: 7946, HTTP: -1}, option: "http-port"},
		{name: "peer port off", pod: "zaris-0", replicas: 3, domain: domain,
			ports: StatefulSetPorts{Client: 7861, Gossip: 7946}, option: "peer-port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, err := StatefulSetRegistry(tc.pod, tc.replicas, tc.domain, tc.ports)
			if tc.option != "" {
				var ce *ConfigError
				require.ErrorAs(t, err, &ce)
				require.ErrorIs(t, err, ErrInvalidConfig)
				require.Equal(t, tc.option, ce.Option, "%v", err)
				require.Nil(t, nodes)
				return
			}
			require.NoError(t, err)
			require.Len(t, nodes, len(tc.ids))
			for i, e := range nodes {
				require.Equal(t, tc.ids[i], e.ID)
				require.Equal(t, tc.ids[i]+"."+strings.TrimSpace(tc.domain), e.Host)
				require.Equal(t, NodeEntry{ID: e.ID, Host: e.Host, ClientPort: tc.ports.Client, PeerPort: tc.ports.Peer,
					GossipPort: tc.ports.Gossip, RESPPort: tc.ports.RESP, HTTPPort: tc.ports.HTTP}, e)
			}
			require.Equal(t, tc.host0, nodes[0].Host)
			// The derived registry is one Validate accepts.
			c := DefaultConfig()
			c.NodeID, c.Nodes = tc.pod, nodes
			c.ClientPort, c.PeerPort, c.GossipPort, c.RESPPort, c.HTTPPort = tc.ports.Client, tc.ports.Peer, tc.ports.Gossip, tc.ports.RESP, tc.ports.HTTP
			require.NoError(t, c.Validate())
		})
	}
}

func TestParsePodName(t *testing.T) {
	for pod, want := range map[string]struct {
		base    string
		ordinal int
	}{
		"zaris-0": {"zaris", 0}, "zaris-10": {"zaris", 10}, "my-zaris-2": {"my-zaris", 2}, "a-b-c-1023": {"a-b-c", 1023},
	} {
		base, ordinal, err := ParsePodName(pod)
		require.NoError(t, err, pod)
		require.Equal(t, want.base, base, pod)
		require.Equal(t, want.ordinal, ordinal, pod)
	}
	_, _, err := ParsePodName("zaris-007")
	require.ErrorContains(t, err, "zaris-7")
}

// LoadConfig derives the registry: the pod name from --node-id, else
// $HOSTNAME; every interface bound unless --bind says otherwise; the keys
// work as flags, variables and YAML like every option.
func TestLoadConfigStatefulSet(t *testing.T) {
	const domain = "zaris.prod.svc.cluster.local"
	file := writeFile(t, "statefulset-replicas: 3\nstatefulset-domain: "+domain+"\n")
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		id   string
		bind string
	}{
		{name: "flags and HOSTNAME", args: []string{"--statefulset-replicas", "3", "--statefulset-domain", domain},
			env: map[string]string{"HOSTNAME": "zaris-2"}, id: "zaris-2", bind: "0.0.0.0"},
		{name: "environment", env: map[string]string{"HOSTNAME": "zaris-1", "ZARIS_STATEFULSET_REPLICAS": "3", "ZARIS_STATEFULSET_DOMAIN": domain},
			id: "zaris-1", bind: "0.0.0.0"},
		{name: "YAML file", args: []string{"--config", file}, env: map[string]string{"HOSTNAME": "zaris-0"}, id: "zaris-0", bind: "0.0.0.0"},
		{name: "node-id wins over HOSTNAME", args: []string{"--config", file, "--node-id", "zaris-1"},
			env: map[string]string{"HOSTNAME": "some-laptop"}, id: "zaris-1", bind: "0.0.0.0"},
		{name: "an explicit bind is kept", args: []string{"--config", file, "--bind", "10.0.0.7"},
			env: map[string]string{"HOSTNAME": "zaris-0"}, id: "zaris-0", bind: "10.0.0.7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadConfig(tc.args, envMap(tc.env))
			require.NoError(t, err)
			require.Equal(t, tc.id, c.NodeID)
			require.Equal(t, tc.bind, c.Bind)
			require.Equal(t, 3, c.StatefulSetReplicas)
			require.Len(t, c.Nodes, 3)
			for i, e := range c.Nodes {
				id := fmt.Sprintf("zaris-%d", i)
				require.Equal(t, NodeEntry{ID: id, Host: id + "." + domain, ClientPort: DefaultClientPort, PeerPort: DefaultPeerPort,
					GossipPort: DefaultGossipPort, RESPPort: DefaultRESPPort, HTTPPort: DefaultHTTPPort}, e)
			}
			// The node advertises its DNS name, not the wildcard it binds.
			require.Equal(t, tc.id+"."+domain, c.advertiseHost())
		})
	}
}

// Refusals name the option and where its value came from.
func TestLoadConfigStatefulSetErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		env    map[string]string
		option string
		says   string
	}{
		{name: "no pod name anywhere", args: []string{"--statefulset-replicas", "3", "--statefulset-domain", "zaris.ns.svc"},
			option: "node-id", says: "HOSTNAME is unset"},
		{name: "HOSTNAME of a non-StatefulSet host", args: []string{"--statefulset-replicas", "3", "--statefulset-domain", "zaris.ns.svc"},
			env: map[string]string{"HOSTNAME": "laptop"}, option: "node-id", says: "(set by env HOSTNAME)"},
		{name: "scaled-up pod with a stale replica count", args: []string{"--statefulset-replicas", "3", "--statefulset-domain", "zaris.ns.svc"},
			env: map[string]string{"HOSTNAME": "zaris-3"}, option: "statefulset-replicas", says: "(set by flag --statefulset-replicas)"},
		{name: "domain without replicas derives nothing", args: []string{"--statefulset-domain", "zaris.ns.svc"},
			env: map[string]string{"HOSTNAME": "zaris-0"}, option: "statefulset-domain", says: "without statefulset-replicas"},
		{name: "replicas without domain", env: map[string]string{"HOSTNAME": "zaris-0", "ZARIS_STATEFULSET_REPLICAS": "3"},
			option: "statefulset-domain", says: "empty"},
		{name: "negative replicas", args: []string{"--statefulset-replicas", "-1", "--statefulset-domain", "zaris.ns.svc"},
			env: map[string]string{"HOSTNAME": "zaris-0"}, option: "statefulset-replicas", says: "out of range"},
		{name: "derived and listed registry at once", args: []string{"--statefulset-replicas", "3", "--statefulset-domain", "zaris.ns.svc",
			"--nodes", "zaris-0@h0:1:2:3"}, env: map[string]string{"HOSTNAME": "zaris-0"}, option: "statefulset-replicas", says: "not both"},
		{name: "ephemeral port", args: []string{"--statefulset-replicas", "3", "--statefulset-domain", "zaris.ns.svc", "--gossip-port", "-1"},
			env: map[string]string{"HOSTNAME": "zaris-0"}, option: "gossip-port", says: "(set by flag --gossip-port)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig(tc.args, envMap(tc.env))
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.option, ce.Option, "%v", err)
			require.ErrorContains(t, err, tc.says)
		})
	}
}

// Why the manifest turns enableServiceLinks off: Kubernetes' docker-link
// variables for a service named zaris-client include ZARIS_CLIENT_PORT,
// the variable of --client-port, and a --client-port flag does not save the
// start (a variable that does not parse is refused before flags apply).
func TestServiceLinkVariableBreaksTheStart(t *testing.T) {
	_, err := LoadConfig([]string{"--client-port", "7861"}, envMap(map[string]string{"ZARIS_CLIENT_PORT": "tcp://10.96.0.12:7861"}))
	var se *SourceError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "ZARIS_CLIENT_PORT", se.Source)
}

// ---- the manifests in deploy/kubernetes ----

const manifestDir = "../deploy/kubernetes"

type k8sMeta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

type k8sContainer struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Env   []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
		Protocol      string `yaml:"protocol"`
	} `yaml:"ports"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	VolumeMounts   []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"` // a number or a container port's name
	} `yaml:"httpGet"`
}

type k8sStatefulSet struct {
	Kind     string  `yaml:"kind"`
	Metadata k8sMeta `yaml:"metadata"`
	Spec     struct {
		ServiceName         string `yaml:"serviceName"`
		Replicas            int    `yaml:"replicas"`
		PodManagementPolicy string `yaml:"podManagementPolicy"`
		Selector            struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata k8sMeta `yaml:"metadata"`
			Spec     struct {
				TerminationGracePeriodSeconds int            `yaml:"terminationGracePeriodSeconds"`
				EnableServiceLinks            *bool          `yaml:"enableServiceLinks"`
				Containers                    []k8sContainer `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
		VolumeClaimTemplates []struct {
			Metadata k8sMeta `yaml:"metadata"`
		} `yaml:"volumeClaimTemplates"`
	} `yaml:"spec"`
}

type k8sService struct {
	Kind     string  `yaml:"kind"`
	Metadata k8sMeta `yaml:"metadata"`
	Spec     struct {
		ClusterIP                string            `yaml:"clusterIP"`
		PublishNotReadyAddresses bool              `yaml:"publishNotReadyAddresses"`
		Selector                 map[string]string `yaml:"selector"`
		Ports                    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort any    `yaml:"targetPort"`
			Protocol   string `yaml:"protocol"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

func readManifest(t *testing.T, name string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(manifestDir, name))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, into), name)
}

var k8sVarRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandK8s does what the kubelet does to args and env values: $(VAR) is
// replaced by a variable defined before it; an unknown reference stays.
func expandK8s(s string, env map[string]string) string {
	return k8sVarRef.ReplaceAllStringFunc(s, func(ref string) string {
		if v, ok := env[ref[2:len(ref)-1]]; ok {
			return v
		}
		return ref
	})
}

// podEnv is the environment the kubelet gives pod podName of the set in
// namespace ns: HOSTNAME, then the container's env in order, with the
// Secret's token. Fails on a valueFrom it cannot emulate.
func podEnv(t *testing.T, c k8sContainer, podName, ns, token string) map[string]string {
	t.Helper()
	env := map[string]string{"HOSTNAME": podName}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expandK8s(e.Value, env)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = ns
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = podName
		case e.ValueFrom.SecretKeyRef != nil:
			env[e.Name] = token
		default:
			t.Fatalf("env %s: valueFrom the test does not emulate", e.Name)
		}
	}
	return env
}

// containerPort resolves a probe's or service's port (a number or a container
// port name) against the container.
func containerPort(t *testing.T, c k8sContainer, p any) int {
	t.Helper()
	switch v := p.(type) {
	case int:
		return v
	case string:
		for _, cp := range c.Ports {
			if cp.Name == v {
				return cp.ContainerPort
			}
		}
	}
	t.Fatalf("port %v is neither a number nor a container port name", p)
	return 0
}

// The StatefulSet's container, run through the real config loader as each
// pod would run it, gives every pod a valid Config whose registry lists all
// the pods at their headless-service names, and the probes, ports, volume
// and grace period agree with that Config.
func TestKubernetesManifestsLoad(t *testing.T) {
	var sts k8sStatefulSet
	readManifest(t, "statefulset.yaml", &sts)
	var headless, client k8sService
	readManifest(t, "service-headless.yaml", &headless)
	readManifest(t, "service-client.yaml", &client)

	require.Equal(t, "StatefulSet", sts.Kind)
	spec := sts.Spec
	pod := spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	require.Equal(t, "zaris/zaris-server:latest", c.Image)
	require.Equal(t, 3, spec.Replicas)
	require.Equal(t, "Parallel", spec.PodManagementPolicy, "the formation gate waits for every pod: OrderedReady would wait forever on zaris-0")
	require.NotNil(t, pod.EnableServiceLinks, "enableServiceLinks must be false (TestServiceLinkVariableBreaksTheStart)")
	require.False(t, *pod.EnableServiceLinks, "enableServiceLinks must be false (TestServiceLinkVariableBreaksTheStart)")
	for k, v := range spec.Selector.MatchLabels {
		require.Equal(t, v, spec.Template.Metadata.Labels[k], "the selector must match the pod labels")
		require.Equal(t, v, headless.Spec.Selector[k], "the headless service must select the pods")
		require.Equal(t, v, client.Spec.Selector[k], "the client service must select the pods")
	}

	// The headless service is the one that names the pods, and publishes
	// them before they are ready: members must find each other to form.
	require.Equal(t, spec.ServiceName, headless.Metadata.Name)
	require.Equal(t, "None", headless.Spec.ClusterIP)
	require.True(t, headless.Spec.PublishNotReadyAddresses)

	const ns, token = "prod", "s3cret-token"
	var registry []NodeEntry
	for i := range spec.Replicas {
		podName := fmt.Sprintf("%s-%d", sts.Metadata.Name, i)
		env := podEnv(t, c, podName, ns, token)
		args := make([]string, len(c.Args))
		for j, a := range c.Args {
			args[j] = expandK8s(a, env)
		}
		cfg, err := LoadConfig(args, envMap(env))
		require.NoError(t, err, "pod %s", podName)

		require.Equal(t, podName, cfg.NodeID)
		require.Equal(t, spec.Replicas, cfg.StatefulSetReplicas, "--statefulset-replicas must equal spec.replicas")
		require.Equal(t, "0.0.0.0", cfg.Bind)
		require.Equal(t, token, cfg.Token, "the token comes from the Secret")
		require.Len(t, cfg.Nodes, spec.Replicas)
		for j, e := range cfg.Nodes {
			id := fmt.Sprintf("%s-%d", sts.Metadata.Name, j)
			require.Equal(t, NodeEntry{ID: id, Host: fmt.Sprintf("%s.%s.%s.svc.cluster.local", id, spec.ServiceName, ns),
				ClientPort: cfg.ClientPort, PeerPort: cfg.PeerPort, GossipPort: cfg.GossipPort, RESPPort: cfg.RESPPort, HTTPPort: cfg.HTTPPort}, e)
		}
		if registry == nil {
			registry = cfg.Nodes
		}
		require.Equal(t, registry, cfg.Nodes, "every pod must derive the same registry (raft bootstraps it on each)")
		require.Equal(t, cfg.Nodes[i].Host, cfg.advertiseHost())

		// Container ports, probes, volume and grace period agree with the
		// Config.
		want := map[string]int{"client": cfg.ClientPort, "resp": cfg.RESPPort, "peer": cfg.PeerPort,
			"gossip-tcp": cfg.GossipPort, "gossip-udp": cfg.GossipPort, "http": cfg.HTTPPort}
		got := map[string]int{}
		for _, p := range c.Ports {
			got[p.Name] = p.ContainerPort
		}
		require.Equal(t, want, got, "container ports")
		require.NotNil(t, c.ReadinessProbe)
		require.NotNil(t, c.ReadinessProbe.HTTPGet)
		require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
		require.Equal(t, cfg.HTTPPort, containerPort(t, c, c.ReadinessProbe.HTTPGet.Port))
		require.NotNil(t, c.LivenessProbe)
		require.NotNil(t, c.LivenessProbe.HTTPGet)
		require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
		require.Equal(t, cfg.HTTPPort, containerPort(t, c, c.LivenessProbe.HTTPGet.Port))

		require.NotEmpty(t, cfg.DataDir)
		mounted := false
		for _, m := range c.VolumeMounts {
			if m.MountPath == cfg.DataDir {
				mounted = true
				claimed := false
				for _, v := range spec.VolumeClaimTemplates {
					claimed = claimed || v.Metadata.Name == m.Name
				}
				require.True(t, claimed, "the data-dir mount %q must come from a volumeClaimTemplate", m.Name)
			}
		}
		require.True(t, mounted, "--data-dir %s must be a volume mount", cfg.DataDir)

		require.Greater(t, time.Duration(pod.TerminationGracePeriodSeconds)*time.Second, cfg.ShutdownTimeout,
			"terminationGracePeriodSeconds must exceed --shutdown-timeout, or the kubelet kills the drain")
		require.NotEmpty(t, c.Resources.Limits["memory"], "a memory limit")

		// The services route to ports the container serves.
		for _, svc := range []k8sService{headless, client} {
			for _, p := range svc.Spec.Ports {
				port := containerPort(t, c, p.TargetPort)
				require.Contains(t, want, p.Name, "service %s port %s", svc.Metadata.Name, p.Name)
				require.Equal(t, want[p.Name], port, "service %s port %s", svc.Metadata.Name, p.Name)
				require.Equal(t, port, p.Port, "service %s port %s", svc.Metadata.Name, p.Name)
			}
		}
	}

	// A pod beyond --statefulset-replicas (spec.replicas raised alone) is
	// refused, naming the option to raise with it.
	env := podEnv(t, c, fmt.Sprintf("%s-%d", sts.Metadata.Name, spec.Replicas), ns, token)
	args := make([]string, len(c.Args))
	for j, a := range c.Args {
		args[j] = expandK8s(a, env)
	}
	_, err := LoadConfig(args, envMap(env))
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "statefulset-replicas", ce.Option)
}

// The disruption budget lets one pod go at a time, over the set's pods.
func TestKubernetesPodDisruptionBudget(t *testing.T) {
	var pdb struct {
		Kind string `yaml:"kind"`
		Spec struct {
			MaxUnavailable int `yaml:"maxUnavailable"`
			Selector       struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
		} `yaml:"spec"`
	}
	readManifest(t, "pdb.yaml", &pdb)
	var sts k8sStatefulSet
	readManifest(t, "statefulset.yaml", &sts)
	require.Equal(t, "PodDisruptionBudget", pdb.Kind)
	require.Equal(t, 1, pdb.Spec.MaxUnavailable)
	require.Equal(t, sts.Spec.Selector.MatchLabels, pdb.Spec.Selector.MatchLabels)
}

/*
Copyright 2026 The Sandbar Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package node starts a one-node Kubernetes cluster on this machine for tests and
// `make cluster`: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a
// kubelet with containerd and runc, the CNI bridge plugin and kube-proxy (iptables).
//
// Everything runs in a network and a mount namespace of the cluster's own: the API
// server, the pods' bridge, kube-proxy's rules and the runtime's mounts are invisible
// to the machine, and they go away with the namespaces when the cluster stops. The
// machine reaches the cluster only through loopback ports that Start forwards into the
// namespace (the API server's, and any other Forward asks for). Images are loaded
// from tarballs into containerd; no registry is asked for anything.
//
// It needs root (namespaces, mounts, cgroups), the binaries of
// hack/control-plane-binaries.sh and hack/node-binaries.sh (which brings iptables too),
// and from the machine util-linux's nsenter and mount and iproute2's ip.
package node

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The cluster's addresses, inside its network namespace only.
const (
	// NodeName is the one node's name.
	NodeName = "sandbar-node"
	// nodeIP is the node's address: the pods' bridge's, which the API server
	// advertises, so that pods reach it through the kubernetes Service.
	nodeIP      = "10.244.0.1"
	podCIDR     = "10.244.0.0/24"
	serviceCIDR = "10.96.0.0/16"
	// apiServiceIP is the kubernetes Service's address (the first of serviceCIDR).
	apiServiceIP = "10.96.0.1"
	bridge       = "sandbar0"
	// PauseImage is the sandbox image containerd is given; Start loads it.
	PauseImage = "localhost/sandbar/pause:1"
)

// Config says where the cluster's binaries are and what to load into it.
type Config struct {
	// Dir holds the cluster's state (certificates, etcd, containerd, the kubelet,
	// logs); Stop removes it. It must not exist or be empty.
	Dir string
	// ControlPlane is the folder of hack/control-plane-binaries.sh (etcd,
	// kube-apiserver, kubectl).
	ControlPlane string
	// Node is the folder of hack/node-binaries.sh (kubelet, kube-proxy,
	// kube-controller-manager, kube-scheduler; deb/ with containerd, runc, the CNI
	// plugins and iptables; sbin/ with the iptables wrappers).
	Node string
	// Pause is the pause binary (hack/cluster/pause) the sandbox image is made of.
	Pause string
	// Images are image tarballs (docker save or OCI archives) loaded into containerd.
	Images []string
	// Log, if set, gets a line per step.
	Log io.Writer
}

// Cluster is a running one-node cluster.
type Cluster struct {
	cfg Config
	// Kubeconfig is the path of an admin (system:masters) kubeconfig whose server is
	// the API server's loopback port on this machine.
	Kubeconfig string
	// Rest is the same, for clients in this process.
	Rest *rest.Config

	anchor *exec.Cmd // holds the namespaces: every component runs in them
	mu     sync.Mutex
	procs  []*process
	fwds   []*forwarder
	ca     *authority
	pki    files
}

type process struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error
}

// Start starts the cluster and returns once the node is Ready and the images are
// loaded. On an error, whatever did start is stopped.
func Start(ctx context.Context, cfg Config) (c *Cluster, err error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("a one-node cluster needs root: namespaces, mounts and cgroups")
	}
	for _, tool := range []string{"nsenter", "mount", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s is not on the PATH (util-linux, iproute2): %w", tool, err)
		}
	}
	for _, p := range []*string{&cfg.Dir, &cfg.ControlPlane, &cfg.Node, &cfg.Pause} {
		if *p, err = filepath.Abs(*p); err != nil {
			return nil, err
		}
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	killOrphans(cfg.Node)
	c = &Cluster{cfg: cfg}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w%s", err, c.logTails())
			_ = c.Stop()
			c = nil
		}
	}()
	for _, d := range []string{"pki", "logs", "etcd", "kubelet", "containerd", "cni", "pod-logs"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, d), 0o700); err != nil {
			return c, err
		}
	}
	if err := c.namespaces(); err != nil {
		return c, fmt.Errorf("the cluster's namespaces: %w", err)
	}
	if err := c.certificates(); err != nil {
		return c, fmt.Errorf("certificates: %w", err)
	}
	if err := c.controlPlane(ctx); err != nil {
		return c, err
	}
	if err := c.runtime(ctx); err != nil {
		return c, err
	}
	if err := c.node(ctx); err != nil {
		return c, err
	}
	return c, nil
}

func (c *Cluster) logf(format string, args ...any) {
	fmt.Fprintf(c.cfg.Log, "node: "+format+"\n", args...)
}

func (c *Cluster) path(parts ...string) string {
	return filepath.Join(append([]string{c.cfg.Dir}, parts...)...)
}

// namespaces starts the anchor, a process in a new network and mount namespace, and
// sets both up: loopback, the pods' bridge with the node's address and a default
// route through it, forwarding, bridged traffic through iptables, and private tmpfs
// over the machine-wide folders containerd and the CNI plugins write to.
func (c *Cluster) namespaces() error {
	c.anchor = exec.Command("sleep", "infinity")
	c.anchor.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:   syscall.CLONE_NEWNET,
		Unshareflags: syscall.CLONE_NEWNS, // Go makes every mount private in it
		Pdeathsig:    syscall.SIGKILL,
	}
	if err := c.anchor.Start(); err != nil {
		return err
	}
	script := strings.Join([]string{
		"set -e",
		"ip link set lo up",
		"ip link add " + bridge + " type bridge",
		"ip addr add " + nodeIP + "/24 dev " + bridge,
		"ip link set " + bridge + " up",
		"ip route add default dev " + bridge,
		"echo 1 > /proc/sys/net/ipv4/ip_forward",
		"echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables",
		"for d in /run/netns /run/containerd /var/lib/cni; do mkdir -p $d && mount -t tmpfs -o mode=0755 tmpfs $d; done",
	}, "\n")
	out, err := c.inside("sh", "-c", script).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	c.logf("namespaces of process %d: bridge %s at %s", c.anchor.Process.Pid, bridge, nodeIP)
	return nil
}

// inside is a command run in the cluster's namespaces.
func (c *Cluster) inside(name string, args ...string) *exec.Cmd {
	cmd := exec.Command("nsenter", append([]string{"--target", strconv.Itoa(c.anchor.Process.Pid), "--net", "--mount", "--", name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), "PATH="+c.searchPath())
	return cmd
}

func (c *Cluster) searchPath() string {
	deb := filepath.Join(c.cfg.Node, "deb")
	return strings.Join([]string{filepath.Join(c.cfg.Node, "sbin"), filepath.Join(deb, "usr", "bin"), filepath.Join(deb, "usr", "sbin"), os.Getenv("PATH")}, ":")
}

// start runs a component in the namespaces, its output in logs/<name>.log.
func (c *Cluster) start(name, bin string, args ...string) error {
	log, err := os.Create(c.path("logs", name+".log"))
	if err != nil {
		return err
	}
	cmd := c.inside(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	c.logf("started %s", name)
	return nil
}

// exited is the first component that is no longer running, or nil.
func (c *Cluster) exited() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %v", p.name, p.err)
		default:
		}
	}
	return nil
}

// await polls check every 200 ms until it passes, a component exits, or the timeout.
func (c *Cluster) await(ctx context.Context, what string, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		if e := c.exited(); e != nil {
			return fmt.Errorf("waiting for %s: %w", what, e)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not within %s: %w", what, timeout, err)
		case <-tick.C:
		}
	}
}

// files are the certificates, keys and kubeconfigs the components read.
type files struct {
	ca, apiCert, apiKey, kubeletClientCert, kubeletClientKey string
	kubeletCert, kubeletKey, saKey, saPub                    string
}

func (c *Cluster) certificates() error {
	var err error
	if c.ca, err = newAuthority(); err != nil {
		return err
	}
	dir := c.path("pki")
	c.pki.ca = filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(c.pki.ca, c.ca.pem, 0o600); err != nil {
		return err
	}
	serving, err := c.ca.issue("kube-apiserver", nil, "127.0.0.1", nodeIP, apiServiceIP, "localhost",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
	if err != nil {
		return err
	}
	if c.pki.apiCert, c.pki.apiKey, err = serving.write(dir, "apiserver"); err != nil {
		return err
	}
	toKubelet, err := c.ca.issue("kube-apiserver-kubelet-client", []string{"system:masters"})
	if err != nil {
		return err
	}
	if c.pki.kubeletClientCert, c.pki.kubeletClientKey, err = toKubelet.write(dir, "apiserver-kubelet-client"); err != nil {
		return err
	}
	kubeletServing, err := c.ca.issue("system:node:"+NodeName, []string{"system:nodes"}, nodeIP, "127.0.0.1", NodeName)
	if err != nil {
		return err
	}
	if c.pki.kubeletCert, c.pki.kubeletKey, err = kubeletServing.write(dir, "kubelet"); err != nil {
		return err
	}
	if c.pki.saKey, c.pki.saPub, err = serviceAccountKey(dir); err != nil {
		return err
	}
	// The components' kubeconfigs, each its own user: the API server's RBAC
	// bootstrap roles (and the Node authorizer, for the kubelet) give them their rights.
	for _, u := range []struct{ file, user, group string }{
		{"admin", "sandbar-admin", "system:masters"},
		{"controller-manager", "system:kube-controller-manager", ""},
		{"scheduler", "system:kube-scheduler", ""},
		{"kubelet", "system:node:" + NodeName, "system:nodes"},
		{"kube-proxy", "system:kube-proxy", ""},
	} {
		var groups []string
		if u.group != "" {
			groups = []string{u.group}
		}
		p, err := c.ca.issue(u.user, groups)
		if err != nil {
			return err
		}
		if err := c.kubeconfig(c.path(u.file+".kubeconfig"), "https://127.0.0.1:6443", p); err != nil {
			return err
		}
	}
	// The admin's, for this machine: written once the API server's port is forwarded.
	c.Kubeconfig = c.path("kubeconfig")
	return nil
}

func (c *Cluster) kubeconfig(path, server string, p pair) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sandbar-node"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: c.ca.pem}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: p.cert, ClientKeyData: p.key}
	cfg.Contexts["sandbar-node"] = &clientcmdapi.Context{Cluster: "sandbar-node", AuthInfo: "user"}
	cfg.CurrentContext = "sandbar-node"
	return clientcmd.WriteToFile(*cfg, path)
}

func (c *Cluster) controlPlane(ctx context.Context) error {
	cp := c.cfg.ControlPlane
	if err := c.start("etcd", filepath.Join(cp, "etcd"),
		"--data-dir="+c.path("etcd"),
		"--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
		"--initial-cluster=default=http://127.0.0.1:2380", "--unsafe-no-fsync", "--log-level=warn"); err != nil {
		return err
	}
	if err := c.start("kube-apiserver", filepath.Join(cp, "kube-apiserver"),
		"--etcd-servers=http://127.0.0.1:2379",
		"--bind-address=0.0.0.0", "--secure-port=6443", "--advertise-address="+nodeIP,
		"--tls-cert-file="+c.pki.apiCert, "--tls-private-key-file="+c.pki.apiKey,
		"--client-ca-file="+c.pki.ca,
		"--service-cluster-ip-range="+serviceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+c.pki.saPub, "--service-account-signing-key-file="+c.pki.saKey,
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--kubelet-client-certificate="+c.pki.kubeletClientCert, "--kubelet-client-key="+c.pki.kubeletClientKey,
		"--kubelet-preferred-address-types=InternalIP",
		"--allow-privileged=true"); err != nil {
		return err
	}
	fwd, err := c.Forward(net.JoinHostPort("127.0.0.1", "6443"))
	if err != nil {
		return err
	}
	admin, err := clientcmd.LoadFromFile(c.path("admin.kubeconfig"))
	if err != nil {
		return err
	}
	admin.Clusters["sandbar-node"].Server = "https://" + fwd
	if err := clientcmd.WriteToFile(*admin, c.Kubeconfig); err != nil {
		return err
	}
	if c.Rest, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.Rest)
	if err != nil {
		return err
	}
	if err := c.await(ctx, "the API server", 2*time.Minute, func(ctx context.Context) error {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}); err != nil {
		return err
	}
	c.logf("API server ready at https://%s", fwd)
	if err := c.start("kube-controller-manager", filepath.Join(c.cfg.Node, "kube-controller-manager"),
		"--kubeconfig="+c.path("controller-manager.kubeconfig"),
		"--authentication-kubeconfig="+c.path("controller-manager.kubeconfig"),
		"--authorization-kubeconfig="+c.path("controller-manager.kubeconfig"),
		"--service-account-private-key-file="+c.pki.saKey, "--root-ca-file="+c.pki.ca,
		"--use-service-account-credentials=true", "--leader-elect=false",
		"--bind-address=127.0.0.1", "--secure-port=10257"); err != nil {
		return err
	}
	return c.start("kube-scheduler", filepath.Join(c.cfg.Node, "kube-scheduler"),
		"--kubeconfig="+c.path("scheduler.kubeconfig"),
		"--authentication-kubeconfig="+c.path("scheduler.kubeconfig"),
		"--authorization-kubeconfig="+c.path("scheduler.kubeconfig"),
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=10259")
}

// runtime starts containerd with the CRI plugin on runc and the CNI bridge, and loads
// the sandbox image and cfg.Images into it.
func (c *Cluster) runtime(ctx context.Context) error {
	deb := filepath.Join(c.cfg.Node, "deb")
	conf := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = %[3]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[4]q
  # runc may not lower oom_score_adj here (nor may root, on this kind of machine).
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = %[5]q
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[6]q
    conf_dir = %[7]q
`, c.path("containerd", "root"), c.path("containerd", "state"), c.socket(), PauseImage,
		filepath.Join(deb, "usr", "sbin", "runc"), filepath.Join(deb, "usr", "lib", "cni"), c.path("cni"))
	if err := os.WriteFile(c.path("containerd", "config.toml"), []byte(conf), 0o600); err != nil {
		return err
	}
	cni := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "sandbar",
  "plugins": [{
    "type": "bridge",
    "bridge": %q,
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": %q, "gateway": %q}]],
      "routes": [{"dst": "0.0.0.0/0"}]
    }
  }]
}
`, bridge, podCIDR, nodeIP)
	if err := os.WriteFile(c.path("cni", "10-sandbar.conflist"), []byte(cni), 0o600); err != nil {
		return err
	}
	if err := c.start("containerd", filepath.Join(deb, "usr", "bin", "containerd"), "--config", c.path("containerd", "config.toml")); err != nil {
		return err
	}
	if err := c.await(ctx, "containerd", time.Minute, func(ctx context.Context) error {
		out, err := c.ctr("version").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}); err != nil {
		return err
	}
	pause := c.path("pause.tar")
	if err := pauseImage(c.cfg.Pause, pause); err != nil {
		return fmt.Errorf("the sandbox image: %w", err)
	}
	for _, img := range append([]string{pause}, c.cfg.Images...) {
		if out, err := c.ctr("images", "import", "--snapshotter", "native", img).CombinedOutput(); err != nil {
			return fmt.Errorf("loading %s: %w: %s", img, err, out)
		}
		c.logf("loaded %s", img)
	}
	return nil
}

func (c *Cluster) socket() string { return c.path("containerd", "containerd.sock") }

// ctr is containerd's client on the cluster's runtime, in its Kubernetes namespace.
func (c *Cluster) ctr(args ...string) *exec.Cmd {
	return c.inside(filepath.Join(c.cfg.Node, "deb", "usr", "bin", "ctr"), append([]string{"--address", c.socket(), "--namespace", "k8s.io"}, args...)...)
}

// node starts the kubelet and kube-proxy and waits for the node to be Ready.
func (c *Cluster) node(ctx context.Context) error {
	kubelet := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[1]q}
authorization: {mode: Webhook}
tlsCertFile: %[2]q
tlsPrivateKeyFile: %[3]q
containerRuntimeEndpoint: unix://%[4]s
address: %[5]s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
podCIDR: %[6]s
podLogsDir: %[7]q
resolvConf: /etc/resolv.conf
# cgroup v1, no systemd, swap on: the machines this runs on.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
# The images were loaded from tarballs and cannot be pulled again: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1%%", nodefs.available: "1%%", imagefs.available: "1%%"}
serializeImagePulls: false
`, c.pki.ca, c.pki.kubeletCert, c.pki.kubeletKey, c.socket(), nodeIP, podCIDR, c.path("pod-logs"))
	if err := os.WriteFile(c.path("kubelet", "config.yaml"), []byte(kubelet), 0o600); err != nil {
		return err
	}
	if err := c.start("kubelet", filepath.Join(c.cfg.Node, "kubelet"),
		"--config="+c.path("kubelet", "config.yaml"),
		"--kubeconfig="+c.path("kubelet.kubeconfig"),
		"--root-dir="+c.path("kubelet", "root"),
		"--cert-dir="+c.path("kubelet", "pki"),
		"--hostname-override="+NodeName, "--node-ip="+nodeIP); err != nil {
		return err
	}
	proxy := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %q}
mode: iptables
clusterCIDR: %s
hostnameOverride: %s
bindAddress: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# Pods reach Services on the same bridge: their replies must come back through it.
iptables: {masqueradeAll: true}
conntrack: {maxPerCore: 0}
`, c.path("kube-proxy.kubeconfig"), podCIDR, NodeName, nodeIP)
	if err := os.WriteFile(c.path("kube-proxy.yaml"), []byte(proxy), 0o600); err != nil {
		return err
	}
	if err := c.start("kube-proxy", filepath.Join(c.cfg.Node, "kube-proxy"), "--config="+c.path("kube-proxy.yaml")); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.Rest)
	if err != nil {
		return err
	}
	return c.await(ctx, "the node to be Ready", 3*time.Minute, func(ctx context.Context) error {
		n, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				if cond.Status == corev1.ConditionTrue {
					c.logf("node %s Ready", NodeName)
					return nil
				}
				return fmt.Errorf("node %s: %s: %s", NodeName, cond.Reason, cond.Message)
			}
		}
		return fmt.Errorf("node %s has no Ready condition yet", NodeName)
	})
}

// Forward forwards a new loopback port of this machine to addr in the cluster's
// network namespace (a Service's cluster IP and port, say) and returns its address.
func (c *Cluster) Forward(addr string) (string, error) {
	f, err := forward(c.anchor.Process.Pid, addr)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.fwds = append(c.fwds, f)
	c.mu.Unlock()
	return f.Addr(), nil
}

// DialContext connects to addr in the cluster's network namespace: an HTTP client's
// transport can reach Services and pods with it.
func (c *Cluster) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return dialIn(ctx, c.anchor.Process.Pid, network, addr)
}

// Logs is the folder of the components' logs.
func (c *Cluster) Logs() string { return c.path("logs") }

// logTails is the end of each component's log, for an error.
func (c *Cluster) logTails() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, p := range c.procs {
		data, err := os.ReadFile(p.log.Name())
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&b, "\n--- %s (last lines of %s)\n%s", p.name, p.log.Name(), strings.Join(lines, "\n"))
	}
	return b.String()
}

// Stop stops every component, the containers and the namespaces, and removes Dir.
// The containers go first, through containerd, so that runc removes their cgroups.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	fwds, procs := c.fwds, c.procs
	c.fwds, c.procs = nil, nil
	c.mu.Unlock()
	for _, f := range fwds {
		_ = f.Close()
	}
	byName := map[string]*process{}
	for _, p := range procs {
		byName[p.name] = p
	}
	stop := func(names ...string) {
		for _, n := range names {
			if p := byName[n]; p != nil {
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
			}
		}
		for _, n := range names {
			if p := byName[n]; p != nil {
				select {
				case <-p.done:
				case <-time.After(15 * time.Second):
					_ = p.cmd.Process.Kill()
					<-p.done
				}
				p.log.Close()
			}
		}
	}
	stop("kubelet", "kube-proxy", "kube-scheduler", "kube-controller-manager")
	if p := byName["containerd"]; p != nil {
		c.removeContainers(p)
	}
	stop("containerd", "kube-apiserver")
	stop("etcd")
	if c.anchor != nil && c.anchor.Process != nil {
		c.killShims()
		_ = c.anchor.Process.Kill()
		_ = c.anchor.Wait()
	}
	return os.RemoveAll(c.cfg.Dir)
}

// removeContainers kills and deletes every task containerd runs, while it still runs.
func (c *Cluster) removeContainers(containerd *process) {
	select {
	case <-containerd.done:
		return
	default:
	}
	out, err := c.ctr("tasks", "list", "--quiet").Output()
	if err != nil {
		return
	}
	for _, id := range strings.Fields(string(out)) {
		_ = c.ctr("tasks", "kill", "--all", "--signal", "SIGKILL", id).Run()
	}
	for _, id := range strings.Fields(string(out)) {
		_ = c.ctr("tasks", "delete", "--force", id).Run()
	}
}

// killShims kills what containerd left running: its shims (each names containerd's
// socket on its command line) and their children.
func (c *Cluster) killShims() {
	killShims(func(_, address string, _ map[string]bool) bool { return address == c.socket() })
}

// killOrphans kills the shims and containers of clusters whose containerd is gone
// without Stop (a test binary killed from outside takes the components with it, by
// their parent-death signal, but not the shims containerd started on their own): the
// shims run from this Node folder whose containerd no longer runs.
func killOrphans(node string) {
	shim := filepath.Join(node, "deb", "usr", "bin", "containerd-shim-runc-v2")
	killShims(func(binary, address string, live map[string]bool) bool {
		return binary == shim && !live[filepath.Dir(address)]
	})
}

// killShims kills the containerd shims that kill picks by their binary and socket
// address, and their children (the containers' first processes). live holds the
// folders of the configurations running containerds were started with.
func killShims(kill func(binary, address string, live map[string]bool) bool) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	parent := map[int]int{}
	shims := map[int][2]string{} // pid: binary, socket address
	live := map[string]bool{}
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 1 {
				parent[pid], _ = strconv.Atoi(f[1])
			}
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		for i := 0; i+1 < len(args); i++ {
			switch {
			case args[i] == "-address" && strings.Contains(filepath.Base(args[0]), "containerd-shim"):
				shims[pid] = [2]string{args[0], args[i+1]}
			case args[i] == "--config" && filepath.Base(args[0]) == "containerd":
				live[filepath.Dir(args[i+1])] = true
			}
		}
	}
	doomed := map[int]bool{}
	for pid, shim := range shims {
		if kill(shim[0], shim[1], live) {
			doomed[pid] = true
		}
	}
	for pid, ppid := range parent {
		if doomed[ppid] {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for pid := range doomed {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// HTTPClient is an HTTP client whose connections are made in the cluster's network
// namespace, so that a URL may name a Service's cluster IP or a pod's address.
func (c *Cluster) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: c.DialContext, TLSClientConfig: &tls.Config{RootCAs: c.pool()}}}
}

func (c *Cluster) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.ca.cert)
	return p
}

/**
 * The configuration files of one node: containerd's config.toml, the CNI bridge network, the
 * kubelet's KubeletConfiguration and kube-proxy's KubeProxyConfiguration, and their kubeconfig.
 * Paths under /run, /var/lib and /var/log are the node's own (tmpfs in its mount namespace); files
 * written by the launcher live in its work directory, which the namespace shares with the machine.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { NodeAddresses } from './network.js';

export interface NodeConfigInput {
  workDir: string;
  nodeName: string;
  addresses: NodeAddresses;
  cgroupName: string;
  /** The pause image's reference, pinned as containerd's sandbox image. */
  sandboxImage: string;
  runc: string;
  cniDir: string;
  /** https://<hostIp>:<relay port>: the API server as the node reaches it. */
  server: string;
  /** kube-apiserver's serving chain. */
  apiserverCaPem: string;
  token: string;
  /** The CA whose client certificates the kubelet accepts (kube-apiserver's kubelet client). */
  clientCaFile: string;
  servingCertFile: string;
  servingKeyFile: string;
  /** Run CoreDNS on the node and make it the pods' nameserver. */
  clusterDns: boolean;
}

export interface NodeConfigFiles {
  containerd: string;
  kubelet: string;
  kubeProxy: string;
  kubeconfig: string;
  corefile: string;
}

export const containerdSocket = '/run/containerd/containerd.sock';

function containerdToml(input: NodeConfigInput): string {
  const cni = join(input.workDir, 'cni');
  return `version = 3
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = "${containerdSocket}"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "${input.sandboxImage}"

[plugins.'io.containerd.cri.v1.runtime']
  # Root lacks CAP_SYS_RESOURCE here: runc cannot lower oom_score_adj below containerd's own.
  restrict_oom_score_adj = true
  # Pod network namespaces under /run/containerd (the node's tmpfs), not the machine's /var/run/netns.
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["${input.cniDir}"]
    conf_dir = "${cni}"
    max_conf_num = 1
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "${input.runc}"
        SystemdCgroup = false
`;
}

function cniConfig(input: NodeConfigInput): string {
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'bpa-node',
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          // The pod's default route is the bridge: the node's namespace has none, so it ends there.
          isDefaultGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: { type: 'host-local', ranges: [[{ subnet: input.addresses.podCidr }]] },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  );
}

function kubeletConfig(input: NodeConfigInput): Record<string, unknown> {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // The machines here mount cgroup v1 only.
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    cgroupRoot: `/${input.cgroupName}`,
    cgroupsPerQOS: true,
    // Check the kernel settings instead of rewriting them for the whole machine (see sandbox.ts).
    protectKernelDefaults: true,
    containerRuntimeEndpoint: `unix://${containerdSocket}`,
    address: input.addresses.nodeIp,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: input.clientCaFile },
    },
    authorization: { mode: 'Webhook' },
    tlsCertFile: input.servingCertFile,
    tlsPrivateKeyFile: input.servingKeyFile,
    podLogsDir: '/var/log/pods',
    resolvConf: join(input.workDir, 'resolv.conf'),
    clusterDomain: 'cluster.local',
    // CoreDNS listens on the node's own address; a pod reaches it through its bridge.
    ...(input.clusterDns ? { clusterDNS: [input.addresses.nodeIp] } : {}),
    // Images are imported, never pulled: never collect them.
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    // The machine is shared: the node must not evict pods because others use memory or disk.
    evictionHard: { 'memory.available': '1Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
    serializeImagePulls: false,
    failSwapOn: false,
    nodeStatusUpdateFrequency: '4s',
    syncFrequency: '5s',
    fileCheckFrequency: '5s',
    registerNode: true,
  };
}

function kubeProxyConfig(input: NodeConfigInput, kubeconfig: string): Record<string, unknown> {
  return {
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    mode: 'nftables',
    clientConnection: { kubeconfig },
    hostnameOverride: input.nodeName,
    clusterCIDR: input.addresses.clusterCidr,
    bindAddress: input.addresses.nodeIp,
    healthzBindAddress: '127.0.0.1:10256',
    metricsBindAddress: '127.0.0.1:10249',
    // Root may not raise its own OOM protection here; conntrack sysctls are the machine's, so none.
    oomScoreAdj: 0,
    conntrack: {
      maxPerCore: 0,
      min: 0,
      tcpEstablishedTimeout: '0s',
      tcpCloseWaitTimeout: '0s',
      udpTimeout: '0s',
      udpStreamTimeout: '0s',
    },
  };
}

/** The kubeconfig of the kubelet and kube-proxy: the relay's address, the server's name `kubernetes`. */
function kubeconfig(input: NodeConfigInput): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'bpa',
        cluster: {
          server: input.server,
          'certificate-authority-data': Buffer.from(input.apiserverCaPem).toString('base64'),
          'tls-server-name': 'kubernetes',
        },
      },
    ],
    users: [{ name: 'node', user: { token: input.token } }],
    contexts: [{ name: 'bpa', context: { cluster: 'bpa', user: 'node' } }],
    'current-context': 'bpa',
  };
}

/**
 * CoreDNS, the node's cluster DNS: Services and pods of cluster.local from the API server. No
 * `forward`: the machine is offline and nothing a pod asks may leave it, so other names fail.
 */
function corefile(input: NodeConfigInput, kubeconfigPath: string): string {
  return `.:53 {
    bind ${input.addresses.nodeIp}
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig ${kubeconfigPath} bpa
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
`;
}

/** Writes every file into the work directory and returns their paths. */
export function writeNodeConfig(input: NodeConfigInput): NodeConfigFiles {
  const files: NodeConfigFiles = {
    containerd: join(input.workDir, 'containerd.toml'),
    kubelet: join(input.workDir, 'kubelet.yaml'),
    kubeProxy: join(input.workDir, 'kube-proxy.yaml'),
    kubeconfig: join(input.workDir, 'kubeconfig'),
    corefile: join(input.workDir, 'Corefile'),
  };
  writeFileSync(files.containerd, containerdToml(input));
  writeFileSync(join(input.workDir, 'cni', '10-bpa-node.conflist'), cniConfig(input));
  writeFileSync(files.kubelet, stringify(kubeletConfig(input)));
  writeFileSync(files.kubeProxy, stringify(kubeProxyConfig(input, files.kubeconfig)));
  writeFileSync(files.kubeconfig, stringify(kubeconfig(input)), { mode: 0o600 });
  writeFileSync(files.corefile, corefile(input, files.kubeconfig));
  // Pods resolve nothing outside the cluster: no nameserver of the machine leaks in.
  writeFileSync(join(input.workDir, 'resolv.conf'), 'nameserver 127.0.0.1\noptions ndots:5\n');
  return files;
}

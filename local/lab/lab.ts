import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubernetesObjectApi, type KubeConfig } from '@kubernetes/client-node';
import { generateEd25519KeyPair } from './ssh-keys.js';
import type { Env } from '../../shared/config.js';
import { applyObject } from '../control-plane/apply.js';
import { createNamespace } from '../control-plane/namespaces.js';
import { onboardNamespace, shippedFunctionsNamespace } from '../control-plane/tenant.js';
import { applyLabBareMetalHosts } from './bare-metal-hosts.js';
import { labHosts, labHostsOn, labNamespace, type LabHost } from './lab-definition.js';
import { createLabNetwork, type NodeNetworkAttachment } from './lab-network.js';
import { renderIscLeaseFile } from './lease-file.js';
import { startSshHosts } from './openssh-hosts.js';

/** The Secret the KUD Job mounts and software-install reads (keys id_rsa, id_rsa.pub). */
export const labSshKeySecret = 'ssh-key-secret';

export interface LabSshCommand {
  ip: string;
  command: string;
}

export interface Lab {
  hosts: readonly LabHost[];
  namespace: string;
  /**
   * `openssh`: real sshd daemons, one per host in its own network namespace on the node's network
   * (apt-get is recorded there, never run; Ansible's modules run). `simulated`: addresses on
   * 127.0.0.N and no SSH server (no node: no Job runs that would connect).
   */
  sshKind: 'openssh' | 'simulated';
  sshPort: number;
  leaseFilePath: string;
  knownHostsPath: string;
  /** Every command the hosts received, oldest first per host. */
  commands(): LabSshCommand[];
  /** Env the functions need to reach the lab (lease file, SSH port, known_hosts). */
  functionsEnv: Env;
  /**
   * Creates the namespace, BareMetalHosts (with inspected NICs) and the SSH key Secret, there and
   * in the functions' namespace (bpa-system, where the KUD Job mounts it).
   */
  applyToCluster(kubeConfig: KubeConfig): Promise<void>;
  /** The SSH key Secret in another namespace too (a KUD Job mounts it from its own namespace). */
  applySshKeySecret(kubeConfig: KubeConfig, namespace: string): Promise<void>;
  stop(): Promise<void>;
}

export interface LabOptions {
  hosts?: readonly LabHost[];
  namespace?: string;
  /**
   * The node's network: the hosts become real OpenSSH sshd daemons on it (the KUD Job's
   * stand-in pings them with Ansible). Absent: simulated hosts on 127.0.0.N, no SSH server.
   */
  network?: NodeNetworkAttachment;
}

/**
 * Prepares the lab before the stack starts (the functions' env points at it): a DHCP lease file,
 * a client key pair, the hosts' SSH servers and a known_hosts file pinning their host keys.
 */
export async function startLab(options: LabOptions = {}): Promise<Lab> {
  const namespace = options.namespace ?? labNamespace;
  const dir = mkdtempSync(join(tmpdir(), 'bpa-lab-'));
  const cleanups: (() => Promise<void>)[] = [async () => rmSync(dir, { recursive: true, force: true })];
  const stop = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  };
  try {
    const ssh = options.network
      ? await startOpenSshLab(options.network, options.hosts, cleanups)
      : simulatedLab(options.hosts ?? labHosts);
    const { hosts } = ssh;
    const leaseFilePath = join(dir, 'dhcpd.leases');
    writeFileSync(leaseFilePath, renderIscLeaseFile(hosts.filter((h) => h.inLeaseFile)));
    const knownHostsPath = join(dir, 'known_hosts');
    writeFileSync(knownHostsPath, ssh.knownHosts);
    const functionsEnv: Env = {
      LEASES_SOURCE: leaseFilePath,
      BMH_NAMESPACE: namespace,
      SSH_PORT: String(ssh.port),
      SSH_USER: 'root',
      SSH_KNOWN_HOSTS: knownHostsPath,
      SSH_KEY_SECRET: labSshKeySecret,
      SSH_TIMEOUT_SECONDS: '60',
      // Not below the product's 15 s: three handshakes at once on a loaded two-core CI machine
      // (a whole-suite run, Knative starting beside it) is the likely cause, not proven, of a
      // chain-observability run where 2 of 3 lab hosts failed their install.
      SSH_CONNECT_TIMEOUT_SECONDS: '30',
      // The install runs in a Job whose pod reaches the sshd hosts on the node's network (the
      // pinned keys go with it as SSH_KNOWN_HOSTS_LINES). Without a node no Job runs, the KUD
      // Job's neither: the no-root lab ends at the launched Job and installs nothing.
    };
    const labels = { 'bpa.akraino.org/simulated-lab': 'true' };
    const applySshKeySecret = (kubeConfig: KubeConfig, where: string) =>
      applyObject(KubernetesObjectApi.makeApiClient(kubeConfig), {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: labSshKeySecret, namespace: where, labels },
        type: 'Opaque',
        stringData: { id_rsa: ssh.privateKey, 'id_rsa.pub': ssh.publicKey },
      } as never).then(() => undefined);
    return {
      hosts,
      namespace,
      sshKind: ssh.kind,
      sshPort: ssh.port,
      leaseFilePath,
      knownHostsPath,
      commands: ssh.commands,
      functionsEnv,
      async applyToCluster(kubeConfig) {
        await createNamespace(kubeConfig, namespace, labels);
        // The lab's Provisionings and Softwares live here: the functions act as their
        // ServiceAccounts, which may write only in onboarded namespaces (manifests/tenant).
        await onboardNamespace(kubeConfig, namespace);
        await applyLabBareMetalHosts(kubeConfig, hosts, namespace);
        await applySshKeySecret(kubeConfig, namespace);
        // The KUD Job runs in the functions' namespace and mounts the operator's key from there,
        // never a tenant's (contract section 12): the lab's key is the operator's too.
        await createNamespace(kubeConfig, shippedFunctionsNamespace);
        await applySshKeySecret(kubeConfig, shippedFunctionsNamespace);
      },
      applySshKeySecret: (kubeConfig, where) => applySshKeySecret(kubeConfig, where),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

interface LabSsh {
  kind: Lab['sshKind'];
  hosts: readonly LabHost[];
  port: number;
  knownHosts: string;
  privateKey: string;
  publicKey: string;
  commands(): LabSshCommand[];
}

/** Real sshd daemons on the node's network, port 22 as an inventory says, logging in as root. */
async function startOpenSshLab(
  attachment: NodeNetworkAttachment,
  definition: readonly LabHost[] | undefined,
  cleanups: (() => Promise<void>)[],
): Promise<LabSsh> {
  const octets = labHostOctets(definition?.length ?? labHosts.length);
  const network = await createLabNetwork(attachment, octets);
  cleanups.push(() => network.remove());
  const hosts = labHostsOn(
    network.hosts.map((h) => h.ip),
    definition,
  );
  const sshd = await startSshHosts({
    count: hosts.length,
    addresses: network.hosts.map((h) => h.ip),
    netns: network.hosts.map((h) => h.netns),
    port: 22,
    username: 'root',
    behaviours: hosts.map(() => ({ kind: 'lab' as const })),
  });
  cleanups.push(() => sshd.stopAll());
  return {
    kind: 'openssh',
    hosts,
    port: sshd.port,
    knownHosts: sshd.knownHosts(),
    privateKey: sshd.privateKey,
    publicKey: sshd.publicKey,
    commands: () =>
      sshd.hosts.flatMap((host) => host.commands().map((command) => ({ ip: host.ip, command }))),
  };
}

/** The lab hosts' octets on the node's lab /24 (local/lab/lab-network.ts): the top of it. */
export const labHostOctets = (count: number) => Array.from({ length: count }, (_, i) => 251 + i);

function simulatedLab(hosts: readonly LabHost[]): LabSsh {
  // No SSH server: without a node no Job runs (neither KUD's nor an install's), so nothing would
  // connect. The key pair is the Secret the functions read, as on the node.
  const clientKey = generateEd25519KeyPair('bpa-demo lab client');
  return {
    kind: 'simulated',
    hosts,
    port: 22,
    knownHosts: '',
    privateKey: clientKey.private,
    publicKey: clientKey.public,
    commands: () => [],
  };
}

/**
 * A namespace ready for whole chains: the SSH key Secret, a known_hosts file for the test sshd
 * hosts, and BareMetalHosts whose inspected NICs point at those hosts, so that every cluster's
 * nodes resolve (IP_SOURCES=nics) to real SSH servers.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { SshHosts } from '../../support/sshd.js';
import {
  createBareMetalHost,
  createSoftware,
  provisioningObject,
} from '../../integration/functions/support/fixtures.js';

export { createSoftware };

/** MAC of node `index` of cluster number `clusterIndex`. */
export const nodeMac = (clusterIndex: number, index: number) =>
  `aa:bb:${(clusterIndex >> 8).toString(16).padStart(2, '0')}:${(clusterIndex & 0xff).toString(16).padStart(2, '0')}:00:${index
    .toString(16)
    .padStart(2, '0')}`;

export async function prepareNamespace(
  kubeConfig: KubeConfig,
  namespace: string,
  lab: SshHosts,
  dir: string,
): Promise<{ knownHostsPath: string }> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: 'ssh-key-secret' },
      data: {
        id_rsa: Buffer.from(lab.privateKey).toString('base64'),
        'id_rsa.pub': Buffer.from(lab.publicKey).toString('base64'),
      },
    },
  });
  const knownHostsPath = join(dir, 'known_hosts');
  await writeFile(knownHostsPath, lab.knownHosts());
  return { knownHostsPath };
}

/** BareMetalHosts for `nodes` nodes of cluster `clusterIndex`, node i on SSH host i mod count. */
export async function createClusterHosts(
  kubeConfig: KubeConfig,
  namespace: string,
  lab: SshHosts,
  clusterIndex: number,
  nodes: number,
): Promise<void> {
  for (let i = 0; i < nodes; i++) {
    const mac = nodeMac(clusterIndex, i);
    await createBareMetalHost(kubeConfig, {
      name: `c${clusterIndex}-n${i}`,
      namespace,
      bootMac: mac,
      nics: [{ name: 'eth0', mac, ip: lab.hosts[(clusterIndex + i) % lab.hosts.length]!.ip }],
    });
  }
}

/** A Provisioning of `masters` + `workers` nodes on those hosts. */
export function clusterProvisioning(
  namespace: string,
  clusterIndex: number,
  cluster: string,
  masters: number,
  workers: number,
) {
  return provisioningObject({
    name: cluster,
    namespace,
    cluster,
    masters: Array.from({ length: masters }, (_, i) => ({
      label: `master-${i}`,
      mac: nodeMac(clusterIndex, i),
    })),
    workers: Array.from({ length: workers }, (_, i) => ({
      label: `worker-${i}`,
      mac: nodeMac(clusterIndex, masters + i),
    })),
  });
}

/** Function env for a whole chain against the lab: hosts from NICs, sweeps and lists kept to the namespace. */
export const labChainEnv = (namespace: string, lab: SshHosts, knownHostsPath: string) => ({
  BMH_NAMESPACE: namespace,
  SWEEP_NAMESPACES: namespace,
  IP_SOURCES: 'nics',
  SSH_USER: lab.username,
  SSH_PORT: String(lab.port),
  SSH_KNOWN_HOSTS: knownHostsPath,
  // The install Job's pod opens the sessions, on a node other files may load (the load test's
  // 200 install Jobs): as the demo lab's (local/lab/lab.ts).
  SSH_CONNECT_TIMEOUT_SECONDS: '30',
  SSH_TIMEOUT_SECONDS: '30',
});

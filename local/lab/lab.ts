import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubernetesObjectApi, type KubeConfig } from '@kubernetes/client-node';
import ssh2 from 'ssh2';
import type { Env } from '../../shared/config.js';
import { applyObject } from '../control-plane/apply.js';
import { createNamespace } from '../control-plane/namespaces.js';
import { applyLabBareMetalHosts } from './bare-metal-hosts.js';
import { labHosts, labNamespace, type LabHost } from './lab-definition.js';
import { renderIscLeaseFile } from './lease-file.js';
import { startLabSshServers, type LabSshServers } from './ssh-lab.js';

const { utils } = ssh2;

/** The Secret the KUD Job mounts and software-install reads (keys id_rsa, id_rsa.pub). */
export const labSshKeySecret = 'ssh-key-secret';

export interface Lab {
  hosts: readonly LabHost[];
  namespace: string;
  leaseFilePath: string;
  knownHostsPath: string;
  ssh: LabSshServers;
  /** Env the functions need to reach the lab (lease file, SSH port, known_hosts). */
  functionsEnv: Env;
  /** Creates the namespace, BareMetalHosts (with inspected NICs) and the SSH key Secret. */
  applyToCluster(kubeConfig: KubeConfig): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Prepares the simulated lab before the stack starts (the functions' env points at it): a
 * DHCP lease file, a client key pair, the hosts' simulated SSH servers on 127.0.0.N and a
 * known_hosts file pinning their host keys.
 */
export async function startLab(
  options: { hosts?: readonly LabHost[]; namespace?: string } = {},
): Promise<Lab> {
  const hosts = options.hosts ?? labHosts;
  const namespace = options.namespace ?? labNamespace;
  const dir = mkdtempSync(join(tmpdir(), 'bpa-lab-'));
  try {
    const leaseFilePath = join(dir, 'dhcpd.leases');
    writeFileSync(leaseFilePath, renderIscLeaseFile(hosts.filter((h) => h.inLeaseFile)));
    const clientKey = utils.generateKeyPairSync('ed25519', { comment: 'bpa-demo lab client' });
    const ssh = await startLabSshServers({ hosts, authorizedPublicKey: clientKey.public });
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
      SSH_CONNECT_TIMEOUT_SECONDS: '10',
    };
    return {
      hosts,
      namespace,
      leaseFilePath,
      knownHostsPath,
      ssh,
      functionsEnv,
      async applyToCluster(kubeConfig) {
        await createNamespace(kubeConfig, namespace, { 'bpa.akraino.org/simulated-lab': 'true' });
        await applyLabBareMetalHosts(kubeConfig, hosts, namespace);
        await applyObject(KubernetesObjectApi.makeApiClient(kubeConfig), {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: labSshKeySecret, namespace, labels: { 'bpa.akraino.org/simulated-lab': 'true' } },
          type: 'Opaque',
          stringData: { id_rsa: clientKey.private, 'id_rsa.pub': clientKey.public },
        } as never);
      },
      async stop() {
        await ssh.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

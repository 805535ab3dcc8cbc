/**
 * The lab's settings for functions that run as pods of the real node (`bpa demo --engine
 * knative`): a pod has its own root and reads no file of this machine, so the lab's two files go
 * where the shipped manifests read them on a cluster (docs/deploy.md): the DHCP lease file as a
 * ConfigMap host-lookup reads (`LEASES_SOURCE=configmap:…`, kept equal to the file), and the
 * pinned host keys as the Secret `ssh-known-hosts` that software-install's Deployment mounts at
 * /etc/bpa/known-hosts (`SSH_KNOWN_HOSTS`).
 */
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { isStatus } from '../control-plane/apply.js';
import { followLeasesFile } from '../knative/leases-configmap.js';
import type { Lab } from './lab.js';

/** The Secret and key manifests/functions/software-install.yaml mounts (optional) for known_hosts. */
export const knownHostsSecret = { name: 'ssh-known-hosts', key: 'known_hosts' } as const;
/** Where software-install's pod sees it (the mount's path and the key). */
export const knownHostsMountedPath = `/etc/bpa/known-hosts/${knownHostsSecret.key}`;

export interface LabForPods {
  /** bpa-config keys: the lab's settings with LEASES_SOURCE and SSH_KNOWN_HOSTS as pods read them. */
  config: Record<string, string>;
  /** Stops copying the lease file to its ConfigMap. */
  stop(): void;
}

/**
 * Writes the lease file's ConfigMap (in the lab's namespace, onboarded by lab.applyToCluster,
 * so host-lookup may read it) and the known_hosts Secret in the functions' namespace, before the
 * functions start: the Secret's volume is optional, and a pod started without it would trust on
 * first use instead of pinning the keys.
 */
export async function labForPods(
  kubeConfig: KubeConfig,
  lab: Lab,
  functionsNamespace: string,
): Promise<LabForPods> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const secret = {
    metadata: { name: knownHostsSecret.name, namespace: functionsNamespace },
    type: 'Opaque',
    stringData: { [knownHostsSecret.key]: readFileSync(lab.knownHostsPath, 'utf8') },
  };
  await core
    .createNamespacedSecret({ namespace: functionsNamespace, body: secret })
    .catch((error: unknown) => {
      if (!isStatus(error, 409)) throw error;
      return core.replaceNamespacedSecret({
        name: secret.metadata.name,
        namespace: functionsNamespace,
        body: secret,
      });
    });
  const leases = await followLeasesFile(kubeConfig, lab.leaseFilePath, {
    namespace: lab.namespace,
    name: 'bpa-dhcp-leases',
    key: 'dhcpd.leases',
  });
  const config = Object.fromEntries(
    Object.entries(lab.functionsEnv).filter(
      (entry): entry is [string, string] => typeof entry[1] === 'string',
    ),
  );
  return {
    config: { ...config, LEASES_SOURCE: leases.leasesSource, SSH_KNOWN_HOSTS: knownHostsMountedPath },
    stop: leases.stop,
  };
}

import type { V1Job } from '@kubernetes/client-node';
import {
  clusterLabel,
  inventoryConfigMapName,
  inventoryKey,
  inventorySha256Annotation,
  kudJobName,
  managedByLabel,
  managedByValue,
} from './names.js';
import { provisioningOwnerReference, type ProvisioningOwner } from './owner.js';

export const defaultKudImage = 'github.com/onap/multicloud-k8s:latest';
export const defaultActiveDeadlineSeconds = 7200;
export const defaultSshKeySecret = 'ssh-key-secret';
/** KUD reads and writes its per-cluster artifacts here, on the node. */
export const kudMultiClusterPath = '/opt/kud/multi-cluster';
/** Where the inventory ConfigMap is mounted before it is copied into the multi-cluster dir. */
export const inventoryMountPath = '/etc/kud-inventory';
export const sshKeyMountPath = '/.ssh';

export interface KudJobOptions {
  image?: string;
  activeDeadlineSeconds?: number;
  sshKeySecret?: string;
  /**
   * The ConfigMap the container's env comes from. `kud-installer` by default (what `bpa render`
   * shows); the launcher names its copy of the functions' settings (contract section 5).
   */
  installerSettingsConfigMap?: string;
}

export interface KudJobInput {
  owner: ProvisioningOwner;
  cluster: string;
  inventorySha256: string;
  /** `spec.PodSubnet`: ` --network <subnet>` when set. */
  podSubnet?: string | null;
  /** `spec.KUDPlugins`: ` --plugins <p1> <p2> ...` when non-empty. */
  kudPlugins?: readonly string[] | null;
}

/**
 * The shell line the `kud` container runs: put the inventory where KUD expects it, install
 * the SSH key as the original operator did, then run the installer. The cluster name, subnet
 * and plugin names are validated words (schemas), so they are safe on this line.
 */
export function kudInstallerScript(
  cluster: string,
  podSubnet?: string | null,
  kudPlugins?: readonly string[] | null,
) {
  const clusterDir = `${kudMultiClusterPath}/${cluster}`;
  let installer = `./installer --cluster ${cluster}`;
  if (podSubnet) installer += ` --network ${podSubnet}`;
  if (kudPlugins && kudPlugins.length > 0) installer += ` --plugins ${kudPlugins.join(' ')}`;
  return [
    'set -e',
    `mkdir -p ${clusterDir}`,
    `cp ${inventoryMountPath}/${inventoryKey} ${clusterDir}/${inventoryKey}`,
    'cp -r /.ssh /root/',
    'chmod -R 600 /root/.ssh',
    installer,
  ].join('; ');
}

/** The Job `kud-<cluster>` that installs KUD on the cluster's nodes (contract section 5). */
export function buildKudJob(input: KudJobInput, options: KudJobOptions = {}): V1Job {
  const { owner, cluster } = input;
  const labels = { [clusterLabel]: cluster, [managedByLabel]: managedByValue };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: kudJobName(cluster),
      namespace: owner.namespace,
      labels,
      annotations: { [inventorySha256Annotation]: input.inventorySha256 },
      ownerReferences: [provisioningOwnerReference(owner)],
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: options.activeDeadlineSeconds ?? defaultActiveDeadlineSeconds,
      template: {
        metadata: { labels: { [clusterLabel]: cluster } },
        spec: {
          hostNetwork: true,
          restartPolicy: 'Never',
          containers: [
            {
              name: 'kud',
              image: options.image ?? defaultKudImage,
              imagePullPolicy: 'IfNotPresent',
              securityContext: { privileged: true },
              command: ['/bin/sh', '-c'],
              args: [kudInstallerScript(cluster, input.podSubnet, input.kudPlugins)],
              envFrom: [
                {
                  configMapRef: {
                    name: options.installerSettingsConfigMap ?? 'kud-installer',
                    optional: true,
                  },
                },
              ],
              volumeMounts: [
                { name: 'multi-cluster', mountPath: kudMultiClusterPath },
                { name: 'ssh-key', mountPath: sshKeyMountPath, readOnly: true },
                { name: 'inventory', mountPath: inventoryMountPath, readOnly: true },
              ],
            },
          ],
          volumes: [
            { name: 'multi-cluster', hostPath: { path: kudMultiClusterPath } },
            {
              name: 'ssh-key',
              secret: {
                secretName: options.sshKeySecret ?? defaultSshKeySecret,
                items: [
                  { key: 'id_rsa', path: 'id_rsa' },
                  { key: 'id_rsa.pub', path: 'id_rsa.pub' },
                ],
              },
            },
            { name: 'inventory', configMap: { name: inventoryConfigMapName(cluster) } },
          ],
        },
      },
    },
  };
}

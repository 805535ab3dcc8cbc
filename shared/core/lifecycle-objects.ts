import type { V1Job, V1Secret } from '@kubernetes/client-node';
import { kudMultiClusterPath } from './kud-job.js';
import { cleanupJobName, kubeconfigSecretKey, kubeconfigSecretName } from './lifecycle-names.js';
import { clusterLabel, managedByLabel, managedByValue } from './names.js';
import { provisioningOwnerReference, type ProvisioningOwner } from './owner.js';

const managedLabels = (cluster: string) => ({ [clusterLabel]: cluster, [managedByLabel]: managedByValue });

/** `<cluster>-admin-kubeconfig` (key `value`), owned by the Provisioning (contract section 10). */
export function buildKubeconfigSecret(
  owner: ProvisioningOwner,
  cluster: string,
  adminConf: string,
): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: kubeconfigSecretName(cluster),
      namespace: owner.namespace,
      labels: managedLabels(cluster),
      ownerReferences: [provisioningOwnerReference(owner)],
    },
    type: 'cluster.x-k8s.io/secret',
    stringData: { [kubeconfigSecretKey]: adminConf },
  };
}

export const defaultCleanupDeadlineSeconds = 300;

/**
 * The short Job that removes KUD's directory of the cluster from the node when a Provisioning is
 * deleted (it holds a cluster-admin kubeconfig). Host network and the same hostPath as the KUD
 * Job, so it lands where KUD wrote; only that one directory is removed (the name is a validated
 * DNS-1123 label, so the path cannot escape).
 */
export function buildCleanupJob(
  owner: ProvisioningOwner,
  cluster: string,
  options: { image: string; activeDeadlineSeconds?: number },
): V1Job {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: cleanupJobName(cluster),
      namespace: owner.namespace,
      labels: managedLabels(cluster),
      ownerReferences: [provisioningOwnerReference(owner)],
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: options.activeDeadlineSeconds ?? defaultCleanupDeadlineSeconds,
      template: {
        metadata: { labels: { [clusterLabel]: cluster } },
        spec: {
          hostNetwork: true,
          restartPolicy: 'Never',
          containers: [
            {
              name: 'cleanup',
              image: options.image,
              imagePullPolicy: 'IfNotPresent',
              command: ['/bin/sh', '-c'],
              args: [`rm -rf -- ${kudMultiClusterPath}/${cluster}`],
              volumeMounts: [{ name: 'multi-cluster', mountPath: kudMultiClusterPath }],
            },
          ],
          volumes: [{ name: 'multi-cluster', hostPath: { path: kudMultiClusterPath } }],
        },
      },
    },
  };
}

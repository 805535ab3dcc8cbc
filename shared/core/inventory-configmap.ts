import type { V1ConfigMap } from '@kubernetes/client-node';
import { clusterLabel, inventoryConfigMapName, inventoryKey } from './names.js';
import { provisioningOwnerReference, type ProvisioningOwner } from './owner.js';

/**
 * ConfigMap `<cluster>-inventory` holding the hosts.ini text (contract section 4): the tenant's
 * copy, in the Provisioning's namespace, to read. It is never mounted: the KUD Job mounts the
 * one kud-job-launch writes in the functions' namespace (kud-job.ts buildMountedInventoryConfigMap).
 */
export function buildInventoryConfigMap(
  owner: ProvisioningOwner,
  cluster: string,
  hostsIni: string,
): V1ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: inventoryConfigMapName(cluster),
      namespace: owner.namespace,
      labels: { [clusterLabel]: cluster },
      ownerReferences: [provisioningOwnerReference(owner)],
    },
    data: { [inventoryKey]: hostsIni },
  };
}

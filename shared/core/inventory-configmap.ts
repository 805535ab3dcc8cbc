import type { V1ConfigMap } from '@kubernetes/client-node';
import { clusterLabel, inventoryConfigMapName, inventoryKey } from './names.js';
import { provisioningOwnerReference, type ProvisioningOwner } from './owner.js';

/** ConfigMap `<cluster>-inventory` holding the hosts.ini text (contract section 4). */
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

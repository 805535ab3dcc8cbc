import type { V1ConfigMap } from '@kubernetes/client-node';
import type { ResolvedNode } from '../schemas/node.js';
import { clusterConfigMapName, clusterLabel } from './names.js';
import { provisioningOwnerReference, type ProvisioningOwner } from './owner.js';

/**
 * `MASTER_<label>` for each master and `WORKER_<label>` for each worker (a node in both roles
 * has both keys): masters first, then workers in `[kube-node]` order.
 */
export function clusterConfigMapData(
  nodes: readonly ResolvedNode[],
  workerOrder?: readonly string[],
): Record<string, string> {
  const data: Record<string, string> = {};
  for (const node of nodes) if (node.roles.includes('master')) data[`MASTER_${node.label}`] = node.ip;
  const byLabel = new Map(nodes.map((node) => [node.label, node]));
  const workers = workerOrder
    ? workerOrder.flatMap((label) => byLabel.get(label) ?? [])
    : nodes.filter((node) => node.roles.includes('worker'));
  for (const node of workers) data[`WORKER_${node.label}`] = node.ip;
  return data;
}

/** ConfigMap `<cluster>-configmap` mapping each node to its IP (contract section 6). */
export function buildClusterConfigMap(
  owner: ProvisioningOwner,
  cluster: string,
  nodes: readonly ResolvedNode[],
  workerOrder?: readonly string[],
): V1ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: clusterConfigMapName(cluster),
      namespace: owner.namespace,
      labels: { [clusterLabel]: cluster },
      ownerReferences: [provisioningOwnerReference(owner)],
    },
    data: clusterConfigMapData(nodes, workerOrder),
  };
}

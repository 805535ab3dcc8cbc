import type { V1ConfigMap } from '@kubernetes/client-node';
import { buildInventoryConfigMap } from '../../shared/core/inventory-configmap.js';
import { renderHostsIni } from '../../shared/core/inventory.js';
import { sha256Hex } from '../../shared/core/hash.js';
import { inventorySha256Annotation } from '../../shared/core/names.js';
import { planNodes } from '../../shared/core/node-plan.js';
import { ownerOf } from '../../shared/core/render.js';
import type { ClusterType, ResolvedNode } from '../../shared/schemas/node.js';
import type { Provisioning } from '../../shared/schemas/provisioning.js';

export interface RenderedInventory {
  inventory: string;
  inventorySha256: string;
  configMap: V1ConfigMap;
}

/**
 * hosts.ini for the resolved nodes, and the `<cluster>-inventory` ConfigMap holding it (also
 * annotated with its sha256, as the Job is). `[kube-node]` follows the workers list, which
 * only the spec knows, so the plan is recomputed from it (pure and cheap).
 */
export function renderInventory(
  provisioning: Provisioning,
  clusterType: ClusterType,
  nodes: readonly ResolvedNode[],
): RenderedInventory {
  const { workerOrder } = planNodes(provisioning.spec);
  const inventory = renderHostsIni({ clusterType, nodes, workerOrder });
  const inventorySha256 = sha256Hex(inventory);
  const configMap = buildInventoryConfigMap(
    ownerOf(provisioning),
    provisioning.metadata.labels.cluster,
    inventory,
  );
  configMap.metadata = {
    ...configMap.metadata,
    annotations: { ...configMap.metadata?.annotations, [inventorySha256Annotation]: inventorySha256 },
  };
  return { inventory, inventorySha256, configMap };
}

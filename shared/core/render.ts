import type { V1ConfigMap, V1Job } from '@kubernetes/client-node';
import type { Provisioning } from '../schemas/provisioning.js';
import { buildClusterConfigMap } from './cluster-configmap.js';
import { sha256Hex } from './hash.js';
import { renderHostsIni } from './inventory.js';
import { buildInventoryConfigMap } from './inventory-configmap.js';
import { buildKudJob, type KudJobOptions } from './kud-job.js';
import type { ProvisioningOwner } from './owner.js';
import { resolveCluster, type ResolutionInput, type ResolvedCluster } from './resolve.js';

/** Everything the chain derives from one Provisioning, computed without a cluster. */
export interface RenderedCluster extends ResolvedCluster {
  owner: ProvisioningOwner;
  inventory: string;
  inventorySha256: string;
  inventoryConfigMap: V1ConfigMap;
  job: V1Job;
  clusterConfigMap: V1ConfigMap;
}

/** The owner a Provisioning's derived objects point to; `default` namespace when it has none. */
export function ownerOf(provisioning: Provisioning): ProvisioningOwner {
  return {
    name: provisioning.metadata.name,
    namespace: provisioning.metadata.namespace ?? 'default',
    uid: provisioning.metadata.uid ?? '',
  };
}

/** Renders the inventory and the objects built from it for an already resolved cluster. */
export function renderResolvedCluster(
  provisioning: Provisioning,
  resolved: ResolvedCluster,
  jobOptions: KudJobOptions = {},
): RenderedCluster {
  const owner = ownerOf(provisioning);
  const inventory = renderHostsIni(resolved);
  const inventorySha256 = sha256Hex(inventory);
  return {
    ...resolved,
    owner,
    inventory,
    inventorySha256,
    inventoryConfigMap: buildInventoryConfigMap(owner, resolved.cluster, inventory),
    job: buildKudJob(
      {
        owner,
        cluster: resolved.cluster,
        inventorySha256,
        podSubnet: provisioning.spec.PodSubnet,
        kudPlugins: provisioning.spec.KUDPlugins,
      },
      jobOptions,
    ),
    clusterConfigMap: buildClusterConfigMap(owner, resolved.cluster, resolved.nodes, resolved.workerOrder),
  };
}

/** Resolve then render: the whole dry run of contract sections 3 to 6. Throws BpaError. */
export function renderCluster(
  provisioning: Provisioning,
  input: ResolutionInput,
  jobOptions: KudJobOptions = {},
): RenderedCluster {
  return renderResolvedCluster(provisioning, resolveCluster(provisioning, input), jobOptions);
}

import type { V1ConfigMap } from '@kubernetes/client-node';
import { clusterLabel } from '../../shared/core/names.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { conditionFor, conditionsOf } from '../../shared/k8s/conditions.js';
import { listCustomObjects } from '../../shared/k8s/custom-objects.js';
import { ProvisioningCondition, readProvisioning } from '../../shared/k8s/provisioning.js';
import { provisioningsResource } from '../../shared/k8s/resources.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';

/**
 * Installed on what the cluster is now (contract section 11): a Software waits until the
 * Provisioning of its cluster is Ready=True for its current generation, not merely until a
 * ConfigMap exists (a re-provision rewrites it while KUD reinstalls the cluster).
 */

export type ClusterGate = { open: true; provisioning: StoredObject } | { open: false; message: string };

/** Pure: is this Provisioning Ready=True for the generation it has now? */
export function readyForCurrentGeneration(provisioning: StoredObject): boolean {
  const generation = provisioning.metadata.generation ?? 0;
  return conditionFor(conditionsOf(provisioning), ProvisioningCondition.ready, generation)?.status === 'True';
}

/**
 * The Provisioning that owns the cluster's ConfigMap (its controller owner reference), else the
 * Provisionings labelled with the cluster in the namespace; open when that one is Ready for its
 * current generation.
 */
export async function clusterGate(
  clients: KubeClients,
  namespace: string,
  cluster: string,
  configMap: V1ConfigMap,
): Promise<ClusterGate> {
  const owner = configMap.metadata?.ownerReferences?.find(
    (ref) => ref.kind === 'Provisioning' && ref.controller,
  );
  const candidates = owner
    ? [await readProvisioning(clients, namespace, owner.name)].filter(
        (p): p is StoredObject => p !== undefined,
      )
    : await listCustomObjects(clients, provisioningsResource, {
        namespace,
        labelSelector: `${clusterLabel}=${cluster}`,
      });
  const ready = candidates.find(readyForCurrentGeneration);
  if (ready) return { open: true, provisioning: ready };
  const [first] = candidates;
  if (!first)
    return {
      open: false,
      message: `Waiting for cluster ${cluster}: no Provisioning of cluster ${cluster} in namespace ${namespace}; the install starts when one is Ready`,
    };
  const ready_ = conditionFor(
    conditionsOf(first),
    ProvisioningCondition.ready,
    first.metadata.generation ?? 0,
  );
  const state = ready_
    ? `Ready=${ready_.status}${ready_.reason ? ` (${ready_.reason})` : ''}`
    : 'not Ready yet';
  return {
    open: false,
    message: `Waiting for cluster ${cluster}: Provisioning ${namespace}/${first.metadata.name} is ${state} for generation ${first.metadata.generation ?? 0}; the install starts when it is Ready`,
  };
}

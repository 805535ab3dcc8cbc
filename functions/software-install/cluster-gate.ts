import type { V1ConfigMap } from '@kubernetes/client-node';
import { clusterLabel } from '../../shared/core/names.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { conditionFor, conditionsOf } from '../../shared/k8s/conditions.js';
import { listCustomObjects } from '../../shared/k8s/custom-objects.js';
import { ProvisioningCondition } from '../../shared/k8s/provisioning.js';
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
 * The Provisioning that owns the cluster's ConfigMap (its controller owner reference), else any
 * Provisioning labelled with the cluster in the namespace; open when it is Ready for its current
 * generation.
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
  // One list by label (never a get): the ConfigMap's owner when it names one, else any of the cluster's.
  const labelled = await listCustomObjects(clients, provisioningsResource, {
    namespace,
    labelSelector: `${clusterLabel}=${cluster}`,
  });
  const candidates = owner ? labelled.filter((p) => p.metadata.name === owner.name) : labelled;
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

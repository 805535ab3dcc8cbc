import { clusterConfigMapName } from '../../shared/core/names.js';
import { Reason } from '../../shared/reasons.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { applyConditions } from '../../shared/k8s/condition-writer.js';
import { conditionFor } from '../../shared/k8s/conditions.js';
import { recordEvent } from '../../shared/k8s/events.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionContext } from '../../shared/server/types.js';
import type { SoftwareInstallConfig } from './config.js';
import { SoftwareCondition, softwareIdentity, softwareRef, softwareTarget } from './software-status.js';
import { functionManager, functionName } from './name.js';

/** No cluster ConfigMap yet: say so on status once, and wait for cluster.ready. */
export async function waitForCluster(
  context: FunctionContext<SoftwareInstallConfig>,
  clients: KubeClients,
  live: StoredObject,
  cluster: string,
  why?: string,
) {
  const ref = softwareRef(live);
  const message =
    why ??
    `Waiting for cluster ${cluster}: its ConfigMap ${clusterConfigMapName(cluster)} (label cluster=${cluster}) does not exist yet; the install starts when the cluster is ready`;
  const result = await applyConditions(clients, softwareTarget(ref.namespace, ref.name), {
    ref,
    conditions: [
      { type: SoftwareCondition.installed, status: 'Unknown', reason: Reason.ClusterNotReady, message },
      { type: SoftwareCondition.ready, status: 'False', reason: Reason.ClusterNotReady, message },
    ],
    alreadyDone: (conditions) =>
      conditionFor(conditions, SoftwareCondition.ready, ref.generation)?.reason === Reason.ClusterNotReady,
    manager: functionManager,
    live,
  });
  if (result.outcome === 'written')
    await recordEvent(
      clients,
      {
        object: softwareIdentity(ref),
        type: 'Normal',
        reason: Reason.ClusterNotReady,
        message,
        component: functionName,
      },
      context.log,
    );
  context.log.info('cluster not ready; waiting for cluster.ready', { cluster, status: result.outcome });
}

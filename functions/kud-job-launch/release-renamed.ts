import type { EventReason } from '../../shared/reasons.js';
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { buildCleanupJob } from '../../shared/core/lifecycle-objects.js';
import { cleanupJobName, kubeconfigPublisherName } from '../../shared/core/lifecycle-names.js';
import { clusterConfigMapName, inventoryConfigMapName, kudJobName } from '../../shared/core/names.js';
import { isOwned, ownedObjectsOf } from '../../shared/core/ownership.js';
import {
  releasingClustersField,
  releasingClustersOf,
  type ReleasingCluster,
} from '../../shared/core/released-clusters.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { classifyApiError, isConflict, isNotFound } from '../../shared/k8s/api-errors.js';
import { releaseClusterName } from '../../shared/k8s/cluster-claims.js';
import { readConfigMap } from '../../shared/k8s/config-maps.js';
import { recordEvent } from '../../shared/k8s/events.js';
import { createJobOrGetExisting, deleteJob, jobState, podsOfJob } from '../../shared/k8s/jobs.js';
import { forgetOwned } from '../../shared/k8s/owned-objects.js';
import { functionManager } from './name.js';

import { deleteOwnObjects, kudNodeName, readOwnJob } from './functions-objects.js';
import {
  clusterOf,
  provisioningIdentity,
  provisioningRef,
  provisioningTarget,
} from '../../shared/k8s/provisioning.js';
import { applyStatusDecided } from '../../shared/k8s/status-apply.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionContext } from '../../shared/server/types.js';
import { placementOf, type KudJobLaunchConfig } from './config.js';

/** The Provisioning still releases old cluster names (a rename, shared/core/released-clusters.ts). */
export const releasesRenamed = (item: StoredObject) => releasingClustersOf(item.status).length > 0;

/** Deletes exactly this object (uid precondition); already gone or replaced is fine. */
async function deleteExactly(
  action: string,
  metadata: V1ObjectMeta,
  call: (body: { preconditions: { uid?: string } }) => Promise<unknown>,
): Promise<void> {
  try {
    await call({ preconditions: { uid: metadata.uid } });
  } catch (error) {
    if (!isNotFound(error) && !isConflict(error)) throw classifyApiError(error, action);
  }
}

export type ReleaseStep = 'removing' | 'cleaning' | 'released' | 'given-up';

/**
 * One sweep's step for each old name of a renamed cluster (contract sections 10 and 12): its
 * objects go first, in both namespaces (in the functions' namespace the running KUD Job and the
 * publisher, by the Provisioning's uid label; in the Provisioning's, `<old>-inventory` and
 * `<old>-configmap` whose uid its status records, never a look-alike), then, when a KUD Job ran
 * for it, the deletion's cleanup Job, on the node the KUD pod ran on, removes
 * `/opt/kud/multi-cluster/<old>`; then every object of the old name left in the functions'
 * namespace (the finished KUD Job, the cleanup Job, the mounted inventory) is deleted;
 * only then is the name's claim released and the entry dropped. A cleanup that fails or is not
 * done within CLEANUP_TIMEOUT_SECONDS of the rename ends with a CleanupTimedOut Warning Event and
 * the name is released anyway, as a deletion would. Idempotent: each step reads what the API says.
 * `<old>-admin-kubeconfig` stays (owned by the Provisioning, it goes with it): the cluster KUD
 * installed still runs on its hosts and that Secret is its admin access; deleting Secrets is a
 * verb no function holds.
 */
export async function releaseRenamed(
  context: FunctionContext<KudJobLaunchConfig>,
  clients: KubeClients,
  live: StoredObject,
  now: Date = new Date(),
): Promise<Record<string, ReleaseStep>> {
  const steps: Record<string, ReleaseStep> = {};
  for (const entry of releasingClustersOf(live.status)) {
    // Renamed back: the name is this Provisioning's cluster again (host-lookup drops the entry).
    if (entry.cluster === clusterOf(live)) continue;
    steps[entry.cluster] = await releaseOne(context, clients, live, entry, now);
  }
  return steps;
}

async function releaseOne(
  context: FunctionContext<KudJobLaunchConfig>,
  clients: KubeClients,
  live: StoredObject,
  entry: ReleasingCluster,
  now: Date,
): Promise<ReleaseStep> {
  const { config, functionName: component, log } = context;
  const ref = provisioningRef(live);
  const { namespace } = ref;
  const functionsNamespace = config.FUNCTIONS_NAMESPACE;
  const target = provisioningTarget(namespace, ref.name);
  const old = entry.cluster;
  const event = (type: 'Normal' | 'Warning', reason: EventReason, message: string) =>
    recordEvent(clients, { object: provisioningIdentity(ref), type, reason, message, component }, log);
  const elapsed = (now.getTime() - new Date(entry.since).getTime()) / 1000;
  const timedOut = !(elapsed < config.CLEANUP_TIMEOUT_SECONDS);

  // The functions' namespace: a running KUD Job and the publisher go first.
  const kudJob = await readOwnJob(clients, functionsNamespace, kudJobName(old), ref.uid);
  let present = false;
  if (kudJob && jobState(kudJob) === 'running') {
    present = true;
    if (!kudJob.metadata?.deletionTimestamp) await deleteJob(clients, kudJob);
  }
  const publisher = await readOwnJob(clients, functionsNamespace, kubeconfigPublisherName(old), ref.uid);
  if (publisher && !publisher.metadata?.deletionTimestamp) await deleteJob(clients, publisher);
  // The Provisioning's namespace: only the ConfigMaps whose uid its status records.
  const owned = ownedObjectsOf(live.status);
  for (const name of [inventoryConfigMapName(old), clusterConfigMapName(old)]) {
    const configMap = await readConfigMap(clients, namespace, name);
    if (!configMap?.metadata || !isOwned('ConfigMap', configMap.metadata, { owner: { ...ref }, owned }))
      continue;
    await deleteExactly(`delete ConfigMap ${namespace}/${name}`, configMap.metadata, (body) =>
      clients.core.deleteNamespacedConfigMap({ name, namespace, body }),
    );
    await forgetOwned(clients, target, functionManager, ref.uid, { kind: 'ConfigMap', namespace, name });
  }
  // The directory is cleaned once the KUD pod no longer writes to it (found by its Job's uid).
  const running = kudJob
    ? (await podsOfJob(clients, kudJob)).some((pod) =>
        ['Pending', 'Running'].includes(pod.status?.phase ?? ''),
      )
    : false;
  if ((present || running) && !timedOut) return 'removing';

  let step: ReleaseStep = 'released';
  if (entry.launched) {
    const cleanup = await readOwnJob(clients, functionsNamespace, cleanupJobName(old), ref.uid);
    const state = cleanup ? jobState(cleanup) : undefined;
    if (state === 'complete') {
      await event(
        'Normal',
        'CleanupDone',
        `Removed the KUD directory of the old cluster name ${old} from the node`,
      );
    } else if (state === 'failed' || timedOut) {
      await event(
        'Warning',
        'CleanupTimedOut',
        `${state === 'failed' ? `cleanup Job ${cleanupJobName(old)} failed` : `cleanup not done ${config.CLEANUP_TIMEOUT_SECONDS} s after the rename`}; the old name ${old} is released anyway: /opt/kud/multi-cluster/${old} may be left on the node`,
      );
      step = 'given-up';
    } else {
      if (!cleanup) {
        const nodeName = await kudNodeName(clients, live, kudJobName(old), kudJob);
        await createJobOrGetExisting(
          clients,
          buildCleanupJob({ name: ref.name, namespace, uid: ref.uid }, old, {
            image: config.CLEANUP_IMAGE,
            functionsNamespace,
            ...(nodeName ? { nodeName } : {}),
            placement: placementOf(config),
          }),
        ).catch((error: unknown) => {
          // Refused or unavailable: the timeout ends the wait.
          log.warn('cleanup Job of a renamed cluster could not be created', {
            cluster: old,
            error: String(error),
          });
        });
      }
      return 'cleaning';
    }
  }
  // Ended: every object of the old name in the functions' namespace goes (its Jobs, the cleanup
  // Job, the mounted inventory), so nothing of it is left there.
  await deleteOwnObjects(clients, functionsNamespace, ref.uid, { cluster: old });
  await releaseClusterName(clients, config.FUNCTIONS_NAMESPACE, old, { uid: ref.uid });
  await applyStatusDecided(clients, target, functionManager, (fresh) => {
    if (fresh.metadata.uid !== ref.uid) return undefined;
    const current = releasingClustersOf(fresh.status);
    if (!current.some((item) => item.cluster === old)) return undefined;
    const left = current.filter((item) => item.cluster !== old);
    return { conditions: [], fields: { [releasingClustersField]: left.length > 0 ? left : undefined } };
  });
  await event(
    'Normal',
    'ClusterNameReleased',
    `Cluster name ${old} released: its objects are gone (renamed to ${clusterOf(live) || '?'})`,
  );
  return step;
}

import type { V1ObjectMeta } from '@kubernetes/client-node';
import { buildCleanupJob } from '../../shared/core/lifecycle-objects.js';
import { cleanupJobName, kubeconfigPublisherName } from '../../shared/core/lifecycle-names.js';
import { clusterConfigMapName, inventoryConfigMapName, kudJobName } from '../../shared/core/names.js';
import { isOwnedBy } from '../../shared/core/ownership.js';
import {
  releasingClustersField,
  releasingClustersOf,
  type ReleasingCluster,
} from '../../shared/core/released-clusters.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { callApi, classifyApiError, isConflict, isNotFound } from '../../shared/k8s/api-errors.js';
import { releaseClusterName } from '../../shared/k8s/cluster-claims.js';
import { readConfigMap } from '../../shared/k8s/config-maps.js';
import { recordEvent } from '../../shared/k8s/events.js';
import { createJobOrGetExisting, deleteJob, jobState, readJob } from '../../shared/k8s/jobs.js';
import {
  clusterOf,
  provisioningIdentity,
  provisioningRef,
  provisioningTarget,
} from '../../shared/k8s/provisioning.js';
import { updateStatus } from '../../shared/k8s/status-writer.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { Logger } from '../../shared/log.js';
import type { KudJobLaunchConfig } from './config.js';

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
 * One sweep's step for each old name of a renamed cluster (contract section 10): its objects go
 * first (the KUD and publisher Jobs, `<old>-inventory`, `<old>-configmap`; only ours, never a
 * foreign one), then, when a KUD Job ran for it, the
 * deletion's cleanup Job removes `/opt/kud/multi-cluster/<old>` (and is deleted once it ended);
 * only then is the name's claim released and the entry dropped. A cleanup that fails or is not
 * done within CLEANUP_TIMEOUT_SECONDS of the rename ends with a CleanupTimedOut Warning Event and
 * the name is released anyway, as a deletion would. Idempotent: each step reads what the API says.
 * `<old>-admin-kubeconfig` stays (owned by the Provisioning, it goes with it): the cluster KUD
 * installed still runs on its hosts and that Secret is its admin access; deleting Secrets is a
 * verb no function holds.
 */
export async function releaseRenamed(
  clients: KubeClients,
  config: KudJobLaunchConfig,
  live: StoredObject,
  component: string,
  log: Logger,
  now: Date = new Date(),
): Promise<Record<string, ReleaseStep>> {
  const steps: Record<string, ReleaseStep> = {};
  for (const entry of releasingClustersOf(live.status)) {
    // Renamed back: the name is this Provisioning's cluster again (host-lookup drops the entry).
    if (entry.cluster === clusterOf(live)) continue;
    steps[entry.cluster] = await releaseOne(clients, config, live, entry, component, log, now);
  }
  return steps;
}

async function releaseOne(
  clients: KubeClients,
  config: KudJobLaunchConfig,
  live: StoredObject,
  entry: ReleasingCluster,
  component: string,
  log: Logger,
  now: Date,
): Promise<ReleaseStep> {
  const ref = provisioningRef(live);
  const owner = { uid: ref.uid };
  const { namespace } = ref;
  const old = entry.cluster;
  const event = (type: 'Normal' | 'Warning', reason: string, message: string) =>
    recordEvent(clients, { object: provisioningIdentity(ref), type, reason, message, component }, log);

  let present = false;
  for (const name of [kudJobName(old), kubeconfigPublisherName(old)]) {
    const job = await readJob(clients, namespace, name);
    if (job && isOwnedBy(job.metadata, owner)) {
      present = true;
      if (!job.metadata?.deletionTimestamp) await deleteJob(clients, job);
    }
  }
  for (const name of [inventoryConfigMapName(old), clusterConfigMapName(old)]) {
    const configMap = await readConfigMap(clients, namespace, name);
    if (configMap?.metadata && isOwnedBy(configMap.metadata, owner))
      await deleteExactly(`delete ConfigMap ${namespace}/${name}`, configMap.metadata, (body) =>
        clients.core.deleteNamespacedConfigMap({ name, namespace, body }),
      );
  }
  // The directory is cleaned once the Jobs are gone and the KUD pod no longer writes to it.
  const pods = await callApi(`list the pods of Job ${namespace}/${kudJobName(old)}`, () =>
    clients.core.listNamespacedPod({ namespace, labelSelector: `job-name=${kudJobName(old)}` }),
  );
  const elapsed = (now.getTime() - new Date(entry.since).getTime()) / 1000;
  const timedOut = !(elapsed < config.CLEANUP_TIMEOUT_SECONDS);
  if ((present || pods.items.length > 0) && !timedOut) return 'removing';

  let step: ReleaseStep = 'released';
  if (entry.launched) {
    const cleanup = await readJob(clients, namespace, cleanupJobName(old));
    const ours = cleanup && isOwnedBy(cleanup.metadata, owner) ? cleanup : undefined;
    const state = ours ? jobState(ours) : undefined;
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
      if (!cleanup)
        await createJobOrGetExisting(
          clients,
          buildCleanupJob({ name: ref.name, namespace, uid: ref.uid }, old, { image: config.CLEANUP_IMAGE }),
        ).catch((error: unknown) => {
          // Refused or unavailable: the timeout ends the wait.
          log.warn('cleanup Job of a renamed cluster could not be created', {
            cluster: old,
            error: String(error),
          });
        });
      return 'cleaning';
    }
    // Ended: the cleanup Job goes too, so nothing of the old name is left in the namespace.
    if (ours) await deleteJob(clients, ours);
  }
  await releaseClusterName(clients, config.FUNCTIONS_NAMESPACE, old, owner);
  await updateStatus(clients, provisioningTarget(namespace, ref.name), (fresh) => {
    if (fresh.metadata.uid !== ref.uid) return undefined;
    const current = releasingClustersOf(fresh.status);
    if (!current.some((item) => item.cluster === old)) return undefined;
    const left = current.filter((item) => item.cluster !== old);
    return { ...fresh.status, [releasingClustersField]: left.length > 0 ? left : undefined };
  });
  await event(
    'Normal',
    'ClusterNameReleased',
    `Cluster name ${old} released: its objects are gone (renamed to ${clusterOf(live) || '?'})`,
  );
  return step;
}

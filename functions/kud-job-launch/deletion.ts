import { kudJobName } from '../../shared/core/names.js';
import { buildCleanupJob } from '../../shared/core/lifecycle-objects.js';
import { cleanupFinalizer, cleanupJobName } from '../../shared/core/lifecycle-names.js';
import { recordedLabelsOf } from '../../shared/core/recorded-labels.js';
import { releasingClustersOf } from '../../shared/core/released-clusters.js';
import { Reason, type EventReason } from '../../shared/reasons.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { releaseClusterName } from '../../shared/k8s/cluster-claims.js';
import { applyConditions } from '../../shared/k8s/condition-writer.js';
import { functionManager } from './name.js';

import { recordOwned } from '../../shared/k8s/owned-objects.js';
import { recordEvent } from '../../shared/k8s/events.js';
import { hasFinalizer, removeFinalizer } from '../../shared/k8s/finalizers.js';
import { releaseHosts } from '../../shared/k8s/host-claims.js';
import { jobState, createJobOrGetExisting, deleteJob } from '../../shared/k8s/jobs.js';
import { deleteOwnObjects, kudNodeName, readOwnJob } from './functions-objects.js';
import {
  ProvisioningCondition,
  clusterOf,
  provisioningIdentity,
  provisioningRef,
  provisioningTarget,
} from '../../shared/k8s/provisioning.js';
import { unpausedSince } from '../../shared/k8s/paused.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionContext } from '../../shared/server/types.js';
import { placementOf, type KudJobLaunchConfig } from './config.js';

export type DeletionStep =
  /** The cleanup Job runs (or was just created): nothing else until it ends. */
  | 'cleaning'
  /** Cleaned up (or nothing to clean); the name is free and the finalizer removed. */
  | 'done'
  /** The cleanup could not run in time or failed: finalizer removed anyway, Warning Event. */
  | 'given-up';

const secondsSince = (time: unknown, now: Date) => {
  const at = typeof time === 'string' || time instanceof Date ? new Date(time).getTime() : NaN;
  return Number.isNaN(at) ? 0 : (now.getTime() - at) / 1000;
};

/**
 * Deletion (contract section 10): a Provisioning with a deletionTimestamp and the
 * `bpa.akraino.org/cleanup` finalizer. The running KUD Job is deleted; a short cleanup Job on
 * the host network, on the node the KUD pod ran on, removes `/opt/kud/multi-cluster/<cluster>`
 * (it holds a cluster-admin kubeconfig); then the Provisioning's objects in the functions'
 * namespace (its Jobs and mounted inventory, selected by its uid label) are deleted, the cluster
 * name is released and the finalizer removed; the objects in the Provisioning's namespace go by
 * garbage collection (owner references). A cleanup that fails or is not done within
 * CLEANUP_TIMEOUT_SECONDS of the deletion is reported (Warning Event) and the finalizer is
 * removed anyway: a deletion never hangs forever. Objects the functions did not create are
 * never touched. Idempotent: each sweep (or event) takes the next step from what the API says.
 */
export async function advanceDeletion(
  context: FunctionContext<KudJobLaunchConfig>,
  clients: KubeClients,
  live: StoredObject,
  now: Date = new Date(),
): Promise<DeletionStep | undefined> {
  const { config, functionName: component, log } = context;
  if (!live.metadata.deletionTimestamp || !hasFinalizer(live, cleanupFinalizer)) return undefined;
  const ref = provisioningRef(live);
  const identity = provisioningIdentity(ref);
  const owner = { uid: ref.uid };
  // The name the status describes: what the KUD Job was launched for.
  const cluster = recordedLabelsOf(live.status)?.cluster ?? clusterOf(live);
  const event = (type: 'Normal' | 'Warning', reason: EventReason, message: string) =>
    recordEvent(clients, { object: identity, type, reason, message, component }, log);

  const functionsNamespace = config.FUNCTIONS_NAMESPACE;
  const target = provisioningTarget(ref.namespace, ref.name);
  const finish = async (step: DeletionStep): Promise<DeletionStep> => {
    // Across the two namespaces: what lives in the functions' namespace has no owner reference.
    await deleteOwnObjects(clients, functionsNamespace, ref.uid);
    if (cluster) await releaseClusterName(clients, config.FUNCTIONS_NAMESPACE, cluster, owner);
    // Old names of a rename still being released: their objects go by garbage collection now.
    for (const { cluster: old } of releasingClustersOf(live.status))
      await releaseClusterName(clients, config.FUNCTIONS_NAMESPACE, old, owner);
    await releaseHosts(clients, live, log); // after cleanup: consumerRef and our spec.image (ADR 0013 point 3)
    await removeFinalizer(clients, target, live, cleanupFinalizer);
    return step;
  };

  if (!cluster || typeof live.status?.jobName !== 'string') {
    // No KUD Job was ever launched: nothing on the node to clean.
    return finish('done');
  }
  const kudJob = await readOwnJob(clients, functionsNamespace, kudJobName(cluster), ref.uid);
  // Read before the KUD Job goes (its pod goes with it): the cleanup runs where KUD wrote.
  const nodeName = await kudNodeName(clients, live, kudJobName(cluster), kudJob);
  if (kudJob && jobState(kudJob) === 'running') await deleteJob(clients, kudJob);

  // Counted from the resume when the Provisioning was paused after its deletion (paused.ts).
  const elapsed = secondsSince(unpausedSince(live, live.metadata.deletionTimestamp), now);
  const cleanup = await readOwnJob(clients, functionsNamespace, cleanupJobName(cluster), ref.uid);
  const ours = cleanup;
  const state = ours ? jobState(ours) : undefined;
  if (state === 'complete') {
    await event('Normal', 'CleanupDone', `Removed the KUD directory of cluster ${cluster} from the node`);
    return finish('done');
  }
  if (state === 'failed' || elapsed >= config.CLEANUP_TIMEOUT_SECONDS) {
    const why =
      state === 'failed'
        ? `cleanup Job ${cleanupJobName(cluster)} failed`
        : `cleanup not done ${config.CLEANUP_TIMEOUT_SECONDS} s after the deletion${ours ? '' : ' (its Job could not be created)'}`;
    await event(
      'Warning',
      'CleanupTimedOut',
      `${why}; the finalizer is removed anyway: /opt/kud/multi-cluster/${cluster} may be left on the node`,
    );
    return finish('given-up');
  }
  let running = ours !== undefined;
  let foreign = false;
  if (!cleanup) {
    try {
      const created = await createJobOrGetExisting(
        clients,
        buildCleanupJob({ name: ref.name, namespace: ref.namespace, uid: ref.uid }, cluster, {
          image: config.CLEANUP_IMAGE,
          functionsNamespace,
          ...(nodeName ? { nodeName } : {}),
          placement: placementOf(config),
        }),
      );
      // One of that name that is not this Provisioning's (an operator's, or a leftover): not ours.
      running = created.created;
      foreign = !created.created;
      if (created.created)
        await recordOwned(clients, target, functionManager, ref.uid, [
          { kind: 'Job', metadata: created.job.metadata },
        ]);
    } catch (error) {
      // Refused (403/422) or unavailable: reported on status; the timeout ends the wait.
      log.warn('cleanup Job could not be created', { cluster, error: String(error) });
    }
  }
  await applyConditions(clients, target, {
    ref,
    conditions: [
      {
        type: ProvisioningCondition.ready,
        status: 'Unknown',
        reason: Reason.Deleting,
        message: running
          ? `Deleting: cleanup Job ${cleanupJobName(cluster)} removes /opt/kud/multi-cluster/${cluster} (at most ${config.CLEANUP_TIMEOUT_SECONDS} s)`
          : `Deleting: the cleanup Job ${cleanupJobName(cluster)} cannot be created${foreign ? ` (a Job of that name in ${functionsNamespace} was not created for this Provisioning)` : ''}; the finalizer goes after ${config.CLEANUP_TIMEOUT_SECONDS} s`,
      },
    ],
    alreadyDone: (conditions) =>
      conditions.some((c) => c.type === ProvisioningCondition.ready && c.reason === Reason.Deleting),
    manager: functionManager,
  });
  return 'cleaning';
}

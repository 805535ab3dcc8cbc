import type { CloudEvent } from 'cloudevents';
import { cancelAnnotation, cleanupFinalizer } from '../../shared/core/lifecycle-names.js';
import { Reason } from '../../shared/reasons.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { applyConditions } from '../../shared/k8s/condition-writer.js';
import { functionManager } from './name.js';

import { recordEvent } from '../../shared/k8s/events.js';
import { hasFinalizer } from '../../shared/k8s/finalizers.js';
import { jobState, deleteJob } from '../../shared/k8s/jobs.js';
import { readOwnJob } from './functions-objects.js';
import {
  ProvisioningCondition,
  failProvisioning,
  provisioningIdentity,
  provisioningRef,
  provisioningTarget,
} from '../../shared/k8s/provisioning.js';
import { provisioningsResource } from '../../shared/k8s/resources.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import { runSweep } from '../../shared/k8s/sweep.js';
import type { FunctionContext } from '../../shared/server/types.js';
import type { V1Job } from '@kubernetes/client-node';
import { completeJob } from './complete-job.js';
import type { KudJobLaunchConfig } from './config.js';
import { advanceDeletion } from './deletion.js';
import { advanceKubeconfig, awaitsKubeconfig } from './kubeconfig.js';
import { launchJob } from './launch-job.js';
import { awaitsCompletion, recordProgress } from './record-progress.js';
import { releaseRenamed, releasesRenamed } from './release-renamed.js';

const deleting = (item: StoredObject) =>
  item.metadata.deletionTimestamp !== undefined && hasFinalizer(item, cleanupFinalizer);

/**
 * The sweep's part here, for every Provisioning that waits on its KUD Job or is being deleted:
 * - deleted: the cleanup (deletion.ts);
 * - renamed: the old names' objects removed, then the old names released (release-renamed.ts);
 * - `bpa.akraino.org/cancel: "true"`: the running Job is deleted, Ready=False reason Cancelled;
 * - its Job is gone (deleted by hand, garbage-collected): KudInstalled=False reason JobMissing
 *   and a new Job for the current generation;
 * - its Job runs: status.job shows the pod, its phase, why it waits, and the time left;
 * - its Job finished unseen (a dropped event): completed, and the event sent to the broker;
 * - KUD installed, its kubeconfig not published yet: the publisher's next step (kubeconfig.ts).
 */
export function sweep(context: FunctionContext<KudJobLaunchConfig>): Promise<void> {
  return runSweep(context, {
    resource: provisioningsResource,
    kind: 'Provisioning',
    select: (item) =>
      deleting(item) || releasesRenamed(item) || awaitsCompletion(item) || awaitsKubeconfig(item),
    redrive: async (item, clients) => {
      if (deleting(item)) {
        await advanceDeletion(context, clients, item);
        return undefined;
      }
      if (releasesRenamed(item)) await releaseRenamed(context, clients, item);
      if (!awaitsCompletion(item)) {
        await advanceKubeconfig(context, clients, item);
        return undefined;
      }
      // The functions' namespace only: a Job of that name a tenant made in its own is never read.
      const ours = await readOwnJob(
        clients,
        context.config.FUNCTIONS_NAMESPACE,
        String(item.status?.jobName),
        item.metadata.uid ?? '',
      );
      if (item.metadata.annotations?.[cancelAnnotation] === 'true')
        return cancel(context, clients, item, ours);
      if (!ours) return relaunchMissing(context, clients, item);
      await recordProgress(clients, item, ours);
      return completeJob(context, clients, item, ours);
    },
  });
}

/** Cancel: delete the running Job (ours only) and end in Ready=False, reason Cancelled. */
async function cancel(
  context: FunctionContext<KudJobLaunchConfig>,
  clients: KubeClients,
  item: StoredObject,
  job: V1Job | undefined,
): Promise<CloudEvent<unknown> | undefined> {
  if (job && jobState(job) === 'running') await deleteJob(clients, job);
  const name = String(item.status?.jobName);
  return failProvisioning(
    clients,
    context.functionName,
    item,
    {
      step: ProvisioningCondition.kudInstalled,
      reason: Reason.Cancelled,
      message: `Cancelled by ${cancelAnnotation}: Job ${name} was deleted; set bpa.akraino.org/retry to a new value (after removing ${cancelAnnotation}) to run it again`,
    },
    context.log,
  );
}

/** The awaited Job is gone: say so (KudInstalled False, JobMissing), then launch a new one. */
async function relaunchMissing(
  context: FunctionContext<KudJobLaunchConfig>,
  clients: KubeClients,
  item: StoredObject,
): Promise<CloudEvent<unknown> | undefined> {
  const ref = provisioningRef(item);
  const name = String(item.status?.jobName);
  const message = `Job ${name} disappeared while the Provisioning waited for it; a new Job is launched for generation ${ref.generation}`;
  const result = await applyConditions(clients, provisioningTarget(ref.namespace, ref.name), {
    ref,
    conditions: [
      { type: ProvisioningCondition.kudInstalled, status: 'False', reason: Reason.JobMissing, message },
      // Not launched any more: the launch below (or the next sweep) launches again.
      { type: ProvisioningCondition.jobLaunched, status: 'Unknown', reason: Reason.JobMissing, message },
      { type: ProvisioningCondition.ready, status: 'Unknown', reason: Reason.JobMissing, message },
    ],
    fields: { job: undefined },
    manager: functionManager,
    live: item,
  });
  if (result.outcome !== 'written') return undefined;
  await recordEvent(
    clients,
    {
      object: provisioningIdentity(ref),
      type: 'Warning',
      reason: Reason.JobMissing,
      message,
      component: context.functionName,
    },
    context.log,
  );
  // The object as just stored: current, not paused (the sweep's gate), JobLaunched not True.
  return launchJob({ context, clients, cause: undefined }, result.object);
}

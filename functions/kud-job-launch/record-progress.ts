import type { V1Job } from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import { failedByDeadline, jobProgress, newestPod } from '../../shared/core/job-progress.js';
import { Reason } from '../../shared/reasons.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { writeConditions } from '../../shared/k8s/condition-writer.js';
import { conditionFor, conditionsOf, isTrueFor } from '../../shared/k8s/conditions.js';
import { jobState, podsOfJob } from '../../shared/k8s/jobs.js';
import { ProvisioningCondition, provisioningRef, provisioningTarget } from '../../shared/k8s/provisioning.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';

/** Launched for its generation, completion not recorded yet: the Job may have finished unseen. */
export function awaitsCompletion(item: StoredObject): boolean {
  const generation = item.metadata.generation ?? 0;
  const conditions = conditionsOf(item);
  const installed = conditionFor(conditions, ProvisioningCondition.kudInstalled, generation);
  return (
    isTrueFor(conditions, ProvisioningCondition.jobLaunched, generation) &&
    (installed === undefined || installed.reason === Reason.JobMissing) &&
    typeof item.status?.jobName === 'string'
  );
}

/**
 * status.job (contract section 10, Progress): the pod of the awaited, running Job, its phase, why
 * it waits, and the time left. Written from two places: each update of the Job (its status
 * changes when its pod starts or gets ready) and the sweep (for what changes without a Job
 * update: a pod's waiting reason, the time left). Nothing is written for another Job, a Job that
 * ended, or a Provisioning whose completion is already recorded.
 */
export async function recordProgress(clients: KubeClients, item: StoredObject, job: V1Job): Promise<void> {
  const awaited = (object: StoredObject) =>
    awaitsCompletion(object) && object.status?.jobName === job.metadata?.name;
  if (!awaited(item) || jobState(job) !== 'running' || failedByDeadline(job)) return;
  // The Job runs in the functions' namespace, whose pods tenants cannot read: what they need is
  // copied here (contract section 12).
  const progress = jobProgress(job, newestPod(await podsOfJob(clients, job)), new Date());
  const ref = provisioningRef(item);
  await writeConditions(clients, provisioningTarget(ref.namespace, ref.name), ref, {
    conditions: [],
    fields: { job: progress },
    // A completion recorded meanwhile wins: its status is not overwritten with a running Job's.
    alreadyDone: (_conditions, fresh) => !awaited(fresh) || isDeepStrictEqual(fresh.status?.job, progress),
  });
}

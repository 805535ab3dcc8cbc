import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { nodesWithProgress } from '../../shared/core/ansible-progress.js';
import { failedByDeadline, jobProgress, newestPod } from '../../shared/core/job-progress.js';
import { Reason } from '../../shared/reasons.js';
import { statusNodeSchema } from '../../shared/schemas/provisioning.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { applyConditions } from '../../shared/k8s/condition-writer.js';
import { functionManager } from './name.js';

import { conditionFor, conditionsOf, isTrueFor } from '../../shared/k8s/conditions.js';
import { jobState, podLogTail, podsOfJob } from '../../shared/k8s/jobs.js';
import { ProvisioningCondition, provisioningRef, provisioningTarget } from '../../shared/k8s/provisioning.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';

/**
 * How much of the KUD pod's log one progress read takes (contract section 14): its last lines,
 * bounded in bytes, once per Job update and per sweep. What scrolled out of it between two reads
 * is kept from status.nodes (shared/core/ansible-progress.ts mergeNodeProgress).
 */
export const progressLogTail = { tailLines: 400, maxBytes: 64 * 1024 };

const statusNodesSchema = z.array(statusNodeSchema).min(1);

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

/** The pod's log tail for progress; none before its container starts (nothing to read yet). */
export async function progressLog(clients: KubeClients, pod: V1Pod | undefined): Promise<string | undefined> {
  if (!pod || pod.status?.phase === 'Pending' || !pod.status?.phase) return undefined;
  return podLogTail(clients, pod, progressLogTail);
}

/** status.nodes[] as recorded, with any progress ([] when it is not a usable list). */
export function recordedNodes(object: StoredObject) {
  const nodes = statusNodesSchema.safeParse(object.status?.nodes);
  return nodes.success ? nodes.data : [];
}

/**
 * status.nodes[] with each node's progress from the log tail of `pod`, merged with what `fresh`
 * records for that pod (an earlier pod's progress, a retried Job's of the same name, is dropped);
 * undefined when there is nothing to write (no log read, or status.nodes is not a usable list).
 */
export function nodesFromLog(fresh: StoredObject, pod: string | undefined, log: string | undefined) {
  if (log === undefined || !pod) return undefined;
  const nodes = statusNodesSchema.safeParse(fresh.status?.nodes);
  if (!nodes.success) return undefined;
  const samePod = (fresh.status?.job as { pod?: unknown } | undefined)?.pod === pod;
  return nodesWithProgress(nodes.data, log, samePod);
}

/**
 * status.job (contract section 10, Progress): the pod of the awaited, running Job, its phase, why
 * it waits, and the time left; and status.nodes[] with each node's progress read from the pod's
 * log (section 14). Written from two places: each update of the Job (its status changes when its
 * pod starts or gets ready) and the sweep (for what changes without a Job update: a pod's waiting
 * reason, the time left, the installer's output). Nothing is written when nothing changed, nor for
 * another Job, a Job that ended, or a Provisioning whose completion is already recorded.
 */
export async function recordProgress(clients: KubeClients, item: StoredObject, job: V1Job): Promise<void> {
  const awaited = (object: StoredObject) =>
    awaitsCompletion(object) && object.status?.jobName === job.metadata?.name;
  if (!awaited(item) || jobState(job) !== 'running' || failedByDeadline(job)) return;
  // The Job runs in the functions' namespace, whose pods tenants cannot read: what they need is
  // copied here (contract section 12).
  const pod = newestPod(await podsOfJob(clients, job));
  const progress = jobProgress(job, pod, new Date());
  const log = await progressLog(clients, pod);
  const fields = (fresh: StoredObject) => {
    const nodes = nodesFromLog(fresh, progress.pod, log);
    return nodes ? { job: progress, nodes } : { job: progress };
  };
  const ref = provisioningRef(item);
  await applyConditions(clients, provisioningTarget(ref.namespace, ref.name), {
    ref,
    conditions: [],
    fields,
    // A completion recorded meanwhile wins: its status is not overwritten with a running Job's.
    alreadyDone: (_conditions, fresh) =>
      !awaited(fresh) ||
      Object.entries(fields(fresh)).every(([key, value]) => isDeepStrictEqual(fresh.status?.[key], value)),
    manager: functionManager,
  });
}

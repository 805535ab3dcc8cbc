import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { V1Job } from '@kubernetes/client-node';
import { inventorySha256Annotation } from '../../shared/core/names.js';
import { jobFailedCondition } from '../../shared/k8s/jobs.js';

/** Generation of the Provisioning a Job was launched for (a spec change may retry a failed Job). */
export const provisioningGenerationAnnotation = 'bpa.akraino.org/provisioning-generation';

/**
 * W3C traceparent of the event that launched the Job. The Job's completion arrives later as an
 * event of its own (a Job update, in a trace of its own); the handler continues this trace
 * instead, so one trace runs from the Provisioning's source event to cluster.ready.
 */
export const jobTraceparentAnnotation = 'bpa.akraino.org/traceparent';

export const jobTraceparent = (job: V1Job) => job.metadata?.annotations?.[jobTraceparentAnnotation];

export const jobInventorySha256 = (job: V1Job) => job.metadata?.annotations?.[inventorySha256Annotation];

export function jobProvisioningGeneration(job: V1Job): number | undefined {
  const text = job.metadata?.annotations?.[provisioningGenerationAnnotation];
  const value = text === undefined ? NaN : Number(text);
  return Number.isInteger(value) ? value : undefined;
}

const toDate = (value: Date | string | undefined) => (value === undefined ? undefined : new Date(value));

/** Seconds from startTime to completionTime (or to the Failed condition), when both are known. */
export function runDurationSeconds(job: V1Job): number | undefined {
  const start = toDate(job.status?.startTime);
  const end = toDate(job.status?.completionTime) ?? toDate(jobFailedCondition(job)?.lastTransitionTime);
  if (!start || !end || Number.isNaN(start.getTime()) || Number.isNaN(end.getTime())) return undefined;
  return Math.max(0, (end.getTime() - start.getTime()) / 1000);
}

/** The Provisioning that controls a Job (its controller owner reference), if any. */
export function controllingProvisioning(job: {
  metadata?: Pick<StoredObject['metadata'], 'ownerReferences'>;
}): { name: string; uid: string } | undefined {
  const owner = job.metadata?.ownerReferences?.find(
    (ref) =>
      ref.controller === true && ref.kind === 'Provisioning' && ref.apiVersion.startsWith('bpa.akraino.org/'),
  );
  return owner ? { name: owner.name, uid: owner.uid } : undefined;
}

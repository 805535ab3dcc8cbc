import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { V1Job } from '@kubernetes/client-node';
import { inventorySha256Annotation } from '../../shared/core/names.js';

/** Generation of the Provisioning a Job was launched for (a spec change may retry a failed Job). */
export const provisioningGenerationAnnotation = 'bpa.akraino.org/provisioning-generation';

/**
 * W3C traceparent of the event that launched the Job. The Job's completion arrives later as an
 * event of its own (a Job update, in a trace of its own); the handler continues this trace
 * instead, so one trace runs from the Provisioning's source event to cluster.ready.
 */
export const jobTraceparentAnnotation = 'bpa.akraino.org/traceparent';

export const jobTraceparent = (job: V1Job) => job.metadata?.annotations?.[jobTraceparentAnnotation];

export type JobState = 'running' | 'complete' | 'failed';

/**
 * Where a Job stands, as the Job controller reports it: condition Complete True, or Failed True.
 */
export function jobState(job: V1Job): JobState {
  const isTrue = (type: string) =>
    job.status?.conditions?.some((c) => c.type === type && c.status === 'True');
  if (isTrue('Complete')) return 'complete';
  // Not FailureTarget: the controller is still terminating the pods then, and the Job's own
  // Failed condition (with its reason, e.g. DeadlineExceeded) follows; the Job update it makes
  // is the one acted on.
  if (isTrue('Failed')) return 'failed';
  return 'running';
}

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
  const failed = job.status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True');
  const end = toDate(job.status?.completionTime) ?? toDate(failed?.lastTransitionTime);
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

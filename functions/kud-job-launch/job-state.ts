import type { V1Job } from '@kubernetes/client-node';
import { inventorySha256Annotation } from '../../shared/core/names.js';
import { provisioningOfFunctionsObject } from '../../shared/core/ownership.js';
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

/**
 * The Provisioning a Job of the functions' namespace was launched for: its uid label and the
 * annotations naming it (owner references cannot cross namespaces, ADR 0013). A Job anywhere
 * else is never the functions' (a tenant can copy every label and annotation in its namespace).
 */
export function launchingProvisioning(
  job: { metadata?: V1Job['metadata'] },
  functionsNamespace: string,
): { namespace: string; name: string; uid: string } | undefined {
  if (job.metadata?.namespace !== functionsNamespace) return undefined;
  return provisioningOfFunctionsObject(job.metadata);
}

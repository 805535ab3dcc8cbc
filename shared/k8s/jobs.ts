import type { V1Job } from '@kubernetes/client-node';
import type { KubeClients } from './clients.js';
import { classifyApiError, isConflict, isNotFound, readOrUndefined } from './api-errors.js';
import { transient } from '../errors.js';

/** Jobs: read, create (or get the one already there), delete exactly one; where one stands. */

export type JobState = 'running' | 'complete' | 'failed';

/**
 * Where a Job stands, as the Job controller reports it: condition Complete True, or Failed True.
 * Not FailureTarget: the controller is still terminating the pods then, and the Failed condition
 * (with its reason, e.g. DeadlineExceeded or BackoffLimitExceeded) follows.
 */
export function jobState(job: V1Job): JobState {
  const isTrue = (type: string) =>
    job.status?.conditions?.some((c) => c.type === type && c.status === 'True');
  if (isTrue('Complete')) return 'complete';
  if (isTrue('Failed')) return 'failed';
  return 'running';
}

/** The Job's Failed condition (True), with the controller's reason and message. */
export const jobFailedCondition = (job: V1Job) =>
  job.status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True');

/** Reads a Job; undefined when it does not exist. */
export function readJob(clients: KubeClients, namespace: string, name: string): Promise<V1Job | undefined> {
  return readOrUndefined(`read Job ${namespace}/${name}`, () =>
    clients.batch.readNamespacedJob({ name, namespace }),
  );
}

export type CreateJobResult = { created: true; job: V1Job } | { created: false; existing: V1Job };

/** Creates the Job; when one of that name exists, returns it for the caller to judge. */
export async function createJobOrGetExisting(clients: KubeClients, job: V1Job): Promise<CreateJobResult> {
  const name = job.metadata?.name ?? '';
  const namespace = job.metadata?.namespace ?? '';
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      return { created: true, job: await clients.batch.createNamespacedJob({ namespace, body: job }) };
    } catch (error) {
      if (!isConflict(error)) throw classifyApiError(error, `create Job ${namespace}/${name}`);
    }
    const existing = await readOrUndefined(`read Job ${namespace}/${name}`, () =>
      clients.batch.readNamespacedJob({ name, namespace }),
    );
    if (existing) return { created: false, existing };
    // Deleted between our create and read: try again.
  }
  throw transient(
    'JobConflict',
    `Could not create Job ${namespace}/${name}: it kept appearing and disappearing`,
  );
}

/**
 * Deletes exactly this Job (uid precondition, so a newer Job of the same name is never hit);
 * its pods are removed by the garbage collector in the background.
 */
export async function deleteJob(clients: KubeClients, job: V1Job): Promise<void> {
  const name = job.metadata?.name ?? '';
  const namespace = job.metadata?.namespace ?? '';
  try {
    await clients.batch.deleteNamespacedJob({
      name,
      namespace,
      // With a body, the API server reads the options from it and ignores the query.
      body: { propagationPolicy: 'Background', preconditions: { uid: job.metadata?.uid } },
    });
  } catch (error) {
    if (isNotFound(error) || isConflict(error)) return; // already gone, or already replaced
    throw classifyApiError(error, `delete Job ${namespace}/${name}`);
  }
}

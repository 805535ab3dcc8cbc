import type { V1Job } from '@kubernetes/client-node';
import type { KubeClients } from './clients.js';
import { classifyApiError, isConflict, isNotFound, readOrUndefined } from './api-errors.js';
import { transient } from '../errors.js';

/** Jobs: read, create (or get the one already there), delete exactly one. */

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

import type { V1Job, V1Pod } from '@kubernetes/client-node';
import type { KubeClients } from './clients.js';
import { callApi, classifyApiError, isConflict, isNotFound, readOrUndefined } from './api-errors.js';
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

/** The label the Job controller puts on a Job's pods: the Job's own uid. */
export const controllerUidLabel = 'batch.kubernetes.io/controller-uid';

/**
 * The pods of exactly this Job: selected by the Job's controller uid, and controlled (owner
 * reference) by that uid. Never by `job-name`, a label any pod can carry (contract section 13).
 */
export async function podsOfJob(clients: KubeClients, job: V1Job): Promise<V1Pod[]> {
  const namespace = job.metadata?.namespace ?? '';
  const uid = job.metadata?.uid;
  if (!uid) return [];
  const list = await callApi(`list the pods of Job ${namespace}/${job.metadata?.name}`, () =>
    clients.core.listNamespacedPod({ namespace, labelSelector: `${controllerUidLabel}=${uid}` }),
  );
  return list.items.filter((pod) =>
    (pod.metadata?.ownerReferences ?? []).some((ref) => ref.controller === true && ref.uid === uid),
  );
}

/**
 * The last lines of a pod's log (its first container), at most `maxBytes` of them; undefined when
 * the log cannot be read (the pod is gone, or its node does not serve logs).
 */
export async function podLogTail(
  clients: KubeClients,
  pod: V1Pod,
  options: { tailLines?: number; maxBytes: number },
): Promise<string | undefined> {
  const name = pod.metadata?.name;
  const namespace = pod.metadata?.namespace;
  if (!name || !namespace) return undefined;
  try {
    const text = await clients.core.readNamespacedPodLog({
      name,
      namespace,
      tailLines: options.tailLines ?? 20,
      limitBytes: options.maxBytes * 4,
    });
    return lastBytes(String(text), options.maxBytes);
  } catch {
    return undefined;
  }
}

/** The end of `text` in at most `maxBytes` of UTF-8, cut at a line start when one is in reach. */
export function lastBytes(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  let tail = bytes
    .subarray(bytes.length - maxBytes)
    .toString('utf8')
    .replace(/^\uFFFD+/, '');
  const newline = tail.indexOf('\n');
  if (newline >= 0 && newline < tail.length - 1) tail = tail.slice(newline + 1);
  return tail;
}

/** A pod's whole log (its first container), at most `limitBytes`: the publisher's output. */
export async function podLog(clients: KubeClients, pod: V1Pod, limitBytes: number): Promise<string> {
  const name = pod.metadata?.name ?? '';
  const namespace = pod.metadata?.namespace ?? '';
  return callApi(`read the log of pod ${namespace}/${name}`, async () =>
    String(await clients.core.readNamespacedPodLog({ name, namespace, limitBytes })),
  );
}

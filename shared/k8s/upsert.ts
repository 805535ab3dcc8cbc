import type { V1ConfigMap, V1Job } from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import type { KubeClients } from './clients.js';
import { callApi, classifyApiError, isConflict, isNotFound, readOrUndefined } from './api-errors.js';
import { transient } from '../errors.js';

export type UpsertOutcome = 'created' | 'updated' | 'unchanged';

/** The parts of a ConfigMap the functions own; anything else on the stored object is left alone. */
function ownedPartsDiffer(stored: V1ConfigMap, desired: V1ConfigMap): boolean {
  const labelsOf = (cm: V1ConfigMap) => cm.metadata?.labels ?? {};
  const desiredLabels = labelsOf(desired);
  const storedLabels = labelsOf(stored);
  const owners = (cm: V1ConfigMap) => (cm.metadata?.ownerReferences ?? []).map((o) => o.uid);
  return (
    !isDeepStrictEqual(stored.data ?? {}, desired.data ?? {}) ||
    Object.entries(desiredLabels).some(([k, v]) => storedLabels[k] !== v) ||
    Object.entries(desired.metadata?.annotations ?? {}).some(
      ([k, v]) => stored.metadata?.annotations?.[k] !== v,
    ) ||
    !owners(desired).every((uid) => owners(stored).includes(uid))
  );
}

/**
 * Creates the ConfigMap, or brings an existing one to the desired data/labels/annotations/owner
 * (replace with resourceVersion; a 409 re-reads). Same content already there: unchanged.
 */
export async function upsertConfigMap(
  clients: KubeClients,
  desired: V1ConfigMap,
  maxAttempts = 5,
): Promise<UpsertOutcome> {
  const name = desired.metadata?.name ?? '';
  const namespace = desired.metadata?.namespace ?? '';
  const what = `ConfigMap ${namespace}/${name}`;
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const stored = await readOrUndefined(`read ${what}`, () =>
      clients.core.readNamespacedConfigMap({ name, namespace }),
    );
    if (!stored) {
      try {
        await clients.core.createNamespacedConfigMap({ namespace, body: desired });
        return 'created';
      } catch (error) {
        if (isConflict(error)) continue; // created meanwhile: compare on the next round
        throw classifyApiError(error, `create ${what}`);
      }
    }
    if (!ownedPartsDiffer(stored, desired)) return 'unchanged';
    const body: V1ConfigMap = {
      ...stored,
      data: desired.data ?? {},
      metadata: {
        ...stored.metadata,
        labels: { ...stored.metadata?.labels, ...desired.metadata?.labels },
        annotations: { ...stored.metadata?.annotations, ...desired.metadata?.annotations },
        ownerReferences: mergeOwners(stored, desired),
      },
    };
    try {
      await clients.core.replaceNamespacedConfigMap({ name, namespace, body });
      return 'updated';
    } catch (error) {
      if (isConflict(error) || isNotFound(error)) continue;
      throw classifyApiError(error, `update ${what}`);
    }
  }
  throw transient('ConfigMapConflict', `Could not write ${what}: it kept changing (${maxAttempts} attempts)`);
}

function mergeOwners(stored: V1ConfigMap, desired: V1ConfigMap) {
  const desiredOwners = desired.metadata?.ownerReferences ?? [];
  const kept = (stored.metadata?.ownerReferences ?? []).filter(
    (o) =>
      !desiredOwners.some((d) => d.uid === o.uid) &&
      !(o.controller && desiredOwners.some((d) => d.controller)),
  );
  return [...kept, ...desiredOwners];
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

/** Reads a Job; undefined when it does not exist. */
export function readJob(clients: KubeClients, namespace: string, name: string): Promise<V1Job | undefined> {
  return readOrUndefined(`read Job ${namespace}/${name}`, () =>
    clients.batch.readNamespacedJob({ name, namespace }),
  );
}

/** Reads a ConfigMap; undefined when it does not exist. */
export function readConfigMap(
  clients: KubeClients,
  namespace: string,
  name: string,
): Promise<V1ConfigMap | undefined> {
  return readOrUndefined(`read ConfigMap ${namespace}/${name}`, () =>
    clients.core.readNamespacedConfigMap({ name, namespace }),
  );
}

export async function listConfigMaps(
  clients: KubeClients,
  namespace: string,
  labelSelector: string,
): Promise<V1ConfigMap[]> {
  const list = await callApi(`list ConfigMaps in ${namespace}`, () =>
    clients.core.listNamespacedConfigMap({ namespace, labelSelector }),
  );
  return list.items;
}

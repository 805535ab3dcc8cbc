import type { V1ConfigMap } from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import type { KubeClients } from './clients.js';
import { callApi, classifyApiError, isConflict, isNotFound, readOrUndefined } from './api-errors.js';
import { transient } from '../errors.js';
import { ownershipError, type Ownership } from '../core/ownership.js';

/** ConfigMaps: read, list by label, and the idempotent upsert the functions write with. */

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

export type UpsertOutcome = 'created' | 'updated' | 'unchanged';
/** What the upsert did, and the ConfigMap as stored (its uid goes to status.ownedObjects). */
export interface UpsertResult {
  outcome: UpsertOutcome;
  configMap: V1ConfigMap;
}

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
 * Never adopts: a stored ConfigMap whose uid the owner's status does not record
 * (shared/core/ownership.ts) is left untouched and throws `ObjectConflict` naming it (a transient
 * `OwnershipPending` while it is young enough to be a concurrent delivery's, not recorded yet).
 */
export async function upsertConfigMap(
  clients: KubeClients,
  desired: V1ConfigMap,
  ownership?: Ownership,
  maxAttempts = 5,
): Promise<UpsertResult> {
  const name = desired.metadata?.name ?? '';
  const namespace = desired.metadata?.namespace ?? '';
  const what = `ConfigMap ${namespace}/${name}`;
  // The chain writes each ConfigMap new far more often than again: create first, and read only
  // when it exists (409), which saves a GET per write (issue 26: API requests per Provisioning).
  let read = false;
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const stored = read
      ? await readOrUndefined(`read ${what}`, () => clients.core.readNamespacedConfigMap({ name, namespace }))
      : undefined;
    if (!stored) {
      try {
        const configMap = await clients.core.createNamespacedConfigMap({ namespace, body: desired });
        return { outcome: 'created', configMap };
      } catch (error) {
        if (!isConflict(error)) throw classifyApiError(error, `create ${what}`);
        read = true; // it exists: read and compare on the next round
        continue;
      }
    }
    const refused = ownership && ownershipError('ConfigMap', stored, ownership);
    if (refused) throw refused;
    if (!ownedPartsDiffer(stored, desired)) return { outcome: 'unchanged', configMap: stored };
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
      const configMap = await clients.core.replaceNamespacedConfigMap({ name, namespace, body });
      return { outcome: 'updated', configMap };
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

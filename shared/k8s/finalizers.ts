import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { KubeClients } from './clients.js';
import { classifyApiError, isNotFound } from './api-errors.js';
import type { StatusTarget } from './custom-objects.js';
import { noteWrite } from './own-writes.js';
import type { StoredObject } from './stored-object.js';

/**
 * Adds or removes one finalizer with a JSON patch that first tests the list it read: a
 * concurrent change of the finalizers fails the patch (422) instead of being overwritten, and
 * nothing but `metadata.finalizers` is ever written (never the spec).
 */
const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

async function patchFinalizers(
  clients: KubeClients,
  target: StatusTarget,
  object: StoredObject,
  next: string[],
): Promise<StoredObject | 'gone'> {
  const current = Array.isArray(object.metadata.finalizers) ? object.metadata.finalizers : undefined;
  const { group, version, plural } = target.resource;
  const body = current
    ? [
        { op: 'test', path: '/metadata/finalizers', value: current },
        { op: 'replace', path: '/metadata/finalizers', value: next },
      ]
    : [{ op: 'add', path: '/metadata/finalizers', value: next }];
  try {
    // `next` differs from the list tested (both callers check): a patch that passes stores a new
    // version, this write's.
    return noteWrite(
      (await clients.custom.patchNamespacedCustomObject(
        { group, version, plural, namespace: target.namespace, name: target.name, body },
        jsonPatch,
      )) as StoredObject,
      object.metadata.resourceVersion,
    );
  } catch (error) {
    if (isNotFound(error)) return 'gone';
    throw classifyApiError(error, `update the finalizers of ${plural} ${target.namespace}/${target.name}`);
  }
}

const finalizersOf = (object: StoredObject): string[] =>
  Array.isArray(object.metadata.finalizers) ? (object.metadata.finalizers as string[]) : [];

export const hasFinalizer = (object: StoredObject, finalizer: string) =>
  finalizersOf(object).includes(finalizer);

/**
 * Adds the finalizer unless it is there or the object is being deleted. Returns the object as
 * stored afterwards (`object` itself when nothing was written, undefined when it is gone), so the
 * caller's next write starts from it instead of reading it again.
 */
export async function ensureFinalizer(
  clients: KubeClients,
  target: StatusTarget,
  object: StoredObject,
  finalizer: string,
): Promise<StoredObject | undefined> {
  if (hasFinalizer(object, finalizer) || object.metadata.deletionTimestamp) return object;
  const stored = await patchFinalizers(clients, target, object, [...finalizersOf(object), finalizer]);
  return stored === 'gone' ? undefined : stored;
}

/** Removes the finalizer (the object may then go at once). */
export async function removeFinalizer(
  clients: KubeClients,
  target: StatusTarget,
  object: StoredObject,
  finalizer: string,
): Promise<'patched' | 'gone' | 'absent'> {
  if (!hasFinalizer(object, finalizer)) return 'absent';
  const stored = await patchFinalizers(
    clients,
    target,
    object,
    finalizersOf(object).filter((f) => f !== finalizer),
  );
  return stored === 'gone' ? 'gone' : 'patched';
}

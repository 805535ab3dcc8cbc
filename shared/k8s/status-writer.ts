import type { KubeClients } from './clients.js';
import type { StoredObject } from './stored-object.js';
import { classifyApiError, isConflict, isNotFound } from './api-errors.js';
import { getCustomObject, type StatusTarget } from './custom-objects.js';
import { transient } from '../errors.js';
import { withKstatus } from '../core/kstatus.js';

/** What a mutation decides from the fresh object: the new status, or nothing to write. */
export type StatusMutation = (fresh: StoredObject) => Record<string, unknown> | undefined;

export type StatusWriteResult =
  /** The status was replaced; `object` is what the API server stored. */
  | { outcome: 'written'; object: StoredObject }
  /** The mutation found nothing to do on the fresh object. */
  | { outcome: 'unchanged'; object: StoredObject }
  /** The object is gone: whatever the event was about is stale. */
  | { outcome: 'gone' };

/**
 * Read-modify-write of a status subresource: reads the object fresh, applies the mutation, and
 * replaces the status with the read resourceVersion as precondition. A 409 means someone wrote in
 * between: read again and re-apply, up to `maxAttempts` times (then a transient error, so the
 * event is redelivered).
 */
export async function updateStatus(
  clients: KubeClients,
  target: StatusTarget,
  mutate: StatusMutation,
  maxAttempts = 5,
  first?: StoredObject,
): Promise<StatusWriteResult> {
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    // `first`: the object the caller just read, for the first attempt (no second read of it).
    const fresh = attempt === 1 && first ? first : await getCustomObject(clients, target);
    if (!fresh) return { outcome: 'gone' };
    const status = mutate(fresh);
    if (status === undefined) return { outcome: 'unchanged', object: fresh };
    const result = await replaceStatus(clients, target, fresh, status);
    if (result.outcome !== 'conflict') return result;
  }
  throw transient(
    'StatusConflict',
    `Could not update the status of ${target.resource.plural} ${target.namespace}/${target.name}: it kept changing (${maxAttempts} attempts)`,
  );
}

/**
 * One status replace with `object`'s resourceVersion as precondition. A 409 is reported, not
 * retried: callers that claim work use it to learn that someone else got there first.
 * Every status write of a Provisioning or a Software goes through here, so this is where
 * `status.observedGeneration` and the kstatus conditions (Reconciling, Stalled) are derived from
 * the step conditions being written (shared/core/kstatus.ts): no step sets them itself.
 */
export async function replaceStatus(
  clients: KubeClients,
  target: StatusTarget,
  object: StoredObject,
  status: Record<string, unknown>,
): Promise<StatusWriteResult | { outcome: 'conflict' }> {
  const { group, version, plural } = target.resource;
  try {
    const stored = (await clients.custom.replaceNamespacedCustomObjectStatus({
      group,
      version,
      plural,
      namespace: target.namespace,
      name: target.name,
      body: { ...object, status: withKstatus(object, status) },
    })) as StoredObject;
    return { outcome: 'written', object: stored };
  } catch (error) {
    if (isConflict(error)) return { outcome: 'conflict' };
    if (isNotFound(error)) return { outcome: 'gone' };
    throw classifyApiError(error, `update the status of ${plural} ${target.namespace}/${target.name}`);
  }
}

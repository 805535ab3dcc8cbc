import type { V1ObjectMeta } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ownedEntry,
  ownedObjectsField,
  ownedObjectsOf,
  ownershipPendingReason,
  withOwnedObject,
  withoutOwnedObject,
  type OwnedObject,
  type Ownership,
} from '../core/ownership.js';
import type { ProvisioningOwner } from '../core/owner.js';
import { BpaError } from '../errors.js';
import type { KubeClients } from './clients.js';
import { getCustomObject } from './custom-objects.js';
import type { StatusTarget } from './custom-objects.js';
import { applyStatusDecided } from './status-apply.js';
import type { StoredObject } from './stored-object.js';

/**
 * status.ownedObjects on the Provisioning (contract section 12, ADR 0013 point 2): each object the
 * functions create for it is recorded by uid right after its create; only a recorded uid (or, in
 * the functions' namespace, the uid label) makes an object the functions' own.
 */

/** What a handler judges objects against: the owner, what its status records, where to trust labels. */
export const ownershipOf = (
  owner: ProvisioningOwner,
  live: Pick<StoredObject, 'status'>,
  functionsNamespace?: string,
): Ownership => ({
  owner,
  owned: ownedObjectsOf(live.status),
  ...(functionsNamespace ? { functionsNamespace } : {}),
});

/**
 * How long a handler waits for a concurrent delivery to record the uid of an object it just
 * created (create, then record: two writes) before answering the transient OwnershipPending.
 */
export const ownershipRecordingWaitMs = 3000;

/**
 * Runs `attempt` with the owner as `live` shows it; while it throws the transient
 * `OwnershipPending` (shared/core/ownership.ts: a young object whose uid the status does not
 * record yet, most often a concurrent delivery's of the same step, created a moment ago), reads
 * the owner again and retries, for up to `waitMs`: the other delivery records the uid right after
 * its create, and this one then goes on in the same request instead of failing it (a 503 and a
 * broker retry for every Job completion two updates of the Job deliver at once). Still pending
 * after that, or the owner gone or replaced: the error as it is (the broker's retry judges again).
 */
export async function withRecordedOwnership<T>(
  clients: KubeClients,
  target: StatusTarget,
  live: StoredObject,
  attempt: (owner: StoredObject) => Promise<T>,
  { waitMs = ownershipRecordingWaitMs, intervalMs = 200 }: { waitMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + waitMs;
  let owner = live;
  for (;;) {
    try {
      return await attempt(owner);
    } catch (error) {
      const pending = error instanceof BpaError && error.reason === ownershipPendingReason;
      if (!pending || Date.now() + intervalMs > deadline) throw error;
      await sleep(intervalMs);
      const fresh = await getCustomObject(clients, target);
      if (!fresh || fresh.metadata.uid !== live.metadata.uid) throw error;
      owner = fresh;
    }
  }
}

/**
 * Records the created (or used) objects' uids in the owner's status, in one apply as `manager`;
 * nothing when they are already recorded, or the status belongs to another object of that name
 * (another uid). The list is atomic: its last writer owns it, and restates it whole.
 */
export async function recordOwned(
  clients: KubeClients,
  target: StatusTarget,
  manager: string,
  ownerUid: string,
  objects: readonly { kind: string; metadata: V1ObjectMeta | undefined }[],
  live?: StoredObject,
): Promise<StoredObject | undefined> {
  if (objects.every(({ kind, metadata }) => ownedEntry(kind, metadata) === undefined)) return live;
  const result = await applyStatusDecided(
    clients,
    target,
    manager,
    (fresh) => {
      const fields = ownedObjectsFields(fresh, ownerUid, objects);
      return fields ? { conditions: [], fields } : undefined;
    },
    live ? { first: live } : {},
  );
  return result.outcome === 'gone' ? undefined : result.object;
}

/**
 * The status field that records `objects` on `fresh` (status.ownedObjects restated whole, with
 * the missing ones added), for a step's own apply to carry (one write, not two); undefined when
 * all are recorded already or `fresh` is another object of that name (another uid).
 */
export function ownedObjectsFields(
  fresh: StoredObject,
  ownerUid: string,
  objects: readonly { kind: string; metadata: V1ObjectMeta | undefined }[],
): Record<string, unknown> | undefined {
  if (fresh.metadata.uid !== ownerUid) return undefined;
  const owned = ownedObjectsOf(fresh.status);
  const missing = objects
    .flatMap(({ kind, metadata }) => ownedEntry(kind, metadata) ?? [])
    .filter((entry) => !owned.some((item) => isSame(item, entry) && item.uid === entry.uid));
  if (missing.length === 0) return undefined;
  return { [ownedObjectsField]: missing.reduce(withOwnedObject, owned) };
}

/** Drops the entry of a deleted object, applied as `manager`. */
export async function forgetOwned(
  clients: KubeClients,
  target: StatusTarget,
  manager: string,
  ownerUid: string,
  entry: Omit<OwnedObject, 'uid'>,
): Promise<void> {
  await applyStatusDecided(clients, target, manager, (fresh) => {
    if (fresh.metadata.uid !== ownerUid) return undefined;
    const owned = ownedObjectsOf(fresh.status);
    if (!owned.some((item) => isSame(item, entry))) return undefined;
    const left = withoutOwnedObject(owned, entry);
    return { conditions: [], fields: { [ownedObjectsField]: left.length > 0 ? left : undefined } };
  });
}

const isSame = (a: Omit<OwnedObject, 'uid'>, b: Omit<OwnedObject, 'uid'>) =>
  a.kind === b.kind && a.namespace === b.namespace && a.name === b.name;

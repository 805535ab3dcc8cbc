import type { V1ObjectMeta } from '@kubernetes/client-node';
import {
  ownedEntry,
  ownedObjectsField,
  ownedObjectsOf,
  withOwnedObject,
  withoutOwnedObject,
  type OwnedObject,
  type Ownership,
} from '../core/ownership.js';
import type { ProvisioningOwner } from '../core/owner.js';
import type { KubeClients } from './clients.js';
import { updateStatus, type StatusTarget } from './status-writer.js';
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
 * Records the created (or used) object's uid in the owner's status; nothing when it is already
 * recorded, or the status belongs to another object of that name (another uid).
 */
export async function recordOwned(
  clients: KubeClients,
  target: StatusTarget,
  ownerUid: string,
  kind: string,
  metadata: V1ObjectMeta | undefined,
): Promise<void> {
  const entry = ownedEntry(kind, metadata);
  if (!entry) return;
  await updateStatus(clients, target, (fresh) => {
    if (fresh.metadata.uid !== ownerUid) return undefined;
    const owned = ownedObjectsOf(fresh.status);
    if (owned.some((item) => isSame(item, entry) && item.uid === entry.uid)) return undefined;
    return { ...fresh.status, [ownedObjectsField]: withOwnedObject(owned, entry) };
  });
}

/** Drops the entry of a deleted object. */
export async function forgetOwned(
  clients: KubeClients,
  target: StatusTarget,
  ownerUid: string,
  entry: Omit<OwnedObject, 'uid'>,
): Promise<void> {
  await updateStatus(clients, target, (fresh) => {
    if (fresh.metadata.uid !== ownerUid) return undefined;
    const owned = ownedObjectsOf(fresh.status);
    if (!owned.some((item) => isSame(item, entry))) return undefined;
    const left = withoutOwnedObject(owned, entry);
    return { ...fresh.status, [ownedObjectsField]: left.length > 0 ? left : undefined };
  });
}

const isSame = (a: Omit<OwnedObject, 'uid'>, b: Omit<OwnedObject, 'uid'>) =>
  a.kind === b.kind && a.namespace === b.namespace && a.name === b.name;
